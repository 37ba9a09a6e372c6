//go:build !purego

package cpu

// The AVX2 batch-normalisation loops (batchnorm_amd64.s), used where the
// CPU has AVX2. Each gives the same bits as its Go loop in batchnorm.go.

// bnSumsF32AVX2 adds x[4j+l] − x0 to acc[l] and its square to acc[4+l],
// for j below n/4 (acc starts at zero): bnShiftedSums's accumulators
// before its tail.
//
//go:noescape
func bnSumsF32AVX2(x *float32, n int, x0 float64, acc *[8]float64)

// bnGradSumsF32AVX2 adds dy[4j+l] to acc[l] and dy[4j+l]·(x[4j+l] − mean)
// to acc[4+l], for j below n/4: bnGradSums's accumulators before its
// tail.
//
//go:noescape
func bnGradSumsF32AVX2(dy, x *float32, n int, mean float64, acc *[8]float64)

// bnAffineF32AVX2 writes y[i] = (x[i] − m)·a + b for i below n rounded
// down to a multiple of 8.
//
//go:noescape
func bnAffineF32AVX2(y, x *float32, n int, m, a, b float32)

// bnInputGradF32AVX2 writes dx[i] = dy[i]·a + (x[i] − m)·b + c for i below
// n rounded down to a multiple of 8.
//
//go:noescape
func bnInputGradF32AVX2(dx, dy, x *float32, n int, m, a, b, c float32)

// bnVector: the AVX2 loops run (a test turns them off to compare).
var bnVector = hasAVX2

// vecBNSums runs bnSumsF32AVX2 over x's whole groups of four, returning
// how many elements it summed and the accumulators.
func vecBNSums(x []float32, x0 float64) (done int, acc [8]float64) {
	if !bnVector || len(x) < 4 {
		return 0, acc
	}
	bnSumsF32AVX2(&x[0], len(x), x0, &acc)
	return len(x) &^ 3, acc
}

// vecBNGradSums is vecBNSums for bnGradSumsF32AVX2.
func vecBNGradSums(dy, x []float32, mean float64) (done int, acc [8]float64) {
	if !bnVector || len(dy) < 4 {
		return 0, acc
	}
	_ = x[len(dy)-1]
	bnGradSumsF32AVX2(&dy[0], &x[0], len(dy), mean, &acc)
	return len(dy) &^ 3, acc
}

// vecBNAffine runs bnAffineF32AVX2, returning how many outputs it wrote.
func vecBNAffine(y, x []float32, m, a, b float32) int {
	if !bnVector || len(y) < 8 {
		return 0
	}
	_ = x[len(y)-1]
	bnAffineF32AVX2(&y[0], &x[0], len(y), m, a, b)
	return len(y) &^ 7
}

// vecBNInputGrad runs bnInputGradF32AVX2, returning how many outputs it
// wrote.
func vecBNInputGrad(dx, dy, x []float32, m, a, b, c float32) int {
	if !bnVector || len(dx) < 8 {
		return 0
	}
	_, _ = dy[len(dx)-1], x[len(dx)-1]
	bnInputGradF32AVX2(&dx[0], &dy[0], &x[0], len(dx), m, a, b, c)
	return len(dx) &^ 7
}

// The channel kernels run over segs segments of s values (s a positive
// multiple of 4), stride floats apart, starting at the pointers: the sums
// add each segment's as bnShiftedSums and bnGradSums return it into
// tot[0] and tot[1], in order, from zero; the others write each segment as
// bnAffine and bnInputGrad do.

//go:noescape
func bnChannelSumsF32AVX2(x *float32, segs, s, stride int, x0 float64, tot *[2]float64)

//go:noescape
func bnChannelGradSumsF32AVX2(dy, x *float32, segs, s, stride int, mean float64, tot *[2]float64)

//go:noescape
func bnChannelAffineF32AVX2(y, x *float32, segs, s, stride int, m, a, b float32)

//go:noescape
func bnChannelInputGradF32AVX2(dx, dy, x *float32, segs, s, stride int, m, a, b, c float32)

// bnChannelMaxS is the longest segment the channel kernels take; longer
// ones pay for their calls.
const bnChannelMaxS = 64

// bnChannelOK reports whether the channel kernels run for segments of s
// values: a multiple of 4 up to bnChannelMaxS, on a CPU with AVX2.
func bnChannelOK(s int) bool { return bnVector && s > 0 && s%4 == 0 && s <= bnChannelMaxS }

// vecBNChannelSums returns bnForward's Σ (x − x0) and Σ (x − x0)² of a
// channel whose first value is x[0], segs segments stride apart.
func vecBNChannelSums(x []float32, segs, s, stride int, x0 float64) (sum, sq float64) {
	var tot [2]float64
	_ = x[(segs-1)*stride+s-1]
	bnChannelSumsF32AVX2(&x[0], segs, s, stride, x0, &tot)
	return tot[0], tot[1]
}

// vecBNChannelGradSums returns bnBackward's Σ dy and Σ dy·(x − mean).
func vecBNChannelGradSums(dy, x []float32, segs, s, stride int, mean float64) (g, h float64) {
	var tot [2]float64
	last := (segs-1)*stride + s - 1
	_, _ = dy[last], x[last]
	bnChannelGradSumsF32AVX2(&dy[0], &x[0], segs, s, stride, mean, &tot)
	return tot[0], tot[1]
}

// vecBNChannelAffine writes a channel's y = (x − m)·a + b.
func vecBNChannelAffine(y, x []float32, segs, s, stride int, m, a, b float32) {
	last := (segs-1)*stride + s - 1
	_, _ = y[last], x[last]
	bnChannelAffineF32AVX2(&y[0], &x[0], segs, s, stride, m, a, b)
}

// vecBNChannelInputGrad writes a channel's dx = dy·a + (x − m)·b + c.
func vecBNChannelInputGrad(dx, dy, x []float32, segs, s, stride int, m, a, b, c float32) {
	last := (segs-1)*stride + s - 1
	_, _, _ = dx[last], dy[last], x[last]
	bnChannelInputGradF32AVX2(&dx[0], &dy[0], &x[0], segs, s, stride, m, a, b, c)
}
