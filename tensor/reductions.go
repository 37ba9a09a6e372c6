package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Reductions beyond Sum and Mean (reduce.go). Those over a dim list follow
// the Sum/SumKeep pattern: no dims means every dimension, negative dims
// count from the end, the plain form removes the reduced dimensions and the
// Keep form keeps them with size 1. Ops over one dimension (MaxDim, Argmax,
// Cumsum, …) also accept a 0-d tensor with dim 0 or -1, as PyTorch does.

// mathKeptView returns t, the result of a reduction of a rank-rank tensor
// over axes (kept or not), as a view with the reduced dimensions present
// with size 1 (stride 0), so that it broadcasts against the input.
func mathKeptView(t *Tensor, rank int, axes []int) *Tensor {
	if len(t.shape) == rank {
		return t.newView(t.shape, t.strides, t.offset)
	}
	red := make([]bool, rank)
	for _, a := range axes {
		red[a] = true
	}
	shape, strides := make([]int, 0, rank), make([]int, 0, rank)
	j := 0
	for i := range rank {
		if red[i] {
			shape, strides = append(shape, 1), append(strides, 0)
			continue
		}
		shape, strides = append(shape, t.shape[j]), append(strides, t.strides[j])
		j++
	}
	return t.newView(shape, strides, t.offset)
}

// mathReducedCount returns the number of elements each output of a
// reduction over axes combines.
func mathReducedCount(shape, axes []int) int {
	n := 1
	for _, a := range axes {
		n *= shape[a]
	}
	return n
}

// mathScalarDim reports whether t is 0-d, checking that dim is then 0 or
// -1 (PyTorch lets one-dimension ops treat a scalar as a 1-element vector).
func mathScalarDim(op string, t *Tensor, dim int) bool {
	if len(t.shape) != 0 {
		return false
	}
	normAxis(op, dim, 1)
	return true
}

// mathFlip returns v reversed along axis (a negative stride), no copy.
func mathFlip(v backends.View, axis int) backends.View {
	n := v.Shape[axis]
	if n == 0 {
		return v
	}
	v.Strides = append([]int(nil), v.Strides...)
	v.Offset += (n - 1) * v.Strides[axis]
	v.Strides[axis] = -v.Strides[axis]
	return v
}

// mathScanType is the dtype of a cumulative sum or product: Int64 for bool
// and integer inputs, as in PyTorch.
func mathScanType(d DType) DType {
	if d.IsFloat() {
		return d
	}
	return Int64
}

// mathScan returns the inclusive scan of x along axis, no graph; reverse
// scans from the end (the backward of a forward scan).
func mathScan(op string, r backends.ReduceOp, x *Tensor, axis int, reverse bool) *Tensor {
	out := newTensor(op, x.dev, mathScanType(x.dtype), x.shape)
	ov, xv := out.view(), x.view()
	if reverse {
		ov, xv = mathFlip(ov, axis), mathFlip(xv, axis)
	}
	out.backend().Scan(r, ov, xv, axis)
	return out
}

// mathArgReduce returns the Int64 index of the first maximum (ArgMax) or
// minimum of x along axis, no graph.
func mathArgReduce(op string, r backends.ReduceOp, x *Tensor, axis int, keep bool) *Tensor {
	if x.shape[axis] == 0 {
		fail(op, ErrShape, "cannot take %s over dimension %d of size 0 in %s", r, axis, shapeString(x.shape))
	}
	kshape := keptShape(x.shape, []int{axis}, true)
	out := newTensor(op, x.dev, Int64, kshape)
	out.backend().ArgReduce(r, out.view(), x.view(), axis)
	if keep {
		return out
	}
	s := keptShape(x.shape, []int{axis}, false)
	v := out.newView(s, backends.RowMajorStrides(s), 0)
	out.Release()
	return v
}

// mathScatter returns zeros of shape with src written at index along axis
// (index and src share a shape that matches shape off axis), no graph. It
// sends the gradient of a selection (max over a dim, sort, top-k) back to
// the selected elements.
func mathScatter(op string, src, index *Tensor, shape []int, axis int) *Tensor {
	out := rawFull(op, src.dev, src.dtype, shape, 0)
	out.backend().Scatter(out.view(), index.view(), src.view(), axis, false)
	return out
}

// mathExtremeMask returns x == m as Bool, counting NaN equal to NaN, where
// m is x's max or min over some axes, broadcast back to x's shape.
func mathExtremeMask(op string, x, m *Tensor) *Tensor {
	eq := rawBinary(op, backends.Eq, x, m)
	if !x.dtype.IsFloat() {
		return eq
	}
	xn := rawUnary(op, backends.IsNaN, x, 0, 0)
	mn := rawUnary(op, backends.IsNaN, m, 0, 0)
	both := rawBinary(op, backends.And, xn, mn)
	xn.Release()
	mn.Release()
	mask := rawBinary(op, backends.Or, eq, both)
	eq.Release()
	both.Release()
	return mask
}

func (t *Tensor) prod(op string, keep bool, dims []int) *Tensor {
	t.live(op)
	axes := normAxes(op, dims, len(t.shape))
	out := rawReduce(op, backends.Prod, t, axes, keep)
	return record("prod", map[string]any{"axes": axes, "keepdim": keep}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		// ∂/∂xᵢ Π x = Π_{j≠i} xⱼ: with no zero in the slice that is
		// Π/xᵢ, with exactly one zero it is the product of the others at
		// the zero and 0 elsewhere, with more zeros it is 0. Writing x̃ for
		// x with zeros replaced by ones, all three are g·Π x̃ / x̃ᵢ masked to
		// (no zero) or (one zero and xᵢ = 0).
		gk := mathKeptView(g, len(t.shape), axes)
		xz := rawScalar(op, backends.Eq, t, 0, false)
		cnt := rawReduce(op, backends.Sum, xz, axes, true)
		one := mathScalarTensor(op, t.dev, t.dtype, 1)
		x1 := mathWhere(op, xz, one, t, t.shape)
		one.Release()
		pnz := rawReduce(op, backends.Prod, x1, axes, true)
		d := rawBinary(op, mulOp, gk, pnz)
		gk.Release()
		pnz.Release()
		d = mathConsume(d, func(d *Tensor) *Tensor { return rawBinary(op, divOp, d, x1) })
		x1.Release()
		c0 := rawScalar(op, backends.Eq, cnt, 0, false)
		c1 := rawScalar(op, backends.Eq, cnt, 1, false)
		cnt.Release()
		c1z := rawBinary(op, backends.And, c1, xz)
		c1.Release()
		xz.Release()
		cond := rawBinary(op, backends.Or, c0, c1z)
		c0.Release()
		c1z.Release()
		d = mathKeepZero(op, cond, d)
		cond.Release()
		return []*Tensor{castGrad(d, t)}
	})
}

// Prod returns the product over dims (all when none are given), removing
// them. Bool and integer tensors give Int64, as in PyTorch. The gradient is
// exact with zeros in the input: the product of the other elements.
func (t *Tensor) Prod(dims ...int) *Tensor { return t.prod("Prod", false, dims) }

// ProdKeep is Prod keeping the reduced dimensions with size 1.
func (t *Tensor) ProdKeep(dims ...int) *Tensor { return t.prod("ProdKeep", true, dims) }

func (t *Tensor) extreme(op string, r backends.ReduceOp, keep bool, dims []int) *Tensor {
	t.live(op)
	axes := normAxes(op, dims, len(t.shape))
	name := "amax"
	if r == backends.Min {
		name = "amin"
	}
	out := rawReduce(op, r, t, axes, keep)
	return record(name, map[string]any{"axes": axes, "keepdim": keep}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		// Share g evenly among the elements equal to the extreme.
		mk := mathKeptView(out, len(t.shape), axes)
		mask := mathExtremeMask(op, t, mk)
		mk.Release()
		cnt := rawReduce(op, backends.Sum, mask, axes, true)
		gk := mathKeptView(g, len(t.shape), axes)
		share := rawBinary(op, divOp, gk, cnt)
		gk.Release()
		cnt.Release()
		d := mathKeepZero(op, mask, share)
		mask.Release()
		return []*Tensor{castGrad(d, t)}
	})
}

// Max returns the maximum over dims (all when none are given), removing
// them: torch.amax, or torch.max() for the whole tensor. NaN propagates.
// The gradient is shared evenly among the elements equal to the maximum
// (NaN elements when the maximum is NaN), as torch.max() and torch.amax do
// in PyTorch 1.13 (amax gives NaN gradients when the maximum is NaN; Kiln
// shares instead). For the index-selecting form see MaxDim. It panics with
// ErrShape when a reduced dimension is empty.
func (t *Tensor) Max(dims ...int) *Tensor { return t.extreme("Max", backends.Max, false, dims) }

// MaxKeep is Max keeping the reduced dimensions with size 1.
func (t *Tensor) MaxKeep(dims ...int) *Tensor { return t.extreme("MaxKeep", backends.Max, true, dims) }

// Min returns the minimum over dims (torch.amin, or torch.min() for the
// whole tensor); see Max for NaN and gradient rules.
func (t *Tensor) Min(dims ...int) *Tensor { return t.extreme("Min", backends.Min, false, dims) }

// MinKeep is Min keeping the reduced dimensions with size 1.
func (t *Tensor) MinKeep(dims ...int) *Tensor { return t.extreme("MinKeep", backends.Min, true, dims) }

func (t *Tensor) extremeDim(op string, r, ar backends.ReduceOp, dim int, keep bool) (values, indices *Tensor) {
	t.live(op)
	if mathScalarDim(op, t, dim) {
		v, i := t.Reshape(1).extremeDim(op, r, ar, 0, keep)
		return v.Reshape(), i.Reshape()
	}
	axis := normAxis(op, dim, len(t.shape))
	indices = mathArgReduce(op, ar, t, axis, keep)
	values = rawReduce(op, r, t, []int{axis}, keep)
	saved := indices.newView(indices.shape, indices.strides, indices.offset)
	name := "max_dim"
	if r == backends.Min {
		name = "min_dim"
	}
	values = record(name, map[string]any{"dim": axis, "keepdim": keep}, values, []*Tensor{t}, func(g *Tensor) []*Tensor {
		axes := []int{axis}
		gk := mathKeptView(g, len(t.shape), axes)
		ik := mathKeptView(saved, len(t.shape), axes)
		d := mathScatter(op, gk, ik, t.shape, axis)
		gk.Release()
		ik.Release()
		return []*Tensor{castGrad(d, t)}
	})
	return values, indices
}

// MaxDim returns the maximum along dim and the Int64 index of the first
// maximum (a NaN counts as the maximum), as torch.max(t, dim, keepdim).
// The gradient flows to the indexed element only. It panics with ErrShape
// when dim is empty and ErrArgument when dim is out of range.
func (t *Tensor) MaxDim(dim int, keep bool) (values, indices *Tensor) {
	return t.extremeDim("MaxDim", backends.Max, backends.ArgMax, dim, keep)
}

// MinDim returns the minimum along dim and the index of the first minimum
// (see MaxDim).
func (t *Tensor) MinDim(dim int, keep bool) (values, indices *Tensor) {
	return t.extremeDim("MinDim", backends.Min, backends.ArgMin, dim, keep)
}

func (t *Tensor) argExtreme(op string, r backends.ReduceOp, dim int, keep bool) *Tensor {
	t.live(op)
	if mathScalarDim(op, t, dim) {
		return rawFull(op, t.dev, Int64, []int{}, 0)
	}
	return mathArgReduce(op, r, t, normAxis(op, dim, len(t.shape)), keep)
}

// Argmax returns the Int64 index of the first maximum along dim (a NaN
// counts as the maximum), removing dim. It panics with ErrShape when dim is
// empty.
func (t *Tensor) Argmax(dim int) *Tensor { return t.argExtreme("Argmax", backends.ArgMax, dim, false) }

// ArgmaxKeep is Argmax keeping dim with size 1.
func (t *Tensor) ArgmaxKeep(dim int) *Tensor {
	return t.argExtreme("ArgmaxKeep", backends.ArgMax, dim, true)
}

// Argmin returns the Int64 index of the first minimum along dim.
func (t *Tensor) Argmin(dim int) *Tensor { return t.argExtreme("Argmin", backends.ArgMin, dim, false) }

// ArgminKeep is Argmin keeping dim with size 1.
func (t *Tensor) ArgminKeep(dim int) *Tensor {
	return t.argExtreme("ArgminKeep", backends.ArgMin, dim, true)
}

func (t *Tensor) argExtremeAll(op string, r backends.ReduceOp) *Tensor {
	t.live(op)
	if t.NumElements() == 0 {
		fail(op, ErrShape, "cannot take %s of an empty tensor %s", r, shapeString(t.shape))
	}
	flat := rawReshape(op, t, []int{t.NumElements()})
	out := mathArgReduce(op, r, flat, 0, false)
	flat.Release()
	return out
}

// ArgmaxAll returns, as a 0-d Int64 tensor, the index of the first maximum
// of t flattened in row-major order (torch.argmax(t)). It panics with
// ErrShape on an empty tensor.
func (t *Tensor) ArgmaxAll() *Tensor { return t.argExtremeAll("ArgmaxAll", backends.ArgMax) }

// ArgminAll returns the flat index of the first minimum (see ArgmaxAll).
func (t *Tensor) ArgminAll() *Tensor { return t.argExtremeAll("ArgminAll", backends.ArgMin) }

// variance computes the variance (or standard deviation) over axes in two
// passes (mean first), dividing by max(0, N − correction) as PyTorch does.
func (t *Tensor) variance(op string, std bool, correction int, keep bool, dims []int) *Tensor {
	t.live(op)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "variance of a %s tensor; convert it with To(tensor.Float32) first", t.dtype)
	}
	axes := normAxes(op, dims, len(t.shape))
	n := mathReducedCount(t.shape, axes)
	den := float64(max(0, n-correction))
	centred := func() *Tensor {
		s := rawReduce(op, backends.Sum, t, axes, true)
		m := rawScalar(op, divOp, s, float64(n), false)
		s.Release()
		d := rawBinary(op, subOp, t, m)
		m.Release()
		return d
	}
	d := centred()
	sq := rawUnary(op, backends.Square, d, 0, 0)
	d.Release()
	ss := rawReduce(op, backends.Sum, sq, axes, keep)
	sq.Release()
	out := rawScalar(op, divOp, ss, den, false)
	ss.Release()
	name := "var"
	if std {
		name = "std"
		out = mathConsume(out, func(v *Tensor) *Tensor { return rawUnary(op, backends.Sqrt, v, 0, 0) })
	}
	attrs := map[string]any{"axes": axes, "keepdim": keep, "correction": correction}
	return record(name, attrs, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		// var: g·2(x − mean)/den; std: the same with g/(2·std), and 0
		// where std is 0 (PyTorch's choice for the undefined gradient).
		gk := mathKeptView(g, len(t.shape), axes)
		if std {
			ok := mathKeptView(out, len(t.shape), axes)
			q := rawBinary(op, divOp, gk, ok)
			gk.Release()
			q = mathConsume(q, func(q *Tensor) *Tensor { return rawScalar(op, divOp, q, 2, false) })
			zero := rawScalar(op, backends.Eq, ok, 0, false)
			ok.Release()
			gk = mathMaskZero(op, zero, q)
			zero.Release()
		}
		d := centred()
		r := rawBinary(op, mulOp, d, gk)
		d.Release()
		gk.Release()
		r = mathConsume(r, func(r *Tensor) *Tensor { return rawScalar(op, mulOp, r, 2/den, false) })
		return []*Tensor{castGrad(r, t)}
	})
}

// Var returns the unbiased variance (correction 1, like torch.var) over
// dims (all when none are given), removing them. A slice of N ≤ 1 elements
// gives NaN or +Inf, as in PyTorch. It panics with ErrDType for
// non-float tensors.
func (t *Tensor) Var(dims ...int) *Tensor { return t.variance("Var", false, 1, false, dims) }

// VarKeep is Var keeping the reduced dimensions with size 1.
func (t *Tensor) VarKeep(dims ...int) *Tensor { return t.variance("VarKeep", false, 1, true, dims) }

// VarCorrection returns Σ(x − mean)² / max(0, N − correction) over dims
// (torch.var with correction=): 0 gives the population variance, 1 the
// unbiased one.
func (t *Tensor) VarCorrection(correction int, keep bool, dims ...int) *Tensor {
	return t.variance("VarCorrection", false, correction, keep, dims)
}

// Std returns the unbiased standard deviation over dims (see Var). Where it
// is 0 its gradient is 0, as in PyTorch.
func (t *Tensor) Std(dims ...int) *Tensor { return t.variance("Std", true, 1, false, dims) }

// StdKeep is Std keeping the reduced dimensions with size 1.
func (t *Tensor) StdKeep(dims ...int) *Tensor { return t.variance("StdKeep", true, 1, true, dims) }

// StdCorrection is the square root of VarCorrection.
func (t *Tensor) StdCorrection(correction int, keep bool, dims ...int) *Tensor {
	return t.variance("StdCorrection", true, correction, keep, dims)
}

func (t *Tensor) logSumExp(op string, keep bool, dims []int) *Tensor {
	t.live(op)
	axes := normAxes(op, dims, len(t.shape))
	x := t
	if !t.dtype.IsFloat() {
		x = rawCast(op, t, Float32)
		defer x.Release()
	}
	var out *Tensor
	if mathReducedCount(t.shape, axes) == 0 {
		out = rawFull(op, t.dev, x.dtype, keptShape(t.shape, axes, keep), math.Inf(-1))
	} else {
		// log Σ exp(x − m) + m with m the maximum, taken as 0 where it is
		// infinite so that all −Inf gives −Inf and any +Inf gives +Inf.
		m := rawReduce(op, backends.Max, x, axes, true)
		inf := rawUnary(op, backends.IsInf, m, 0, 0)
		m = mathMaskZero(op, inf, m)
		inf.Release()
		e := rawBinary(op, subOp, x, m)
		e = mathConsume(e, func(e *Tensor) *Tensor { return rawUnary(op, backends.Exp, e, 0, 0) })
		s := rawReduce(op, backends.Sum, e, axes, true)
		e.Release()
		l := mathConsume(s, func(s *Tensor) *Tensor { return rawUnary(op, backends.Log, s, 0, 0) })
		out = rawBinary(op, addOp, l, m)
		l.Release()
		m.Release()
		if !keep {
			ks := keptShape(t.shape, axes, false)
			out = mathConsume(out, func(o *Tensor) *Tensor { return o.newView(ks, backends.RowMajorStrides(ks), o.offset) })
		}
	}
	return record("logsumexp", map[string]any{"axes": axes, "keepdim": keep}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		// g · exp(x − logsumexp(x)) (the softmax of the slice)
		ok := mathKeptView(out, len(t.shape), axes)
		p := rawBinary(op, subOp, t, ok)
		ok.Release()
		p = mathConsume(p, func(p *Tensor) *Tensor { return rawUnary(op, backends.Exp, p, 0, 0) })
		gk := mathKeptView(g, len(t.shape), axes)
		d := rawBinary(op, mulOp, p, gk)
		gk.Release()
		p.Release()
		return []*Tensor{castGrad(d, t)}
	})
}

// LogSumExp returns log Σ exp(x) over dims (all when none are given),
// removing them, computed stably by shifting with the maximum. Integer
// tensors give Float32. An empty slice gives −Inf.
func (t *Tensor) LogSumExp(dims ...int) *Tensor { return t.logSumExp("LogSumExp", false, dims) }

// LogSumExpKeep is LogSumExp keeping the reduced dimensions with size 1.
func (t *Tensor) LogSumExpKeep(dims ...int) *Tensor { return t.logSumExp("LogSumExpKeep", true, dims) }

// Cumsum returns the inclusive cumulative sum along dim (bool and integer
// tensors give Int64, as in PyTorch). It panics with ErrArgument when dim
// is out of range.
func (t *Tensor) Cumsum(dim int) *Tensor {
	t.live("Cumsum")
	if mathScalarDim("Cumsum", t, dim) {
		return t.Reshape(1).Cumsum(0).Reshape()
	}
	axis := normAxis("Cumsum", dim, len(t.shape))
	out := mathScan("Cumsum", backends.Sum, t, axis, false)
	return record("cumsum", map[string]any{"dim": axis}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(mathScan("Cumsum", backends.Sum, g, axis, true), t)}
	})
}

// Cumprod returns the inclusive cumulative product along dim (bool and
// integer tensors give Int64). Its gradient is exact with zeros in the
// input.
func (t *Tensor) Cumprod(dim int) *Tensor {
	const op = "Cumprod"
	t.live(op)
	if mathScalarDim(op, t, dim) {
		return t.Reshape(1).Cumprod(0).Reshape()
	}
	axis := normAxis(op, dim, len(t.shape))
	out := mathScan(op, backends.Prod, t, axis, false)
	return record("cumprod", map[string]any{"dim": axis}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(cumprodBackward(op, g, t, out, axis), t)}
	})
}

// cumprodBackward returns ∂/∂xₖ Σⱼ gⱼ·Πᵢ≤ⱼ xᵢ = Σⱼ≥ₖ gⱼ·Πᵢ≤ⱼ,ᵢ≠ₖ xᵢ along
// axis. Before the first zero of a line that is (reverse cumsum of g·out)ₖ
// / xₖ; at the first zero it is the reverse cumsum of g·Q up to the next
// zero, where Q is the cumulative product with zeros replaced by ones; after
// the first zero every term holds that zero, so it is 0.
func cumprodBackward(op string, g, x, out *Tensor, axis int) *Tensor {
	xz := rawScalar(op, backends.Eq, x, 0, false)
	cz := mathScan(op, backends.Sum, xz, axis, false) // zeros seen so far
	one := mathScalarTensor(op, x.dev, x.dtype, 1)
	x1 := mathWhere(op, xz, one, x, x.shape)
	one.Release()

	// Before the first zero.
	gout := rawBinary(op, mulOp, g, out)
	sa := mathScan(op, backends.Sum, gout, axis, true)
	gout.Release()
	a := rawBinary(op, divOp, sa, x1)
	sa.Release()

	// At the first zero.
	q := mathScan(op, backends.Prod, x1, axis, false)
	x1.Release()
	gq := rawBinary(op, mulOp, g, q)
	q.Release()
	c1 := rawScalar(op, backends.Eq, cz, 1, false)
	gq = mathKeepZero(op, c1, gq)
	sb := mathScan(op, backends.Sum, gq, axis, true)
	gq.Release()
	first := rawBinary(op, backends.And, xz, c1)
	c1.Release()
	xz.Release()
	b := mathKeepZero(op, first, sb)
	first.Release()

	c0 := rawScalar(op, backends.Eq, cz, 0, false)
	cz.Release()
	d := mathWhere(op, c0, a, b, x.shape)
	c0.Release()
	a.Release()
	b.Release()
	return d
}

func (t *Tensor) anyAll(op string, all, keep bool, dims []int) *Tensor {
	t.live(op)
	axes := normAxes(op, dims, len(t.shape))
	// Count the true elements (any) or the false ones (all): an empty
	// slice then gives false and true, as in PyTorch.
	var b *Tensor
	if all {
		b = rawUnary(op, backends.Not, t, 0, 0)
	} else {
		b = rawCast(op, t, Bool)
	}
	n := rawReduce(op, backends.Sum, b, axes, keep)
	b.Release()
	cmp := backends.Gt
	if all {
		cmp = backends.Eq
	}
	out := rawScalar(op, cmp, n, 0, false)
	n.Release()
	if t.traced {
		name := "any"
		if all {
			name = "all"
		}
		return recordTraced(name, map[string]any{"axes": axes, "keepdim": keep}, out, t)
	}
	return out
}

// Any returns, as Bool, whether any element over dims (all when none are
// given) is non-zero (NaN counts as true), removing the dims. PyTorch 1.13
// returns Uint8 for Uint8 input; Kiln always returns Bool.
func (t *Tensor) Any(dims ...int) *Tensor { return t.anyAll("Any", false, false, dims) }

// AnyKeep is Any keeping the reduced dimensions with size 1.
func (t *Tensor) AnyKeep(dims ...int) *Tensor { return t.anyAll("AnyKeep", false, true, dims) }

// All returns, as Bool, whether every element over dims (all when none are
// given) is non-zero, removing the dims. An empty slice gives true.
func (t *Tensor) All(dims ...int) *Tensor { return t.anyAll("All", true, false, dims) }

// AllKeep is All keeping the reduced dimensions with size 1.
func (t *Tensor) AllKeep(dims ...int) *Tensor { return t.anyAll("AllKeep", true, true, dims) }
