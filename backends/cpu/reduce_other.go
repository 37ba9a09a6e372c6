//go:build purego || !amd64

package cpu

// accRows has no kernel here: it reports that it did nothing, and the
// caller folds row after row.
func accRows[T float32 | float64 | int64, A accum](acc []A, x []T, off, ld, rows int) int {
	return 0
}
