//go:build !purego

package cpu

// geluTanhF32AVX2Paired is geluTanhF32AVX2 with the same results bit for
// bit, sixteen lanes an iteration: geluTanhF32AVX2Pairs computes each
// block of sixteen whose inputs are all finite, two blocks of eight
// interleaved, and geluTanhF32AVX2 the rest (a block with ±Inf or NaN, and
// the last n mod 16).
func geluTanhF32AVX2Paired(dst, x *float32, n int, sp *[2]float32) {
	for n > 0 {
		k := geluTanhF32AVX2Pairs(dst, x, n)
		m := min(n-k, 16)
		if m == 0 {
			return
		}
		geluTanhF32AVX2(f32At(dst, k), f32At(x, k), m, sp)
		if n -= k + m; n > 0 {
			dst, x = f32At(dst, k+m), f32At(x, k+m)
		}
	}
}
