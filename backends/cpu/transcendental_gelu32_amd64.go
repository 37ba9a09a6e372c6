//go:build !purego

package cpu

import "unsafe"

// geluF32AVX2Paired is geluF32AVX2 with the same results bit for bit,
// sixteen lanes an iteration (pairedF32).
var geluF32AVX2Paired = pairedF32(16, geluF32AVX2Pairs, geluF32AVX2)

// pairedF32 returns a forward kernel with one's results bit for bit,
// block lanes an iteration (16 for the AVX2 kernels, 32 for the AVX-512
// ones): pairs computes each block whose inputs are all finite, two
// vectors interleaved, and returns how many elements it did; one computes
// the rest (a block with ±Inf or NaN, and the last n mod block).
func pairedF32(block int, pairs func(dst, x *float32, n int) int, one func(dst, x *float32, n int, sp *[2]float32)) func(dst, x *float32, n int, sp *[2]float32) {
	return func(dst, x *float32, n int, sp *[2]float32) {
		for n > 0 {
			k := pairs(dst, x, n)
			m := min(n-k, block)
			if m == 0 {
				return
			}
			one(f32At(dst, k), f32At(x, k), m, sp)
			if n -= k + m; n > 0 {
				dst, x = f32At(dst, k+m), f32At(x, k+m)
			}
		}
	}
}

// geluGradF32AVX2Paired is geluGradF32AVX2 with the same results bit for
// bit, sixteen lanes an iteration, as geluF32AVX2Paired: the blocks with x
// ±Inf or NaN or a |g| ≥ 2^64 go to geluGradF32AVX2.
var geluGradF32AVX2Paired = pairedGradF32(16, geluGradF32AVX2Pairs, geluGradF32AVX2)

// pairedGradF32 is pairedF32 for a backward kernel: pairs stops before
// the blocks with x ±Inf or NaN or a |g| ≥ 2^64, which one computes.
func pairedGradF32(block int, pairs func(dst, x, grad *float32, n int) int, one func(dst, x, grad *float32, n int, sp *[2]float32)) func(dst, x, grad *float32, n int, sp *[2]float32) {
	return func(dst, x, grad *float32, n int, sp *[2]float32) {
		for n > 0 {
			k := pairs(dst, x, grad, n)
			m := min(n-k, block)
			if m == 0 {
				return
			}
			one(f32At(dst, k), f32At(x, k), f32At(grad, k), m, sp)
			if n -= k + m; n > 0 {
				dst, x, grad = f32At(dst, k+m), f32At(x, k+m), f32At(grad, k+m)
			}
		}
	}
}

// f32At returns &p[i] for the row p points into (i below its length: Go
// allows no pointer one past the end).
func f32At(p *float32, i int) *float32 {
	return (*float32)(unsafe.Add(unsafe.Pointer(p), 4*i))
}
