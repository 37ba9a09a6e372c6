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
