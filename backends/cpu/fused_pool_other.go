//go:build purego || !amd64

package cpu

// vecMaxPool2x2AVX2 has no kernel in the portable build.
func vecMaxPool2x2AVX2(dst []float32, di []int64, src []float32, w, oh, ow int) bool { return false }
