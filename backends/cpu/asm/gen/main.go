// Command gen writes Kiln's amd64 assembly kernels (backends/cpu/*_amd64.s)
// and their Go declarations with avo. Run it through `go generate
// ./backends/cpu` or `make asm`; the output is committed.
package main

import (
	. "github.com/mmcloughlin/avo/build"
)

func main() {
	ConstraintExpr("!purego")
	initElems()
	// float32: 14×32 AVX-512 (28 accumulators of the 32 zmm registers),
	// 6×16 AVX2 (12 of the 16 ymm registers)
	gemmKernel("sgemm14x32AVX512", f32, true, 14, 2, 4)
	gemmKernel("sgemm6x64AVX512", f32, true, 6, 4, 4)
	gemmKernel("sgemm8x48AVX512", f32, true, 8, 3, 4)
	gemmKernel("sgemm6x16AVX2", f32, false, 6, 2, 4)
	gemmKernel("dgemm14x16AVX512", f64, true, 14, 2, 4)
	gemmKernel("dgemm6x8AVX2", f64, false, 6, 2, 4)
	ewKernels()
	Generate()
}
