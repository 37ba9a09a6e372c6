//go:build !purego

package cpu

// The bfloat16 GEMM's vector helpers (kernels_amd64.s), chosen at init
// with the kernels (kernels_select_amd64.go).

// cvtBF16Asm is cvtBF16Go with VCVTNEPS2BF16 (which flushes subnormal
// float32 values to zero) for all but the last n mod 16 elements.
func cvtBF16Asm(dst []uint16, src []float32) {
	n := len(src) &^ 15
	if n > 0 {
		_ = dst[n-1]
		cvtF32BF16AVX512(&dst[0], &src[0], n)
	}
	cvtBF16Go(dst[n:len(src)], src[n:])
}

// pairBF16Asm is pairBF16Go with AVX-512 for all but the last n mod 16
// elements.
func pairBF16Asm(dst []uint32, lo, hi []uint16) {
	n := len(dst) &^ 15
	if n > 0 {
		_, _ = lo[n-1], hi[n-1]
		pairBF16AVX512(&dst[0], &lo[0], &hi[0], n)
	}
	pairBF16Go(dst[n:], lo[n:], hi[n:])
}
