//go:build !purego

package cpu

import "math"

// expShiftSumF32AVX512 sets s[j] = e^(s[j]·scale − shift) for j < n (the
// argument with one rounding, a fused multiply-add) and returns their sum
// (AVX-512; attention_amd64.s). The exponential is Cephes' float32 one,
// within 2 ulp of e^x, 0 below −104 and +Inf above 89; NaN stays NaN.
//
//go:noescape
func expShiftSumF32AVX512(s *float32, n int, scale, shift float32) float32

// maxF32AVX512 returns the maximum of s[:n] (−Inf for n = 0; NaNs are
// skipped).
//
//go:noescape
func maxF32AVX512(s *float32, n int) float32

// dsRowF32AVX512 sets ds[j] = p[j]·(ds[j] − d) for j < n.
//
//go:noescape
func dsRowF32AVX512(ds, p *float32, n int, d float32)

// expShiftSumF32AVX2, maxF32AVX2 and dsRowF32AVX2 are the AVX-512
// kernels' AVX2+FMA counterparts (attention_avx2_amd64.s), for CPUs
// without AVX-512: the same contracts and the same bits.
//
//go:noescape
func expShiftSumF32AVX2(s *float32, n int, scale, shift float32) float32

//go:noescape
func maxF32AVX2(s *float32, n int) float32

//go:noescape
func dsRowF32AVX2(ds, p *float32, n int, d float32)

// attnRowOpsAsm wraps three row kernels of one instruction set as
// attnRowOps.
func attnRowOpsAsm(
	exp func(s *float32, n int, scale, shift float32) float32,
	mx func(s *float32, n int) float32,
	ds func(ds, p *float32, n int, d float32),
) attnRowOps[float32] {
	return attnRowOps[float32]{
		exp: func(s []float32, scale, shift float32) float64 {
			if len(s) == 0 {
				return 0
			}
			return float64(exp(&s[0], len(s), scale, shift))
		},
		max: func(s []float32) float32 {
			if len(s) == 0 {
				return float32(math.Inf(-1))
			}
			return mx(&s[0], len(s))
		},
		ds: func(d, p []float32, v float32) {
			if len(d) > 0 {
				_ = p[len(d)-1]
				ds(&d[0], &p[0], len(d), v)
			}
		},
		// AVX2 for both instruction sets: the rows are short (a head's
		// width), and a product rounds alike in every width
		dot: func(x, y []float32) float64 {
			n := len(x) &^ 7
			var s float64
			if n > 0 {
				_ = y[n-1]
				s = dotF32F64(&x[0], &y[0], n)
			}
			for j := n; j < len(x); j++ {
				s += float64(x[j]) * float64(y[j])
			}
			return s
		},
		scale: func(dst, x []float32, a float32) {
			if len(x) > 0 {
				_ = dst[len(x)-1]
				mulvsF32(&dst[0], &x[0], a, len(x))
			}
		},
	}
}

// The vector row passes this CPU runs, the widest last (and used).
func init() {
	if hasAVX2 {
		attnF32Kernels = append(attnF32Kernels, attnF32Kernel{"avx2",
			attnRowOpsAsm(expShiftSumF32AVX2, maxF32AVX2, dsRowF32AVX2)})
	}
	if hasAVX512 {
		attnF32Kernels = append(attnF32Kernels, attnF32Kernel{"avx512",
			attnRowOpsAsm(expShiftSumF32AVX512, maxF32AVX512, dsRowF32AVX512)})
	}
	attnF32 = attnF32Kernels[len(attnF32Kernels)-1].ops
}
