//go:build !kiln_nocuda

package cuda

import (
	"github.com/kiln-ml/kiln/backends"
)

// Fill sets every element of out to v.
func (b *Backend) Fill(out backends.View, v float64) {
	if a, ok := b.prep(out); ok {
		b.launch1D(func() kernel { return fillKernel(out.DType) }, out.NumElements(), a.f64(v))
	}
}

// Copy copies x into out, converting dtypes.
func (b *Backend) Copy(out, x backends.View) {
	if a, ok := b.prep(out, x); ok {
		b.launch1D(func() kernel { return copyKernel(out.DType, x.DType) }, out.NumElements(), a)
	}
}

// Unary applies op element-wise.
func (b *Backend) Unary(op backends.UnaryOp, out, x backends.View, p0, p1 float64) {
	if a, ok := b.prep(out, x); ok {
		b.launch1D(func() kernel { return unaryKernel(op, out.DType, x.DType, false) }, out.NumElements(), a.f64(p0).f64(p1))
	}
}

// UnaryGrad computes g·op'(x) element-wise.
func (b *Backend) UnaryGrad(op backends.UnaryOp, out, x, g backends.View, p0, p1 float64) {
	if a, ok := b.prep(out, x, g); ok {
		b.launch1D(func() kernel { return unaryKernel(op, out.DType, x.DType, true) }, out.NumElements(), a.f64(p0).f64(p1))
	}
}

// Binary applies op element-wise with broadcasting by stride 0.
func (b *Backend) Binary(op backends.BinaryOp, out, x, y backends.View) {
	if a, ok := b.prep(out, x, y); ok {
		b.launch1D(func() kernel { return binaryKernel(op, out.DType, x.DType, false, false) }, out.NumElements(), a)
	}
}

// BinaryScalar applies op to x and the scalar s (s op x when reverse).
func (b *Backend) BinaryScalar(op backends.BinaryOp, out, x backends.View, s float64, reverse bool) {
	if a, ok := b.prep(out, x); ok {
		b.launch1D(func() kernel { return binaryKernel(op, out.DType, x.DType, true, reverse) }, out.NumElements(), a.f64(s))
	}
}

// Where selects x where cond holds, else y.
func (b *Backend) Where(out, cond, x, y backends.View) {
	if a, ok := b.prep(out, cond, x, y); ok {
		b.launch1D(func() kernel { return whereKernel(out.DType) }, out.NumElements(), a)
	}
}

// Reduce reduces x over axes into out: one block per output element.
func (b *Backend) Reduce(op backends.ReduceOp, out, x backends.View, axes []int) {
	a, ok := b.prep(out)
	if !ok {
		return
	}
	kept := append([]int(nil), x.Strides...)
	var rshape, rstrides []int
	for _, ax := range axes {
		kept[ax] = 0
		rshape = append(rshape, x.Shape[ax])
		rstrides = append(rstrides, x.Strides[ax])
	}
	if err := b.viewAs(a, x, out.Shape, kept); err != nil {
		b.fail(err, false)
		return
	}
	rv, err := kview(rshape, rstrides, 0)
	if err != nil {
		b.fail(err, false)
		return
	}
	nout, nred := out.NumElements(), backends.NumElements(rshape)
	if nout == 0 {
		return
	}
	a.raw(rv).i64(nout).i64(nred)
	b.launch(func() kernel { return reduceKernel(op, x.DType) },
		[3]uint32{uint32(min(nout, 1<<16)), 1, 1}, [3]uint32{reduceThreads, 1, 1}, a)
}

// ArgReduce writes the index of the first maximum or minimum along axis.
func (b *Backend) ArgReduce(op backends.ReduceOp, out, x backends.View, axis int) {
	a, ok := b.prep(out)
	if !ok {
		return
	}
	kept := with(x.Strides, axis, 0)
	if err := b.viewAs(a, x, out.Shape, kept); err != nil {
		b.fail(err, false)
		return
	}
	b.launch1D(func() kernel { return argReduceKernel(op, x.DType) }, out.NumElements(),
		a.i64(x.Shape[axis]).i64(x.Strides[axis]))
}

// Scan writes the inclusive cumulative sum or product along axis.
func (b *Backend) Scan(op backends.ReduceOp, out, x backends.View, axis int) {
	lines := with(x.Shape, axis, 1)
	a := &args{}
	if err := b.viewAs(a, out, lines, out.Strides); err != nil {
		b.fail(err, false)
		return
	}
	if err := b.viewAs(a, x, lines, x.Strides); err != nil {
		b.fail(err, false)
		return
	}
	b.launch1D(func() kernel { return scanKernel(op, x.DType) }, backends.NumElements(lines),
		a.i64(x.Shape[axis]).i64(out.Strides[axis]).i64(x.Strides[axis]))
}

// Sort sorts x along axis (stably) into values and indices.
func (b *Backend) Sort(values, indices, x backends.View, axis int, descending bool) {
	lines := with(x.Shape, axis, 1)
	a := &args{}
	for _, v := range []backends.View{values, indices, x} {
		if err := b.viewAs(a, v, lines, v.Strides); err != nil {
			b.fail(err, false)
			return
		}
	}
	b.launch1D(func() kernel { return sortKernel(x.DType, descending) }, backends.NumElements(lines),
		a.i64(x.Shape[axis]).i64(values.Strides[axis]).i64(indices.Strides[axis]).i64(x.Strides[axis]))
}

// Gather sets out[…i…] = x[…index[…i…]…] along axis.
func (b *Backend) Gather(out, x, index backends.View, axis int) {
	a, ok := b.prep(out, x, index)
	if !ok {
		return
	}
	b.launch1D(func() kernel { return gatherKernel(out.DType) }, out.NumElements(),
		a.i32(axis).i64(x.Shape[axis]).ptr(b.errFlag.ptr))
}

// Scatter writes src into out at index positions along axis (adding when add).
func (b *Backend) Scatter(out, index, src backends.View, axis int, add bool) {
	a, ok := b.prep(out, index, src)
	if !ok {
		return
	}
	lines := backends.NumElements(with(index.Shape, axis, 1))
	b.launch1D(func() kernel { return scatterKernel(out.DType, add) }, lines,
		a.i32(axis).i64(index.Shape[axis]).i64(out.Shape[axis]).ptr(b.errFlag.ptr))
}

// convArgs appends the window geometry.
func convArgs(a *args, g backends.ConvGeometry) *args {
	for _, v := range []int{g.N, g.C, g.H, g.W, g.KH, g.KW, g.StrideH, g.StrideW, g.PadTop, g.PadLeft,
		max(g.DilationH, 1), max(g.DilationW, 1), g.OutH, g.OutW} {
		a.i64(v)
	}
	return a
}

// Im2Col unfolds x [N, C, H, W] into out [N, C·KH·KW, OutH·OutW].
func (b *Backend) Im2Col(out, x backends.View, g backends.ConvGeometry) {
	if a, ok := b.prep(out, x); ok {
		b.launch1D(func() kernel { return im2colKernel(out.DType) }, out.NumElements(), convArgs(a, g).f64(g.PadValue))
	}
}

// Col2Im folds cols back into out [N, C, H, W], summing overlaps.
func (b *Backend) Col2Im(out, cols backends.View, g backends.ConvGeometry) {
	if a, ok := b.prep(out, cols); ok {
		b.launch1D(func() kernel { return col2imKernel(out.DType) }, out.NumElements(), convArgs(a, g))
	}
}

// Random fills out from kind with the Philox counters the CPU uses.
func (b *Backend) Random(out backends.View, kind backends.RandomKind, seed, counter uint64, p0, p1 float64) {
	if a, ok := b.prep(out); ok {
		b.launch1D(func() kernel { return randomKernel(kind, out.DType) }, out.NumElements(),
			a.u64(seed).u64(counter).f64(p0).f64(p1))
	}
}

// Matmul computes batched out = a·b, through cuBLAS when the layout allows,
// else with the tiled kernel.
func (b *Backend) Matmul(out, x, y backends.View) {
	nd := len(out.Shape)
	if nd < 2 {
		b.fail(errShape("matmul", out), false)
		return
	}
	m, n, k := out.Shape[nd-2], out.Shape[nd-1], x.Shape[nd-1]
	if out.NumElements() == 0 {
		return
	}
	if k == 0 {
		b.Fill(out, 0)
		return
	}
	if b.blas != nil {
		if call, ok := planGemm(out, x, y); ok {
			ob, xb, yb := b.buf(out.Buf).blk.ptr, b.buf(x.Buf).blk.ptr, b.buf(y.Buf).blk.ptr
			b.thread.post(func() {
				if err := b.blas.gemm(call, ob, xb, yb); err != nil {
					b.fail(err, false)
				}
			})
			return
		}
	}
	a, ok := b.prep(out, x, y)
	if !ok {
		return
	}
	batch := out.NumElements() / (m * n)
	grid := [3]uint32{uint32((n + gemmTile - 1) / gemmTile), uint32((m + gemmTile - 1) / gemmTile), uint32(min(batch, 65535))}
	b.launch(func() kernel { return matmulKernel(out.DType) }, grid, [3]uint32{gemmTile, gemmTile, 1},
		a.i64(m).i64(n).i64(k).i64(batch))
}
