package onnx

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// Translators write one node as tensor calls. They read attributes and
// constant inputs through the runtime's own helpers (windowArgs,
// reduceAxes, perm, sliceBounds, …) on a call whose constant inputs are
// filled in, so the generated code follows the runtime's rules; they give
// up (t.give) when a node needs values only known at run time, and the
// node falls back to an onnx.Operator.
var translators = map[string]func(t *translation){}

func init() {
	unary := func(method string) func(t *translation) {
		return func(t *translation) { t.out(0, fmt.Sprintf("%s.%s()", t.in(0), method)) }
	}
	for op, method := range map[string]string{"Neg": "Neg", "Abs": "Abs", "Sqrt": "Sqrt", "Exp": "Exp", "Log": "Log",
		"Reciprocal": "Reciprocal", "Floor": "Floor", "Ceil": "Ceil", "Round": "Round", "Sign": "Sign", "Sin": "Sin",
		"Cos": "Cos", "Tan": "Tan", "Erf": "Erf", "Tanh": "Tanh", "Sigmoid": "Sigmoid", "Relu": "Relu",
		"HardSwish": "HardSwish", "Softsign": "Softsign", "Mish": "Mish", "Not": "LogicalNot"} {
		translators[op] = unary(method)
	}
	withAlpha := func(method string, def float64) func(t *translation) {
		return func(t *translation) {
			t.out(0, fmt.Sprintf("%s.%s(%s)", t.in(0), method, t.float(t.c.attrFloat("alpha", def))))
		}
	}
	translators["LeakyRelu"] = withAlpha("LeakyRelu", 0.01)
	translators["Elu"] = withAlpha("Elu", 1)
	translators["Celu"] = withAlpha("Celu", 1)
	translators["Selu"] = func(t *translation) {
		const alpha, gamma = 1.67326319217681884765625, 1.05070102214813232421875
		if float32(t.c.attrFloat("alpha", alpha)) != float32(alpha) || float32(t.c.attrFloat("gamma", gamma)) != float32(gamma) {
			t.give()
		}
		t.out(0, t.in(0)+".Selu()")
	}
	translators["Gelu"] = func(t *translation) {
		if t.c.attrString("approximate", "none") == "tanh" {
			t.out(0, t.in(0)+".GeluTanh()")
			return
		}
		t.out(0, t.in(0)+".Gelu()")
	}
	translators["HardSigmoid"] = func(t *translation) {
		t.out(0, fmt.Sprintf("%s.MulScalar(%s).AddScalar(%s).Clamp(0, 1)", t.in(0),
			t.float(t.c.attrFloat("alpha", 0.2)), t.float(t.c.attrFloat("beta", 0.5))))
	}
	translators["Softplus"] = func(t *translation) { t.out(0, t.in(0)+".Softplus(1, 20)") }
	binary := func(method string, floatOnly bool) func(t *translation) {
		return func(t *translation) {
			if floatOnly && !t.inDType(0).IsFloat() {
				t.give()
			}
			t.out(0, fmt.Sprintf("%s.%s(%s)", t.in(0), method, t.in(1)))
		}
	}
	for op, method := range map[string]string{"Add": "Add", "Sub": "Sub", "Mul": "Mul", "Equal": "Eq", "Less": "Lt",
		"LessOrEqual": "Le", "Greater": "Gt", "GreaterOrEqual": "Ge", "And": "LogicalAnd", "Or": "LogicalOr",
		"Xor": "LogicalXor", "MatMul": "Matmul"} {
		translators[op] = binary(method, false)
	}
	translators["Div"] = binary("Div", true)
	translators["Pow"] = func(t *translation) {
		if !t.inDType(0).IsFloat() {
			t.give()
		}
		if h := t.c.in[1]; h != nil && h.h.size() == 1 && len(h.h.shape) <= t.inRank(0) {
			t.out(0, fmt.Sprintf("%s.PowScalar(%s)", t.in(0), t.float(h.h.at(0))))
			return
		}
		if t.inDType(1) != t.inDType(0) {
			t.give()
		}
		t.out(0, fmt.Sprintf("%s.Pow(%s)", t.in(0), t.in(1)))
	}
	variadic := func(method string, mean bool) func(t *translation) {
		return func(t *translation) {
			var ins []string
			for k := range t.s.node.Inputs {
				if t.has(k) {
					ins = append(ins, t.in(k))
				}
			}
			e := ins[0]
			for _, x := range ins[1:] {
				e = fmt.Sprintf("%s.%s(%s)", e, method, x)
			}
			if mean {
				e = fmt.Sprintf("%s.DivScalar(%d)", e, len(ins))
			}
			t.out(0, e)
		}
	}
	translators["Max"] = variadic("Maximum", false)
	translators["Min"] = variadic("Minimum", false)
	translators["Sum"] = variadic("Add", false)
	translators["Mean"] = variadic("Add", true)
	translators["Identity"] = func(t *translation) { t.out(0, t.in(0)) }
	translators["Dropout"] = func(t *translation) {
		if len(t.s.node.Outputs) > 1 && t.s.node.Outputs[1] != "" {
			t.give()
		}
		t.out(0, t.in(0))
	}
	translators["Where"] = func(t *translation) {
		cond := t.in(0)
		if t.inDType(0).String() != "bool" {
			cond += ".NeScalar(0)"
		}
		t.out(0, fmt.Sprintf("tensor.Where(%s, %s, %s)", cond, t.in(1), t.in(2)))
	}
	translators["Cast"] = func(t *translation) {
		if t.inDType(0) == t.outDType(0) {
			t.out(0, t.in(0))
			return
		}
		t.out(0, fmt.Sprintf("%s.To(%s)", t.in(0), dtypeExpr(t.outDType(0))))
	}
	translators["Clip"] = func(t *translation) {
		t.static(1, 2)
		lo, hi := clipBounds(t.c)
		t.out(0, fmt.Sprintf("%s.Clamp(%s, %s)", t.in(0), t.bound(lo), t.bound(hi)))
	}

	// Layout: the output's inferred shape becomes the literal target.
	reshape := func(t *translation) {
		t.out(0, fmt.Sprintf("%s.Reshape(%s)", t.in(0), strings.Join(t.outShape(0), ", ")))
	}
	for _, op := range []string{"Reshape", "Flatten", "Squeeze", "Unsqueeze"} {
		translators[op] = reshape
	}
	translators["Transpose"] = func(t *translation) {
		t.out(0, fmt.Sprintf("%s.Permute(%s)", t.in(0), intsLit(perm(t.c, t.inRank(0)))))
	}
	translators["Concat"] = func(t *translation) {
		var ins []string
		for k := range t.s.node.Inputs {
			if t.has(k) {
				ins = append(ins, t.in(k))
			}
		}
		axis := t.c.axis(t.c.attrInt("axis", 0), t.inRank(0))
		t.out(0, fmt.Sprintf("tensor.Cat([]*tensor.Tensor{%s}, %d)", strings.Join(ins, ", "), axis))
	}
	translators["Shape"] = func(t *translation) {
		dims := t.shapeDims(0)
		start, end := int(t.c.attrInt("start", 0)), int(t.c.attrInt("end", int64(len(dims))))
		r := len(dims)
		start, end = clampAxis(start, r), clampAxis(end, r)
		var parts []string
		for _, d := range dims[start:max(start, end)] {
			parts = append(parts, "int64("+d+")")
		}
		t.out(0, fmt.Sprintf("tensor.FromInt64s(m.dev, []int64{%s}, %d)", strings.Join(parts, ", "), len(parts)))
	}
	translators["Slice"] = func(t *translation) {
		t.static(1, 2, 3, 4)
		x := t.in(0)
		dims := t.inDims(0)
		exprs := t.shapeDims(0)
		if t.c.opset >= 10 && !(t.constIn(1) && t.constIn(2)) {
			t.give()
		}
		for i, d := range dims {
			if d < 0 {
				dims[i] = math.MaxInt32 // clamped bounds on these axes are checked below
			}
		}
		for _, b := range sliceBounds(t.c, dims) {
			if dims[b.axis] == math.MaxInt32 {
				// A symbolic axis: only a step-1 slice from a fixed start
				// to the end is written, as Slice(axis, start, dim, 1).
				if b.step != 1 || b.start+b.n != math.MaxInt32 {
					t.give()
				}
				x = fmt.Sprintf("%s.Slice(%d, %d, %s, 1)", x, b.axis, b.start, exprs[b.axis])
				continue
			}
			end := strconv.Itoa(b.start + b.n*b.step)
			if b.step < 0 && b.start+b.n*b.step < 0 {
				end = "math.MinInt"
				t.g.imps["math"] = true
			}
			x = fmt.Sprintf("%s.Slice(%d, %d, %s, %d)", x, b.axis, b.start, end, b.step)
		}
		t.out(0, x)
	}
	translators["Split"] = func(t *translation) {
		t.static(1)
		axis := t.c.axis(t.c.attrInt("axis", 0), t.inRank(0))
		shape := t.inDims(0)
		if shape[axis] < 0 {
			t.give()
		}
		sizes := splitSizes(t.c, shape[axis])
		parts := t.g.localName(t.s.node.Outputs[0] + "_parts")
		t.line("%s := %s.Split([]int{%s}, %d)", parts, t.in(0), intsLit(sizes), axis)
		for k := range t.s.node.Outputs {
			t.out(k, fmt.Sprintf("%s[%d]", parts, k))
		}
	}

	// Neural-network operators with literal configurations.
	translators["Gemm"] = func(t *translation) {
		if t.inRank(0) != 2 || t.inRank(1) != 2 {
			t.give()
		}
		a, b := t.in(0), t.in(1)
		alpha, beta := t.c.attrFloat("alpha", 1), t.c.attrFloat("beta", 1)
		ta, tb := t.c.attrInt("transA", 0) != 0, t.c.attrInt("transB", 0) != 0
		bias := "nil"
		if t.has(2) {
			bias = t.in(2)
		}
		if !ta && tb && alpha == 1 && (bias == "nil" || beta == 1 && t.inRank(2) == 1 && t.dimEqual(2, 0, 1, 0)) {
			t.out(0, fmt.Sprintf("tensor.Linear(%s, %s, %s)", a, b, bias))
			return
		}
		if ta {
			a += ".T()"
		}
		if tb {
			b += ".T()"
		}
		y := fmt.Sprintf("%s.Matmul(%s)", a, b)
		if alpha != 1 {
			y += ".MulScalar(" + t.float(alpha) + ")"
		}
		if bias != "nil" {
			if beta != 1 {
				bias += ".MulScalar(" + t.float(beta) + ")"
			}
			y += ".Add(" + bias + ")"
		}
		t.out(0, y)
	}
	translators["Conv"] = func(t *translation) {
		shape, w := t.inDims(0, 2), t.inShape(1)
		if len(shape) < 3 || len(shape) > 5 || len(w) != len(shape) {
			t.give()
		}
		strides, dil, begin, end := windowArgs(t.c, shape[2:], w[2:])
		x := t.in(0)
		cfg := fmt.Sprintf("tensor.ConvConfig{Stride: []int{%s}, Dilation: []int{%s}, Groups: %d", intsLit(strides), intsLit(dil), t.c.attrInt("group", 1))
		if slices.Equal(begin, end) {
			cfg += fmt.Sprintf(", Padding: []int{%s}", intsLit(begin))
		} else {
			x = padExpr(x, begin, end, "0")
		}
		bias := "nil"
		if t.has(2) {
			bias = t.in(2)
		}
		t.out(0, fmt.Sprintf("tensor.Conv%dd(%s, %s, %s, %s})", len(shape)-2, x, t.in(1), bias, cfg))
	}
	pool := func(t *translation) {
		shape := t.inDims(0, 2)
		if len(shape) < 3 || len(shape) > 5 {
			t.give()
		}
		k := toInts(t.c.attrInts("kernel_shape"))
		if len(k) != len(shape)-2 {
			t.give()
		}
		strides, dil, begin, end := windowArgs(t.c, shape[2:], k)
		x := t.in(0)
		ceil := t.c.attrInt("ceil_mode", 0) != 0
		pads := ""
		if kilnPads(k, begin, end) {
			pads = fmt.Sprintf(", Padding: []int{%s}", intsLit(begin))
		}
		d := len(shape) - 2
		if t.s.node.OpType == "MaxPool" {
			if len(t.s.node.Outputs) > 1 && t.s.node.Outputs[1] != "" {
				t.give()
			}
			if pads == "" {
				t.g.imps["math"] = true
				x = padExpr(x, begin, end, "math.Inf(-1)")
			}
			vals := t.g.localName(t.s.node.Outputs[0] + "_pooled")
			t.line("%s, _ := tensor.MaxPool%dd(%s, tensor.PoolConfig{Kernel: []int{%s}, Stride: []int{%s}, Dilation: []int{%s}, CeilMode: %v%s})",
				vals, d, x, intsLit(k), intsLit(strides), intsLit(dil), ceil, pads)
			t.out(0, vals)
			return
		}
		include := t.c.attrInt("count_include_pad", 0) != 0
		if pads == "" {
			if !include {
				t.give()
			}
			x = padExpr(x, begin, end, "0")
		}
		t.out(0, fmt.Sprintf("tensor.AvgPool%dd(%s, tensor.AvgPoolConfig{Kernel: []int{%s}, Stride: []int{%s}, CeilMode: %v, ExcludePad: %v%s})",
			d, x, intsLit(k), intsLit(strides), ceil, !include, pads))
	}
	translators["MaxPool"] = pool
	translators["AveragePool"] = pool
	translators["GlobalAveragePool"] = func(t *translation) {
		t.out(0, fmt.Sprintf("%s.MeanKeep(%s)", t.in(0), intsLit(spatialAxes(t.inRank(0)))))
	}
	translators["GlobalMaxPool"] = func(t *translation) {
		t.out(0, fmt.Sprintf("%s.MaxKeep(%s)", t.in(0), intsLit(spatialAxes(t.inRank(0)))))
	}
	translators["BatchNormalization"] = func(t *translation) {
		r := t.inRank(0)
		c := t.inShape(1)
		if r < 2 || len(c) != 1 || t.c.attrInt("training_mode", 0) != 0 {
			t.give()
		}
		for _, o := range t.s.node.Outputs[1:] {
			if o != "" {
				t.give()
			}
		}
		view := make([]int, r-1)
		for i := range view {
			view[i] = 1
		}
		view[0] = c[0]
		base := t.s.node.Outputs[0]
		inv := t.g.localName(base + "_scale")
		t.line("%s := %s.Mul(%s.AddScalar(%s).Rsqrt())", inv, t.in(1), t.in(4), t.float(t.c.attrFloat("epsilon", 1e-5)))
		shift := t.g.localName(base + "_shift")
		t.line("%s := %s.Sub(%s.Mul(%s))", shift, t.in(2), t.in(3), inv)
		t.out(0, fmt.Sprintf("%s.Mul(%s.Reshape(%s)).Add(%s.Reshape(%s))", t.in(0), inv, intsLit(view), shift, intsLit(view)))
	}
	translators["LayerNormalization"] = func(t *translation) {
		for _, o := range t.s.node.Outputs[1:] {
			if o != "" {
				t.give()
			}
		}
		r := t.inRank(0)
		axis := t.c.axis(t.c.attrInt("axis", -1), r)
		ns := t.inDims(0, axis)[axis:]
		eps := t.float(t.c.attrFloat("epsilon", 1e-5))
		bias := "nil"
		if t.has(2) {
			bias = t.in(2)
		}
		if slices.Equal(t.inShape(1), ns) && (bias == "nil" || slices.Equal(t.inShape(2), ns)) {
			t.out(0, fmt.Sprintf("%s.LayerNorm([]int{%s}, %s, %s, %s)", t.in(0), intsLit(ns), t.in(1), bias, eps))
			return
		}
		y := fmt.Sprintf("%s.LayerNorm([]int{%s}, nil, nil, %s).Mul(%s)", t.in(0), intsLit(ns), eps, t.in(1))
		if bias != "nil" {
			y += ".Add(" + bias + ")"
		}
		t.out(0, y)
	}
	softmax := func(t *translation) {
		method := "Softmax"
		if t.s.node.OpType == "LogSoftmax" {
			method = "LogSoftmax"
		}
		r := t.inRank(0)
		if t.c.opset >= 13 {
			t.out(0, fmt.Sprintf("%s.%s(%d)", t.in(0), method, t.c.axis(t.c.attrInt("axis", -1), r)))
			return
		}
		a := t.c.axis(t.c.attrInt("axis", 1), r+1)
		if a == r-1 {
			t.out(0, fmt.Sprintf("%s.%s(%d)", t.in(0), method, a))
			return
		}
		shape := t.inShape(0)
		rows, cols := 1, 1
		for i, d := range shape {
			if i < a {
				rows *= d
			} else {
				cols *= d
			}
		}
		t.out(0, fmt.Sprintf("%s.Reshape(%d, %d).%s(1).Reshape(%s)", t.in(0), rows, cols, method, intsLit(shape)))
	}
	translators["Softmax"] = softmax
	translators["LogSoftmax"] = softmax
}

// static gives up unless each listed input is absent or known when
// generating (the runtime's helpers read them on the host).
func (t *translation) static(ks ...int) {
	for _, k := range ks {
		if t.has(k) && !t.constIn(k) {
			t.give()
		}
	}
}

// inDims returns input k's inferred dimensions, -1 where only a symbol
// is known; it gives up unless the dimensions from the listed axis on are
// numbers (from rank when none is given).
func (t *translation) inDims(k int, from ...int) []int {
	vt, ok := t.g.types[t.inName(k)]
	if !ok || !vt.RankKnown {
		t.give()
	}
	start := len(vt.Shape)
	if len(from) > 0 {
		start = from[0]
	}
	out := make([]int, len(vt.Shape))
	for i, d := range vt.Shape {
		switch {
		case d.HasValue:
			out[i] = int(d.Value)
		case i >= start:
			t.give()
		default:
			out[i] = -1
		}
	}
	return out
}

// bound formats a Clip bound (NaN for none).
func (t *translation) bound(v float64) string {
	if math.IsNaN(v) {
		t.g.imps["math"] = true
		return "math.NaN()"
	}
	return t.g.floatLit(v, 64, "")
}

// shapeDims returns Go expressions for input k's dimensions.
func (t *translation) shapeDims(k int) []string {
	e, _, ok := t.g.shapeOf(t.inName(k))
	if !ok {
		t.give()
	}
	return e
}

// dimEqual reports whether dimension i of input a and dimension j of
// input b are known and equal.
func (t *translation) dimEqual(a, i, b, j int) bool {
	da, db := t.shapeDims(a), t.shapeDims(b)
	return i < len(da) && j < len(db) && da[i] == db[j]
}

func clampAxis(a, r int) int {
	if a < 0 {
		a += r
	}
	return min(max(a, 0), r)
}

// padExpr pads the spatial dimensions of x as explicitPad does.
func padExpr(x string, begin, end []int, value string) string {
	pads := make([]int, 0, 2*len(begin))
	for i := len(begin) - 1; i >= 0; i-- {
		pads = append(pads, begin[i], end[i])
	}
	return fmt.Sprintf("%s.Pad([]int{%s}, \"constant\", %s)", x, intsLit(pads), value)
}

// Translators of indexing, padding and the remaining reductions and
// normalisations.
func init() {
	translators["Gather"] = func(t *translation) {
		r := t.inRank(0)
		axis := t.c.axis(t.c.attrInt("axis", 0), r)
		n := t.inDims(0)[axis]
		if n < 0 {
			t.give()
		}
		if !t.constIn(1) {
			// Indices computed at run time: negative ones wrap as normIndex does.
			t.out(0, fmt.Sprintf("%s.IndexSelect(%d, %s.AddScalar(%d).RemScalar(%d).Reshape(-1)).Reshape(%s)",
				t.in(0), axis, t.index(1), n, n, strings.Join(t.outShape(0), ", ")))
			return
		}
		idx := t.c.h(1)
		ii := make([]int64, idx.size())
		for k, v := range idx.ints() {
			if v < 0 {
				v += int64(n)
			}
			if v < 0 || v >= int64(n) {
				t.give()
			}
			ii[k] = v
		}
		lit := t.g.literal(hostInts(ii, len(ii)))
		t.out(0, fmt.Sprintf("%s.IndexSelect(%d, %s).Reshape(%s)", t.in(0), axis, lit, strings.Join(t.outShape(0), ", ")))
	}
	translators["GatherElements"] = func(t *translation) {
		axis := t.c.axis(t.c.attrInt("axis", 0), t.inRank(0))
		n := t.inDims(0)[axis]
		if n < 0 {
			t.give()
		}
		t.out(0, fmt.Sprintf("%s.Gather(%d, %s.AddScalar(%d).RemScalar(%d))", t.in(0), axis, t.index(1), n, n))
	}
	translators["ScatterElements"] = func(t *translation) {
		axis := t.c.axis(t.c.attrInt("axis", 0), t.inRank(0))
		n := t.inDims(0)[axis]
		if n < 0 {
			t.give()
		}
		method := "Scatter"
		switch t.c.attrString("reduction", "none") {
		case "add":
			method = "ScatterAdd"
		case "none":
		default:
			t.give()
		}
		t.out(0, fmt.Sprintf("%s.%s(%d, %s.AddScalar(%d).RemScalar(%d), %s)", t.in(0), method, axis, t.index(1), n, n, t.in(2)))
	}
	translators["Scatter"] = translators["ScatterElements"]
	translators["ConstantOfShape"] = func(t *translation) {
		fill := &hostTensor{dtype: tensor.Float32, shape: []int{1}, f: []float64{0}}
		if a := t.c.attr("value"); a != nil && a.T != nil {
			h, err := tensorHost(a.T)
			if err != nil || h.size() != 1 {
				t.give()
			}
			fill = h
		}
		dims := t.outShape(0)
		t.out(0, fmt.Sprintf("tensor.FullOf(m.dev, %s, %s%s)", dtypeExpr(fill.dtype), t.float(fill.at(0)), prefixed(dims)))
	}
	translators["Expand"] = func(t *translation) {
		t.out(0, fmt.Sprintf("%s.Expand(%s)", t.in(0), strings.Join(t.outShape(0), ", ")))
	}
	translators["Tile"] = func(t *translation) {
		t.out(0, fmt.Sprintf("%s.Repeat(%s)", t.in(0), intsLit(toInts(t.ints(1)))))
	}
	translators["Pad"] = func(t *translation) {
		t.static(1, 2, 3)
		if t.c.opset >= 11 && !t.constIn(1) {
			t.give()
		}
		pads, mode, value := padArgs(t.c, t.inRank(0))
		t.out(0, fmt.Sprintf("%s.Pad([]int{%s}, %q, %s)", t.in(0), intsLit(pads), mode, t.float(value)))
	}
	translators["Size"] = func(t *translation) {
		dims := t.shapeDims(0)
		e := strings.Join(dims, "*")
		if e == "" {
			e = "1"
		}
		t.out(0, fmt.Sprintf("tensor.FromInt64s(m.dev, []int64{int64(%s)}).Reshape()", e))
	}
	translators["ConvTranspose"] = func(t *translation) {
		shape, w := t.inDims(0, 2), t.inShape(1)
		if len(shape) < 3 || len(shape) > 5 || len(w) != len(shape) {
			t.give()
		}
		cfg, begin, end := convTransposeArgs(t.c, shape[2:], w[2:])
		lit := fmt.Sprintf("tensor.ConvTransposeConfig{Stride: []int{%s}, Dilation: []int{%s}, OutputPadding: []int{%s}, Groups: %d",
			intsLit(cfg.Stride), intsLit(cfg.Dilation), intsLit(cfg.OutputPadding), cfg.Groups)
		if cfg.Padding != nil {
			lit += fmt.Sprintf(", Padding: []int{%s}", intsLit(cfg.Padding))
		}
		bias := "nil"
		if t.has(2) {
			bias = t.in(2)
		}
		y := fmt.Sprintf("tensor.ConvTranspose%dd(%s, %s, %s, %s})", len(shape)-2, t.in(0), t.in(1), bias, lit)
		if cfg.Padding == nil {
			// Asymmetric pads: crop the full output (its size is known).
			full := make([]int, len(begin))
			for i := range begin {
				stride, dil := cfg.Stride[i], cfg.Dilation[i]
				full[i] = stride*(shape[2+i]-1) + cfg.OutputPadding[i] + (w[2+i]-1)*dil + 1
			}
			for i := range begin {
				y = fmt.Sprintf("%s.Narrow(%d, %d, %d)", y, 2+i, begin[i], full[i]-begin[i]-end[i])
			}
		}
		t.out(0, y)
	}
	translators["InstanceNormalization"] = func(t *translation) {
		r := t.inRank(0)
		dims := t.inDims(0, 1)
		if r < 3 {
			t.give()
		}
		s := 1
		for _, d := range dims[2:] {
			s *= d
		}
		view := channelShape(dims[1], r)
		shape := t.shapeDims(0)
		t.out(0, fmt.Sprintf("%s.Reshape(%s, %d, %d).LayerNorm([]int{%d}, nil, nil, %s).Reshape(%s).Mul(%s.Reshape(%s)).Add(%s.Reshape(%s))",
			t.in(0), shape[0], dims[1], s, s, t.float(t.c.attrFloat("epsilon", 1e-5)), strings.Join(shape, ", "),
			t.in(1), intsLit(view), t.in(2), intsLit(view)))
	}
	translators["GroupNormalization"] = func(t *translation) {
		r := t.inRank(0)
		dims := t.inDims(0, 1)
		g := int(t.c.attrInt("num_groups", 0))
		if r < 3 || g <= 0 || dims[1]%g != 0 {
			t.give()
		}
		ch := dims[1]
		s := 1
		for _, d := range dims[1:] {
			s *= d
		}
		s /= g
		view := channelShape(ch, r)
		shape := t.shapeDims(0)
		perChannel := func(k int) string {
			v := t.in(k)
			if n := t.inShape(k); len(n) == 1 && n[0] == g && g != ch {
				v = fmt.Sprintf("%s.Reshape(%d, 1).Expand(%d, %d).Reshape(%d)", v, g, g, ch/g, ch)
			}
			return fmt.Sprintf("%s.Reshape(%s)", v, intsLit(view))
		}
		t.out(0, fmt.Sprintf("%s.Reshape(%s, %d, %d).LayerNorm([]int{%d}, nil, nil, %s).Reshape(%s).Mul(%s).Add(%s)",
			t.in(0), shape[0], g, s, s, t.float(t.c.attrFloat("epsilon", 1e-5)), strings.Join(shape, ", "), perChannel(1), perChannel(2)))
	}
	translators["Div"] = func(t *translation) {
		if t.inDType(0).IsFloat() {
			t.out(0, fmt.Sprintf("%s.Div(%s)", t.in(0), t.in(1)))
			return
		}
		// Integer division truncates (Kiln's Div of integers is true division).
		q := t.g.localName(t.s.node.Outputs[0] + "_quotient")
		t.line("%s := %s.To(tensor.Float64).Div(%s.To(tensor.Float64))", q, t.in(0), t.in(1))
		t.out(0, fmt.Sprintf("%s.Abs().Floor().Mul(%s.Sign()).To(%s)", q, q, dtypeExpr(t.inDType(0))))
	}
	translators["Selu"] = func(t *translation) {
		const alpha, gamma = 1.67326319217681884765625, 1.05070102214813232421875
		a, g := t.c.attrFloat("alpha", alpha), t.c.attrFloat("gamma", gamma)
		x := t.in(0)
		if float32(a) == float32(alpha) && float32(g) == float32(gamma) {
			t.out(0, x+".Selu()")
			return
		}
		t.out(0, fmt.Sprintf("%s.Relu().Add(%s.ClampMax(0).Elu(1).MulScalar(%s)).MulScalar(%s)", x, x, t.float(a), t.float(g)))
	}
	arg := func(t *translation) {
		r := t.inRank(0)
		axis := t.c.axis(t.c.attrInt("axis", 0), r)
		method := "Argmax"
		if t.s.node.OpType == "ArgMin" {
			method = "Argmin"
		}
		if t.c.attrInt("keepdims", 1) != 0 {
			method += "Keep"
		}
		x := t.in(0)
		if t.c.attrInt("select_last_index", 0) != 0 {
			n := t.inDims(0)[axis]
			if n < 0 {
				t.give()
			}
			t.out(0, fmt.Sprintf("%s.Flip(%d).%s(%d).Neg().AddScalar(%d)", x, axis, method, axis, n-1))
			return
		}
		t.out(0, fmt.Sprintf("%s.%s(%d)", x, method, axis))
	}
	translators["ArgMax"] = arg
	translators["ArgMin"] = arg
	translators["TopK"] = func(t *translation) {
		r := t.inRank(0)
		axis := t.c.axis(t.c.attrInt("axis", -1), r)
		var k int64
		if t.c.opset < 10 {
			k = t.c.attrInt("k", 0)
		} else {
			t.static(1)
			k = int64(t.c.scalar(1))
		}
		vals := t.g.localName(t.s.node.Outputs[0])
		idx := t.g.localName(t.s.node.Outputs[0] + "_indices")
		t.line("%s, %s := %s.TopK(%d, %d, %v)", vals, idx, t.in(0), k, axis, t.c.attrInt("largest", 1) != 0)
		t.out(0, vals)
		if len(t.s.node.Outputs) > 1 {
			t.out(1, idx)
		}
	}
	translators["CumSum"] = func(t *translation) {
		t.static(1)
		if !t.constIn(1) {
			t.give()
		}
		axis := t.c.axis(int64(t.c.scalar(1)), t.inRank(0))
		rev := t.c.attrInt("reverse", 0) != 0
		src := t.in(0)
		if rev {
			src = fmt.Sprintf("%s.Flip(%d)", src, axis)
		}
		// Cumsum may widen integers; the output keeps the input's dtype.
		y := fmt.Sprintf("%s.Cumsum(%d).To(%s)", src, axis, dtypeExpr(t.inDType(0)))
		if t.c.attrInt("exclusive", 0) != 0 {
			y += ".Sub(" + src + ")"
		}
		if rev {
			y = fmt.Sprintf("%s.Flip(%d)", y, axis)
		}
		t.out(0, y)
	}
	// Reductions: the format takes x, "Keep" or "", the axes and x's dtype.
	reductions := map[string]struct {
		format  string
		inputAt int64 // opset from which axes is an input
	}{
		"ReduceSum":       {"%[1]s.Sum%[2]s(%[3]s)", 13},
		"ReduceMean":      {"%[1]s.Mean%[2]s(%[3]s)", 18},
		"ReduceMax":       {"%[1]s.Max%[2]s(%[3]s)", 18},
		"ReduceMin":       {"%[1]s.Min%[2]s(%[3]s)", 18},
		"ReduceProd":      {"%[1]s.Prod%[2]s(%[3]s).To(%[4]s)", 18},
		"ReduceL2":        {"%[1]s.Square().Sum%[2]s(%[3]s).Sqrt()", 18},
		"ReduceL1":        {"%[1]s.Abs().Sum%[2]s(%[3]s)", 18},
		"ReduceSumSquare": {"%[1]s.Square().Sum%[2]s(%[3]s)", 18},
		"ReduceLogSumExp": {"%[1]s.LogSumExp%[2]s(%[3]s)", 18},
		"ReduceLogSum":    {"%[1]s.Sum%[2]s(%[3]s).Log()", 18},
	}
	for op, red := range reductions {
		translators[op] = func(t *translation) {
			t.static(1)
			r := t.inRank(0)
			axes, all, noop := reduceAxes(t.c, red.inputAt, r)
			x := t.in(0)
			if noop || all && r == 0 {
				t.out(0, x)
				return
			}
			if all {
				axes = identityPerm(r)
			}
			keep := ""
			if t.c.attrInt("keepdims", 1) != 0 {
				keep = "Keep"
			}
			t.out(0, fmt.Sprintf(red.format, x, keep, intsLit(axes), dtypeExpr(t.inDType(0))))
		}
	}
}

// index returns input k as an Int64 tensor expression.
func (t *translation) index(k int) string {
	idx := t.in(k)
	if t.inDType(k) != tensor.Int64 {
		idx += ".To(tensor.Int64)"
	}
	return idx
}

// channelShape is the shape a per-channel vector of c entries takes to
// broadcast against [N, C, …] of rank r (as channelView reshapes it).
func channelShape(c, r int) []int {
	shape := make([]int, r-1)
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = c
	return shape
}

// prefixed joins exprs, each preceded by ", ".
func prefixed(exprs []string) string {
	if len(exprs) == 0 {
		return ""
	}
	return ", " + strings.Join(exprs, ", ")
}

func init() {
	translators["Einsum"] = func(t *translation) {
		xs := make([]string, len(t.s.node.Inputs))
		for k := range xs {
			xs[k] = t.in(k)
		}
		t.out(0, fmt.Sprintf("tensor.Einsum(%q, %s)", t.c.attrString("equation", ""), strings.Join(xs, ", ")))
	}
}

func init() {
	resize := func(t *translation) {
		t.static(1, 2, 3)
		dims := t.inDims(0)
		known := slices.Clone(dims)
		for i, d := range known {
			if d < 0 {
				known[i] = 1
			}
		}
		plan := resizePlan(t.c, known)
		y := t.in(0)
		if len(plan) == 0 {
			t.out(0, y)
			return
		}
		dt := t.inDType(0)
		for _, ax := range plan {
			if dims[ax.axis] < 0 {
				t.give()
			}
			weights := func(f []float64) string {
				return t.g.literal(&hostTensor{dtype: dt, shape: ax.weightShape(len(dims)), f: f})
			}
			switch {
			case ax.idx != nil:
				y = fmt.Sprintf("%s.IndexSelect(%d, %s)", y, ax.axis, t.g.literal(hostInts(ax.idx)))
			case ax.taps != nil:
				src := t.g.localName(t.s.node.Outputs[0] + "_rows")
				t.line("%s := %s", src, y)
				terms := make([]string, len(ax.taps))
				for k, tap := range ax.taps {
					terms[k] = fmt.Sprintf("%s.IndexSelect(%d, %s).Mul(%s)", src, ax.axis, t.g.literal(hostInts(tap)), weights(ax.tapW[k]))
				}
				y = terms[0]
				for _, term := range terms[1:] {
					y = fmt.Sprintf("%s.Add(%s)", y, term)
				}
			default:
				src := t.g.localName(t.s.node.Outputs[0] + "_rows")
				t.line("%s := %s", src, y)
				lo := fmt.Sprintf("%s.IndexSelect(%d, %s)", src, ax.axis, t.g.literal(hostInts(ax.i0)))
				hi := fmt.Sprintf("%s.IndexSelect(%d, %s)", src, ax.axis, t.g.literal(hostInts(ax.i1)))
				low := t.g.localName(t.s.node.Outputs[0] + "_low")
				t.line("%s := %s", low, lo)
				y = fmt.Sprintf("%s.Add(%s.Sub(%s).Mul(%s))", low, hi, low, weights(ax.w1))
			}
			if ax.inside != nil {
				// tf_crop_and_resize: outside positions take extrapolation_value
				e := t.c.attrFloat("extrapolation_value", 0)
				keep := weights(ax.inside)
				y = fmt.Sprintf("%s.Mul(%s).Add(%s.MulScalar(%s).AddScalar(%s))", y, keep, keep, t.float(-e), t.float(e))
			}
		}
		t.out(0, y)
	}
	translators["Resize"] = resize
	translators["Upsample"] = resize
}

// identityPerm is the permutation 0, 1, …, n−1.
func identityPerm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}
