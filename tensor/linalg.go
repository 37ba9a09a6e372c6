package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// rawMatmul multiplies with PyTorch's matmul semantics (1-D operands are
// promoted and the added dimension removed; batch dimensions broadcast),
// with no graph.
func rawMatmul(op string, a, b *Tensor) *Tensor {
	sameDevice(op, a, b)
	if len(a.shape) == 0 || len(b.shape) == 0 {
		fail(op, ErrShape, "matmul needs at least 1-D operands, got %s and %s", shapeString(a.shape), shapeString(b.shape))
	}
	ct := backends.Promote(a.dtype, b.dtype)
	if !ct.IsFloat() {
		fail(op, ErrDType, "matmul of %s and %s: integer matmul is not supported; convert to a float type", a.dtype, b.dtype)
	}
	if a.dtype != ct {
		a = rawCast(op, a, ct)
		defer a.Release()
	}
	if b.dtype != ct {
		b = rawCast(op, b, ct)
		defer b.Release()
	}
	return rawMatmulVia(op, a, b, ct, a.backend().Matmul)
}

// Matmul returns the matrix product t · other with PyTorch's semantics:
// 1-D operands are treated as a row (left) or column (right) vector and the
// added dimension removed, and batch dimensions broadcast.
func (t *Tensor) Matmul(other *Tensor) *Tensor {
	if mm, ok := autocastBF16(t, other); ok {
		return matmulBF16(mm, t, other)
	}
	if in, ok := autocastInputs(t, other); ok {
		return in[0].Matmul(in[1])
	}
	out := rawMatmul("Matmul", t, other)
	return record("matmul", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		return matmulBackward(g, t, other)
	})
}

// matmulBackward returns the gradients of a·b for upstream g.
func matmulBackward(g, a, b *Tensor) []*Tensor {
	return matmulBackwardVia(g, a, b, func(x, y *Tensor) *Tensor { return rawMatmul("Matmul", x, y) })
}

// reshapeGrad gives a gradient computed for a promoted view the shape of
// the original operand.
func reshapeGrad(g, x *Tensor) *Tensor {
	if sameShape(g.shape, x.shape) {
		return g
	}
	c := rawContiguous("grad", g)
	g.Release()
	v := c.newView(x.Shape(), backends.RowMajorStrides(x.shape), c.offset)
	c.Release()
	return v
}

// transposeView swaps two dimensions without copying and without a graph.
func (t *Tensor) transposeView(d0, d1 int) *Tensor {
	r := len(t.shape)
	a, b := normAxis("Transpose", d0, r), normAxis("Transpose", d1, r)
	shape, strides := append([]int{}, t.shape...), append([]int{}, t.strides...)
	shape[a], shape[b] = shape[b], shape[a]
	strides[a], strides[b] = strides[b], strides[a]
	return t.newView(shape, strides, t.offset)
}

// mergedRows returns a as one [batch·M, K] matrix when it has batch
// dimensions, b is broadcast over all of them (stride 0) and a's batch
// dimensions and rows can be viewed as one dimension.
func mergedRows(a, b backends.View) (backends.View, bool) {
	r := len(a.Shape)
	if r <= 2 {
		return a, false
	}
	for _, st := range b.Strides[:r-2] {
		if st != 0 {
			return a, false
		}
	}
	rows := backends.NumElements(a.Shape[:r-1])
	k := a.Shape[r-1]
	strides, ok := viewStrides(a.Shape, a.Strides, []int{rows, k})
	if !ok || rows == 0 {
		return a, false
	}
	a.Shape, a.Strides = []int{rows, k}, strides
	return a, true
}
