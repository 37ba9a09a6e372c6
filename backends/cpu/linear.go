package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

var (
	_ backends.LinearFusion    = (*Backend)(nil)
	_ backends.LinearActFusion = (*Backend)(nil)
)

// MatmulBias implements backends.LinearFusion: the GEMM of Matmul (gemm.go)
// adds the bias to each tile of the output right after the tile's last
// K-block, while it is still in cache, instead of in a pass of its own;
// with the AVX-512 and AVX2 float32 kernels the micro-kernel itself adds it
// to the sums in its registers before storing them (kernel.asmBias and
// asmRowsBias), the same bits. On a Zen 4 that made a GPT block's
// projections with a bias (2048 tokens, d = 256) cost what they cost
// without one, where the pass over each tile had added 3 to 5%.
// Vector-shaped products go through Matmul and then add the bias.
func (b *Backend) MatmulBias(out, x, w, bias backends.View) {
	const op = "matmul bias"
	m, k, n, ok := b.checkLinear(op, out, x, w, bias)
	if !ok {
		return
	}
	switch out.DType {
	case backends.Float32:
		matmulBias(b, kernelF32, buf(out).f32(), buf(x).f32(), buf(w).f32(), buf(bias).f32()[bias.Offset:][:n], out, x, w, m, k, n, nil)
	case backends.Float64:
		matmulBias(b, kernelF64, buf(out).f64(), buf(x).f64(), buf(w).f64(), buf(bias).f64()[bias.Offset:][:n], out, x, w, m, k, n, nil)
	}
}

// checkLinear checks MatmulBias's views (and MatmulBiasAct's but pre),
// returning the product's dimensions.
func (b *Backend) checkLinear(op string, out, x, w, bias backends.View) (m, k, n int, ok bool) {
	if len(out.Shape) != 2 || len(x.Shape) != 2 || len(w.Shape) != 2 {
		b.refuse(op, "out %v, x %v and w %v must be matrices", out.Shape, x.Shape, w.Shape)
		return 0, 0, 0, false
	}
	if !b.checkMatmul(out, x, w) {
		return 0, 0, 0, false
	}
	m, k, n = x.Shape[0], x.Shape[1], w.Shape[1]
	if !b.checkFused(op, out, []backends.View{out, bias}, []string{"out", "bias"}, [][]int{{m, n}, {n}}) ||
		x.DType != out.DType || w.DType != out.DType {
		if x.DType != out.DType || w.DType != out.DType {
			b.refuse(op, "x %s, w %s and out %s differ in dtype", x.DType, w.DType, out.DType)
		}
		return 0, 0, 0, false
	}
	return m, k, n, true
}

// fuseLinearAct enables MatmulBiasAct's activation inside the GEMM;
// benchmarks turn it off to compare with MatmulBias followed by Unary.
var fuseLinearAct = true

// MatmulBiasAct implements backends.LinearActFusion: the GEMM of
// MatmulBias writes pre, and as soon as the last tile of a block of rows
// of it is complete (its last K-block and bias), while the block is still
// in L2 or L3, the worker that finished it runs the activation's row
// kernel, the one Unary runs, over the block's rows of pre into out.
// Unary's kernels compute each element alone, so the bits are Unary's
// however the blocks cut the rows, and never depend on the number of
// threads. Vector-shaped products and an empty K go through MatmulBias and
// then Unary. out and pre must not overlap.
func (b *Backend) MatmulBiasAct(out, pre, x, w, bias backends.View, op backends.UnaryOp) {
	const name = "matmul bias act"
	if !backends.IsLinearAct(op) {
		b.refuse(name, "activation %s (want relu, gelu, gelu_tanh, silu, sigmoid or tanh)", op)
		return
	}
	m, k, n, ok := b.checkLinear(name, pre, x, w, bias)
	if !ok || !b.checkFused(name, pre, []backends.View{out}, []string{"out"}, [][]int{{m, n}}) ||
		!b.checkApart(name, out, pre, m*n) {
		return
	}
	if !fuseLinearAct || matvecShape(m, n, k) || k == 0 {
		b.MatmulBias(pre, x, w, bias)
		b.Unary(op, out, pre, 0, 0)
		return
	}
	switch out.DType {
	case backends.Float32:
		os := buf(out).f32()
		matmulBias(b, kernelF32, buf(pre).f32(), buf(x).f32(), buf(w).f32(), buf(bias).f32()[bias.Offset:][:n], pre, x, w, m, k, n,
			&activation[float32]{op: op, out: os, shift: out.Offset - pre.Offset})
	case backends.Float64:
		os := buf(out).f64()
		matmulBias(b, kernelF64, buf(pre).f64(), buf(x).f64(), buf(w).f64(), buf(bias).f64()[bias.Offset:][:n], pre, x, w, m, k, n,
			&activation[float64]{op: op, out: os, shift: out.Offset - pre.Offset})
	}
}

// activation is the epilogue of MatmulBiasAct's GEMM (matDst.act): op
// applied to finished elements of C, element p of C.s written to
// out[p+shift] (both [M, N] contiguous, so the shift is the same for every
// element, whatever part of C a strip's matDst starts at).
type activation[T float] struct {
	op    backends.UnaryOp
	out   []T
	shift int
}

// apply writes op of rows [i0, i0+rows) and columns [j0, j0+cols) of C
// (rows contiguous) to out: in one call where the rows are whole and
// follow each other, else a row at a time.
func (a *activation[T]) apply(C matDst[T], i0, rows, j0, cols int) {
	if C.rs == cols && j0 == 0 {
		p := C.off + i0*C.rs
		activationRow(a.op, a.out[p+a.shift:][:rows*cols], C.s[p:][:rows*cols])
		return
	}
	for i := i0; i < i0+rows; i++ {
		p := C.off + i*C.rs + j0
		activationRow(a.op, a.out[p+a.shift:][:cols], C.s[p:][:cols])
	}
}

// activationRow sets o = op(x) as Unary computes it for contiguous views
// of T: op's float32 kernel, else the AVX2 kernel of the simple ops, else
// unaryFloat.
func activationRow[T float](op backends.UnaryOp, o, x []T) {
	if o32, ok := any(o).([]float32); ok {
		if k := transcendentalF32(op); k != nil {
			k.forward(o32, any(x).([]float32))
			return
		}
	}
	if !vecUnary(op, o, x) {
		unaryFloat(op, o, x, 0, 0)
	}
}

// matmulBias computes out = x·w + bias, and with act (not for
// vector-shaped products) act's activation of each finished block of rows.
func matmulBias[T float](b *Backend, kern kernel[T], os, xs, ws, bias []T, out, x, w backends.View, m, k, n int, act *activation[T]) {
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
		matDst[T]{s: os, off: out.Offset, rs: n, cs: 1, bias: bias, act: act}, true)
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
