package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Logcumsumexp returns log Σ_{j≤i} exp(x_j) along dim, as
// torch.logcumsumexp. It is computed as a parallel prefix scan of the
// log-add-exp of pairs (⌈log₂ n⌉ passes of element-wise ops), so no
// element is ever exponentiated unshifted: values far apart in magnitude
// (−1000 and 0) keep their own running value instead of underflowing. −Inf
// is the identity and NaN propagates. Its gradient is PyTorch's, computed
// in log space with the same scan. It panics with ErrDType for a tensor that
// is not a float tensor and ErrArgument for a dim out of range.
func (t *Tensor) Logcumsumexp(dim int) *Tensor {
	const op = "Logcumsumexp"
	t.live(op)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "input must be a float tensor, got %s %s", shapeString(t.shape), t.dtype)
	}
	if mathScalarDim(op, t, dim) {
		return t.Reshape(1).Logcumsumexp(0).Reshape()
	}
	axis := normAxis(op, dim, len(t.shape))
	out := rawLogcumsumexp(op, t, axis, false)
	return record("logcumsumexp", map[string]any{"dim": axis}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(logcumsumexpBackward(op, g, t, out, axis), t)}
	})
}

// logcumsumexpBackward is PyTorch's rule: with the gradient split by sign,
// ∂/∂xᵢ = exp(xᵢ + rlcse(log g⁺ − out)ᵢ) − exp(xᵢ + rlcse(log g⁻ − out)ᵢ),
// where rlcse is the logcumsumexp from the end of the dimension and log of
// a zero part is the lowest finite value.
func logcumsumexpBackward(op string, g, x, out *Tensor, axis int) *Tensor {
	lowest := mathScalarTensor(op, g.dev, g.dtype, lowestFinite(g.dtype))
	defer lowest.Release()
	logAbs := rawUnary(op, backends.Abs, g, 0, 0)
	logAbs = mathConsume(logAbs, func(a *Tensor) *Tensor { return rawUnary(op, backends.Log, a, 0, 0) })
	defer logAbs.Release()
	part := func(cmp backends.BinaryOp) *Tensor {
		sel := rawScalar(op, cmp, g, 0, false)
		lg := mathWhere(op, sel, logAbs, lowest, g.shape)
		sel.Release()
		d := rawBinary(op, subOp, lg, out)
		lg.Release()
		r := rawLogcumsumexp(op, d, axis, true)
		d.Release()
		r = mathConsume(r, func(r *Tensor) *Tensor { return rawBinary(op, addOp, r, x) })
		return mathConsume(r, func(r *Tensor) *Tensor { return rawUnary(op, backends.Exp, r, 0, 0) })
	}
	pos := part(backends.Gt)
	neg := part(backends.Lt)
	res := rawBinary(op, subOp, pos, neg)
	pos.Release()
	neg.Release()
	return res
}

// rawLogcumsumexp returns the logcumsumexp of x along axis (from the end
// when reverse) as a new contiguous tensor, with no graph: a Hillis–Steele
// scan, where pass k combines each element with the one 2ᵏ before it.
func rawLogcumsumexp(op string, x *Tensor, axis int, reverse bool) *Tensor {
	cur := newTensor(op, x.dev, x.dtype, x.shape)
	xv := x.view()
	if reverse {
		xv = flipOf(xv, []int{axis})
	}
	cur.backend().Copy(cur.view(), xv)
	n := x.shape[axis]
	for s := 1; s < n; s *= 2 {
		next := newTensor(op, x.dev, x.dtype, x.shape)
		head := rawNarrow(cur, axis, 0, s)
		next.backend().Copy(sliceOf(next.view(), axis, 0, 1, s), head.view())
		head.Release()
		a, b := rawNarrow(cur, axis, s, n-s), rawNarrow(cur, axis, 0, n-s)
		r := logAddExp(op, a, b)
		a.Release()
		b.Release()
		next.backend().Copy(sliceOf(next.view(), axis, s, 1, n-s), r.view())
		r.Release()
		cur.Release()
		cur = next
	}
	if !reverse {
		return cur
	}
	res := newTensor(op, x.dev, x.dtype, x.shape)
	res.backend().Copy(flipOf(res.view(), []int{axis}), cur.view())
	cur.Release()
	return res
}

// logAddExp returns log(eᵃ + eᵇ) = max(a, b) + log1p(exp(−|a − b|)) for
// same-shaped a and b, with no graph; where the maximum is infinite (both
// −Inf, or one +Inf) it is the result, and NaN propagates.
func logAddExp(op string, a, b *Tensor) *Tensor {
	m := rawBinary(op, backends.Maximum, a, b)
	d := rawBinary(op, subOp, a, b)
	d = mathConsume(d, func(d *Tensor) *Tensor { return rawUnary(op, backends.Abs, d, 0, 0) })
	d = mathConsume(d, func(d *Tensor) *Tensor { return rawUnary(op, backends.Neg, d, 0, 0) })
	d = mathConsume(d, func(d *Tensor) *Tensor { return rawUnary(op, backends.Exp, d, 0, 0) })
	d = mathConsume(d, func(d *Tensor) *Tensor { return rawUnary(op, backends.Log1p, d, 0, 0) })
	s := rawBinary(op, addOp, m, d)
	d.Release()
	inf := rawUnary(op, backends.IsInf, m, 0, 0)
	r := mathWhere(op, inf, m, s, m.shape)
	inf.Release()
	m.Release()
	s.Release()
	return r
}

// lowestFinite returns the most negative finite value of the float dtype d.
func lowestFinite(d DType) float64 {
	switch d {
	case Float64:
		return -math.MaxFloat64
	case Float16:
		return -65504
	case BFloat16:
		return -3.3895313892515355e38
	}
	return -math.MaxFloat32
}
