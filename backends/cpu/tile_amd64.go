//go:build !purego

package cpu

import "github.com/kiln-ml/kiln/backends"

// mulF32F64s sets dst[i] = float32(float64(x[i]) × s) for i < n, n a
// multiple of 8 (AVX2).
//
//go:noescape
func mulF32F64s(dst, x *float32, s float64, n int)

// addF32F64s sets dst[i] = float32(float64(x[i]) + s) (see mulF32F64s).
//
//go:noescape
func addF32F64s(dst, x *float32, s float64, n int)

// divF32F64s sets dst[i] = float32(float64(x[i]) / s) (see mulF32F64s).
//
//go:noescape
func divF32F64s(dst, x *float32, s float64, n int)

// rdivF32F64s sets dst[i] = float32(s / float64(x[i])) (see mulF32F64s).
//
//go:noescape
func rdivF32F64s(dst, x *float32, s float64, n int)

// tileF64Scalar computes o = float32(float64(x) op s) (s op x when
// reverse) over the longest prefix of whole groups of eight with AVX2, and
// returns how many elements it did (0 where it has no kernel).
func tileF64Scalar(op backends.BinaryOp, o, x []float32, s float64, reverse bool) int {
	n := len(o) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	_ = x[n-1]
	switch {
	case op == backends.Mul:
		mulF32F64s(&o[0], &x[0], s, n)
	case op == backends.Add:
		addF32F64s(&o[0], &x[0], s, n)
	case op == backends.Sub && !reverse && s == s: // x - s is x + (-s), exactly, but for a NaN's sign
		addF32F64s(&o[0], &x[0], -s, n)
	case op == backends.Div && !reverse:
		divF32F64s(&o[0], &x[0], s, n)
	case op == backends.Div:
		rdivF32F64s(&o[0], &x[0], s, n)
	default:
		return 0
	}
	return n
}
