//go:build purego || !amd64

package cpu

// convDirectUsable and convDirectKernels are false: the portable build has
// no direct convolution kernels.
var convDirectUsable, convDirectKernels = false, false

// convTile6x16AVX2 is never called in the portable build (convDirectKernels).
func convTile6x16AVX2(k int, a *float32, x *float32, off *int, y *float32, ldy int, accum bool) {
	panic("cpu: convTile6x16AVX2 without assembly")
}

// convDot3x4AVX2 is never called in the portable build (convDirectKernels).
func convDot3x4AVX2(n, ns, sa, sb int, a0, a1, a2, b0, b1, b2, b3 *float32, sums *[12]float32) {
	panic("cpu: convDot3x4AVX2 without assembly")
}

// convTile4x24AVX2 is never called in the portable build (convDirectKernels).
func convTile4x24AVX2(k int, a *float32, x *float32, off *int, y *float32, ldy int, accum bool) {
	panic("cpu: convTile4x24AVX2 without assembly")
}

// copyRowsAVX2 is never called in the portable build (convDirectUsable).
func copyRowsAVX2(dst *float32, dstStride int, src *float32, srcStride int, rows, n int) {
	panic("cpu: copyRowsAVX2 without assembly")
}

// convChannelKernels is false: the portable build has no channel tiles.
var convChannelKernels = false

// convRowTiles is empty in the portable build (convChannelKernels).
var convRowTiles [convRowMaxR + 1]func(k int, a *float32, x *float32, off *int, y *float32, accum bool)

// convTapsDW3x3AVX512 is never called in the portable build (convChannelKernels).
func convTapsDW3x3AVX512(ns, oh, ow int, gt *float32, x *float32, xs, wp int, acc *[288]float32) {
	panic("cpu: convTapsDW3x3AVX512 without assembly")
}

// convScatterTiles is empty in the portable build (convChannelKernels).
var convScatterTiles [convRowMaxR + 1]func(o, taps int, w *float32, dy *float32, dys int, dx *float32, toff *int)
