package onnx

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// Describe reads the ONNX model at path and returns a readable summary:
// producer, IR version and opsets; the graph's inputs and outputs with
// their types (outputs as inferred, symbolic dimensions kept); the
// operators used, with counts, marking those Kiln cannot run; the
// initializers with their element types and shapes; and, last, what Load
// would say of it, checked without reading a weight: whether Kiln runs
// the model's opset, every node Load would refuse (in subgraphs too),
// one line each with its index, name, operator and reason (an operator
// Kiln does not run, an attribute value or input it does not support, an
// operator of another domain), every graph value of a kind and
// initializer of a data type Kiln cannot hold, and then "Load accepts
// it." or Load's own reason for refusing it. Past 50 lines the list ends
// with a count per reason. It fails like ReadFile, and like Load
// (wrapping ErrCorrupt, naming the node and the attribute) for a node
// whose attributes break its operator's definition. `kiln inspect`
// prints it.
func Describe(path string) (string, error) {
	m, err := ReadFile(path)
	if err != nil {
		return "", err
	}
	if m.Graph == nil {
		return "", fmt.Errorf("onnx: describe %s: %w: no graph", path, ErrCorrupt)
	}
	opset, _ := defaultOpset(m)
	if err := validateGraph(m.Graph, opset); err != nil {
		return "", fmt.Errorf("onnx: describe %s: %w", path, err)
	}
	d := DescribeModel(m)
	refused := loadRefusals(m)
	if _, err := newPlan(m, path, tensor.CPU()); err != nil {
		if errors.Is(err, ErrCorrupt) {
			return "", fmt.Errorf("onnx: describe %s: %w", path, err)
		}
		return d + refused.text + "Load refuses it: " + err.Error() + "\n", nil
	}
	if refused.initErr != nil {
		return d + refused.text + "Load refuses it: " + refused.initErr.Error() + "\n", nil
	}
	return d + refused.text + "Load accepts it.\n", nil
}

// maxRefusalsListed caps the lines Describe gives to refused nodes.
const maxRefusalsListed = 50

// loadReport is what Describe says of Load before its verdict.
type loadReport struct {
	text    string // the opset line and the refused nodes, one line each
	initErr error  // the first initializer Load would refuse, nil if none
}

// loadRefusals checks m as Load would, collecting every failure instead
// of stopping at the first: the opset, the legacy conversion, each node
// (plan.refusals, with the opset taken as MaxOpset where the model's is
// refused, so that its nodes are still checked) and each initializer's
// data type.
func loadRefusals(m *ModelProto) loadReport {
	var b strings.Builder
	opset, ok := defaultOpset(m)
	effective := opset
	switch {
	case !ok:
		b.WriteString("opset: the model imports no opset of the default ONNX domain, so Load refuses it")
		effective = MaxOpset
	case opset < MinOpset:
		fmt.Fprintf(&b, "opset %d: outside the opsets Kiln runs (%d to %d), so Load refuses it", opset, MinOpset, MaxOpset)
		effective = MaxOpset
	case opset < legacyOpset:
		fmt.Fprintf(&b, "opset %d: Kiln runs opsets %d to %d (this one converted to opset %d on load)", opset, MinOpset, MaxOpset, legacyOpset)
	case opset > MaxOpset:
		fmt.Fprintf(&b, "opset %d: newer than the opsets Kiln knows (%d to %d); Load runs each operator as its opset-%d form", opset, MinOpset, MaxOpset, MaxOpset)
	default:
		fmt.Fprintf(&b, "opset %d: Kiln runs opsets %d to %d", opset, MinOpset, MaxOpset)
	}
	if effective != opset {
		fmt.Fprintf(&b, " (nodes checked below as opset %d)", effective)
	}
	b.WriteString("\n")
	var lines, keys []string
	var nodes, values int
	var legacyErr error
	mp := m
	if ok && opset >= MinOpset {
		if up, err := upgradeLegacy(m); err != nil {
			legacyErr = err
			effective = legacyOpset
		} else {
			mp = up
		}
	}
	if legacyErr != nil {
		lines = append(lines, "  converting opset "+strconv.FormatInt(opset, 10)+": "+legacyErr.Error())
		keys = append(keys, "converting the old opset")
	}
	p := &plan{proto: mp, opset: effective}
	for _, r := range p.refusals() {
		if r.index < 0 {
			values++
			lines = append(lines, fmt.Sprintf("  value %q: %s", r.node, r.reason))
		} else {
			nodes++
			lines = append(lines, fmt.Sprintf("  node %d %q (%s): %s", r.index, r.node, r.op, r.reason))
		}
		keys = append(keys, r.reason)
	}
	var initErr error
	for _, t := range m.Graph.Initializers {
		if t.DataType == TypeString {
			continue
		}
		if _, err := kilnDType(t.DataType); err != nil {
			if initErr == nil {
				initErr = fmt.Errorf("initializer %q: %w", t.Name, err)
			}
			values++
			reason := fmt.Sprintf("unsupported data type %s", DataTypeName(t.DataType))
			lines = append(lines, fmt.Sprintf("  initializer %q: %s", t.Name, reason))
			keys = append(keys, reason)
		}
	}
	if len(lines) > 0 {
		var what []string
		if nodes > 0 {
			what = append(what, plural(nodes, "node"))
		}
		if values > 0 {
			what = append(what, plural(values, "value"))
		}
		if legacyErr != nil {
			what = append(what, "the opset conversion")
		}
		fmt.Fprintf(&b, "Load refuses %s:\n", strings.Join(what, " and "))
		shown := lines
		if len(lines) > maxRefusalsListed {
			shown = lines[:maxRefusalsListed]
		}
		for _, l := range shown {
			b.WriteString(l + "\n")
		}
		if rest := keys[len(shown):]; len(rest) > 0 {
			counts := map[string]int{}
			var order []string
			for _, k := range rest {
				if counts[k] == 0 {
					order = append(order, k)
				}
				counts[k]++
			}
			fmt.Fprintf(&b, "  … and %d more:\n", len(rest))
			for _, k := range order {
				fmt.Fprintf(&b, "    %d × %s\n", counts[k], k)
			}
		}
	}
	return loadReport{text: b.String(), initErr: initErr}
}

// plural says n things: "1 node", "3 nodes".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// DescribeModel is Describe for a model already decoded. It never fails
// and never panics: it does not check attributes (Describe does), and
// values whose shapes cannot be inferred are shown as unknown.
func DescribeModel(m *ModelProto) string {
	if m == nil || m.Graph == nil {
		return "not an ONNX model (no graph)\n"
	}
	var b strings.Builder
	g := m.Graph
	producer := strings.TrimSpace(m.ProducerName + " " + m.ProducerVersion)
	if producer == "" {
		producer = "unknown producer"
	}
	fmt.Fprintf(&b, "ONNX model (IR version %d, %s)\n", m.IRVersion, producer)
	var opsets []string
	for _, o := range m.OpsetImports {
		d := o.Domain
		if d == "" {
			d = "ai.onnx"
		}
		opsets = append(opsets, fmt.Sprintf("%s %d", d, o.Version))
	}
	fmt.Fprintf(&b, "opsets: %s\n", strings.Join(opsets, ", "))
	if g.Name != "" {
		fmt.Fprintf(&b, "graph: %s\n", g.Name)
	}
	opset, _ := defaultOpset(m)
	types := InferShapes(g, opset)
	inits := map[string]bool{}
	for _, t := range g.Initializers {
		inits[t.Name] = true
	}
	b.WriteString("inputs:\n")
	for _, in := range g.Inputs {
		if inits[in.Name] {
			continue
		}
		fmt.Fprintf(&b, "  %s: %s\n", in.Name, typeString(in.Type))
	}
	b.WriteString("outputs:\n")
	for _, out := range g.Outputs {
		fmt.Fprintf(&b, "  %s: %s\n", out.Name, types[out.Name])
	}
	counts := map[string]int{}
	for _, n := range g.Nodes {
		key := n.OpType
		if n.Domain != "" && n.Domain != "ai.onnx" {
			key = n.Domain + "." + n.OpType
		}
		counts[key]++
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "operators (%d nodes):\n", len(g.Nodes))
	var unsupported []string
	for _, k := range names {
		mark := ""
		if ops[k] == nil {
			mark = "  (not supported by Kiln)"
			unsupported = append(unsupported, k)
		}
		fmt.Fprintf(&b, "  %-24s %d%s\n", k, counts[k], mark)
	}
	total := 0
	for _, t := range g.Initializers {
		if n, err := numElements(t.Dims); err == nil {
			total += n
		}
	}
	fmt.Fprintf(&b, "initializers: %d tensors, %d elements\n", len(g.Initializers)+len(g.SparseInitializers), total)
	const maxListed = 50
	for i, t := range g.Initializers {
		if i == maxListed {
			fmt.Fprintf(&b, "  … %d more\n", len(g.Initializers)-maxListed)
			break
		}
		where := ""
		if t.DataLocation == LocationExternal {
			where = " (external)"
		}
		fmt.Fprintf(&b, "  %s: %s%v%s\n", t.Name, DataTypeName(t.DataType), t.Dims, where)
	}
	for _, s := range g.SparseInitializers {
		fmt.Fprintf(&b, "  %s: sparse %v\n", s.Values.Name, s.Dims)
	}
	if len(unsupported) > 0 {
		fmt.Fprintf(&b, "unsupported operators: %s\n", strings.Join(unsupported, ", "))
	}
	if len(m.MetadataProps) > 0 {
		b.WriteString("metadata:\n")
		for _, e := range m.MetadataProps {
			fmt.Fprintf(&b, "  %s: %s\n", e.Key, e.Value)
		}
	}
	return b.String()
}

// typeString formats a declared type ("FLOAT[batch 1 28 28]").
func typeString(t *TypeProto) string {
	if t == nil {
		return "?"
	}
	if t.Kind != "tensor" {
		return t.Kind
	}
	et := "?"
	if t.ElemType != TypeUndefined {
		et = DataTypeName(t.ElemType)
	}
	if !t.HasShape {
		return et + "[…]"
	}
	return et + dimsString(t.Shape)
}
