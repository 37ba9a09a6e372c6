//go:build !purego

package cpu

// The bfloat16 GEMM on CPUs with AVX2 and FMA but without AVX-512 BF16
// (the kernel avx2-bf16-f32-6x16 in kernels_select_amd64.go): the
// float32 micro-kernel multiplies float32 panels rounded to bfloat16
// precision (see bf16Kernel.f32). Before it, such CPUs ran bfloat16
// autocast products on the portable kernel, 20 to 30 times slower than
// the float32 GEMM.

// expandPairsAVX2 is expandPairs for rows rows of w ≥ 1 pair words (src)
// into 2·w·rows float32 (dst).
//
//go:noescape
func expandPairsAVX2(dst *float32, src *uint32, w, rows int)

// roundSwapPairsAVX2 is roundSwapPairs for pairs pairs of rows of w ≥ 1
// float32 at v.
//
//go:noescape
func roundSwapPairsAVX2(v *float32, w, pairs int)

func init() {
	if hasAVX2 {
		roundSwapPairs = func(v []float32, w int) {
			if pairs := len(v) / (2 * w); pairs > 0 {
				_ = v[2*pairs*w-1]
				roundSwapPairsAVX2(&v[0], w, pairs)
			}
		}
		expandPairs = func(dst []float32, src []uint32, w int) {
			if rows := len(src) / w; rows > 0 {
				_ = dst[2*rows*w-1]
				expandPairsAVX2(&dst[0], &src[0], w, rows)
			}
		}
	}
}
