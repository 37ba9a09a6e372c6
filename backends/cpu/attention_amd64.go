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

func init() {
	if !hasAVX512 {
		return
	}
	attnF32 = attnRowOps[float32]{
		exp: func(s []float32, scale, shift float32) float64 {
			if len(s) == 0 {
				return 0
			}
			return float64(expShiftSumF32AVX512(&s[0], len(s), scale, shift))
		},
		max: func(s []float32) float32 {
			if len(s) == 0 {
				return float32(math.Inf(-1))
			}
			return maxF32AVX512(&s[0], len(s))
		},
		ds: func(ds, p []float32, d float32) {
			if len(ds) > 0 {
				dsRowF32AVX512(&ds[0], &p[0], len(ds), d)
			}
		},
	}
}
