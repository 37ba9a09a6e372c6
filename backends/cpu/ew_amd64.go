//go:build !purego

package cpu

import (
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// ntBytes is the output size (bytes) from which element-wise kernels write
// with non-temporal stores: the output cannot stay in the caches anyway,
// and streaming it skips reading each output line before writing it.
const ntBytes = 32 << 20

type (
	ewVV func(dst, a, b *float32, n int)
	ewVS func(dst, a *float32, s float32, n int)
)

// ewKernelsF32 holds, per op, the AVX2 kernels for vector op vector,
// vector op scalar and scalar op vector (nil where the op commutes), plain
// and with non-temporal stores.
var ewKernelsF32 = map[backends.BinaryOp]struct {
	vv, vvNT ewVV
	vs, vsNT ewVS
	sv, svNT ewVS
}{
	backends.Add: {addvvF32, addvvF32NT, addvsF32, addvsF32NT, nil, nil},
	backends.Sub: {subvvF32, subvvF32NT, subvsF32, subvsF32NT, subsvF32, subsvF32NT},
	backends.Mul: {mulvvF32, mulvvF32NT, mulvsF32, mulvsF32NT, nil, nil},
	backends.Div: {divvvF32, divvvF32NT, divvsF32, divvsF32NT, divsvF32, divsvF32NT},
}

// ewF32 computes o = a op c with the AVX2 kernels, where a and c are each
// as long as o or one element; it reports false when it has no kernel.
func ewF32(op backends.BinaryOp, o, a, c []float32, nt bool) bool {
	k, ok := ewKernelsF32[op]
	n := len(o)
	if !ok || !hasAVX2 || n == 0 {
		return false
	}
	// with nt, the head up to a 32-byte boundary of o uses plain stores
	head := 0
	if nt {
		head = min(n, int((32-uintptr(unsafe.Pointer(&o[0]))%32)%32/4))
	}
	switch {
	case len(a) == n && len(c) == n:
		_, _ = a[n-1], c[n-1]
		if head > 0 {
			k.vv(&o[0], &a[0], &c[0], head)
		}
		if nt && head < n {
			k.vvNT(&o[head], &a[head], &c[head], n-head)
		} else if head < n {
			k.vv(&o[head], &a[head], &c[head], n-head)
		}
	case len(a) == n && len(c) == 1:
		_ = a[n-1]
		ewScalar(k.vs, k.vsNT, o, a, c[0], head, nt)
	case len(a) == 1 && len(c) == n:
		fn, fnNT := k.sv, k.svNT
		if fn == nil { // the op commutes
			fn, fnNT = k.vs, k.vsNT
		}
		_ = c[n-1]
		ewScalar(fn, fnNT, o, c, a[0], head, nt)
	default:
		return false
	}
	return true
}

func ewScalar(fn, fnNT ewVS, o, x []float32, s float32, head int, nt bool) {
	n := len(o)
	if head > 0 {
		fn(&o[0], &x[0], s, head)
	}
	if nt && head < n {
		fnNT(&o[head], &x[head], s, n-head)
	} else if head < n {
		fn(&o[head], &x[head], s, n-head)
	}
}

// packTransposed packs the leading columns of the first rows rows of a
// panel of s (row i at off + i·rs, contiguous along the columns; rows a
// multiple of 8, at most w) into d[c·w+i] with the AVX 8×8 transpose, for
// float32 and w a multiple of 8, or with SSE-width shuffles (packT6F32) for
// a full panel of the AVX2 kernel's 6 rows, and returns how many columns it
// packed (a multiple of 8, or of 4 for w = 6; the caller packs the rest).
func packTransposed[T float](d, s []T, off, rs, rows, cn, w int) int {
	df, ok := any(d).([]float32)
	if ok && w == 6 && rows == 6 && cn >= 4 && hasAVX2 && packAVX2 {
		// the AVX2 kernel's A panels from A as stored (rows along k)
		sf := any(s).([]float32)
		c4 := cn / 4 * 4
		_ = df[c4*6-1]
		_, _ = sf[off+c4-1], sf[off+5*rs+c4-1] // first and last rows (rs may be negative)
		_, _ = sf[off], sf[off+5*rs]
		packT6F32(&df[0], &sf[off], rs, c4)
		return c4
	}
	if !ok || w%8 != 0 || rows%8 != 0 || rows > w || cn < 8 || !hasAVX2 {
		return 0
	}
	sf := any(s).([]float32)
	c8 := cn / 8 * 8
	_ = df[(c8-1)*w+w-1]
	_, _ = sf[off+c8-1], sf[off+(rows-1)*rs+c8-1] // first and last rows (rs may be negative)
	for g := 0; g < rows; g += 8 {
		packT8F32(&df[g], &sf[off+g*rs], rs, c8, w)
	}
	return c8
}

// vecAxpy sets dst[i] += a·x[i] (fused) with AVX2 for float32, reporting
// false where it has no kernel.
func vecAxpy[T float](dst, x []T, a T) bool {
	d, ok := any(dst).([]float32)
	if !ok || !hasAVX2 || len(d) == 0 {
		return false
	}
	xf := any(x).([]float32)
	_ = xf[len(d)-1]
	axpyF32(&d[0], &xf[0], any(a).(float32), len(d))
	return true
}

// addScalar adds s to each element of dst, with the AVX2 kernel for
// float32 (one rounding each, as Binary's Add).
func addScalar[T float](dst []T, s T) {
	if d, ok := any(dst).([]float32); ok && hasAVX2 && len(d) > 0 {
		addvsF32(&d[0], &d[0], any(s).(float32), len(d))
		return
	}
	for i := range dst {
		dst[i] += s
	}
}

// vecDot returns Σ x[i]·y[i] with AVX2 for float32 (32 partial sums in a
// fixed order), reporting false where it has no kernel.
func vecDot[T float](x, y []T) (T, bool) {
	xf, ok := any(x).([]float32)
	if !ok || !hasAVX2 || len(xf) == 0 {
		return 0, false
	}
	yf := any(y).([]float32)
	_ = yf[len(xf)-1]
	return any(dotF32(&xf[0], &yf[0], len(xf))).(T), true
}

// unaryKernelsF32 are the AVX2 kernels for the unary ops exact in float32.
var unaryKernelsF32 = map[backends.UnaryOp]func(dst, x *float32, n int){
	backends.Relu: reluF32, backends.Neg: negF32, backends.Abs: absF32, backends.Square: squareF32,
}

// vecUnary sets o = op(x) with an AVX2 kernel for float32, reporting false
// where it has none.
func vecUnary[T float](op backends.UnaryOp, o, x []T) bool {
	of, ok := any(o).([]float32)
	fn := unaryKernelsF32[op]
	if !ok || fn == nil || !hasAVX2 || len(of) == 0 {
		return false
	}
	xf := any(x).([]float32)
	_ = xf[len(of)-1]
	fn(&of[0], &xf[0], len(of))
	return true
}

// vecAdam runs the AVX-512 (eight at a time) or AVX2 (four) Adam kernel
// over the longest prefix of whole groups of float32 parameters, for the
// update it covers (no L2 decay of the gradient, not maximizing, after the
// first step, the parameter moving), and returns how many parameters it
// updated.
func vecAdam[T float](outP, outM, outV, p, g, m, v []T, h backends.AdamHyper) int {
	pf, ok := any(p).([]float32)
	n := len(p) &^ 3
	if !ok || !hasAVX2 || n == 0 || h.Maximize || h.WeightDecay != 0 || h.First || !h.MovesParam {
		return 0
	}
	k := [7]float64{h.Decay, h.Beta1, h.Beta2, 1 - h.Beta1, 1 - h.Beta2, h.InvDenom, h.EpsTerm}
	f := func(s []T) *float32 { return &any(s).([]float32)[:n][0] }
	// direct calls, not through a func value, so that k stays on the stack
	if hasAVX512 && n >= 8 {
		n &^= 7 // the rest goes to the Go loop
		adamF32AVX512(f(outP), f(outM), f(outV), &pf[:n][0], f(g), f(m), f(v), n, &k)
		return n
	}
	adamF32(f(outP), f(outM), f(outV), &pf[:n][0], f(g), f(m), f(v), n, &k)
	return n
}

// vecMaxPool2x2 runs the AVX-512 2×2 max-pooling kernel over a plane (see
// maxPool2x2), a row of outputs per call, or where the CPU lacks AVX-512
// or BMI2 the AVX2 one (vecMaxPool2x2AVX2), reporting false where it has
// neither.
func vecMaxPool2x2(dst []float32, di []int64, src []float32, w, oh, ow int) bool {
	if !hasAVX512 || !hasBMI2 {
		return vecMaxPool2x2AVX2(dst, di, src, w, oh, ow)
	}
	if oh == 0 || ow == 0 {
		return true
	}
	_, _ = dst[oh*ow-1], di[oh*ow-1]
	_ = src[(2*oh-1)*w+2*ow-1]
	for i := range oh {
		maxPool2x2RowF32(&dst[i*ow], &di[i*ow], &src[2*i*w], &src[(2*i+1)*w], ow, int64(2*i*w), int64(w))
	}
	return true
}

// vecReluGrad runs the AVX2 ReLU-gradient kernel over the longest prefix of
// whole groups of eight and returns how many elements it did.
func vecReluGrad(o, x, g []float32) int {
	n := len(o) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	_, _ = x[n-1], g[n-1]
	reluGradF32AVX2(&o[0], &x[0], &g[0], n)
	return n
}

// vecSumWide sums the longest prefix of x of whole groups of sixteen with
// the AVX2 kernel, for float32 summed in float64, and returns the sum and
// how many elements it covered (0 where it has no kernel).
func vecSumWide[T float32 | float64 | int64, A accum](x []T) (A, int) {
	xf, ok := any(x).([]float32)
	n := len(x) &^ 15
	if _, wide := any(A(0)).(float64); !ok || !wide || !hasAVX2 || n == 0 {
		return 0, 0
	}
	return A(sumF32F64(&xf[:n][0], n)), n
}

// vecAccWide adds float32 x into float64 acc over the longest prefix of
// whole groups of eight with the AVX2 kernel and returns how many elements
// it did (0 where it has no kernel).
func vecAccWide[T float32 | float64 | int64, A accum](acc []A, x []T) int {
	xf, ok := any(x).([]float32)
	af, wide := any(acc).([]float64)
	n := len(acc) &^ 7
	if !ok || !wide || !hasAVX2 || n == 0 {
		return 0
	}
	_ = xf[n-1]
	accF32F64(&af[0], &xf[0], n)
	return n
}

// outGradKernelsF32 holds the AVX2 kernels of UnaryGradOutput per op, with
// plain and with non-temporal stores.
var outGradKernelsF32 = map[backends.UnaryOp][2]func(dst, y, g *float32, n int){
	backends.Exp:     {expGradOutF32, expGradOutF32NT},
	backends.Tanh:    {tanhGradOutF32, tanhGradOutF32NT},
	backends.Sigmoid: {sigmoidGradOutF32, sigmoidGradOutF32NT},
}

// outGradVecF32 computes o = g·DFOut(y) for op with the AVX2 kernels (y
// and g as long as o), reporting false when it has none; with nt the
// output from its first 32-byte boundary on is written with non-temporal
// stores.
func outGradVecF32(op backends.UnaryOp, o, y, g []float32, nt bool) bool {
	k, ok := outGradKernelsF32[op]
	n := len(o)
	if !ok || !hasAVX2 || n == 0 {
		return false
	}
	_, _ = y[n-1], g[n-1]
	head := n
	if nt {
		head = min(n, int((32-uintptr(unsafe.Pointer(&o[0]))%32)%32/4))
	}
	if head > 0 {
		k[0](&o[0], &y[0], &g[0], head)
	}
	if head < n {
		k[1](&o[head], &y[head], &g[head], n-head)
	}
	return true
}
