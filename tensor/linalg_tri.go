package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// Triangles, diagonals, trace and the cross product: masks and strided
// views over the backend's Where and Copy, so they run on every device.

// triMask returns the Bool [m, n] mask of the lower (j − i ≤ k) or upper
// (j − i ≥ k) triangle with diagonal offset k.
func triMask(op string, dev Device, m, n, k int, lower bool) *Tensor {
	keep := make([]bool, m*n)
	for i := range m {
		for j := range n {
			if lower {
				keep[i*n+j] = j-i <= k
			} else {
				keep[i*n+j] = j-i >= k
			}
		}
	}
	out := newTensor(op, dev, Bool, []int{m, n})
	raw := make([]byte, len(keep))
	for i, v := range keep {
		if v {
			raw[i] = 1
		}
	}
	if len(raw) > 0 {
		out.backend().Write(out.st.buf, 0, raw)
	}
	return out
}

func (t *Tensor) triangle(op, node string, diagonal int, lower bool) *Tensor {
	t.live(op)
	r := len(t.shape)
	if r < 2 {
		fail(op, ErrShape, "expected a matrix or a batch of matrices (rank ≥ 2), got shape %s", shapeString(t.shape))
	}
	mask := triMask(op, t.dev.Inner(), t.shape[r-2], t.shape[r-1], diagonal, lower)
	out := mathKeepZero(op, mask, t.newView(t.shape, t.strides, t.offset))
	out.dev = t.dev
	return record(node, map[string]any{"diagonal": diagonal}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(mathKeepZero(op, mask, g.newView(g.shape, g.strides, g.offset)), t)}
	})
}

// Tril returns the lower triangle of each matrix of t (the last two
// dimensions): elements with j − i ≤ diagonal kept, the rest zero, as
// torch.tril (diagonal 0 is the main diagonal, positive above it). Any
// dtype. Its gradient is g masked the same way. It fails with ErrShape for
// rank < 2.
func (t *Tensor) Tril(diagonal int) *Tensor { return t.triangle("Tril", "tril", diagonal, true) }

// Triu returns the upper triangle of each matrix of t: elements with
// j − i ≥ diagonal kept, as torch.triu. See Tril.
func (t *Tensor) Triu(diagonal int) *Tensor { return t.triangle("Triu", "triu", diagonal, false) }

// diagonalOf returns the view of v's diagonal (offset above the main one
// when positive) over axes a1 and a2, appended as the last dimension.
func diagonalOf(v backends.View, offset, a1, a2 int) backends.View {
	n1, n2 := v.Shape[a1], v.Shape[a2]
	var n, off int
	if offset >= 0 {
		n = max(0, min(n1, n2-offset))
		if n > 0 {
			off = offset * v.Strides[a2]
		}
	} else {
		n = max(0, min(n1+offset, n2))
		if n > 0 {
			off = -offset * v.Strides[a1]
		}
	}
	var shape, strides []int
	for i := range v.Shape {
		if i != a1 && i != a2 {
			shape = append(shape, v.Shape[i])
			strides = append(strides, v.Strides[i])
		}
	}
	v.Shape = append(shape, n)
	v.Strides = append(strides, v.Strides[a1]+v.Strides[a2])
	v.Offset += off
	return v
}

// diagonalAxes normalises dim1 and dim2 of a rank-r tensor.
func diagonalAxes(op string, dim1, dim2, r int) (int, int) {
	a1, a2 := normAxis(op, dim1, r), normAxis(op, dim2, r)
	if a1 == a2 {
		fail(op, ErrArgument, "dim1 and dim2 are the same dimension (%d and %d)", dim1, dim2)
	}
	return a1, a2
}

// rawDiagonalView is the diagonal view with no graph.
func rawDiagonalView(t *Tensor, offset, dim1, dim2 int) *Tensor {
	a1, a2 := diagonalAxes("Diagonal", dim1, dim2, len(t.shape))
	return t.viewOf(diagonalOf(t.view(), offset, a1, a2))
}

// Diagonal returns a view of the diagonal of t over dimensions dim1 and
// dim2 (negative counting from the end), offset above the main diagonal
// when positive and below when negative, appended as the last dimension,
// as torch.diagonal. Its gradient places g on that diagonal of zeros. It
// fails with ErrArgument when t has fewer than 2 dimensions, a dimension is
// out of range or dim1 and dim2 name the same one.
func (t *Tensor) Diagonal(offset, dim1, dim2 int) *Tensor {
	const op = "Diagonal"
	t.live(op)
	if len(t.shape) < 2 {
		fail(op, ErrArgument, "needs at least 2 dimensions, got shape %s", shapeString(t.shape))
	}
	a1, a2 := diagonalAxes(op, dim1, dim2, len(t.shape))
	out := t.viewOf(diagonalOf(t.view(), offset, a1, a2))
	return viewGrad("diagonal", map[string]any{"offset": offset, "dim1": a1, "dim2": a2}, out, t, func(g *Tensor) *Tensor {
		return embedGrad(op, g, t, func(v backends.View) backends.View { return diagonalOf(v, offset, a1, a2) })
	})
}

// DiagEmbed returns a tensor whose diagonal over dimensions dim1 and dim2
// (of the result, one rank higher than t) holds the last dimension of t,
// offset as in Diagonal, and zeros elsewhere, as torch.diag_embed (the
// usual call is DiagEmbed(0, -2, -1)). Its gradient is the diagonal of g.
// It fails with ErrArgument for a 0-d t, a dimension out of range or equal
// dimensions.
func (t *Tensor) DiagEmbed(offset, dim1, dim2 int) *Tensor {
	const op = "DiagEmbed"
	t.live(op)
	r := len(t.shape)
	if r == 0 {
		fail(op, ErrArgument, "needs at least 1 dimension, got a 0-d tensor")
	}
	a1, a2 := diagonalAxes(op, dim1, dim2, r+1)
	n := t.shape[r-1] + max(offset, -offset)
	shape := make([]int, r+1)
	rest := t.shape[:r-1]
	for i, k := 0, 0; i <= r; i++ {
		if i == a1 || i == a2 {
			shape[i] = n
		} else {
			shape[i] = rest[k]
			k++
		}
	}
	out := rawFull(op, t.dev, t.dtype, shape, 0)
	if t.NumElements() > 0 {
		out.backend().Copy(diagonalOf(out.view(), offset, a1, a2), t.view())
	}
	return record("diag_embed", map[string]any{"offset": offset, "dim1": a1, "dim2": a2}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		d := g.viewOf(diagonalOf(g.view(), offset, a1, a2))
		c := rawContiguous(op, d)
		d.Release()
		return []*Tensor{castGrad(c, t)}
	})
}

// Diag returns, for a 1-D t, the square matrix with t on its diagonal
// (offset above the main one when positive, below when negative) and, for
// a 2-D t, the 1-D diagonal of t with that offset, as torch.diag. Its
// gradient is the adjoint of each. It fails with ErrShape for other ranks.
func (t *Tensor) Diag(offset int) *Tensor {
	const op = "Diag"
	t.live(op)
	switch len(t.shape) {
	case 1:
		return t.DiagEmbed(offset, 0, 1)
	case 2:
		return t.Diagonal(offset, 0, 1)
	}
	fail(op, ErrShape, "expected a 1-D or 2-D tensor, got shape %s", shapeString(t.shape))
	return nil
}

// Trace returns the sum of the main diagonal of each matrix of t (the last
// two dimensions; a 2-D t gives a 0-d tensor, as torch.trace). Composed of
// Diagonal and Sum, so it has their gradient. It fails with ErrShape for
// rank < 2.
func (t *Tensor) Trace() *Tensor {
	const op = "Trace"
	t.live(op)
	if len(t.shape) < 2 {
		fail(op, ErrShape, "expected a matrix or a batch of matrices, got shape %s", shapeString(t.shape))
	}
	return t.Diagonal(0, -2, -1).Sum(-1)
}

// Cross returns the cross product of the 3-vectors of t and other along
// dimension dim (negative counting from the end of the broadcast shape),
// as torch.linalg.cross: t and other broadcast. Composed of Narrow, Mul,
// Sub and Cat, so it has their gradients. It fails with ErrShape when the
// shapes do not broadcast or dim does not have size 3, and ErrArgument when
// dim is out of range.
func (t *Tensor) Cross(other *Tensor, dim int) *Tensor {
	const op = "Cross"
	t.live(op)
	other.live(op)
	shape := broadcastShapes(op, t.shape, other.shape)
	if len(shape) == 0 {
		fail(op, ErrShape, "cannot take the cross product of 0-d tensors")
	}
	d := normAxis(op, dim, len(shape))
	if shape[d] != 3 {
		fail(op, ErrShape, "dimension %d of the broadcast shape %s has size %d, want 3", dim, shapeString(shape), shape[d])
	}
	a, b := t, other
	if !sameShape(a.shape, shape) {
		a = t.Expand(shape...)
	}
	if !sameShape(b.shape, shape) {
		b = other.Expand(shape...)
	}
	var parts []*Tensor
	comp := func(x *Tensor, i int) *Tensor { return x.Narrow(d, i, 1) }
	for i := range 3 {
		j, k := (i+1)%3, (i+2)%3
		aj, bk, ak, bj := comp(a, j), comp(b, k), comp(a, k), comp(b, j)
		p, q := aj.Mul(bk), ak.Mul(bj)
		parts = append(parts, p.Sub(q))
	}
	// intermediates stay alive: the backward rules of Mul read them
	return Cat(parts, d)
}
