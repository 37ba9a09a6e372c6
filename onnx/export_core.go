package onnx

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/backends"
)

// Translations of package tensor's core ops that ONNX opset 17 expresses
// with one node or a short composition: reductions, layout, scans,
// activations without an ONNX operator, transposed convolution,
// resampling and attention. Each reads the attributes its op records
// (tensor's record calls name them).

func init() {
	for op, onnxOp := range map[string]string{"amax": "ReduceMax", "amin": "ReduceMin", "prod": "ReduceProd",
		"logsumexp": "ReduceLogSumExp"} {
		registerExport(op, func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
			axes := attrIs(n, "axes")
			tr.reduce(onnxOp, in[0], out, axes, int(b2i(attrBool(n, "keepdim"))))
			return keepsBatch && !contains(axes, 0)
		})
	}
	for op, onnxOp := range map[string]string{"max_dim": "ReduceMax", "min_dim": "ReduceMin"} {
		registerExport(op, func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
			d := attrI(n, "dim")
			tr.reduce(onnxOp, in[0], out, []int{d}, int(b2i(attrBool(n, "keepdim"))))
			return keepsBatch && d != 0
		})
	}
	registerExport("var", exportVariance(false))
	registerExport("std", exportVariance(true))
	registerExport("cumsum", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		// Bool and integer tensors sum in int64 (ONNX's CumSum takes no
		// booleans).
		tr.emit("CumSum", []string{tr.castTo(n, in[0], n.Inputs[0].DType, n.DType), tr.scalarInt(attrI(n, "dim"))}, out)
		return keepsBatch
	})
	registerExport("dot", func(tr *tracer, n *autodiff.Node, in []string, out string, _ bool) bool {
		tr.emit("MatMul", in[:2], out)
		return false
	})
	registerExport("scalar_pow", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		tr.emit("Pow", []string{tr.constant(n.Inputs[0].DType, []int{}, attrF(n, "base", 0)), in[0]}, out)
		return keepsBatch
	})
	registerExport("remainder", func(tr *tracer, n *autodiff.Node, in []string, out string, _ bool) bool {
		tr.remainder(n, in[0], in[1], out)
		a, b := n.Inputs[0], n.Inputs[1]
		return (tr.batched[a] && len(a.Shape) == len(n.Shape)) || (tr.batched[b] && len(b.Shape) == len(n.Shape))
	})
	registerExport("remainder_scalar", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		tr.remainder(n, in[0], tr.constant(n.Inputs[0].DType, []int{}, attrF(n, "scalar", 0)), out)
		return keepsBatch
	})
	registerExport("flip", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		dims := attrIs(n, "dims")
		starts, ends, steps := make([]int, len(dims)), make([]int, len(dims)), make([]int, len(dims))
		for i := range dims {
			starts[i], ends[i], steps[i] = -1, math.MinInt64, -1
		}
		tr.emit("Slice", []string{in[0], tr.ints(starts...), tr.ints(ends...), tr.ints(dims...), tr.ints(steps...)}, out)
		return keepsBatch && !contains(dims, 0)
	})
	registerExport("roll", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		d := attrI(n, "dim")
		size := n.Inputs[0].Shape[d]
		s := 0
		if size > 0 {
			s = ((attrI(n, "shift") % size) + size) % size
		}
		if s == 0 {
			tr.emit("Identity", in[:1], out)
			return keepsBatch
		}
		// roll by s: the last s elements, then the rest.
		tail, head := tr.tmp(n, "tail"), tr.tmp(n, "head")
		tr.emit("Slice", []string{in[0], tr.ints(size - s), tr.ints(size), tr.ints(d)}, tail)
		tr.emit("Slice", []string{in[0], tr.ints(0), tr.ints(size - s), tr.ints(d)}, head)
		tr.emit("Concat", []string{tail, head}, out, aInt("axis", d))
		return keepsBatch && d != 0
	})
	registerExport("repeat", func(tr *tracer, n *autodiff.Node, in []string, out string, _ bool) bool {
		reps := attrIs(n, "reps")
		src := in[0]
		x := n.Inputs[0]
		if extra := len(reps) - len(x.Shape); extra > 0 {
			// torch's repeat adds leading dimensions of size 1 first.
			shape := append(make([]int, 0, len(reps)), x.Shape...)
			for range extra {
				shape = append([]int{1}, shape...)
			}
			r := tr.tmp(n, "lead")
			tr.emit("Reshape", []string{src, tr.ints(shape...)}, r)
			src = r
		}
		tr.emit("Tile", []string{src, tr.ints(reps...)}, out)
		return false
	})
	registerExport("stack", func(tr *tracer, n *autodiff.Node, in []string, out string, _ bool) bool {
		d := attrI(n, "dim")
		parts := make([]string, len(in))
		for i, name := range in {
			parts[i] = tr.tmp(n, "unsqueeze")
			tr.emit("Unsqueeze", []string{name, tr.ints(d)}, parts[i])
		}
		tr.emit("Concat", parts, out, aInt("axis", d))
		return false
	})
	registerExport("pad", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		mode := attrS(n, "mode")
		onnxMode := map[string]string{"constant": "constant", "reflect": "reflect", "replicate": "edge", "edge": "edge"}[mode]
		if mode == "circular" && tr.opset >= 19 {
			onnxMode = "wrap"
		}
		if onnxMode == "" {
			tr.missing["pad ("+mode+")"]++ // circular: ONNX's "wrap" comes with opset 19
			return false
		}
		pads := attrIs(n, "pads")
		r := len(n.Inputs[0].Shape)
		onnxPads := make([]int, 2*r)
		for i := 0; i < len(pads)/2; i++ {
			d := r - 1 - i
			onnxPads[d], onnxPads[r+d] = pads[2*i], pads[2*i+1]
		}
		ins := []string{in[0], tr.ints(onnxPads...)}
		if onnxMode == "constant" {
			ins = append(ins, tr.constant(n.Inputs[0].DType, []int{}, attrF(n, "value", 0)))
		}
		tr.emit("Pad", ins, out, aString("mode", onnxMode))
		return keepsBatch && onnxPads[0] == 0 && onnxPads[r] == 0
	})
	registerExport("sort", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		d := attrI(n, "dim")
		tr.topK(n, in[0], out, n.Inputs[0].Shape[d], d, attrBool(n, "descending"))
		return keepsBatch && d != 0
	})
	registerExport("topk", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		d := attrI(n, "dim")
		tr.topK(n, in[0], out, n.Shape[d], d, attrBool(n, "largest"))
		return keepsBatch && d != 0
	})

	// Activations without an ONNX operator of their own.
	registerExport("gelu_tanh", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		dt := n.Inputs[0].DType
		c := func(v float64) string { return tr.constant(dt, []int{}, v) }
		x3, inner, th, one := tr.tmp(n, "x3"), tr.tmp(n, "inner"), tr.tmp(n, "tanh"), tr.tmp(n, "one")
		tr.emit("Pow", []string{in[0], c(3)}, x3)
		a := tr.tmp(n, "a")
		tr.emit("Mul", []string{x3, c(0.044715)}, a)
		s := tr.tmp(n, "s")
		tr.emit("Add", []string{in[0], a}, s)
		tr.emit("Mul", []string{s, c(math.Sqrt(2 / math.Pi))}, inner)
		tr.emit("Tanh", []string{inner}, th)
		tr.emit("Add", []string{th, c(1)}, one)
		h := tr.tmp(n, "half")
		tr.emit("Mul", []string{in[0], c(0.5)}, h)
		tr.emit("Mul", []string{h, one}, out)
		return keepsBatch
	})
	registerExport("log_sigmoid", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		neg, sp := tr.tmp(n, "neg"), tr.tmp(n, "softplus")
		tr.emit("Neg", in[:1], neg)
		tr.emit("Softplus", []string{neg}, sp)
		tr.emit("Neg", []string{sp}, out)
		return keepsBatch
	})
	registerExport("mish", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		sp, th := tr.tmp(n, "softplus"), tr.tmp(n, "tanh")
		tr.emit("Softplus", in[:1], sp)
		tr.emit("Tanh", []string{sp}, th)
		tr.emit("Mul", []string{in[0], th}, out)
		return keepsBatch
	})
	registerExport("softplus", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		beta, threshold := attrF(n, "p0", 1), attrF(n, "p1", 20)
		dt := n.Inputs[0].DType
		// softplus(βx)/β, and x itself where βx > threshold (PyTorch).
		bx, sp, div, gt := tr.tmp(n, "bx"), tr.tmp(n, "sp"), tr.tmp(n, "div"), tr.tmp(n, "linear")
		tr.emit("Mul", []string{in[0], tr.constant(dt, []int{}, beta)}, bx)
		tr.emit("Softplus", []string{bx}, sp)
		tr.emit("Div", []string{sp, tr.constant(dt, []int{}, beta)}, div)
		tr.emit("Greater", []string{bx, tr.constant(dt, []int{}, threshold)}, gt)
		tr.emit("Where", []string{gt, in[0], div}, out)
		return keepsBatch
	})
	registerExport("rms_norm", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		x := n.Inputs[0]
		k := len(attrIs(n, "normalized_shape"))
		axes := make([]int, k)
		for i := range axes {
			axes[i] = len(x.Shape) - k + i
		}
		sq, ms, eps, rs, y := tr.tmp(n, "sq"), tr.tmp(n, "ms"), tr.tmp(n, "eps"), tr.tmp(n, "rms"), tr.tmp(n, "y")
		tr.emit("Mul", []string{in[0], in[0]}, sq)
		tr.reduce("ReduceMean", sq, ms, axes, 1)
		tr.emit("Add", []string{ms, tr.constant(x.DType, []int{}, attrF(n, "eps", 1e-6))}, eps)
		tr.emit("Sqrt", []string{eps}, rs)
		if len(in) < 2 {
			tr.emit("Div", []string{in[0], rs}, out)
			return keepsBatch
		}
		tr.emit("Div", []string{in[0], rs}, y)
		tr.emit("Mul", []string{y, in[1]}, out)
		return keepsBatch
	})

	for _, op := range []string{"conv_transpose1d", "conv_transpose2d"} {
		registerExport(op, func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
			k := n.Inputs[1].Shape[2:]
			p := attrIs(n, "padding")
			tr.emit("ConvTranspose", in, out, aInts("kernel_shape", k...), aInts("strides", attrIs(n, "stride")...),
				aInts("pads", append(append([]int{}, p...), p...)...), aInts("dilations", attrIs(n, "dilation")...),
				aInts("output_padding", attrIs(n, "output_padding")...), aInt("group", max(attrI(n, "groups"), 1)))
			return keepsBatch
		})
	}
	for _, op := range []string{"adaptive_avg_pool1d", "adaptive_avg_pool2d"} {
		registerExport(op, func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
			x := n.Inputs[0]
			size := attrIs(n, "output_size")
			spatial := x.Shape[len(x.Shape)-len(size):]
			if allOnes(size) && len(x.Shape) >= 3 {
				tr.emit("GlobalAveragePool", in[:1], out)
				return keepsBatch
			}
			// Equal windows when each size divides its input: one pool.
			kernel := make([]int, len(size))
			for i, o := range size {
				if o == 0 || spatial[i]%o != 0 || len(x.Shape) < 3 {
					tr.missing[op+" (output size not dividing the input)"]++
					return false
				}
				kernel[i] = spatial[i] / o
			}
			tr.emit("AveragePool", in[:1], out, aInts("kernel_shape", kernel...), aInts("strides", kernel...))
			return keepsBatch
		})
	}
	for _, op := range []string{"upsample_nearest1d", "upsample_nearest2d", "upsample_nearest_exact1d", "upsample_nearest_exact2d",
		"upsample_linear1d", "upsample_bilinear2d"} {
		registerExport(op, exportResize)
	}
	registerExport("scaled_dot_product_attention", exportAttention)
}

// attrBool reads a bool attribute (false when absent).
func attrBool(n *autodiff.Node, key string) bool {
	v, _ := n.Attrs[key].(bool)
	return v
}

// attrS reads a string attribute ("" when absent).
func attrS(n *autodiff.Node, key string) string {
	v, _ := n.Attrs[key].(string)
	return v
}

func aString(name, v string) *AttributeProto {
	return &AttributeProto{Name: name, Type: AttrString, S: []byte(v)}
}

// scalarInt is a 0-D int64 initializer (CumSum's axis).
func (tr *tracer) scalarInt(v int) string {
	tr.consts++
	return tr.hostInit(fmt.Sprintf("const_%d", tr.consts), hostInts([]int64{int64(v)}, []int{}...))
}

// remainder writes torch.remainder(a, b) (the sign of b): ONNX's Mod does
// that for integers (fmod 0); floats need fmod 1 (the sign of a) and b
// added where the signs differ.
func (tr *tracer) remainder(n *autodiff.Node, a, b, out string) {
	dt := n.DType
	if dt != "float32" && dt != "float64" && dt != "float16" && dt != "bfloat16" {
		tr.emit("Mod", []string{a, b}, out, aInt("fmod", 0))
		return
	}
	zero := tr.constant(dt, []int{}, 0)
	r, rNeg, bNeg, differ, nonzero, fix, plus := tr.tmp(n, "fmod"), tr.tmp(n, "rneg"), tr.tmp(n, "bneg"), tr.tmp(n, "differ"),
		tr.tmp(n, "nonzero"), tr.tmp(n, "fix"), tr.tmp(n, "plus")
	tr.emit("Mod", []string{a, b}, r, aInt("fmod", 1))
	tr.emit("Less", []string{r, zero}, rNeg)
	tr.emit("Less", []string{b, zero}, bNeg)
	tr.emit("Xor", []string{rNeg, bNeg}, differ)
	eq := tr.tmp(n, "iszero")
	tr.emit("Equal", []string{r, zero}, eq)
	tr.emit("Not", []string{eq}, nonzero)
	tr.emit("And", []string{differ, nonzero}, fix)
	tr.emit("Add", []string{r, b}, plus)
	tr.emit("Where", []string{fix, plus, r}, out)
}

// topK writes the values of ONNX's TopK (sorted) as out.
func (tr *tracer) topK(n *autodiff.Node, x, out string, k, axis int, largest bool) {
	tr.emit("TopK", []string{x, tr.ints(k)}, out, aInt("axis", axis), aInt("largest", int(b2i(largest))), aInt("sorted", 1))
	// TopK's second output (indices) is unused; emit names it.
	last := tr.g.Nodes[len(tr.g.Nodes)-1]
	last.Outputs = append(last.Outputs, tr.tmp(n, "indices"))
}

// exportVariance composes torch.var/std with its correction:
// sum((x − mean)²) / (N − correction), and the square root for std.
func exportVariance(std bool) func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
	return func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		x := n.Inputs[0]
		axes := attrIs(n, "axes")
		count := 1
		for _, a := range axes {
			count *= x.Shape[a]
		}
		correction := attrI(n, "correction")
		den := float64(count - correction)
		mean, d, sq, ss := tr.tmp(n, "mean"), tr.tmp(n, "d"), tr.tmp(n, "sq"), tr.tmp(n, "ss")
		keepdims := int(b2i(attrBool(n, "keepdim")))
		keep := aInt("keepdims", keepdims)
		tr.reduce("ReduceMean", in[0], mean, axes, 1)
		tr.emit("Sub", []string{in[0], mean}, d)
		tr.emit("Mul", []string{d, d}, sq)
		v := out
		if std {
			v = tr.tmp(n, "var")
		}
		switch {
		case correction == 0:
			// The mean of the squares: right for any batch size.
			tr.reduce("ReduceMean", sq, v, axes, keepdims)
		case tr.batched[x] && contains(axes, 0):
			// The count includes the symbolic batch: read it from the
			// input's shape.
			tr.emit("ReduceSum", []string{sq, tr.ints(axes...)}, ss, keep)
			shape, sizes, prod, cnt, dn := tr.tmp(n, "shape"), tr.tmp(n, "sizes"), tr.tmp(n, "count"), tr.tmp(n, "countf"), tr.tmp(n, "den")
			tr.emit("Shape", in[:1], shape)
			tr.emit("Gather", []string{shape, tr.ints(axes...)}, sizes, aInt("axis", 0))
			tr.emit("ReduceProd", []string{sizes}, prod, aInt("keepdims", 0))
			dt, _ := backends.ParseDType(x.DType)
			tr.emit("Cast", []string{prod}, cnt, aInt("to", int(onnxDType(dt))))
			tr.emit("Sub", []string{cnt, tr.constant(x.DType, []int{}, float64(correction))}, dn)
			tr.emit("Div", []string{ss, dn}, v)
		default:
			tr.emit("ReduceSum", []string{sq, tr.ints(axes...)}, ss, keep)
			tr.emit("Div", []string{ss, tr.constant(x.DType, []int{}, den)}, v)
		}
		if std {
			tr.emit("Sqrt", []string{v}, out)
		}
		return keepsBatch && !contains(axes, 0)
	}
}

// exportResize writes tensor.Interpolate as Resize with the output's
// spatial sizes appended to the input's own batch and channel sizes (so
// the batch stays symbolic), and PyTorch's coordinate conventions.
func exportResize(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
	x := n.Inputs[0]
	size := attrIs(n, "size")
	lead := len(x.Shape) - len(size)
	mode, coord, nearest := "nearest", "asymmetric", "floor"
	switch attrS(n, "mode") {
	case "nearest-exact":
		coord, nearest = "half_pixel", "round_prefer_ceil"
	case "linear", "bilinear":
		mode, coord = "linear", "pytorch_half_pixel"
		if attrBool(n, "align_corners") {
			coord = "align_corners"
		}
	}
	shape, leadSizes, sizes := tr.tmp(n, "shape"), tr.tmp(n, "lead"), tr.tmp(n, "sizes")
	tr.emit("Shape", in[:1], shape)
	tr.emit("Slice", []string{shape, tr.ints(0), tr.ints(lead), tr.ints(0)}, leadSizes)
	tr.emit("Concat", []string{leadSizes, tr.ints(size...)}, sizes, aInt("axis", 0))
	attrs := []*AttributeProto{aString("mode", mode), aString("coordinate_transformation_mode", coord)}
	if mode == "nearest" {
		attrs = append(attrs, aString("nearest_mode", nearest))
	}
	tr.emit("Resize", []string{in[0], "", "", sizes}, out, attrs...)
	return keepsBatch
}

// exportAttention composes scaled dot-product attention: softmax(q·kᵀ·scale
// + mask)·v, with a boolean mask (true takes part) as −∞ elsewhere and the
// causal mask as a constant lower triangle.
func exportAttention(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
	q, k := n.Inputs[0], n.Inputs[1]
	dt := q.DType
	rk := len(k.Shape)
	perm := make([]int, rk)
	for i := range perm {
		perm[i] = i
	}
	perm[rk-1], perm[rk-2] = perm[rk-2], perm[rk-1]
	kt, qk, s := tr.tmp(n, "kt"), tr.tmp(n, "qk"), tr.tmp(n, "scaled")
	tr.emit("Transpose", in[1:2], kt, aInts("perm", perm...))
	tr.emit("MatMul", []string{in[0], kt}, qk)
	tr.emit("Mul", []string{qk, tr.constant(dt, []int{}, attrF(n, "scale", 1))}, s)
	lq, lk := q.Shape[len(q.Shape)-2], k.Shape[rk-2]
	masked := s
	negInf := tr.constant(dt, []int{}, math.Inf(-1))
	switch {
	case len(in) > 3 && n.Inputs[3] != nil && n.Inputs[3].DType == "bool":
		masked = tr.tmp(n, "masked")
		tr.emit("Where", []string{in[3], s, negInf}, masked)
	case len(in) > 3 && n.Inputs[3] != nil:
		masked = tr.tmp(n, "masked")
		tr.emit("Add", []string{s, in[3]}, masked)
	case attrBool(n, "causal"):
		tril := make([]float64, lq*lk)
		for i := range lq {
			for j := 0; j <= i && j < lk; j++ {
				tril[i*lk+j] = 1
			}
		}
		masked = tr.tmp(n, "masked")
		tr.emit("Where", []string{tr.constant("bool", []int{lq, lk}, tril...), s, negInf}, masked)
	}
	p := tr.tmp(n, "softmax")
	tr.emit("Softmax", []string{masked}, p, aInt("axis", -1))
	tr.emit("MatMul", []string{p, in[2]}, out)
	return keepsBatch
}
