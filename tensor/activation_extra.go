package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// The rest of torch.nn.functional's activations. The piecewise ones
// (HardTanh, Threshold, SoftShrink, HardShrink, Prelu, Rrelu in training)
// are one graph node each, computed from the backend's comparison, Where
// and Clamp primitives, whose backward recomputes its mask from the input
// instead of keeping one, and whose derivative at a kink is PyTorch's.
// Softmin, Glu and TanhShrink are short compositions of recorded ops
// (Neg and Softmax; Narrow, Sigmoid and Mul; Tanh and Sub). Integer inputs
// of the element-wise ones are computed in Float32, as the activations of
// activation.go; PReLU, GLU and Softmin need float inputs, as in PyTorch.

// extraFloat returns t in the float dtype an element-wise activation
// computes in: a new view of t when it is float, else a Float32 copy.
func extraFloat(op string, t *Tensor) *Tensor { return rawCast(op, t, floatType(t.dtype)) }

// extraOutside returns a Bool tensor that is true where x lies outside the
// open interval (lo, hi): x ≤ lo or x ≥ hi. NaN is never outside.
func extraOutside(op string, x *Tensor, lo, hi float64) *Tensor {
	below := rawScalar(op, backends.Le, x, lo, false)
	above := rawScalar(op, backends.Ge, x, hi, false)
	out := rawBinary(op, backends.Or, below, above)
	below.Release()
	above.Release()
	return out
}

// extraInside returns a Bool tensor that is true where lo ≤ x ≤ hi (never
// at NaN).
func extraInside(op string, x *Tensor, lo, hi float64) *Tensor {
	above := rawScalar(op, backends.Ge, x, lo, false)
	below := rawScalar(op, backends.Le, x, hi, false)
	out := rawBinary(op, backends.And, above, below)
	above.Release()
	below.Release()
	return out
}

// extraCheckBound panics with ErrArgument for op when v is NaN.
func extraCheckBound(op, name string, v float64) {
	if math.IsNaN(v) {
		fail(op, ErrArgument, "%s is NaN", name)
	}
}

// HardTanh returns x clamped to [min, max] element-wise, torch.nn.functional
// .hardtanh (PyTorch's defaults are −1 and 1: x.HardTanh(-1, 1)). Unlike
// Clamp, its gradient is 0 at the bounds themselves, as in PyTorch: g where
// min < x < max (and at NaN), 0 elsewhere. Integer inputs give Float32
// (PyTorch keeps integers). It is one graph node, "hardtanh", and panics
// with ErrArgument when min > max or a bound is NaN.
func (t *Tensor) HardTanh(min, max float64) *Tensor {
	const op = "HardTanh"
	t.live(op)
	extraCheckBound(op, "min", min)
	extraCheckBound(op, "max", max)
	if min > max {
		fail(op, ErrArgument, "min %v is greater than max %v", min, max)
	}
	x := extraFloat(op, t)
	out := rawUnary(op, backends.Clamp, x, min, max)
	x.Release()
	return record("hardtanh", map[string]any{"min": min, "max": max}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		m := extraOutside(op, t, min, max)
		d := mathMaskZero(op, m, g.newView(g.shape, g.strides, g.offset))
		m.Release()
		return []*Tensor{castGrad(d, t)}
	})
}

// Threshold returns value where x ≤ threshold and x elsewhere (NaN stays
// NaN), torch.nn.functional.threshold. The gradient is g where
// x > threshold (and at NaN), 0 elsewhere. Integer inputs give Float32. It
// is one graph node, "threshold", and panics with ErrArgument when
// threshold is NaN.
func (t *Tensor) Threshold(threshold, value float64) *Tensor {
	const op = "Threshold"
	t.live(op)
	extraCheckBound(op, "threshold", threshold)
	x := extraFloat(op, t)
	m := rawScalar(op, backends.Le, x, threshold, false)
	v := mathScalarTensor(op, x.dev, x.dtype, value)
	out := mathWhere(op, m, v, x, x.shape)
	m.Release()
	v.Release()
	x.Release()
	return record("threshold", map[string]any{"threshold": threshold, "value": value}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		m := rawScalar(op, backends.Le, t, threshold, false)
		d := mathMaskZero(op, m, g.newView(g.shape, g.strides, g.offset))
		m.Release()
		return []*Tensor{castGrad(d, t)}
	})
}

// SoftShrink returns x − lambda where x > lambda, x + lambda where
// x < −lambda and 0 in between, torch.nn.functional.softshrink (PyTorch's
// default lambda is 0.5). The gradient is g outside [−lambda, lambda] and
// 0 inside. NaN propagates (PyTorch 1.13 gives 0 there). Integer inputs give
// Float32. It is one graph node, "softshrink", and panics with ErrArgument
// for a negative or NaN lambda, as PyTorch.
func (t *Tensor) SoftShrink(lambda float64) *Tensor {
	const op = "SoftShrink"
	t.live(op)
	if !(lambda >= 0) {
		fail(op, ErrArgument, "lambda must be at least 0, got %v", lambda)
	}
	x := extraFloat(op, t)
	// x − clamp(x, −λ, λ): exactly 0 inside, x ∓ λ outside.
	c := rawUnary(op, backends.Clamp, x, -lambda, lambda)
	out := rawBinary(op, subOp, x, c)
	c.Release()
	x.Release()
	return record("softshrink", map[string]any{"lambda": lambda}, out, []*Tensor{t}, shrinkBackward(op, t, lambda))
}

// HardShrink returns x where |x| > lambda and 0 elsewhere (NaN stays NaN),
// torch.nn.functional.hardshrink (PyTorch's default lambda is 0.5). The
// gradient is g outside [−lambda, lambda] and 0 inside. Integer inputs give
// Float32. It is one graph node, "hardshrink", and panics with ErrArgument
// for a NaN lambda.
func (t *Tensor) HardShrink(lambda float64) *Tensor {
	const op = "HardShrink"
	t.live(op)
	extraCheckBound(op, "lambda", lambda)
	x := extraFloat(op, t)
	m := extraInside(op, x, -lambda, lambda)
	out := mathMaskZero(op, m, x) // releases x
	m.Release()
	return record("hardshrink", map[string]any{"lambda": lambda}, out, []*Tensor{t}, shrinkBackward(op, t, lambda))
}

// shrinkBackward is the backward of both shrinks: g outside
// [−lambda, lambda], 0 inside.
func shrinkBackward(op string, t *Tensor, lambda float64) func(g *Tensor) []*Tensor {
	return func(g *Tensor) []*Tensor {
		m := extraInside(op, t, -lambda, lambda)
		d := mathMaskZero(op, m, g.newView(g.shape, g.strides, g.offset))
		m.Release()
		return []*Tensor{castGrad(d, t)}
	}
}

// TanhShrink returns x − tanh(x) element-wise, torch.nn.functional
// .tanhshrink; its gradient is g·tanh²(x). It records Tanh and Sub.
func (t *Tensor) TanhShrink() *Tensor {
	t.live("TanhShrink")
	return t.Sub(t.Tanh())
}

// Softmin returns Softmax(−x) along dim (negative counts from the end),
// torch.nn.functional.softmin: every slice along dim sums to 1 and the
// smallest element gets the largest share. It records Neg and Softmax and
// panics with ErrDType for non-float inputs and ErrArgument for a dim out
// of range.
func (t *Tensor) Softmin(dim int) *Tensor {
	const op = "Softmin"
	t.live(op)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "softmin of a %s tensor %s; convert it with To(tensor.Float32) first", t.dtype, shapeString(t.shape))
	}
	normAxis(op, dim, max(len(t.shape), 1))
	return t.Neg().Softmax(dim)
}

// Glu returns the gated linear unit a·sigmoid(b) of the two halves a
// (first) and b (second) of t along dim (negative counts from the end),
// torch.nn.functional.glu, whose default dim is −1. The result has half
// t's size along dim. It records Narrow, Sigmoid and Mul, and panics with
// ErrDType for non-float inputs, ErrShape for a 0-d tensor or an odd size
// along dim, and ErrArgument for a dim out of range.
func (t *Tensor) Glu(dim int) *Tensor {
	const op = "Glu"
	t.live(op)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "glu of a %s tensor %s; convert it with To(tensor.Float32) first", t.dtype, shapeString(t.shape))
	}
	if len(t.shape) == 0 {
		fail(op, ErrShape, "glu does not take a 0-d tensor")
	}
	a := normAxis(op, dim, len(t.shape))
	n := t.shape[a]
	if n%2 != 0 {
		fail(op, ErrShape, "halving dimension %d of %s needs an even size, got %d", dim, shapeString(t.shape), n)
	}
	return t.Narrow(a, 0, n/2).Mul(t.Narrow(a, n/2, n/2).Sigmoid())
}

// Prelu returns x where x > 0 and weight·x elsewhere, torch.nn.functional
// .prelu, with a learnable slope: weight holds one slope (any shape with
// one element) or one per channel, [C], the channels being dimension 1 of
// t (a tensor of rank below 2 takes a single slope). It is one graph node,
// "prelu", with gradients for both: g where x > 0 and weight·g elsewhere
// for t (the slope at 0, as PyTorch), and the sum of g·x over the
// elements ≤ 0 of each channel for weight.
//
// It panics with ErrDType when t or weight is not float or their dtypes
// differ, ErrShape when weight has neither one element nor one per
// channel, and ErrDevice when they live on different devices.
func (t *Tensor) Prelu(weight *Tensor) *Tensor {
	const op = "Prelu"
	sameDevice(op, t, weight)
	if !t.dtype.IsFloat() || t.dtype != weight.dtype {
		fail(op, ErrDType, "input %s %s and weight %s %s must share one float dtype",
			shapeString(t.shape), t.dtype, shapeString(weight.shape), weight.dtype)
	}
	wn := weight.NumElements()
	var wv *Tensor // weight laid out to broadcast against t
	switch {
	case wn == 1:
		wv = weight.newView([]int{}, []int{}, weight.offset)
	case len(t.shape) >= 2 && len(weight.shape) == 1 && wn == t.shape[1]:
		shape := make([]int, len(t.shape)-1)
		strides := make([]int, len(shape))
		for i := range shape {
			shape[i], strides[i] = 1, 1
		}
		shape[0], strides[0] = wn, weight.strides[0]
		wv = weight.newView(shape, strides, weight.offset)
	default:
		channels := 1
		if len(t.shape) >= 2 {
			channels = t.shape[1]
		}
		fail(op, ErrShape, "weight %s must hold one slope or one per channel (%d channels in dimension 1 of input %s)",
			shapeString(weight.shape), channels, shapeString(t.shape))
	}
	pos := rawScalar(op, backends.Gt, t, 0, false)
	wx := rawBinary(op, mulOp, t, wv)
	out := mathWhere(op, pos, t, wx, t.shape)
	pos.Release()
	wx.Release()
	return actRecord("prelu", nil, out, []*Tensor{t, weight}, []*Tensor{wv}, func(g *Tensor) []*Tensor {
		pos := rawScalar(op, backends.Gt, t, 0, false)
		defer pos.Release()
		var dx, dw *Tensor
		if t.requiresGrad {
			gw := rawBinary(op, mulOp, g, wv)
			dx = mathWhere(op, pos, g, gw, g.shape)
			gw.Release()
		}
		if weight.requiresGrad {
			gx := mathMaskZero(op, pos, rawBinary(op, mulOp, g, t))
			r := sumTo(gx, wv.shape)
			if r != gx {
				gx.Release()
			}
			r = mathConsume(r, func(r *Tensor) *Tensor { return rawContiguous(op, r) })
			dw = r.newView(append([]int(nil), weight.shape...), backends.RowMajorStrides(weight.shape), r.offset)
			r.Release()
		}
		return []*Tensor{dx, dw}
	})
}

// Rrelu returns the randomized leaky ReLU, torch.nn.functional.rrelu: x
// where x > 0 and a·x elsewhere. In training, a is drawn for each element
// uniformly from [lower, upper) with t's device random stream
// (Device.Seed makes it repeatable), and the gradient is g where x > 0 and
// a·g elsewhere with the same draws (one graph node, "rrelu"); otherwise a
// is the fixed (lower + upper)/2 and Rrelu is LeakyRelu with that slope.
// PyTorch's defaults are lower 1/8 and upper 1/3. Integer inputs give
// Float32. It panics with ErrArgument when lower > upper or a bound is
// not finite.
func (t *Tensor) Rrelu(lower, upper float64, training bool) *Tensor {
	const op = "Rrelu"
	t.live(op)
	if math.IsNaN(lower) || math.IsNaN(upper) || math.IsInf(lower, 0) || math.IsInf(upper, 0) || lower > upper {
		fail(op, ErrArgument, "bounds lower %v and upper %v must be finite with lower ≤ upper", lower, upper)
	}
	if !training {
		return t.LeakyRelu((lower + upper) / 2)
	}
	x := extraFloat(op, t)
	defer x.Release()
	noise := random(op, x.dev, x.dtype, backends.Uniform, lower, upper, x.shape)
	pos := rawScalar(op, backends.Gt, x, 0, false)
	ax := rawBinary(op, mulOp, x, noise)
	out := mathWhere(op, pos, x, ax, x.shape)
	pos.Release()
	ax.Release()
	return actRecord("rrelu", map[string]any{"lower": lower, "upper": upper}, out, []*Tensor{t}, []*Tensor{noise}, func(g *Tensor) []*Tensor {
		pos := rawScalar(op, backends.Gt, t, 0, false)
		ag := rawBinary(op, mulOp, g, noise)
		d := mathWhere(op, pos, g, ag, g.shape)
		pos.Release()
		ag.Release()
		return []*Tensor{castGrad(d, t)}
	})
}
