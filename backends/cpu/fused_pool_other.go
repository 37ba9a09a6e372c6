//go:build purego || !amd64

package cpu

import "github.com/kiln-ml/kiln/backends"

// vecMaxPool2x2AVX2 has no kernel in the portable build.
func vecMaxPool2x2AVX2(dst []float32, di []int64, src []float32, w, oh, ow int) bool { return false }

// vecMaxPool3x3s2 has no kernel in the portable build.
func vecMaxPool3x3s2(dst []float32, di []int64, src []float32, g backends.ConvGeometry) bool {
	return false
}
