package onnx

import (
	"fmt"
	"strings"
)

// Opsets 1 to 6 of the default domain are converted to opset 7 when a
// model is loaded: their operators compute what opset 7's do, but spell
// some arguments differently. The conversion rewrites a copy of the graph
// (the decoded file is left as it was) so that everything after it (the
// operators, shape inference, validation, Generate) knows opset 7 only:
//
//   - consumed_inputs (opsets 1–5, a Caffe2 memory hint) and is_test
//     (BatchNormalization and Dropout before 7: Kiln runs both in inference
//     mode) are dropped;
//   - the binary operators' broadcast and axis attributes (Add, Sub, Mul,
//     Div, Pow, And, Or, Xor, Equal, Greater, Less before 7) become NumPy
//     broadcasting, with an Unsqueeze appending 1s to the second operand
//     where axis aligns it before the last dimensions (this needs the
//     operands' ranks, which shape inference must know); Gemm's broadcast
//     goes too;
//   - Reshape's shape attribute (before 5) becomes a constant input,
//     Cast's type name ("FLOAT", before 6) its number, Concat's missing
//     axis (before 4) the old default 1, Pad's paddings (1) pads, Split's
//     second input (1) its split attribute, and Tile's tiles and axis
//     inputs (before 6) one repeats input.
//
// What cannot be converted (Upsample-1's scale attributes, an axis whose
// operands' ranks inference cannot tell) is an error wrapping
// ErrUnsupported naming the node.

// legacyOpset is the opset older models are converted to.
const legacyOpset = 7

// legacyBinary lists the operators that took broadcast and axis
// attributes before opset 7.
var legacyBinary = map[string]bool{"Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true,
	"And": true, "Or": true, "Xor": true, "Equal": true, "Greater": true, "Less": true}

// upgradeLegacy returns mp converted to opset 7 when it imports an older
// default-domain opset, and mp itself otherwise.
func upgradeLegacy(mp *ModelProto) (*ModelProto, error) {
	opset, ok := defaultOpset(mp)
	if !ok || opset < MinOpset || opset >= legacyOpset || mp.Graph == nil {
		return mp, nil
	}
	out := *mp
	out.OpsetImports = make([]OperatorSetID, len(mp.OpsetImports))
	for i, o := range mp.OpsetImports {
		if o.Domain == "" || o.Domain == "ai.onnx" {
			o.Version = legacyOpset
		}
		out.OpsetImports[i] = o
	}
	g := *mp.Graph
	out.Graph = &g
	g.Initializers = append([]*TensorProto(nil), mp.Graph.Initializers...)
	inits := map[string]*TensorProto{}
	for _, t := range g.Initializers {
		inits[t.Name] = t
	}
	taken := map[string]bool{}
	for _, n := range mp.Graph.Nodes {
		for _, o := range n.Outputs {
			taken[o] = true
		}
	}
	for _, t := range g.Initializers {
		taken[t.Name] = true
	}
	for _, in := range g.Inputs {
		taken[in.Name] = true
	}
	fresh := func(base string) string {
		name := base
		for k := 2; taken[name]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		taken[name] = true
		return name
	}
	addConst := func(base string, v []int64) string {
		name := fresh(base)
		t := &TensorProto{Name: name, DataType: TypeInt64, Dims: []int64{int64(len(v))}, Int64Data: v}
		g.Initializers = append(g.Initializers, t)
		inits[name] = t
		return name
	}

	// First pass: attribute rewrites that need no shapes.
	g.Nodes = make([]*NodeProto, len(mp.Graph.Nodes))
	var axisNodes []int
	for i, old := range mp.Graph.Nodes {
		n := *old
		n.Inputs = append([]string(nil), old.Inputs...)
		n.Attributes = nil
		attrs := map[string]*AttributeProto{}
		for _, a := range old.Attributes {
			attrs[a.Name] = a
		}
		where := nodeName(old, i)
		if n.Domain != "" && n.Domain != "ai.onnx" {
			n.Attributes = old.Attributes
			g.Nodes[i] = &n
			continue
		}
		drop := map[string]bool{"consumed_inputs": true}
		switch n.OpType {
		case "BatchNormalization", "Dropout":
			drop["is_test"] = true
		case "Gemm":
			drop["broadcast"] = true
		case "Reshape":
			if a := attrs["shape"]; a != nil && len(n.Inputs) == 1 {
				n.Inputs = append(n.Inputs, addConst(n.Outputs[0]+"_shape", a.Ints))
				drop["shape"] = true
			}
		case "Cast":
			if a := attrs["to"]; a != nil && (a.Type == AttrString || a.S != nil) {
				code := int32(-1)
				for k, name := range dataTypeNames {
					if strings.EqualFold(name, string(a.S)) {
						code = k
					}
				}
				if code < 0 {
					return nil, fmt.Errorf("%w: node %s: Cast to %q: no such data type", ErrCorrupt, where, a.S)
				}
				attrs["to"] = &AttributeProto{Name: "to", Type: AttrInt, I: int64(code)}
			}
		case "Concat":
			if attrs["axis"] == nil {
				attrs["axis"] = &AttributeProto{Name: "axis", Type: AttrInt, I: 1}
			}
		case "Pad":
			if a := attrs["paddings"]; a != nil && attrs["pads"] == nil {
				attrs["pads"] = &AttributeProto{Name: "pads", Type: AttrInts, Ints: a.Ints}
				drop["paddings"] = true
			}
		case "Split":
			if len(n.Inputs) > 1 && n.Inputs[1] != "" {
				t := inits[n.Inputs[1]]
				if t == nil {
					return nil, fmt.Errorf("%w: node %s: Split-1 with split sizes computed at run time", ErrUnsupported, where)
				}
				h, err := tensorHost(t)
				if err != nil {
					return nil, err
				}
				attrs["split"] = &AttributeProto{Name: "split", Type: AttrInts, Ints: h.ints()}
				n.Inputs = n.Inputs[:1]
			}
		case "Upsample":
			if attrs["height_scale"] != nil || attrs["width_scale"] != nil {
				return nil, fmt.Errorf("%w: node %s: Upsample-1's height_scale and width_scale", ErrUnsupported, where)
			}
		case "Tile":
			if len(n.Inputs) == 3 {
				axisNodes = append(axisNodes, i)
			}
		}
		if legacyBinary[n.OpType] {
			drop["broadcast"] = true
			if a := attrs["axis"]; a != nil {
				if b := attrs["broadcast"]; b != nil && b.I != 0 {
					axisNodes = append(axisNodes, i)
				}
				drop["axis"] = true
			}
		}
		for _, a := range old.Attributes {
			if drop[a.Name] {
				continue
			}
			if r := attrs[a.Name]; r != a {
				n.Attributes = append(n.Attributes, r)
			} else {
				n.Attributes = append(n.Attributes, a)
			}
			delete(attrs, a.Name)
		}
		for _, a := range []string{"axis", "pads", "split", "to"} { // attributes added above
			if r := attrs[a]; r != nil && !drop[a] {
				n.Attributes = append(n.Attributes, r)
			}
		}
		g.Nodes[i] = &n
	}
	if len(axisNodes) == 0 {
		return &out, nil
	}

	// Second pass: operands aligned by axis, which need ranks.
	types := InferShapes(&g, legacyOpset)
	rank := func(name string) int {
		if t := inits[name]; t != nil {
			return len(t.Dims)
		}
		if vt, ok := types[name]; ok && vt.RankKnown {
			return len(vt.Shape)
		}
		return -1
	}
	before := map[int][]*NodeProto{} // Unsqueezes to insert before node i
	for _, i := range axisNodes {
		old, n := mp.Graph.Nodes[i], g.Nodes[i]
		where := nodeName(old, i)
		if n.OpType == "Tile" {
			// Tile-1: repeat input 0 tiles times along axis.
			tiles, axis := inits[n.Inputs[1]], inits[n.Inputs[2]]
			r := rank(n.Inputs[0])
			if tiles == nil || axis == nil || r < 0 {
				return nil, fmt.Errorf("%w: node %s: Tile-1 with tiles or axis computed at run time", ErrUnsupported, where)
			}
			th, err := tensorHost(tiles)
			if err != nil {
				return nil, err
			}
			ah, err := tensorHost(axis)
			if err != nil {
				return nil, err
			}
			if th.size() != 1 || ah.size() != 1 || ah.ints()[0] < 0 || ah.ints()[0] >= int64(r) {
				return nil, fmt.Errorf("%w: node %s: Tile-1 needs one tile count and an axis below rank %d", ErrCorrupt, where, r)
			}
			reps := make([]int64, r)
			for k := range reps {
				reps[k] = 1
			}
			reps[ah.ints()[0]] = th.ints()[0]
			n.Inputs = []string{n.Inputs[0], addConst(n.Outputs[0]+"_repeats", reps)}
			continue
		}
		var axis int64
		for _, a := range old.Attributes {
			if a.Name == "axis" {
				axis = a.I
			}
		}
		ra, rb := rank(n.Inputs[0]), rank(n.Inputs[1])
		if ra < 0 || rb < 0 {
			return nil, fmt.Errorf("%w: node %s: broadcast with axis=%d on operands of unknown rank", ErrUnsupported, where, axis)
		}
		if axis < 0 {
			axis += int64(ra)
		}
		trailing := int64(ra) - axis - int64(rb)
		if axis < 0 || trailing < 0 {
			return nil, fmt.Errorf("%w: node %s: axis=%d does not fit operands of ranks %d and %d", ErrCorrupt, where, axis, ra, rb)
		}
		if trailing == 0 {
			continue
		}
		axes := make([]int64, trailing)
		for k := range axes {
			axes[k] = int64(rb) + int64(k)
		}
		name := fresh(n.Inputs[1] + "_aligned")
		before[i] = append(before[i], &NodeProto{OpType: "Unsqueeze", Name: name, Inputs: []string{n.Inputs[1]}, Outputs: []string{name},
			Attributes: []*AttributeProto{{Name: "axes", Type: AttrInts, Ints: axes}}})
		n.Inputs[1] = name
	}
	nodes := make([]*NodeProto, 0, len(g.Nodes)+len(before))
	for i, n := range g.Nodes {
		nodes = append(nodes, before[i]...)
		nodes = append(nodes, n)
	}
	g.Nodes = nodes
	return &out, nil
}
