package onnx

import (
	"fmt"
	"math"
	"strings"
)

// Attribute validation: every node of an operator Kiln implements is
// checked against the operator's definition before its shapes are
// inferred, so a crafted file (a Conv with strides=0, a Transpose whose
// perm repeats an axis, a Reshape to 2^70 elements) is refused at Load and
// by Describe with the node, the attribute and the value named, instead of
// reaching arithmetic that would divide by zero or allocate without bound.
// Checks that need a rank or a size use what inference knows of the node's
// inputs at that point and are skipped where it knows nothing.

// validateGraph runs shape inference over g and returns the first node
// whose attributes (or constant arguments) break its operator's
// definition, as an error wrapping ErrCorrupt, or nil.
func validateGraph(g *GraphProto, opset int64) error {
	return inferGraph(g, opset).invalid
}

// validateNode checks node n's attributes and constant inputs against
// what is known of its inputs; it returns "" when they are valid, else
// what is wrong ("strides[0] = 0, must be positive"). Nodes of other
// domains and operators Kiln does not implement are left to Load's
// unsupported-operator report.
func validateNode(n *NodeProto, attrs map[string]*AttributeProto, in []*info, opset int64) string {
	if n.Domain != "" && n.Domain != "ai.onnx" || ops[n.OpType] == nil {
		return ""
	}
	v := &validator{attrs: attrs, in: in, opset: opset}
	switch op := n.OpType; op {
	case "Conv", "ConvTranspose", "MaxPool", "AveragePool":
		v.window(op)
	case "Softmax", "LogSoftmax":
		if opset >= 13 {
			v.axisAttr("axis", -1, v.rank(0), false)
		} else {
			v.axisAttr("axis", 1, v.rank(0), true)
		}
	case "LayerNormalization":
		v.axisAttr("axis", -1, v.rank(0), false)
	case "Flatten":
		v.axisAttr("axis", 1, v.rank(0), true)
	case "Concat":
		r := -1
		for k := range in {
			if r = v.rank(k); r >= 0 {
				break
			}
		}
		v.axisAttr("axis", 0, r, false)
	case "Gather":
		v.gather()
	case "GatherElements", "ScatterElements", "Scatter":
		v.axisAttr("axis", 0, v.rank(0), false)
	case "CumSum":
		if a, ok := v.constInput(1); ok {
			v.axisList("axis", a, v.rank(0))
		}
	case "ArgMax", "ArgMin":
		v.axisAttr("axis", 0, v.rank(0), false)
	case "TopK":
		v.topK()
	case "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceL1",
		"ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum":
		if op == "ReduceSum" && opset >= 13 || opset >= 18 {
			if a, ok := v.constInput(1); ok {
				v.axisList("axes", a, v.rank(0))
			}
		} else {
			v.axisList("axes", attrIntsOf(attrs, "axes"), v.rank(0))
		}
	case "Squeeze", "Unsqueeze":
		v.squeeze(op)
	case "Transpose":
		v.transpose()
	case "Split":
		v.split(len(n.Outputs))
	case "Slice":
		v.slice()
	case "Reshape":
		v.reshape()
	case "Expand":
		if s, ok := v.constInput(1); ok {
			v.shapeArg("shape", s, false)
		}
	case "ConstantOfShape":
		v.constantOfShape()
	case "Tile":
		v.tile()
	case "Pad":
		v.pad()
	case "Range":
		if d, ok := v.constInput(2); ok && len(d) == 1 && d[0] == 0 {
			v.fail("delta = 0, must not be zero")
		}
	case "GroupNormalization":
		v.groupNorm()
	case "Resize", "Upsample":
		v.resize(op)
	case "LSTM", "GRU", "RNN":
		v.recurrent()
	case "Einsum":
		v.einsum()
	}
	return v.msg
}

// validator accumulates the first problem found with one node.
type validator struct {
	attrs map[string]*AttributeProto
	in    []*info
	opset int64
	msg   string
}

// fail records the first problem.
func (v *validator) fail(format string, args ...any) {
	if v.msg == "" {
		v.msg = fmt.Sprintf(format, args...)
	}
}

// rank returns the known rank of input k, or -1.
func (v *validator) rank(k int) int {
	if x := at(v.in, k); x != nil && x.rank {
		return x.r()
	}
	return -1
}

// dim returns the known size of dimension d of input k, or -1.
func (v *validator) dim(k, d int) int64 {
	if x := at(v.in, k); x != nil && x.rank && d >= 0 && d < x.r() && x.shape[d].isNum() {
		return x.shape[d].coef
	}
	return -1
}

// constInput returns the values of input k when they are known numbers.
func (v *validator) constInput(k int) ([]int64, bool) {
	return constInts(at(v.in, k))
}

// ints returns an ints attribute (nil when absent).
func (v *validator) ints(name string) []int64 { return attrIntsOf(v.attrs, name) }

// each checks every element of an ints attribute (or argument) named name.
func (v *validator) each(name string, vals []int64, ok func(int64) bool, must string) {
	for i, x := range vals {
		if !ok(x) {
			v.fail("%s[%d] = %d, must be %s", name, i, x, must)
			return
		}
	}
}

func positive(x int64) bool    { return x > 0 }
func nonNegative(x int64) bool { return x >= 0 }

// length checks that an ints attribute present has want elements.
func (v *validator) length(name string, vals []int64, want int, what string) {
	if vals != nil && want >= 0 && len(vals) != want {
		v.fail("%s has %d values %v, want %d (%s)", name, len(vals), vals, want, what)
	}
}

// axisAttr checks the int attribute name (default def) against rank r
// (unknown when negative): in [-r, r-1], or [-r, r] when inclusive.
func (v *validator) axisAttr(name string, def int64, r int, inclusive bool) {
	a := attrIntOf(v.attrs, name, def)
	if r < 0 {
		return
	}
	hi := int64(r) - 1
	if inclusive {
		hi = int64(r)
	}
	if a < -int64(r) || a > hi {
		v.fail("%s = %d, out of range for rank %d", name, a, r)
	}
}

// axisList checks a list of axes against rank r: each in range, none
// repeated once negative ones are normalised.
func (v *validator) axisList(name string, axes []int64, r int) {
	if r < 0 {
		return
	}
	seen := map[int64]int{}
	for i, a := range axes {
		if a < -int64(r) || a >= int64(r) {
			v.fail("%s[%d] = %d, out of range for rank %d", name, i, a, r)
			return
		}
		if a < 0 {
			a += int64(r)
		}
		if j, dup := seen[a]; dup {
			v.fail("%s[%d] = %d repeats axis %d (%s[%d])", name, i, axes[i], a, name, j)
			return
		}
		seen[a] = i
	}
}

// shapeArg checks a shape argument (Expand's shape, ConstantOfShape's
// input): no negative sizes, and no more than maxRunElements elements.
func (v *validator) shapeArg(name string, shape []int64, reshape bool) {
	total := int64(1)
	for i, d := range shape {
		if d < 0 && !(reshape && d == -1) {
			v.fail("%s[%d] = %d, must not be negative", name, i, d)
			return
		}
		if d <= 0 {
			continue
		}
		if total > maxRunElements/d {
			v.fail("%s %v has more than 2^32 elements", name, shape)
			return
		}
		total *= d
	}
}

// window checks Conv, ConvTranspose, MaxPool and AveragePool.
func (v *validator) window(op string) {
	k := v.ints("kernel_shape")
	v.each("kernel_shape", k, positive, "positive")
	if k == nil && (op == "MaxPool" || op == "AveragePool") {
		v.fail("kernel_shape is missing")
	}
	// The number of spatial dimensions, from what is known.
	sp := -1
	switch {
	case v.rank(0) >= 0:
		sp = v.rank(0) - 2
	case k != nil:
		sp = len(k)
	case (op == "Conv" || op == "ConvTranspose") && v.rank(1) >= 0:
		sp = v.rank(1) - 2
	}
	if v.rank(0) >= 0 && v.rank(0) < 3 {
		v.fail("input has rank %d, want at least 3 ([N, C, spatial…])", v.rank(0))
		return
	}
	if (op == "Conv" || op == "ConvTranspose") && v.rank(0) >= 0 && v.rank(1) >= 0 && v.rank(1) != v.rank(0) {
		v.fail("weight has rank %d, the input %d", v.rank(1), v.rank(0))
	}
	what := fmt.Sprintf("one per spatial dimension, %d", sp)
	v.length("kernel_shape", k, sp, what)
	v.length("strides", v.ints("strides"), sp, what)
	v.each("strides", v.ints("strides"), positive, "positive")
	v.length("dilations", v.ints("dilations"), sp, what)
	v.each("dilations", v.ints("dilations"), positive, "positive")
	pads := v.ints("pads")
	if sp >= 0 {
		v.length("pads", pads, 2*sp, "a begin and an end per spatial dimension")
	} else if len(pads)%2 != 0 {
		v.fail("pads has %d values %v, want a begin and an end per spatial dimension", len(pads), pads)
	}
	v.each("pads", pads, nonNegative, "non-negative")
	switch ap := attrStringOf(v.attrs, "auto_pad", "NOTSET"); ap {
	case "NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER":
	default:
		v.fail("auto_pad = %q, must be NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap)
	}
	if op == "ConvTranspose" {
		v.length("output_padding", v.ints("output_padding"), sp, what)
		v.each("output_padding", v.ints("output_padding"), nonNegative, "non-negative")
		os := v.ints("output_shape")
		if os != nil && sp >= 0 && len(os) < sp {
			v.fail("output_shape has %d values %v, want at least %d (one per spatial dimension)", len(os), os, sp)
		}
		v.each("output_shape", os, positive, "positive")
	}
	if op != "Conv" && op != "ConvTranspose" {
		return
	}
	g := attrIntOf(v.attrs, "group", 1)
	if g <= 0 {
		v.fail("group = %d, must be positive", g)
		return
	}
	// Conv's weight is [M, C/group, k…]; ConvTranspose's [C, M/group, k…].
	wOut, wIn, c := v.dim(1, 0), v.dim(1, 1), v.dim(0, 1)
	switch {
	case op == "Conv" && wOut >= 0 && wOut%g != 0:
		v.fail("group = %d does not divide the %d output channels of the weight", g, wOut)
	case op == "Conv" && c >= 0 && wIn >= 0 && (wIn > math.MaxInt64/g || wIn*g != c):
		v.fail("group = %d: the input's %d channels are not group × the weight's %d", g, c, wIn)
	case op == "ConvTranspose" && c >= 0 && c%g != 0:
		v.fail("group = %d does not divide the input's %d channels", g, c)
	}
}

// gather checks Gather's axis and, when they are constant, its indices.
func (v *validator) gather() {
	r := v.rank(0)
	v.axisAttr("axis", 0, r, false)
	if v.msg != "" || r < 0 {
		return
	}
	a := axisOf(attrIntOf(v.attrs, "axis", 0), r)
	n := v.dim(0, a)
	idx, ok := v.constInput(1)
	if !ok || n < 0 {
		return
	}
	for i, x := range idx {
		if x < -n || x >= n {
			v.fail("indices[%d] = %d, out of range for axis %d of size %d", i, x, a, n)
			return
		}
	}
}

// topK checks TopK's axis and k.
func (v *validator) topK() {
	r := v.rank(0)
	v.axisAttr("axis", -1, r, false)
	var k []int64
	if v.opset < 10 {
		if a := v.attrs["k"]; a != nil {
			k = []int64{a.I}
		}
	} else if c, ok := v.constInput(1); ok {
		k = c
	}
	if len(k) != 1 {
		return
	}
	if k[0] < 0 {
		v.fail("k = %d, must not be negative", k[0])
		return
	}
	if r > 0 && v.msg == "" {
		if n := v.dim(0, axisOf(attrIntOf(v.attrs, "axis", -1), r)); n >= 0 && k[0] > n {
			v.fail("k = %d is larger than the axis (%d)", k[0], n)
		}
	}
}

// squeeze checks the axes of Squeeze and Unsqueeze.
func (v *validator) squeeze(op string) {
	var axes []int64
	if v.opset < 13 {
		axes = v.ints("axes")
	} else if a, ok := v.constInput(1); ok {
		axes = a
	} else {
		return
	}
	r := v.rank(0)
	if r < 0 {
		return
	}
	if op == "Unsqueeze" {
		v.axisList("axes", axes, r+len(axes))
		return
	}
	v.axisList("axes", axes, r)
	if v.msg != "" {
		return
	}
	for i, a := range axes {
		if d := v.dim(0, axisOf(a, r)); d >= 0 && d != 1 {
			v.fail("axes[%d] = %d names a dimension of size %d, not 1", i, a, d)
			return
		}
	}
}

// transpose checks that perm is a permutation of the input's axes.
func (v *validator) transpose() {
	p := v.ints("perm")
	if p == nil {
		return
	}
	r := v.rank(0)
	if r < 0 {
		r = len(p)
	}
	if len(p) != r {
		v.fail("perm %v has %d values, the input's rank is %d", p, len(p), r)
		return
	}
	v.axisList("perm", p, r)
}

// split checks Split's axis and sizes.
func (v *validator) split(outputs int) {
	r := v.rank(0)
	v.axisAttr("axis", 0, r, false)
	if v.msg != "" {
		return
	}
	var sizes []int64
	name := "split"
	if v.opset < 13 {
		sizes = v.ints("split")
	} else if at(v.in, 1) != nil {
		var ok bool
		if sizes, ok = v.constInput(1); !ok {
			return
		}
	}
	if sizes == nil {
		if a := v.attrs["num_outputs"]; a != nil && a.I <= 0 {
			v.fail("num_outputs = %d, must be positive", a.I)
		}
		if outputs == 0 {
			v.fail("no outputs to split into")
		}
		return
	}
	v.each(name, sizes, nonNegative, "non-negative")
	if v.msg == "" && len(sizes) != outputs {
		v.fail("%s %v has %d sizes for %d outputs", name, sizes, len(sizes), outputs)
	}
	if v.msg != "" || r < 0 {
		return
	}
	if n := v.dim(0, axisOf(attrIntOf(v.attrs, "axis", 0), r)); n >= 0 {
		total := int64(0)
		for _, s := range sizes {
			if total > math.MaxInt64-s {
				total = -1
				break
			}
			total += s
		}
		if total != n {
			v.fail("%s %v does not add up to the axis (%d)", name, sizes, n)
		}
	}
}

// slice checks Slice's arguments: equal lengths, axes in range and not
// repeated, no zero step.
func (v *validator) slice() {
	var starts, ends, axes, steps []int64
	known := true
	if v.opset < 10 {
		starts, ends, axes = v.ints("starts"), v.ints("ends"), v.ints("axes")
	} else {
		var ok1, ok2, ok3, ok4 bool
		starts, ok1 = v.constInput(1)
		ends, ok2 = v.constInput(2)
		axes, ok3 = v.constInput(3)
		steps, ok4 = v.constInput(4)
		if !ok3 && at(v.in, 3) == nil {
			ok3 = true
		}
		if !ok4 && at(v.in, 4) == nil {
			ok4 = true
		}
		known = ok1 && ok2 && ok3 && ok4
	}
	v.each("steps", steps, func(x int64) bool { return x != 0 }, "non-zero")
	if !known || v.msg != "" {
		return
	}
	if len(starts) != len(ends) || axes != nil && len(axes) != len(starts) || steps != nil && len(steps) != len(starts) {
		v.fail("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
		return
	}
	r := v.rank(0)
	if axes == nil && r >= 0 && len(starts) > r {
		v.fail("starts %v has more values than the input's rank %d", starts, r)
		return
	}
	v.axisList("axes", axes, r)
}

// reshape checks Reshape's target shape: at most one -1, no other negative
// size, no -1 beside a literal 0 under allowzero, no more than
// maxRunElements elements, and the input's size where both are known.
func (v *validator) reshape() {
	var shape []int64
	if v.opset < 5 && v.attrs["shape"] != nil {
		shape = v.ints("shape")
	} else if s, ok := v.constInput(1); ok {
		shape = s
	} else {
		return
	}
	allowZero := attrIntOf(v.attrs, "allowzero", 0) != 0
	infer, zero := -1, false
	for i, d := range shape {
		switch {
		case d == -1 && infer >= 0:
			v.fail("shape[%d] = -1 beside shape[%d] = -1: at most one size can be inferred", i, infer)
			return
		case d == -1:
			infer = i
		case d < 0:
			v.fail("shape[%d] = %d, must not be negative (but -1)", i, d)
			return
		case d == 0 && allowZero:
			zero = true
		}
	}
	if zero && infer >= 0 {
		v.fail("shape %v has both -1 and 0 with allowzero=1", shape)
		return
	}
	// The size of the target, with 0 copying the input's dimension.
	x := at(v.in, 0)
	total, allKnown := int64(1), true
	for i, d := range shape {
		switch {
		case d == -1:
			continue
		case d == 0 && !allowZero:
			if x != nil && x.rank && i >= x.r() {
				v.fail("shape[%d] = 0 copies dimension %d of an input of rank %d", i, i, x.r())
				return
			}
			if d = v.dim(0, i); d < 0 {
				allKnown = false
				continue
			}
		}
		if d != 0 && total > maxRunElements/d {
			v.fail("shape %v has more than 2^32 elements", shape)
			return
		}
		total *= d
	}
	if !allKnown || x == nil || !x.rank {
		return
	}
	size := int64(1)
	for _, d := range x.shape {
		if !d.isNum() {
			return
		}
		c, ok := mulInt(size, d.coef)
		if !ok {
			return
		}
		size = c
	}
	switch {
	case infer < 0 && total != size:
		v.fail("shape %v holds %d elements, the input %d", shape, total, size)
	case infer >= 0 && (total == 0 || size%total != 0):
		v.fail("shape %v cannot hold the input's %d elements", shape, size)
	}
}

// constantOfShape checks ConstantOfShape's shape and value.
func (v *validator) constantOfShape() {
	if a := v.attrs["value"]; a != nil && a.T != nil {
		if n, err := numElements(a.T.Dims); err != nil || n != 1 {
			v.fail("value has dims %v, must hold one element", a.T.Dims)
			return
		}
	}
	if s, ok := v.constInput(0); ok {
		v.shapeArg("shape", s, false)
	}
}

// tile checks Tile's repeats: one per dimension, none negative.
func (v *validator) tile() {
	reps, ok := v.constInput(1)
	if !ok {
		return
	}
	v.each("repeats", reps, nonNegative, "non-negative")
	if r := v.rank(0); v.msg == "" && r >= 0 && len(reps) != r {
		v.fail("repeats %v has %d values, the input's rank is %d", reps, len(reps), r)
	}
}

// pad checks the number of Pad's pads (negative pads crop, as ONNX
// allows) and its axes.
func (v *validator) pad() {
	var pads []int64
	if v.opset < 11 {
		pads = v.ints("pads")
	} else if p, ok := v.constInput(1); ok {
		pads = p
	} else {
		return
	}
	r := v.rank(0)
	n := r
	if v.opset >= 18 && at(v.in, 3) != nil {
		axes, ok := v.constInput(3)
		if !ok {
			return
		}
		v.axisList("axes", axes, r)
		n = len(axes)
	}
	if n >= 0 && len(pads) != 2*n {
		v.fail("pads has %d values %v, want %d (a begin and an end per padded axis)", len(pads), pads, 2*n)
	}
}

// groupNorm checks num_groups against the channels.
func (v *validator) groupNorm() {
	a := v.attrs["num_groups"]
	if a == nil {
		v.fail("num_groups is missing")
		return
	}
	if a.I <= 0 {
		v.fail("num_groups = %d, must be positive", a.I)
		return
	}
	if c := v.dim(0, 1); c >= 0 && c%a.I != 0 {
		v.fail("num_groups = %d does not divide the input's %d channels", a.I, c)
	}
}

// resize checks Resize's and Upsample's scales, sizes and axes.
func (v *validator) resize(op string) {
	r := v.rank(0)
	n := r
	if a := v.ints("axes"); a != nil {
		v.axisList("axes", a, r)
		n = len(a)
	}
	var scales []float64
	switch {
	case op == "Upsample" && v.opset < 9:
		if a := v.attrs["scales"]; a != nil {
			for _, f := range a.Floats {
				scales = append(scales, float64(f))
			}
		}
	case op == "Upsample" || v.opset < 11:
		if s := at(v.in, 1); s != nil && s.h != nil {
			scales = s.h.floats()
		}
	default:
		if s := at(v.in, 2); s != nil && s.h != nil {
			scales = s.h.floats()
		}
		if sizes, ok := v.constInput(3); ok && len(sizes) > 0 {
			v.each("sizes", sizes, positive, "positive")
			if n >= 0 && len(sizes) != n {
				v.fail("sizes %v has %d values, want %d", sizes, len(sizes), n)
			}
			if len(scales) > 0 {
				v.fail("both scales and sizes are given")
			}
			return
		}
	}
	if len(scales) == 0 {
		return
	}
	for i, f := range scales {
		if !(f > 0) || math.IsInf(f, 0) {
			v.fail("scales[%d] = %v, must be positive and finite", i, f)
			return
		}
		if i < n {
			if d := v.dim(0, i); d >= 0 && float64(d)*f > maxRunElements {
				v.fail("scales[%d] = %v resizes dimension %d of size %d past 2^32", i, f, i, d)
				return
			}
		}
	}
	if n >= 0 && len(scales) != n {
		v.fail("scales %v has %d values, want %d", scales, len(scales), n)
	}
}

// recurrent checks LSTM, GRU and RNN's hidden_size, direction and layout.
func (v *validator) recurrent() {
	if a := v.attrs["hidden_size"]; a != nil && a.I <= 0 {
		v.fail("hidden_size = %d, must be positive", a.I)
	}
	switch d := attrStringOf(v.attrs, "direction", "forward"); d {
	case "forward", "reverse", "bidirectional":
	default:
		v.fail("direction = %q, must be forward, reverse or bidirectional", d)
	}
	if l := attrIntOf(v.attrs, "layout", 0); l != 0 && l != 1 {
		v.fail("layout = %d, must be 0 or 1", l)
	}
	if r := v.rank(0); r >= 0 && r != 3 {
		v.fail("input has rank %d, want 3", r)
	}
}

// einsum checks that the equation has one term per input, of letters
// and at most one ellipsis each, and an output of labels the inputs use.
func (v *validator) einsum() {
	eq := strings.ReplaceAll(attrStringOf(v.attrs, "equation", ""), " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(v.in) {
		v.fail("equation %q has %d terms for %d inputs", eq, len(terms), len(v.in))
		return
	}
	used := map[rune]bool{}
	letters := func(s string) bool {
		if strings.Count(s, "...") > 1 {
			return false
		}
		for _, c := range strings.Replace(s, "...", "", 1) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
			used[c] = true
		}
		return true
	}
	for _, t := range terms {
		if !letters(t) {
			v.fail("equation %q: term %q must be letters with at most one ...", eq, t)
			return
		}
	}
	if !explicit {
		return
	}
	seen := map[rune]bool{}
	for _, c := range strings.Replace(rhs, "...", "", 1) {
		if !used[c] || seen[c] {
			v.fail("equation %q: output label %q is not an input label or repeats", eq, c)
			return
		}
		seen[c] = true
	}
	if strings.Count(rhs, "...") > 1 {
		v.fail("equation %q: the output has more than one ...", eq)
	}
}

// attrStringOf returns a string attribute, or def when absent.
func attrStringOf(attrs map[string]*AttributeProto, name, def string) string {
	if a := attrs[name]; a != nil {
		return string(a.S)
	}
	return def
}
