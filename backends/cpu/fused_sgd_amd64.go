//go:build !purego

package cpu

// sgdMomentumF32AVX2 is sgdMomentum's loop for float32 over the first n
// rounded down to a multiple of 4 elements (fused_sgd_amd64.s), the same
// bits; outP and outBuf may be p and buf.
//
//go:noescape
func sgdMomentumF32AVX2(outP, outBuf, p, grad, buf *float32, n int, lr, mom, wd float64)

// sgdVector: the AVX2 loop runs (a test turns it off to compare).
var sgdVector = hasAVX2

// vecSGDMomentum runs sgdMomentumF32AVX2 over the whole groups of four of
// p (the other slices at least as long), returning how many it updated.
func vecSGDMomentum(outP, outBuf, p, g, buf []float32, lr, mom, wd float64) int {
	n := len(p) &^ 3
	if !sgdVector || n == 0 {
		return 0
	}
	_, _, _, _ = outP[n-1], outBuf[n-1], g[n-1], buf[n-1]
	sgdMomentumF32AVX2(&outP[0], &outBuf[0], &p[0], &g[0], &buf[0], n, lr, mom, wd)
	return n
}
