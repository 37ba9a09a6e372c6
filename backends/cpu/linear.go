package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

var _ backends.LinearFusion = (*Backend)(nil)

// MatmulBias implements backends.LinearFusion: the GEMM of Matmul (gemm.go)
// adds the bias to each tile of the output right after the tile's last
// K-block, while it is still in cache, instead of in a pass of its own;
// with the AVX2 float32 kernel the micro-kernel itself adds it to the sums
// in its registers before storing them (kernel.asmBias), the same bits.
// Vector-shaped products go through Matmul and then add the bias.
func (b *Backend) MatmulBias(out, x, w, bias backends.View) {
	const op = "matmul bias"
	if len(out.Shape) != 2 || len(x.Shape) != 2 || len(w.Shape) != 2 {
		b.refuse(op, "out %v, x %v and w %v must be matrices", out.Shape, x.Shape, w.Shape)
		return
	}
	if !b.checkMatmul(out, x, w) {
		return
	}
	m, k, n := x.Shape[0], x.Shape[1], w.Shape[1]
	if !b.checkFused(op, out, []backends.View{out, bias}, []string{"out", "bias"}, [][]int{{m, n}, {n}}) ||
		x.DType != out.DType || w.DType != out.DType {
		if x.DType != out.DType || w.DType != out.DType {
			b.refuse(op, "x %s, w %s and out %s differ in dtype", x.DType, w.DType, out.DType)
		}
		return
	}
	switch out.DType {
	case backends.Float32:
		matmulBias(b, kernelF32, buf(out).f32(), buf(x).f32(), buf(w).f32(), buf(bias).f32()[bias.Offset:][:n], out, x, w, m, k, n)
	case backends.Float64:
		matmulBias(b, kernelF64, buf(out).f64(), buf(x).f64(), buf(w).f64(), buf(bias).f64()[bias.Offset:][:n], out, x, w, m, k, n)
	}
}

func matmulBias[T float](b *Backend, kern kernel[T], os, xs, ws, bias []T, out, x, w backends.View, m, k, n int) {
	if m == 0 || n == 0 {
		return
	}
	if matvecShape(m, n, k) {
		matvecOf(b, m, n, k, xs, x.Offset, x.Strides[0], x.Strides[1], ws, w.Offset, w.Strides[0], w.Strides[1],
			os, out.Offset, n, 1, true)
		addBias(matDst[T]{s: os, off: out.Offset, rs: n, cs: 1, bias: bias}, 0, m, 0, n)
		return
	}
	gemm(b, kern, m, n, k,
		matSrc[T]{s: xs, off: x.Offset, rs: x.Strides[0], cs: x.Strides[1]},
		matSrc[T]{s: ws, off: w.Offset, rs: w.Strides[0], cs: w.Strides[1]},
		matDst[T]{s: os, off: out.Offset, rs: n, cs: 1, bias: bias}, true)
}

// addBias adds C.bias[C.bOff+j] to rows [i0, i0+rows) and columns
// [j0, j0+cols) of C, one rounding per element as Binary's Add.
func addBias[T float](C matDst[T], i0, rows, j0, cols int) {
	bias := C.bias[C.bOff+j0:][:cols]
	for i := i0; i < i0+rows; i++ {
		base := C.off + i*C.rs + j0*C.cs
		if C.cs == 1 {
			row := C.s[base:][:cols]
			if f, ok := any(row).([]float32); ok && ewF32(backends.Add, f, f, any(bias).([]float32), false) {
				continue
			}
			for j, v := range bias {
				row[j] += v
			}
			continue
		}
		for j, v := range bias {
			C.s[base+j*C.cs] += v
		}
	}
}
