//go:build purego || !amd64

package cpu

// winoKernels is false: the portable build has no Winograd transform
// kernels (the path's Go transforms run only where tests force it).
var winoKernels = false

// transpose8 does nothing in the portable build: transposeInto's loops
// move every element.
func transpose8(dst []float32, ld int, src []float32, lds, rows, cols int) int { return 0 }
