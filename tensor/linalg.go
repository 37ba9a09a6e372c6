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
	av, bv := a.view(), b.view()
	if len(av.Shape) == 1 {
		av.Shape, av.Strides = []int{1, av.Shape[0]}, []int{0, av.Strides[0]}
	}
	if len(bv.Shape) == 1 {
		bv.Shape, bv.Strides = []int{bv.Shape[0], 1}, []int{bv.Strides[0], 0}
	}
	ra, rb := len(av.Shape), len(bv.Shape)
	m, k, k2, n := av.Shape[ra-2], av.Shape[ra-1], bv.Shape[rb-2], bv.Shape[rb-1]
	if k != k2 {
		fail(op, ErrShape, "cannot multiply %s by %s: inner dimensions %d and %d differ", shapeString(a.shape), shapeString(b.shape), k, k2)
	}
	batch := broadcastShapes(op, av.Shape[:ra-2], bv.Shape[:rb-2])
	outShape := append(append([]int{}, batch...), m, n)
	bcast := func(v backends.View, rows, cols int) backends.View {
		r := len(v.Shape)
		st := make([]int, len(batch)+2)
		off := len(batch) - (r - 2)
		for i := range batch {
			if j := i - off; j >= 0 && v.Shape[j] == batch[i] {
				st[i] = v.Strides[j]
			}
		}
		st[len(batch)], st[len(batch)+1] = v.Strides[r-2], v.Strides[r-1]
		v.Shape = append(append([]int{}, batch...), rows, cols)
		v.Strides = st
		return v
	}
	out := newTensor(op, a.dev, ct, outShape)
	ab, bb := bcast(av, m, k), bcast(bv, k, n)
	if a2, ok := mergedRows(ab, bb); ok {
		// b is one matrix for the whole batch and a's batch and rows lie
		// one inside the other: one product of all the rows, which packs b
		// once (each element's sum is the same)
		o2 := out.view()
		o2.Shape, o2.Strides = []int{a2.Shape[0], n}, []int{n, 1}
		b2 := bb
		b2.Shape, b2.Strides = bb.Shape[len(batch):], bb.Strides[len(batch):]
		out.backend().Matmul(o2, a2, b2)
	} else {
		out.backend().Matmul(out.view(), ab, bb)
	}
	// drop the dimensions added for 1-D operands
	final := outShape
	switch {
	case len(a.shape) == 1 && len(b.shape) == 1:
		final = []int{}
	case len(a.shape) == 1:
		final = append(append([]int{}, batch...), n)
	case len(b.shape) == 1:
		final = append(append([]int{}, batch...), m)
	}
	if len(final) != len(outShape) {
		v := out.newView(final, backends.RowMajorStrides(final), 0)
		out.Release()
		return v
	}
	return out
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
	// Promote 1-D operands and g to matrices as views, then use
	// dA = g·bᵀ, dB = aᵀ·g, reducing broadcast batch dimensions.
	a2, b2, g2 := a, b, g
	if len(a.shape) == 1 {
		a2 = a.newView([]int{1, a.shape[0]}, []int{0, a.strides[0]}, a.offset)
		defer a2.Release()
	}
	if len(b.shape) == 1 {
		b2 = b.newView([]int{b.shape[0], 1}, []int{b.strides[0], 0}, b.offset)
		defer b2.Release()
	}
	gs := append([]int{}, g.shape...)
	gst := append([]int{}, g.strides...)
	if len(a.shape) == 1 {
		gs = append(gs[:len(gs)-1], 1, gs[len(gs)-1])
		gst = append(gst[:len(gst)-1], 0, gst[len(gst)-1])
	}
	if len(b.shape) == 1 {
		gs = append(gs, 1)
		gst = append(gst, 0)
	}
	if len(gs) != len(g.shape) {
		g2 = g.newView(gs, gst, g.offset)
		defer g2.Release()
	}
	var ga, gb *Tensor
	if a.requiresGrad {
		bt := b2.transposeView(-1, -2)
		ga = rawMatmul("Matmul", g2, bt)
		bt.Release()
		ga = reshapeGrad(gradFor(ga, a2), a)
	}
	if b.requiresGrad {
		at := a2.transposeView(-1, -2)
		gb = rawMatmul("Matmul", at, g2)
		at.Release()
		gb = reshapeGrad(gradFor(gb, b2), b)
	}
	return []*Tensor{ga, gb}
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
