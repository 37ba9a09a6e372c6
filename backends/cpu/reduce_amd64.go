//go:build !purego

package cpu

// reduceRowsAVX2 enables accRows' assembly kernel; tests and benchmarks
// turn it off to compare with accumulateRow row after row.
var reduceRowsAVX2 = true

// accRows adds rows rows of float32 x (the first at off, each ld elements
// after the one before) into the float64 sums acc, element by element in
// order of the rows, over the longest prefix of acc that is a multiple of
// eight, and returns that prefix's length (0 where there is no kernel for
// T and A). The result is the bits of accumulateRow called row after row.
func accRows[T float32 | float64 | int64, A accum](acc []A, x []T, off, ld, rows int) int {
	xf, ok := any(x).([]float32)
	af, wide := any(acc).([]float64)
	n := len(acc) &^ 7
	if !ok || !wide || !hasAVX2 || !reduceRowsAVX2 || n == 0 || rows <= 0 || ld < n {
		return 0
	}
	_, _ = xf[off], xf[off+(rows-1)*ld+n-1]
	accRowsF32F64(&af[0], &xf[off], ld, rows, n)
	return n
}
