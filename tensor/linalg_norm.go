package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Vector and matrix norms (torch.linalg.vector_norm and matrix_norm). The
// vector norm is one named op on the backend's element-wise and reduce
// primitives, with PyTorch's backward rule (which defines the gradient at a
// zero norm as zero, where a composition through Sqrt would give NaN); the
// matrix norms are composed of it, Svdvals and the reductions.

// VectorNorm returns the ord-norm of t over dims (every dimension when none
// are given), keeping them with size 1 when keepdim, as
// torch.linalg.vector_norm: ord 2 the Euclidean norm, 1 the sum of |x|,
// +Inf the largest |x|, −Inf the smallest, 0 the number of non-zero
// elements, any other p (Σ|x|ᵖ)^(1/p). Gradients follow PyTorch's
// norm_backward: zero where the norm is zero, shared evenly among ties for
// ±Inf, zero for ord 0. It fails with ErrDType for a non-float t,
// ErrArgument for a dimension out of range or repeated, and ErrShape for
// ±Inf over an empty dimension.
func (t *Tensor) VectorNorm(ord float64, keepdim bool, dims ...int) *Tensor {
	const op = "VectorNorm"
	t.live(op)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "expected a float tensor, got %s %s", t.dtype, shapeString(t.shape))
	}
	if math.IsNaN(ord) {
		fail(op, ErrArgument, "ord is NaN")
	}
	r := len(t.shape)
	ax := normAxes(op, dims, r)
	if r == 0 {
		ax = nil
	}
	abs := rawUnary(op, backends.Abs, t, 0, 0)
	var out *Tensor
	switch {
	case math.IsInf(ord, 1):
		out = rawReduce(op, backends.Max, abs, ax, keepdim)
	case math.IsInf(ord, -1):
		out = rawReduce(op, backends.Min, abs, ax, keepdim)
	case ord == 0:
		nz := rawScalar(op, backends.Ne, t, 0, false)
		f := rawCast(op, nz, t.dtype)
		nz.Release()
		out = rawReduce(op, backends.Sum, f, ax, keepdim)
		f.Release()
	case ord == 1:
		out = rawReduce(op, backends.Sum, abs, ax, keepdim)
	case ord == 2:
		sq := rawUnary(op, backends.Square, t, 0, 0)
		s := rawReduce(op, backends.Sum, sq, ax, keepdim)
		sq.Release()
		out = mathConsume(s, func(s *Tensor) *Tensor { return rawUnary(op, backends.Sqrt, s, 0, 0) })
	default:
		p := rawUnary(op, backends.PowConst, abs, ord, 0)
		s := rawReduce(op, backends.Sum, p, ax, keepdim)
		p.Release()
		out = mathConsume(s, func(s *Tensor) *Tensor { return rawUnary(op, backends.PowConst, s, 1/ord, 0) })
	}
	abs.Release()
	return record("linalg_vector_norm", map[string]any{"ord": ord, "axes": ax, "keepdim": keepdim}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(vectorNormGrad(op, t, out, g, ord, ax), t)}
	})
}

// vectorNormGrad is PyTorch's norm_backward for x, norm n and upstream g.
func vectorNormGrad(op string, x, n, g *Tensor, ord float64, ax []int) *Tensor {
	r := len(x.shape)
	if ord == 0 {
		return rawFull(op, g.dev, g.dtype, x.shape, 0)
	}
	gk, nk := mathKeptView(g, r, ax), mathKeptView(n, r, ax)
	defer gk.Release()
	defer nk.Release()
	sgn := func() *Tensor { return rawUnary(op, backends.Sign, x, 0, 0) }
	mul := func(a, b *Tensor) *Tensor {
		o := rawBinary(op, mulOp, a, b)
		a.Release()
		return o
	}
	// scale = g / n^(p−1), zero where n == 0
	scale := func(p float64) *Tensor {
		np := rawUnary(op, backends.PowConst, nk, p-1, 0)
		s := rawBinary(op, divOp, gk, np)
		np.Release()
		z := rawScalar(op, backends.Eq, nk, 0, false)
		s = mathMaskZero(op, z, s)
		z.Release()
		return s
	}
	switch {
	case ord == 1:
		return mul(sgn(), gk)
	case ord == 2:
		q := rawBinary(op, divOp, x, nk)
		z := rawScalar(op, backends.Eq, nk, 0, false)
		q = mathMaskZero(op, z, q)
		z.Release()
		return mul(q, gk)
	case math.IsInf(ord, 0):
		abs := rawUnary(op, backends.Abs, x, 0, 0)
		eq := rawBinary(op, backends.Eq, abs, nk)
		nan := rawUnary(op, backends.IsNaN, abs, 0, 0)
		abs.Release()
		mask := rawBinary(op, backends.Or, eq, nan)
		eq.Release()
		nan.Release()
		cnt := rawReduce(op, backends.Sum, mask, ax, true)
		share := rawBinary(op, divOp, gk, cnt)
		cnt.Release()
		d := mathKeepZero(op, mask, share)
		mask.Release()
		sg := sgn()
		d = mul(d, sg)
		sg.Release()
		return d
	case ord < 1:
		abs := rawUnary(op, backends.Abs, x, 0, 0)
		pw := mathConsume(abs, func(a *Tensor) *Tensor { return rawUnary(op, backends.PowConst, a, ord-1, 0) })
		z := rawScalar(op, backends.Eq, x, 0, false)
		pw = mathMaskZero(op, z, pw)
		z.Release()
		d := mul(sgn(), pw)
		pw.Release()
		d = mul(d, gk)
		n1 := rawUnary(op, backends.PowConst, nk, 1-ord, 0)
		d = mul(d, n1)
		n1.Release()
		return d
	case ord < 2:
		abs := rawUnary(op, backends.Abs, x, 0, 0)
		pw := mathConsume(abs, func(a *Tensor) *Tensor { return rawUnary(op, backends.PowConst, a, ord-1, 0) })
		d := mul(sgn(), pw)
		pw.Release()
		s := scale(ord)
		d = mul(d, s)
		s.Release()
		return d
	default:
		abs := rawUnary(op, backends.Abs, x, 0, 0)
		pw := mathConsume(abs, func(a *Tensor) *Tensor { return rawUnary(op, backends.PowConst, a, ord-2, 0) })
		d := rawBinary(op, mulOp, x, pw)
		pw.Release()
		s := scale(ord)
		d = mul(d, s)
		s.Release()
		return d
	}
}

// MatrixNorm returns the norm of each matrix of t (the last two
// dimensions), keeping them with size 1 when keepdim, as
// torch.linalg.matrix_norm: ord "fro" (or "") the Frobenius norm, "nuc"
// the sum of the singular values, "2"/"-2" the largest/smallest singular
// value, "1"/"-1" the largest/smallest column sum of |a|, "inf"/"-inf" the
// largest/smallest row sum of |a|. It is composed of VectorNorm, Svdvals,
// Abs, Sum, Max and Min, and has their gradients. It fails with
// ErrArgument for another ord, ErrShape for rank < 2 and ErrDType unless t
// is a float tensor (Float32 or Float64 for the singular-value norms).
func (t *Tensor) MatrixNorm(ord string, keepdim bool) *Tensor {
	const op = "MatrixNorm"
	t.live(op)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "expected a float tensor, got %s %s", t.dtype, shapeString(t.shape))
	}
	r := len(t.shape)
	if r < 2 {
		fail(op, ErrShape, "expected a matrix or a batch of matrices (rank ≥ 2), got shape %s", shapeString(t.shape))
	}
	var out *Tensor
	switch ord {
	case "", "fro":
		return t.VectorNorm(2, keepdim, -2, -1)
	case "nuc":
		out = t.Svdvals().Sum(-1)
	case "2":
		out = t.Svdvals().Select(-1, 0)
	case "-2":
		s := t.Svdvals()
		out = s.Select(-1, s.shape[len(s.shape)-1]-1)
	case "1":
		out = t.Abs().Sum(-2).Max(-1)
	case "-1":
		out = t.Abs().Sum(-2).Min(-1)
	case "inf":
		out = t.Abs().Sum(-1).Max(-1)
	case "-inf":
		out = t.Abs().Sum(-1).Min(-1)
	default:
		fail(op, ErrArgument, "ord %q: want \"fro\", \"nuc\", \"1\", \"-1\", \"2\", \"-2\", \"inf\" or \"-inf\"", ord)
	}
	if keepdim {
		out = out.Unsqueeze(-1).Unsqueeze(-1)
	}
	return out
}
