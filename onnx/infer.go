package onnx

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// Shape inference runs over the graph once, without data: every value gets
// an element type and a shape whose dimensions are numbers, symbols from
// the inputs' dim_params ("batch"), products of both ("batch*seq", "4*seq")
// or unknown. Small integer tensors are followed by value too (the output
// of Shape, Gather, Concat and arithmetic on them), so the shape
// computations exporters emit before a Reshape or an Expand keep their
// symbolic batch dimension instead of losing it.

// ValueType is the inferred type of a graph value.
type ValueType struct {
	// ElemType is the ONNX element type (TypeFloat, …), TypeUndefined when
	// unknown.
	ElemType int32
	// Shape holds one Dim per dimension; nil when the rank is unknown.
	Shape []Dim
	// RankKnown tells an unknown rank (false) from a 0-d scalar.
	RankKnown bool
}

// String formats the type as "FLOAT[batch 10]" ("?" for unknown parts).
func (v ValueType) String() string {
	et := "?"
	if v.ElemType != TypeUndefined {
		et = DataTypeName(v.ElemType)
	}
	if !v.RankKnown {
		return et + "[…]"
	}
	return et + dimsString(v.Shape)
}

// mono is a dimension as a monomial: coef·sym₁·sym₂…, unknown when !ok.
type mono struct {
	coef int64
	syms []string
	ok   bool
}

func known(n int64) mono { return mono{coef: n, ok: true} }

var unknownDim = mono{}

// Inference keeps its own work bounded on crafted files: a monomial of
// more than maxSyms symbols (Mul of a value by itself doubles them) and a
// rank above maxRank (a shape tensor claiming 1<<62 elements) are left
// unknown instead of being built.
const (
	maxSyms = 16
	maxRank = 1 << 10
)

// rankOf returns d as a rank to allocate, ok only for 0 ≤ d ≤ maxRank.
func rankOf(d mono) (int, bool) {
	if !d.isNum() || d.coef < 0 || d.coef > maxRank {
		return 0, false
	}
	return int(d.coef), true
}

// unknownShape returns n unknown dimensions, or nil (rank unknown) when n
// is not a rank inference builds.
func unknownShape(n mono) ([]mono, bool) {
	r, ok := rankOf(n)
	if !ok {
		return nil, false
	}
	shape := make([]mono, r)
	for i := range shape {
		shape[i] = unknownDim
	}
	return shape, true
}

func monoOf(d Dim) mono {
	if d.HasValue {
		return known(d.Value)
	}
	if d.Param == "" {
		return unknownDim
	}
	m := mono{coef: 1, ok: true}
	for _, part := range strings.Split(d.Param, "*") {
		if n, err := strconv.ParseInt(part, 10, 64); err == nil {
			c, ok := mulInt(m.coef, n)
			if !ok {
				return unknownDim
			}
			m.coef = c
		} else {
			m.syms = append(m.syms, part)
		}
	}
	if len(m.syms) > maxSyms {
		return unknownDim
	}
	sort.Strings(m.syms)
	return m
}

func (m mono) dim() Dim {
	if !m.ok {
		return Dim{}
	}
	if len(m.syms) == 0 {
		return Dim{Value: m.coef, HasValue: true}
	}
	parts := append([]string{}, m.syms...)
	if m.coef != 1 {
		parts = append([]string{strconv.FormatInt(m.coef, 10)}, parts...)
	}
	return Dim{Param: strings.Join(parts, "*")}
}

func (m mono) isNum() bool { return m.ok && len(m.syms) == 0 }

func (m mono) equal(o mono) bool {
	if !m.ok || !o.ok || m.coef != o.coef || len(m.syms) != len(o.syms) {
		return false
	}
	for i := range m.syms {
		if m.syms[i] != o.syms[i] {
			return false
		}
	}
	return true
}

func (m mono) mul(o mono) mono {
	if !m.ok || !o.ok {
		if m.isNum() && m.coef == 0 || o.isNum() && o.coef == 0 {
			return known(0)
		}
		return unknownDim
	}
	c, ok := mulInt(m.coef, o.coef)
	if !ok || len(m.syms)+len(o.syms) > maxSyms {
		return unknownDim
	}
	s := append(append([]string{}, m.syms...), o.syms...)
	sort.Strings(s)
	return mono{coef: c, syms: s, ok: true}
}

// mulInt returns a·b, ok false when it overflows int64.
func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return c, true
}

// addInt returns a+b, ok false when it overflows int64.
func addInt(a, b int64) (int64, bool) {
	c := a + b
	if (c > a) != (b > 0) {
		return 0, false
	}
	return c, true
}

// div returns m/o when it is a monomial (o's symbols among m's, the
// coefficient divisible).
func (m mono) div(o mono) mono {
	if !m.ok || !o.ok || o.coef == 0 || (o.coef == -1 && m.coef == math.MinInt64) || m.coef%o.coef != 0 {
		return unknownDim
	}
	rest := append([]string{}, m.syms...)
	for _, s := range o.syms {
		i := sort.SearchStrings(rest, s)
		if i >= len(rest) || rest[i] != s {
			return unknownDim
		}
		rest = append(rest[:i], rest[i+1:]...)
	}
	return mono{coef: m.coef / o.coef, syms: rest, ok: true}
}

func (m mono) add(o mono) mono {
	if m.isNum() && o.isNum() {
		c, ok := addInt(m.coef, o.coef)
		if !ok {
			return unknownDim
		}
		return known(c)
	}
	if m.isNum() && m.coef == 0 {
		return o
	}
	if o.isNum() && o.coef == 0 {
		return m
	}
	if m.ok && o.ok && len(m.syms) > 0 && strings.Join(m.syms, "*") == strings.Join(o.syms, "*") {
		c, ok := addInt(m.coef, o.coef)
		if !ok {
			return unknownDim
		}
		return mono{coef: c, syms: m.syms, ok: true}
	}
	return unknownDim
}

// info is what inference knows about one value.
type info struct {
	et    int32
	shape []mono // nil: rank unknown
	rank  bool
	val   []mono      // elements of a small integer tensor, when known
	h     *hostTensor // the whole value, when it is a known small constant
}

func (i *info) r() int { return len(i.shape) }

func shapeInfo(et int32, shape []mono) *info { return &info{et: et, shape: shape, rank: true} }

func numsInfo(et int32, v []mono, shape []mono) *info {
	return &info{et: et, shape: shape, rank: true, val: v}
}

// InferShapes returns the inferred type of every value of g (inputs,
// initializers, node outputs) at the given default-domain opset. Values
// inference cannot type get what the graph's value_info declares, if
// anything. It never fails and never panics, whatever the file holds: what
// cannot be inferred is unknown, and so are the outputs of a node whose
// attributes break its operator's definition (a zero stride; Load and
// Describe report those).
func InferShapes(g *GraphProto, opset int64) map[string]ValueType {
	env := inferInfos(g, opset)
	res := make(map[string]ValueType, len(env))
	for name, in := range env {
		res[name] = in.valueType()
	}
	return res
}

// valueType is the exported form of in.
func (in *info) valueType() ValueType {
	vt := ValueType{ElemType: in.et, RankKnown: in.rank}
	if in.rank {
		vt.Shape = make([]Dim, len(in.shape))
		for i, m := range in.shape {
			vt.Shape[i] = m.dim()
		}
	}
	return vt
}

// inferredValues returns, for the small integer tensors whose elements
// shape inference follows, each element as a Dim (a number or a product
// of input symbols); the generator writes these as Go ints.
func inferredValues(env map[string]*info) map[string][]Dim {
	out := map[string][]Dim{}
	for name, in := range env {
		if in.val == nil {
			continue
		}
		ds := make([]Dim, len(in.val))
		ok := true
		for i, m := range in.val {
			ds[i] = m.dim()
			ok = ok && m.ok
		}
		if ok {
			out[name] = ds
		}
	}
	return out
}

// inferInfos runs shape inference over g, returning every value's info.
func inferInfos(g *GraphProto, opset int64) map[string]*info {
	return inferGraph(g, opset).env
}

// inference is the outcome of one pass of shape inference.
type inference struct {
	env map[string]*info
	// invalid is the first node whose attributes break its operator's
	// definition (wrapping ErrCorrupt, naming the node and attribute).
	invalid error
	// bug is the first panic recovered while inferring a node: inference
	// guards its arithmetic, so a panic is a bug in this package, which
	// the fuzz target FuzzInferShapes reports.
	bug error
}

// inferGraph runs shape inference over g, checking each node's attributes
// (validateNode) against what is known of its inputs before inferring its
// outputs; the outputs of an invalid node stay unknown.
func inferGraph(g *GraphProto, opset int64) *inference {
	res := &inference{env: map[string]*info{}}
	if g == nil {
		return res
	}
	env := res.env
	fromType := func(t *TypeProto) *info {
		if t == nil || t.Kind != "tensor" {
			return &info{}
		}
		in := &info{et: t.ElemType}
		if t.HasShape {
			in.rank = true
			in.shape = make([]mono, len(t.Shape))
			for i, d := range t.Shape {
				in.shape[i] = monoOf(d)
			}
		}
		return in
	}
	declared := map[string]*TypeProto{}
	for _, v := range g.ValueInfo {
		declared[v.Name] = v.Type
	}
	for _, v := range g.Outputs {
		declared[v.Name] = v.Type
	}
	for _, v := range g.Inputs {
		env[v.Name] = fromType(v.Type)
	}
	for _, t := range g.Initializers {
		in := shapeInfo(t.DataType, dimsMono(t.Dims))
		if n, err := numElements(t.Dims); err == nil && n <= hostLimit {
			if h, err := tensorHost(t); err == nil {
				in.h = h
				if !h.dtype.IsFloat() {
					in.val = intsMono(h.ints())
				}
			}
		}
		env[t.Name] = in
	}
	order, err := topoSort(g)
	if err != nil {
		order = g.Nodes
	}
	index := make(map[*NodeProto]int, len(g.Nodes))
	for i, n := range g.Nodes {
		index[n] = i
	}
	for _, n := range order {
		ins := make([]*info, len(n.Inputs))
		for k, name := range n.Inputs {
			if name == "" {
				continue
			}
			if in, ok := env[name]; ok {
				ins[k] = in
			} else {
				ins[k] = &info{}
			}
		}
		attrs := map[string]*AttributeProto{}
		for _, a := range n.Attributes {
			attrs[a.Name] = a
		}
		outs, invalid, bug := inferOne(n, index[n], attrs, ins, opset)
		if invalid != nil && res.invalid == nil {
			res.invalid = invalid
		}
		if bug != nil && res.bug == nil {
			res.bug = bug
		}
		for k, name := range n.Outputs {
			if name == "" {
				continue
			}
			var o *info
			if k < len(outs) && outs[k] != nil {
				o = outs[k]
			} else {
				o = &info{}
			}
			if t, ok := declared[name]; ok {
				d := fromType(t)
				if o.et == TypeUndefined {
					o.et = d.et
				}
				if !o.rank && d.rank {
					o.shape, o.rank = d.shape, true
				}
			}
			env[name] = o
		}
	}
	return res
}

// inferOne checks and infers node n (index i of its graph). A panic is
// recovered into bug, naming the node, and leaves the outputs unknown.
func inferOne(n *NodeProto, i int, attrs map[string]*AttributeProto, ins []*info, opset int64) (outs []*info, invalid, bug error) {
	defer func() {
		if r := recover(); r != nil {
			outs, invalid = nil, nil
			bug = fmt.Errorf("onnx: shape inference of node %s panicked: %v", nodeName(n, i), r)
		}
	}()
	if msg := validateNode(n, attrs, ins, opset); msg != "" {
		return nil, fmt.Errorf("%w: node %s: %s", ErrCorrupt, nodeName(n, i), msg), nil
	}
	outs = foldNode(n, attrs, ins, opset)
	if outs == nil {
		outs = inferNode(n, attrs, ins, opset)
		for _, o := range outs {
			promoteValue(o)
		}
	}
	return outs, nil, nil
}

// promoteValue makes a tracked value whose elements and shape are all
// numbers a host constant, so later nodes fold.
func promoteValue(o *info) {
	if o == nil || o.val == nil || o.h != nil || !o.rank || o.r() > 1 {
		return
	}
	shape := make([]int, o.r())
	for i, d := range o.shape {
		if !d.isNum() {
			return
		}
		shape[i] = int(d.coef)
	}
	v := make([]int64, len(o.val))
	for i, m := range o.val {
		if !m.isNum() {
			return
		}
		v[i] = m.coef
	}
	dt, err := kilnDType(o.et)
	if err != nil || dt.IsFloat() {
		return
	}
	h := &hostTensor{dtype: dt, shape: shape, i: v}
	if h.size() != len(v) {
		return
	}
	o.h = h
}

func dimsMono(d []int64) []mono {
	out := make([]mono, len(d))
	for i, v := range d {
		out[i] = known(v)
	}
	return out
}

func intsMono(v []int64) []mono {
	out := make([]mono, len(v))
	for i, x := range v {
		out[i] = known(x)
	}
	return out
}

// sameAs returns a copy of in's type with element type et (0: in's).
func sameAs(in *info, et int32) *info {
	if in == nil {
		return &info{et: et}
	}
	if et == TypeUndefined {
		et = in.et
	}
	return &info{et: et, shape: in.shape, rank: in.rank}
}

func broadcastInfo(et int32, ins ...*info) *info {
	r := 0
	for _, in := range ins {
		if in == nil || !in.rank {
			return &info{et: et}
		}
		r = max(r, in.r())
	}
	out := make([]mono, r)
	for i := range out {
		out[i] = known(1)
	}
	for _, in := range ins {
		off := r - in.r()
		for i, d := range in.shape {
			cur := out[off+i]
			switch {
			case cur.isNum() && cur.coef == 1:
				out[off+i] = d
			case d.isNum() && d.coef == 1:
			case cur.equal(d):
			case cur.isNum():
			case d.isNum():
				out[off+i] = d
			default:
				out[off+i] = unknownDim
			}
		}
	}
	return shapeInfo(et, out)
}

// axisOf normalises a against rank r (-1 when out of range).
func axisOf(a int64, r int) int {
	if a < 0 {
		a += int64(r)
	}
	if a < 0 || a >= int64(r) {
		return -1
	}
	return int(a)
}

// constInts returns the known integer values of in (ok false if unknown).
func constInts(in *info) ([]int64, bool) {
	if in == nil || in.val == nil {
		return nil, false
	}
	out := make([]int64, len(in.val))
	for i, m := range in.val {
		if !m.isNum() {
			return nil, false
		}
		out[i] = m.coef
	}
	return out, true
}

func attrIntsOf(attrs map[string]*AttributeProto, name string) []int64 {
	if a := attrs[name]; a != nil {
		return a.Ints
	}
	return nil
}

func attrIntOf(attrs map[string]*AttributeProto, name string, def int64) int64 {
	if a := attrs[name]; a != nil {
		return a.I
	}
	return def
}

var sameShapeOps = map[string]bool{
	"Neg": true, "Abs": true, "Sqrt": true, "Exp": true, "Log": true, "Erf": true, "Tanh": true,
	"Sigmoid": true, "Relu": true, "LeakyRelu": true, "Elu": true, "Selu": true, "Celu": true, "Gelu": true,
	"HardSigmoid": true, "HardSwish": true, "Softplus": true, "Softsign": true, "Mish": true, "Clip": true,
	"Reciprocal": true, "Floor": true, "Ceil": true, "Round": true, "Sign": true, "Sin": true, "Cos": true,
	"Tan": true, "ThresholdedRelu": true, "Softmax": true, "LogSoftmax": true, "BatchNormalization": true,
	"LayerNormalization": true, "InstanceNormalization": true, "GroupNormalization": true, "Identity": true,
	"Dropout": true, "CumSum": true, "PRelu": true, "ScatterElements": true, "Scatter": true,
}

var broadcastOps = map[string]bool{"Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true,
	"Max": true, "Min": true, "Sum": true, "Mean": true}

var compareOps = map[string]bool{"Equal": true, "Less": true, "LessOrEqual": true, "Greater": true,
	"GreaterOrEqual": true, "And": true, "Or": true, "Xor": true}

// foldNode computes a node whose inputs are all known constants with its
// host implementation, giving exact shapes and values; nil when it cannot.
func foldNode(n *NodeProto, attrs map[string]*AttributeProto, in []*info, opset int64) (res []*info) {
	def := ops[n.OpType]
	if def == nil || def.host == nil || (n.Domain != "" && n.Domain != "ai.onnx") {
		return nil
	}
	vals := make([]*value, len(in))
	for k, x := range in {
		if x == nil {
			continue
		}
		if x.h == nil {
			return nil
		}
		vals[k] = &value{h: x.h}
	}
	c := &call{node: n, attrs: attrs, opset: opset, in: vals, s: &step{node: n}}
	if !c.allHost() {
		return nil
	}
	defer func() {
		// Host implementations fail through c.fail (a *tensor.Error);
		// anything else is a bug, left to inferOne to report.
		if r := recover(); r != nil {
			if e, ok := r.(*tensor.Error); !ok || e == nil {
				panic(r)
			}
			res = nil
		}
	}()
	hs := def.host(c)
	if hs == nil {
		return nil
	}
	for _, h := range hs {
		if h == nil {
			return nil
		}
		o := shapeInfo(onnxDType(h.dtype), intsMono(toInt64s(h.shape)))
		o.h = h
		if !h.dtype.IsFloat() {
			o.val = intsMono(h.ints())
		}
		res = append(res, o)
	}
	return res
}

// inferNode returns the output types of one node.
func inferNode(n *NodeProto, attrs map[string]*AttributeProto, in []*info, opset int64) []*info {
	get := func(k int) *info {
		if k < len(in) && in[k] != nil {
			return in[k]
		}
		return nil
	}
	x := get(0)
	op := n.OpType
	switch {
	case sameShapeOps[op]:
		out := sameAs(x, 0)
		if op == "Identity" && x != nil {
			out.val = x.val
		}
		if op == "Dropout" {
			return []*info{out, sameAs(x, TypeBool)}
		}
		return []*info{out}
	case broadcastOps[op]:
		var ops []*info
		for k := range in {
			if get(k) != nil {
				ops = append(ops, get(k))
			}
		}
		et := int32(TypeUndefined)
		if x != nil {
			et = x.et
		}
		out := broadcastInfo(et, ops...)
		if len(ops) == 2 && out.rank && out.r() <= 1 {
			out.val = valueArith(op, ops[0], ops[1])
		}
		return []*info{out}
	case compareOps[op]:
		out := broadcastInfo(TypeBool, get(0), get(1))
		if op == "Equal" && out.rank && out.r() == 1 {
			out.val = valueEqual(get(0), get(1))
		}
		return []*info{out}
	}
	switch op {
	case "Not":
		return []*info{sameAs(x, TypeBool)}
	case "Where":
		et := int32(TypeUndefined)
		if get(1) != nil {
			et = get(1).et
		}
		out := broadcastInfo(et, get(0), get(1), get(2))
		if out.rank && out.r() == 1 {
			out.val = valueWhere(get(0), get(1), get(2))
		}
		return []*info{out}
	case "Cast":
		out := sameAs(x, int32(attrIntOf(attrs, "to", 0)))
		if x != nil {
			out.val = x.val
		}
		return []*info{out}
	case "CastLike":
		et := int32(TypeUndefined)
		if get(1) != nil {
			et = get(1).et
		}
		out := sameAs(x, et)
		if x != nil {
			out.val = x.val
		}
		return []*info{out}
	case "Constant":
		h, err := constantHost(n)
		if err != nil {
			return nil
		}
		out := shapeInfo(onnxDType(h.dtype), intsMono(toInt64s(h.shape)))
		if h.i != nil && h.size() <= 64 {
			out.val = intsMono(h.i)
		}
		return []*info{out}
	case "Shape":
		if x == nil || !x.rank {
			return []*info{shapeInfo(TypeInt64, []mono{unknownDim})}
		}
		r := int64(x.r())
		start, end := attrIntOf(attrs, "start", 0), attrIntOf(attrs, "end", r)
		if start < 0 {
			start += r
		}
		if end < 0 {
			end += r
		}
		start, end = min(max(start, 0), r), min(max(end, start), r)
		v := append([]mono{}, x.shape[start:end]...)
		return []*info{numsInfo(TypeInt64, v, []mono{known(end - start)})}
	case "Size":
		out := shapeInfo(TypeInt64, []mono{})
		if x != nil && x.rank {
			p := known(1)
			for _, d := range x.shape {
				p = p.mul(d)
			}
			out.val = []mono{p}
		}
		return []*info{out}
	case "Gather":
		idx := get(1)
		if x == nil || !x.rank || idx == nil || !idx.rank {
			return []*info{sameAs(&info{}, typeOf(x))}
		}
		a := axisOf(attrIntOf(attrs, "axis", 0), x.r())
		if a < 0 {
			return []*info{{et: x.et}}
		}
		shape := append(append(append([]mono{}, x.shape[:a]...), idx.shape...), x.shape[a+1:]...)
		out := shapeInfo(x.et, shape)
		if ii, ok := constInts(idx); ok && x.val != nil && x.r() == 1 {
			for _, i := range ii {
				if i < 0 {
					i += int64(len(x.val))
				}
				if i < 0 || i >= int64(len(x.val)) {
					return []*info{out}
				}
				out.val = append(out.val, x.val[i])
			}
		}
		return []*info{out}
	case "Concat":
		var shape []mono
		var val []mono
		allVals := true
		for k := range in {
			t := get(k)
			if t == nil {
				continue
			}
			if !t.rank {
				return []*info{{et: t.et}}
			}
			if shape == nil {
				shape = append([]mono{}, t.shape...)
				a := axisOf(attrIntOf(attrs, "axis", 0), len(shape))
				if a < 0 {
					return []*info{{et: t.et}}
				}
				shape[a] = known(0)
			}
			a := axisOf(attrIntOf(attrs, "axis", 0), len(shape))
			if t.r() != len(shape) {
				return []*info{{et: t.et}}
			}
			shape[a] = shape[a].add(t.shape[a])
			if t.val == nil {
				allVals = false
			}
			val = append(val, t.val...)
		}
		out := shapeInfo(typeOf(x), shape)
		if allVals && len(shape) == 1 {
			out.val = val
		}
		return []*info{out}
	case "Unsqueeze", "Squeeze":
		var axes []int64
		if opset < 13 {
			axes = attrIntsOf(attrs, "axes")
		} else if a := get(1); a != nil {
			var ok bool
			if axes, ok = constInts(a); !ok {
				return []*info{{et: typeOf(x)}}
			}
		}
		if x == nil || !x.rank {
			return []*info{{et: typeOf(x)}}
		}
		var shape []mono
		if op == "Unsqueeze" {
			r := x.r() + len(axes)
			ins := make([]bool, r)
			for _, a := range axes {
				if i := axisOf(a, r); i >= 0 {
					ins[i] = true
				}
			}
			j := 0
			for i := range r {
				if ins[i] {
					shape = append(shape, known(1))
				} else if j < x.r() {
					shape = append(shape, x.shape[j])
					j++
				}
			}
		} else {
			drop := make([]bool, x.r())
			for _, a := range axes {
				if i := axisOf(a, x.r()); i >= 0 {
					drop[i] = true
				}
			}
			for i, d := range x.shape {
				if axes == nil && d.isNum() && d.coef == 1 {
					continue
				}
				if axes == nil && !d.isNum() {
					return []*info{{et: x.et}}
				}
				if !drop[i] {
					shape = append(shape, d)
				}
			}
		}
		out := shapeInfo(x.et, shape)
		out.val = x.val
		return []*info{out}
	case "Reshape":
		t := get(1)
		want, ok := monoVals(t)
		if !ok || x == nil {
			if t != nil && t.rank && t.r() == 1 {
				if shape, ok := unknownShape(t.shape[0]); ok {
					return []*info{shapeInfo(typeOf(x), shape)}
				}
			}
			return []*info{{et: typeOf(x)}}
		}
		shape := make([]mono, len(want))
		infer := -1
		rest := known(1)
		for i, d := range want {
			switch {
			case d.isNum() && d.coef == 0 && attrIntOf(attrs, "allowzero", 0) == 0:
				if x.rank && i < x.r() {
					shape[i] = x.shape[i]
				} else {
					shape[i] = unknownDim
				}
			case d.isNum() && d.coef == -1:
				infer = i
				continue
			default:
				shape[i] = d
			}
			rest = rest.mul(shape[i])
		}
		if infer >= 0 {
			shape[infer] = unknownDim
			if x.rank {
				total := known(1)
				for _, d := range x.shape {
					total = total.mul(d)
				}
				shape[infer] = total.div(rest)
			}
		}
		out := shapeInfo(x.et, shape)
		out.val = x.val
		return []*info{out}
	case "Flatten":
		if x == nil || !x.rank {
			return []*info{shapeInfo(typeOf(x), []mono{unknownDim, unknownDim})}
		}
		a := attrIntOf(attrs, "axis", 1)
		if a < 0 {
			a += int64(x.r())
		}
		a = min(max(a, 0), int64(x.r()))
		p, q := known(1), known(1)
		for i, d := range x.shape {
			if int64(i) < a {
				p = p.mul(d)
			} else {
				q = q.mul(d)
			}
		}
		return []*info{shapeInfo(x.et, []mono{p, q})}
	case "Transpose":
		if x == nil || !x.rank {
			return []*info{{et: typeOf(x)}}
		}
		perm := attrIntsOf(attrs, "perm")
		shape := make([]mono, x.r())
		for i := range shape {
			j := x.r() - 1 - i
			if perm != nil {
				if i >= len(perm) || axisOf(perm[i], x.r()) < 0 {
					return []*info{{et: x.et}}
				}
				j = axisOf(perm[i], x.r())
			}
			shape[i] = x.shape[j]
		}
		return []*info{shapeInfo(x.et, shape)}
	case "Slice":
		return []*info{inferSlice(attrs, in, opset)}
	case "Split":
		if x == nil || !x.rank {
			return nil
		}
		a := axisOf(attrIntOf(attrs, "axis", 0), x.r())
		if a < 0 {
			return nil
		}
		var sizes []int64
		if opset < 13 {
			sizes = attrIntsOf(attrs, "split")
		} else if s := get(1); s != nil {
			sizes, _ = constInts(s)
		}
		outs := make([]*info, len(n.Outputs))
		for k := range outs {
			shape := append([]mono{}, x.shape...)
			switch {
			case sizes != nil && k < len(sizes):
				shape[a] = known(sizes[k])
			case sizes == nil && x.shape[a].isNum() && attrIntOf(attrs, "num_outputs", int64(len(n.Outputs))) > 0:
				num := attrIntOf(attrs, "num_outputs", int64(len(n.Outputs)))
				each := x.shape[a].coef/num + min(x.shape[a].coef%num, 1)
				shape[a] = known(min(each, max(x.shape[a].coef-int64(k)*each, 0)))
			default:
				shape[a] = unknownDim
			}
			outs[k] = shapeInfo(x.et, shape)
		}
		return outs
	case "MatMul":
		a, b := get(0), get(1)
		if a == nil || b == nil || !a.rank || !b.rank || a.r() == 0 || b.r() == 0 {
			return []*info{{et: typeOf(a)}}
		}
		as, bs := a.shape, b.shape
		if len(as) == 1 {
			as = []mono{known(1), as[0]}
		}
		if len(bs) == 1 {
			bs = []mono{bs[0], known(1)}
		}
		batch := broadcastInfo(a.et, shapeInfo(0, as[:len(as)-2]), shapeInfo(0, bs[:len(bs)-2]))
		shape := append([]mono{}, batch.shape...)
		if a.r() > 1 {
			shape = append(shape, as[len(as)-2])
		}
		if b.r() > 1 {
			shape = append(shape, bs[len(bs)-1])
		}
		return []*info{shapeInfo(a.et, shape)}
	case "Gemm":
		a, b := get(0), get(1)
		if a == nil || b == nil || a.r() != 2 || b.r() != 2 {
			return []*info{shapeInfo(typeOf(a), []mono{unknownDim, unknownDim})}
		}
		m, nn := a.shape[0], b.shape[1]
		if attrIntOf(attrs, "transA", 0) != 0 {
			m = a.shape[1]
		}
		if attrIntOf(attrs, "transB", 0) != 0 {
			nn = b.shape[0]
		}
		return []*info{shapeInfo(a.et, []mono{m, nn})}
	case "Conv", "ConvTranspose", "MaxPool", "AveragePool":
		return inferWindow(op, attrs, in, len(n.Outputs))
	case "GlobalAveragePool", "GlobalMaxPool":
		if x == nil || !x.rank || x.r() < 2 {
			return []*info{{et: typeOf(x)}}
		}
		shape := append([]mono{}, x.shape[:2]...)
		for range x.shape[2:] {
			shape = append(shape, known(1))
		}
		return []*info{shapeInfo(x.et, shape)}
	case "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceL1",
		"ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum", "ArgMax", "ArgMin":
		if x == nil || !x.rank {
			return []*info{{et: typeOf(x)}}
		}
		var axes []int64
		switch {
		case op == "ArgMax" || op == "ArgMin":
			axes = []int64{attrIntOf(attrs, "axis", 0)}
		case (op == "ReduceSum" && opset >= 13) || opset >= 18:
			if a := get(1); a != nil {
				var ok bool
				if axes, ok = constInts(a); !ok {
					return []*info{{et: x.et}}
				}
			}
		default:
			axes = attrIntsOf(attrs, "axes")
		}
		if len(axes) == 0 && attrIntOf(attrs, "noop_with_empty_axes", 0) != 0 {
			return []*info{sameAs(x, 0)}
		}
		red := make([]bool, x.r())
		for _, a := range axes {
			if i := axisOf(a, x.r()); i >= 0 {
				red[i] = true
			}
		}
		keep := attrIntOf(attrs, "keepdims", 1) != 0
		var shape []mono
		for i, d := range x.shape {
			if len(axes) == 0 || red[i] {
				if keep {
					shape = append(shape, known(1))
				}
				continue
			}
			shape = append(shape, d)
		}
		et := x.et
		if op == "ArgMax" || op == "ArgMin" {
			et = TypeInt64
		}
		return []*info{shapeInfo(et, shape)}
	case "TopK":
		if x == nil || !x.rank {
			return []*info{{et: typeOf(x)}, {et: TypeInt64}}
		}
		a := axisOf(attrIntOf(attrs, "axis", -1), x.r())
		if a < 0 {
			return nil
		}
		shape := append([]mono{}, x.shape...)
		shape[a] = unknownDim
		if opset < 10 {
			shape[a] = known(attrIntOf(attrs, "k", 0))
		} else if k, ok := constInts(get(1)); ok && len(k) == 1 {
			shape[a] = known(k[0])
		}
		return []*info{shapeInfo(x.et, shape), shapeInfo(TypeInt64, shape)}
	case "GatherElements":
		if idx := get(1); idx != nil {
			return []*info{sameAs(idx, typeOf(x))}
		}
	case "Expand":
		want, ok := monoVals(get(1))
		if !ok || x == nil {
			return []*info{{et: typeOf(x)}}
		}
		return []*info{broadcastInfo(x.et, x, shapeInfo(0, want))}
	case "Tile":
		reps, ok := constInts(get(1))
		if !ok || x == nil || !x.rank || len(reps) != x.r() {
			return []*info{sameRank(x)}
		}
		shape := make([]mono, x.r())
		for i, d := range x.shape {
			shape[i] = d.mul(known(reps[i]))
		}
		return []*info{shapeInfo(x.et, shape)}
	case "Pad":
		var pads []int64
		if opset < 11 {
			pads = attrIntsOf(attrs, "pads")
		} else {
			pads, _ = constInts(get(1))
		}
		if x == nil || !x.rank || len(pads) != 2*x.r() {
			return []*info{sameRank(x)}
		}
		shape := make([]mono, x.r())
		for i, d := range x.shape {
			shape[i] = d.add(known(pads[i] + pads[x.r()+i]))
		}
		return []*info{shapeInfo(x.et, shape)}
	case "ConstantOfShape":
		et := int32(TypeFloat)
		if a := attrs["value"]; a != nil && a.T != nil {
			et = a.T.DataType
		}
		want, ok := monoVals(x)
		if !ok {
			if x != nil && x.rank && x.r() == 1 {
				if shape, ok := unknownShape(x.shape[0]); ok {
					return []*info{shapeInfo(et, shape)}
				}
			}
			return []*info{{et: et}}
		}
		return []*info{shapeInfo(et, want)}
	case "Range":
		out := shapeInfo(typeOf(x), []mono{unknownDim})
		s, ok1 := constInts(get(0))
		l, ok2 := constInts(get(1))
		d, ok3 := constInts(get(2))
		if ok1 && ok2 && ok3 && len(s) == 1 && len(l) == 1 && len(d) == 1 && d[0] != 0 {
			out.shape[0] = known(max(int64(math.Ceil(float64(l[0]-s[0])/float64(d[0]))), 0))
		}
		return []*info{out}
	case "Resize", "Upsample":
		if x == nil || !x.rank {
			return []*info{{et: typeOf(x)}}
		}
		shape := make([]mono, x.r())
		for i := range shape {
			shape[i] = unknownDim
		}
		if sizes, ok := constInts(get(3)); ok && len(sizes) == x.r() {
			for i, s := range sizes {
				shape[i] = known(s)
			}
			return []*info{shapeInfo(x.et, shape)}
		}
		var scales []float64
		switch {
		case op == "Upsample" && opset < 9:
			if a := attrs["scales"]; a != nil {
				for _, f := range a.Floats {
					scales = append(scales, float64(f))
				}
			}
		case op == "Upsample" || opset < 11:
			if s := get(1); s != nil && s.h != nil {
				scales = s.h.floats()
			}
		default:
			if s := get(2); s != nil && s.h != nil {
				scales = s.h.floats()
			}
		}
		if len(scales) == x.r() {
			for i, f := range scales {
				if d := x.shape[i]; d.isNum() {
					shape[i] = known(int64(math.Floor(float64(d.coef) * f)))
				} else if f == 1 {
					shape[i] = d
				}
			}
		}
		return []*info{shapeInfo(x.et, shape)}
	case "LSTM", "GRU", "RNN":
		if x == nil || !x.rank || x.r() != 3 {
			return nil
		}
		h := unknownDim
		if a := attrs["hidden_size"]; a != nil {
			h = known(a.I)
		}
		dirs := known(1)
		if a := attrs["direction"]; a != nil && string(a.S) == "bidirectional" {
			dirs = known(2)
		}
		seq, b := x.shape[0], x.shape[1]
		if attrIntOf(attrs, "layout", 0) != 0 {
			seq, b = b, seq
			return []*info{shapeInfo(x.et, []mono{b, seq, dirs, h}), shapeInfo(x.et, []mono{b, dirs, h}), shapeInfo(x.et, []mono{b, dirs, h})}
		}
		return []*info{shapeInfo(x.et, []mono{seq, dirs, b, h}), shapeInfo(x.et, []mono{dirs, b, h}), shapeInfo(x.et, []mono{dirs, b, h})}
	case "Einsum":
		return []*info{inferEinsum(attrs, in)}
	}
	return nil
}

func typeOf(in *info) int32 {
	if in == nil {
		return TypeUndefined
	}
	return in.et
}

func sameRank(x *info) *info {
	if x == nil || !x.rank {
		return &info{et: typeOf(x)}
	}
	shape := make([]mono, x.r())
	for i := range shape {
		shape[i] = unknownDim
	}
	return shapeInfo(x.et, shape)
}

func toInt64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// monoVals returns the element values of a 1-D tensor whose values are
// tracked (numbers or symbols).
func monoVals(in *info) ([]mono, bool) {
	if in == nil || in.val == nil {
		return nil, false
	}
	return in.val, true
}

// valueEqual compares tracked values where the answer is certain: two
// numbers, equal monomials, or a symbol (a size, never negative) against a
// negative number.
func valueEqual(a, b *info) []mono {
	if a == nil || b == nil || a.val == nil || b.val == nil {
		return nil
	}
	n := max(len(a.val), len(b.val))
	if (len(a.val) != n && len(a.val) != 1) || (len(b.val) != n && len(b.val) != 1) {
		return nil
	}
	out := make([]mono, n)
	for i := range out {
		x, y := a.val[min(i, len(a.val)-1)], b.val[min(i, len(b.val)-1)]
		switch {
		case x.equal(y):
			out[i] = known(1)
		case x.isNum() && y.isNum():
			out[i] = known(0)
		case x.ok && y.isNum() && y.coef < 0, y.ok && x.isNum() && x.coef < 0:
			out[i] = known(0)
		default:
			return nil
		}
	}
	return out
}

// valueWhere selects between tracked values under a known condition.
func valueWhere(c, a, b *info) []mono {
	if c == nil || a == nil || b == nil || c.val == nil || a.val == nil || b.val == nil {
		return nil
	}
	n := max(len(c.val), len(a.val), len(b.val))
	pick := func(v []mono, i int) (mono, bool) {
		if len(v) == 1 {
			return v[0], true
		}
		if len(v) == n {
			return v[i], true
		}
		return mono{}, false
	}
	out := make([]mono, n)
	for i := range out {
		cv, ok1 := pick(c.val, i)
		av, ok2 := pick(a.val, i)
		bv, ok3 := pick(b.val, i)
		if !ok1 || !ok2 || !ok3 || !cv.isNum() {
			return nil
		}
		if cv.coef != 0 {
			out[i] = av
		} else {
			out[i] = bv
		}
	}
	return out
}

// valueArith follows Add, Sub, Mul and Div over tracked integer values.
func valueArith(op string, a, b *info) []mono {
	if a.val == nil || b.val == nil {
		return nil
	}
	n := max(len(a.val), len(b.val))
	if (len(a.val) != n && len(a.val) != 1) || (len(b.val) != n && len(b.val) != 1) {
		return nil
	}
	out := make([]mono, n)
	for i := range out {
		x, y := a.val[min(i, len(a.val)-1)], b.val[min(i, len(b.val)-1)]
		switch op {
		case "Add":
			out[i] = x.add(y)
		case "Sub":
			if y.isNum() {
				out[i] = x.add(known(-y.coef))
			} else if x.equal(y) {
				out[i] = known(0)
			} else {
				out[i] = unknownDim
			}
		case "Mul":
			out[i] = x.mul(y)
		case "Div":
			out[i] = x.div(y)
			if x.isNum() && y.isNum() && y.coef != 0 {
				out[i] = known(x.coef / y.coef)
			}
		default:
			return nil
		}
	}
	return out
}

func inferSlice(attrs map[string]*AttributeProto, in []*info, opset int64) *info {
	x := at(in, 0)
	if x == nil || !x.rank {
		return &info{et: typeOf(x)}
	}
	var starts, ends, axes, steps []int64
	if opset < 10 {
		starts, ends, axes = attrIntsOf(attrs, "starts"), attrIntsOf(attrs, "ends"), attrIntsOf(attrs, "axes")
	} else {
		var ok1, ok2 bool
		starts, ok1 = constInts(at(in, 1))
		ends, ok2 = constInts(at(in, 2))
		if !ok1 || !ok2 {
			return sameRank(x)
		}
		if a := at(in, 3); a != nil {
			var ok bool
			if axes, ok = constInts(a); !ok {
				return sameRank(x)
			}
		}
		if s := at(in, 4); s != nil {
			var ok bool
			if steps, ok = constInts(s); !ok {
				return sameRank(x)
			}
		}
	}
	shape := append([]mono{}, x.shape...)
	var val []mono
	if x.val != nil && x.r() == 1 && x.shape[0].isNum() && int64(len(x.val)) == x.shape[0].coef {
		val = x.val
	}
	for i := range starts {
		if i >= len(ends) {
			return sameRank(x)
		}
		a := i
		if axes != nil {
			if i >= len(axes) {
				return sameRank(x)
			}
			if a = axisOf(axes[i], x.r()); a < 0 {
				return sameRank(x)
			}
		}
		step := int64(1)
		if steps != nil && i < len(steps) {
			step = steps[i]
		}
		d := shape[a]
		if !d.isNum() {
			if starts[i] == 0 && ends[i] >= math.MaxInt32 && step == 1 {
				continue
			}
			shape[a] = unknownDim
			val = nil
			continue
		}
		b := sliceBoundsOf(starts[i], ends[i], step, d.coef)
		shape[a] = known(int64(b.n))
		if val != nil {
			var nv []mono
			for j := range b.n {
				nv = append(nv, val[b.start+j*b.step])
			}
			val = nv
		}
	}
	out := shapeInfo(x.et, shape)
	out.val = val
	return out
}

func at(in []*info, k int) *info {
	if k < len(in) {
		return in[k]
	}
	return nil
}

// sliceBoundsOf normalises one axis of a slice as Slice does.
func sliceBoundsOf(s, e, step, d int64) sliceBound {
	if s < 0 {
		s += d
	}
	if e < 0 {
		e += d
	}
	var n int64
	// (span-1)/|step|+1 rather than (span+|step|-1)/|step|: no overflow
	// for a step near math.MaxInt64.
	if step > 0 {
		s, e = min(max(s, 0), d), min(max(e, 0), d)
		if e > s {
			n = (e-s-1)/step + 1
		}
	} else if step < 0 {
		// -math.MinInt64 is itself negative, but s-e-1 < |step| then
		// makes the quotient 0 and n 1, which is right.
		s, e = min(max(s, -1), d-1), min(max(e, -1), d-1)
		if s > e {
			n = (s-e-1)/(-step) + 1
		}
	}
	return sliceBound{start: int(s), n: int(n), step: int(step)}
}

// inferWindow covers Conv, ConvTranspose, MaxPool and AveragePool.
func inferWindow(op string, attrs map[string]*AttributeProto, in []*info, nout int) []*info {
	x, w := at(in, 0), at(in, 1)
	if x == nil || !x.rank || x.r() < 3 {
		return []*info{sameRank(x)}
	}
	sp := x.r() - 2
	k := attrIntsOf(attrs, "kernel_shape")
	if k == nil && w != nil && w.rank && w.r() == x.r() {
		for _, d := range w.shape[2:] {
			if !d.isNum() {
				return []*info{sameRank(x)}
			}
			k = append(k, d.coef)
		}
	}
	if len(k) != sp {
		return []*info{sameRank(x)}
	}
	get := func(name string, def int64) []int64 {
		v := attrIntsOf(attrs, name)
		if len(v) == sp {
			return v
		}
		out := make([]int64, sp)
		for i := range out {
			out[i] = def
		}
		return out
	}
	strides, dil, outPad := get("strides", 1), get("dilations", 1), get("output_padding", 0)
	pads := attrIntsOf(attrs, "pads")
	if len(pads) != 2*sp {
		pads = make([]int64, 2*sp)
	}
	autoPad := "NOTSET"
	if a := attrs["auto_pad"]; a != nil {
		autoPad = string(a.S)
	}
	ceil := attrIntOf(attrs, "ceil_mode", 0) != 0
	shape := make([]mono, x.r())
	shape[0] = x.shape[0]
	switch op {
	case "Conv":
		shape[1] = unknownDim
		if w != nil && w.rank && w.r() > 0 {
			shape[1] = w.shape[0]
		}
	case "ConvTranspose":
		shape[1] = unknownDim
		if w != nil && w.rank && w.r() > 1 && w.shape[1].isNum() {
			shape[1] = w.shape[1].mul(known(attrIntOf(attrs, "group", 1)))
		}
	default:
		shape[1] = x.shape[1]
	}
	os := attrIntsOf(attrs, "output_shape")
	for i := range sp {
		d := x.shape[2+i]
		// Out-of-range arguments (Load refuses them) leave the size
		// unknown; bounding every operand by 2^31 keeps the arithmetic
		// below from overflowing.
		if !d.isNum() || !windowArgsSane(d.coef, k[i], strides[i], dil[i], outPad[i], pads[i], pads[sp+i]) {
			shape[2+i] = unknownDim
			continue
		}
		n := d.coef
		ext := (k[i]-1)*dil[i] + 1
		var o int64
		switch {
		case op == "ConvTranspose" && len(os) >= sp:
			o = os[len(os)-sp+i]
			if o < 0 {
				o = -1
			}
		case op == "ConvTranspose" && (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER"):
			o = n * strides[i]
		case op == "ConvTranspose":
			o = strides[i]*(n-1) + outPad[i] + ext - pads[i] - pads[sp+i]
		case autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
			o = (n + strides[i] - 1) / strides[i]
		case autoPad == "VALID":
			o = (n-ext)/strides[i] + 1
		default:
			num := n + pads[i] + pads[sp+i] - ext
			if ceil {
				o = (num+strides[i]-1)/strides[i] + 1
				if (o-1)*strides[i] >= n+pads[i] {
					o--
				}
			} else {
				o = num/strides[i] + 1
			}
		}
		shape[2+i] = known(o)
		if o < 0 {
			shape[2+i] = unknownDim
		}
	}
	out := shapeInfo(x.et, shape)
	if nout > 1 {
		return []*info{out, shapeInfo(TypeInt64, shape)}
	}
	return []*info{out}
}

// windowArgsSane reports whether a window's size, kernel, stride and
// dilation are positive and every argument within ±2^31.
func windowArgsSane(n, k, stride, dil int64, rest ...int64) bool {
	const limit = 1 << 31
	if n < 0 || n > limit || k <= 0 || k > limit || stride <= 0 || stride > limit || dil <= 0 || dil > limit {
		return false
	}
	for _, v := range rest {
		if v < -limit || v > limit {
			return false
		}
	}
	return true
}

func inferEinsum(attrs map[string]*AttributeProto, in []*info) *info {
	a := attrs["equation"]
	if a == nil || len(in) == 0 || in[0] == nil {
		return &info{}
	}
	et := in[0].et
	eq := strings.ReplaceAll(string(a.S), " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	ell := 0
	for k, term := range terms {
		t := at(in, k)
		if t == nil || !t.rank {
			return &info{et: et}
		}
		if strings.Contains(term, "...") {
			ell = max(ell, t.r()-len([]rune(strings.ReplaceAll(term, "...", ""))))
		}
	}
	ellLabels := func(n int) string {
		var b strings.Builder
		for i := ell - n; i < ell; i++ {
			b.WriteRune(rune('0' + i))
		}
		return b.String()
	}
	size := map[rune]mono{}
	count := map[rune]int{}
	for k, term := range terms {
		t := at(in, k)
		term = strings.Replace(term, "...", ellLabels(t.r()-len([]rune(strings.ReplaceAll(term, "...", "")))), 1)
		if t.r() != len([]rune(term)) {
			return &info{et: et}
		}
		for i, l := range term {
			count[l]++
			if cur, ok := size[l]; !ok || (cur.isNum() && cur.coef == 1) {
				size[l] = t.shape[i]
			}
		}
	}
	var out []rune
	if explicit {
		out = []rune(strings.Replace(rhs, "...", ellLabels(ell), 1))
	} else {
		for l, n := range count {
			if n == 1 {
				out = append(out, l)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	}
	shape := []mono{}
	for _, l := range out {
		d, ok := size[l]
		if !ok {
			return &info{et: et}
		}
		shape = append(shape, d)
	}
	return shapeInfo(et, shape)
}

// constantHost decodes a Constant node's value for inference.
func constantHost(n *NodeProto) (h *hostTensor, err error) {
	c := &call{node: n, attrs: map[string]*AttributeProto{}}
	for _, a := range n.Attributes {
		c.attrs[a.Name] = a
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("constant: %v", r)
		}
	}()
	return constantOf(c)[0], nil
}
