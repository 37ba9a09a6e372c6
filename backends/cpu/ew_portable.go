//go:build purego || !amd64

package cpu

import "github.com/kiln-ml/kiln/backends"

// ntBytes is the output size from which kernels would stream past the
// caches; the portable build has no such kernels.
const ntBytes = 1 << 62

// ewF32 has no vector kernels to offer in the portable build.
func ewF32(backends.BinaryOp, []float32, []float32, []float32, bool) bool { return false }

// packTransposed would pack with a vector transpose; the portable build has
// none, so it packs no columns.
func packTransposed[T float](d, s []T, off, rs, rows, cn, w int) int { return 0 }

// vecAxpy has no vector kernel in the portable build.
func vecAxpy[T float](dst, x []T, a T) bool { return false }

// addScalar adds s to each element of dst.
func addScalar[T float](dst []T, s T) {
	for i := range dst {
		dst[i] += s
	}
}

// vecDot has no vector kernel in the portable build.
func vecDot[T float](x, y []T) (T, bool) { return 0, false }

// vecUnary has no vector kernels in the portable build.
func vecUnary[T float](op backends.UnaryOp, o, x []T) bool { return false }

// vecAdam has no vector kernel in the portable build.
func vecAdam[T float](outP, outM, outV, p, g, m, v []T, h backends.AdamHyper) int { return 0 }

// vecMaxPool2x2 has no vector kernel in the portable build.
func vecMaxPool2x2(dst []float32, di []int64, src []float32, w, oh, ow int) bool { return false }

// vecReluGrad has no vector kernel in the portable build.
func vecReluGrad(o, x, g []float32) int { return 0 }

// vecSumWide has no vector kernel in the portable build.
func vecSumWide[T float32 | float64 | int64, A accum](x []T) (A, int) { return 0, 0 }

// vecAccWide has no vector kernel in the portable build.
func vecAccWide[T float32 | float64 | int64, A accum](acc []A, x []T) int { return 0 }

// hasDotTile is false: the portable build has no dot-product tile kernel.
const hasDotTile = false

// dotTile4x4F32 is never called in the portable build (hasDotTile).
func dotTile4x4F32(a0, a1, a2, a3, b0, b1, b2, b3 *float32, n, ns, sa, sb int, acc *[256]float32) {
	panic("cpu: dotTile4x4F32 without assembly")
}

// outGradVecF32 has no vector kernels in the portable build.
func outGradVecF32(backends.UnaryOp, []float32, []float32, []float32, bool) bool { return false }
