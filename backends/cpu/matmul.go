package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

// The micro-kernels in use. They are variables so that faster kernels
// (assembly, or ones tuned for a CPU) can be chosen at init. Every kernel
// sums each output over k in order, so the Go kernels all give the same
// bits; a kernel that sums differently (say, with fused multiply-adds)
// changes results within rounding, but never with the worker count.
var (
	kernelsF32 = []kernel[float32]{
		{name: "go2x4", mr: 2, nr: 4, fn: microF32x2x4},
		{name: "go4x2", mr: 4, nr: 2, fn: microF32x4x2},
		{name: "go3x2", mr: 3, nr: 2, fn: microF32x3x2},
		{name: "go3x3", mr: 3, nr: 3, fn: microF32x3x3},
		{name: "go2x6", mr: 2, nr: 6, fn: microF32x2x6}, // best with GOAMD64=v3 (gemm_amd64v3.go)
	}
	kernelsF64 = []kernel[float64]{
		{name: "go2x4", mr: 2, nr: 4, fn: microF64x2x4},
		{name: "go4x2", mr: 4, nr: 2, fn: microF64x4x2},
		{name: "go3x2", mr: 3, nr: 2, fn: microF64x3x2},
	}
	kernelF32 = kernelsF32[0]
	kernelF64 = kernelsF64[0]
)

// smallBatchFlops is the size (m·n·k) under which a batched matmul runs its
// matrices in parallel, each on one goroutine, instead of one after another
// with each matrix split across the workers.
const smallBatchFlops = 1 << 18

// Matmul implements backends.Backend with the blocked GEMM in gemm.go.
// Float32 and Float64 multiply in their own precision (products and sums
// rounded in the dtype, in a fixed order); BFloat16 operands go through
// the bfloat16 GEMM (gemm_bf16.go: exact products of the bfloat16 values,
// float32 sums, VDPBF16PS where the CPU has it) into a BFloat16 output,
// rounded once to nearest even, or a Float32 one; Float16 is widened to
// float32 while packing, multiplied in float32 and rounded once at the
// end; other dtypes (which package tensor never sends) go through float64.
// Transposed and otherwise strided operands are read in place by the
// packing routines, never copied first.
func (b *Backend) Matmul(out, x, y backends.View) { b.matmul(out, x, y, false) }

// MatmulBF16 is Matmul computed as a bfloat16 autocast product: x and y,
// Float32 or BFloat16, are rounded to bfloat16 (to nearest even) while
// they are packed, so float32 operands need no bfloat16 copies; the
// products are exact and summed in float32 by the bfloat16 GEMM (VDPBF16PS
// where the CPU has it) into out, Float32 or BFloat16 (rounded once to
// nearest even). Other dtypes are refused (the backend's error, as for
// Matmul's shape errors).
func (b *Backend) MatmulBF16(out, x, y backends.View) {
	for _, v := range []backends.View{out, x, y} {
		if v.DType != backends.Float32 && v.DType != backends.BFloat16 {
			b.refuse("matmul bf16", "x %s, y %s and out %s: want float32 or bfloat16", x.DType, y.DType, out.DType)
			return
		}
	}
	b.matmul(out, x, y, true)
}

// matmul is Matmul, or MatmulBF16 with bf16.
func (b *Backend) matmul(out, x, y backends.View, bf16 bool) {
	if !b.checkMatmul(out, x, y) {
		return
	}
	r := len(out.Shape)
	m, k, n := x.Shape[r-2], x.Shape[r-1], y.Shape[r-1]
	batch := newLoop(out.Shape[:r-2],
		backends.View{Strides: x.Strides[:r-2], Offset: x.Offset},
		backends.View{Strides: y.Strides[:r-2], Offset: y.Offset},
		backends.View{Strides: out.Strides[:r-2], Offset: out.Offset})
	if batch.n == 0 || m == 0 || n == 0 {
		return
	}
	offs := make([]offsets, 0, batch.n)
	batch.each(0, batch.n, func(o offsets) { offs = append(offs, o) })
	xr, xc := x.Strides[r-2], x.Strides[r-1]
	yr, yc := y.Strides[r-2], y.Strides[r-1]
	or, oc := out.Strides[r-2], out.Strides[r-1]
	xb, yb, ob := buf(x), buf(y), buf(out)

	// each runs f for every batch entry, in parallel over the batch when
	// the matrices are small, else one at a time with parallel GEMMs
	each := func(f func(o offsets, par bool)) {
		if len(offs) > 1 && m*n*k < smallBatchFlops {
			b.parallel(len(offs), max(1, (smallBatchFlops/4)/max(m*n*k, 1)), func(lo, hi int) {
				for _, o := range offs[lo:hi] {
					f(o, false)
				}
			})
			return
		}
		for _, o := range offs {
			f(o, true)
		}
	}
	sameType := x.DType == out.DType && y.DType == out.DType
	switch {
	case bf16 || useBF16GEMM && x.DType == backends.BFloat16 && y.DType == backends.BFloat16 &&
		(out.DType == backends.BFloat16 || out.DType == backends.Float32):
		each(func(o offsets, par bool) {
			A, _ := bf16Operand(x, o[0], xr, xc)
			B, _ := bf16Operand(y, o[1], yr, yc)
			if out.DType == backends.Float32 && oc == 1 {
				gemmBF16(b, kernelBF16, m, n, k, A, B, bf16Dst{c: ob.f32(), off: o[2], ld: or}, par)
				return
			}
			tmp := poolF32.get(m * n)
			if out.DType == backends.BFloat16 && oc == 1 {
				// rounded to bfloat16 block by block, while in cache
				gemmBF16(b, kernelBF16, m, n, k, A, B, bf16Dst{c: *tmp, ld: n, u16: ob.u16(), uOff: o[2], uld: or}, par)
			} else {
				gemmBF16(b, kernelBF16, m, n, k, A, B, bf16Dst{c: *tmp, ld: n}, par)
				for i := range m {
					storeF32(ob, o[2]+i*or, oc, (*tmp)[i*n:(i+1)*n])
				}
			}
			poolF32.put(tmp)
		})
	case sameType && out.DType == backends.Float32:
		xs, ys, os := xb.f32(), yb.f32(), ob.f32()
		each(func(o offsets, par bool) {
			if matvecShape(m, n, k) {
				matvecOf(b, m, n, k, xs, o[0], xr, xc, ys, o[1], yr, yc, os, o[2], or, oc, par)
				return
			}
			gemm(b, kernelF32, m, n, k,
				matSrc[float32]{s: xs, off: o[0], rs: xr, cs: xc},
				matSrc[float32]{s: ys, off: o[1], rs: yr, cs: yc},
				matDst[float32]{s: os, off: o[2], rs: or, cs: oc}, par)
		})
	case sameType && out.DType == backends.Float64:
		xs, ys, os := xb.f64(), yb.f64(), ob.f64()
		each(func(o offsets, par bool) {
			if matvecShape(m, n, k) {
				matvecOf(b, m, n, k, xs, o[0], xr, xc, ys, o[1], yr, yc, os, o[2], or, oc, par)
				return
			}
			gemm(b, kernelF64, m, n, k,
				matSrc[float64]{s: xs, off: o[0], rs: xr, cs: xc},
				matSrc[float64]{s: ys, off: o[1], rs: yr, cs: yc},
				matDst[float64]{s: os, off: o[2], rs: or, cs: oc}, par)
		})
	case out.DType == backends.Float16 || out.DType == backends.BFloat16 || out.DType == backends.Float32:
		lx := func(off, st int, dst []float32) { loadF32(xb, off, st, dst) }
		ly := func(off, st int, dst []float32) { loadF32(yb, off, st, dst) }
		each(func(o offsets, par bool) {
			tmp := poolF32.get(m * n)
			gemm(b, kernelF32, m, n, k,
				matSrc[float32]{load: lx, off: o[0], rs: xr, cs: xc},
				matSrc[float32]{load: ly, off: o[1], rs: yr, cs: yc},
				matDst[float32]{s: *tmp, rs: n, cs: 1}, par)
			for i := range m {
				storeF32(ob, o[2]+i*or, oc, (*tmp)[i*n:(i+1)*n])
			}
			poolF32.put(tmp)
		})
	default:
		lx := func(off, st int, dst []float64) { loadF64(xb, off, st, dst) }
		ly := func(off, st int, dst []float64) { loadF64(yb, off, st, dst) }
		each(func(o offsets, par bool) {
			tmp := poolF64.get(m * n)
			gemm(b, kernelF64, m, n, k,
				matSrc[float64]{load: lx, off: o[0], rs: xr, cs: xc},
				matSrc[float64]{load: ly, off: o[1], rs: yr, cs: yc},
				matDst[float64]{s: *tmp, rs: n, cs: 1}, par)
			for i := range m {
				storeF64(ob, o[2]+i*or, oc, (*tmp)[i*n:(i+1)*n])
			}
			poolF64.put(tmp)
		})
	}
}

// matvecShape reports whether a product is a vector-matrix or
// matrix-vector one, which matvec does without packing.
func matvecShape(m, n, k int) bool { return (m == 1 || n == 1) && k > 0 }

// matvecOf runs an m = 1 or n = 1 product through matvec.
func matvecOf[T float](b *Backend, m, n, k int, xs []T, xo, xr, xc int, ys []T, yo, yr, yc int, os []T, oo, or, oc int, par bool) {
	if m == 1 { // out[0, j] = Σ_p x[0, p]·y[p, j]
		matvec(b, k, n, xs, xo, xc, ys, yo, yr, yc, os, oo, oc, par)
		return
	}
	// out[i, 0] = Σ_p y[p, 0]·x[i, p]: M[p, i] = x[i, p]
	matvec(b, k, m, ys, yo, yr, xs, xo, xc, xr, os, oo, or, par)
}
