// Command gen writes Kiln's amd64 assembly kernels (backends/cpu/*_amd64.s)
// and their Go declarations with avo. Run it through `go generate
// ./backends/cpu` or `make asm`; the output is committed.
package main

import (
	"fmt"
	"os"

	. "github.com/mmcloughlin/avo/build"
)

func main() {
	ConstraintExpr("!purego")
	initElems()
	// float32: 8×32 AVX-512 (16 of the 32 zmm registers accumulate; as fast
	// as 12×32 or 14×32 on Zen 5 and without a partial tile when M is a
	// multiple of 8), 14×32 and 6×64 as alternatives, 6×16 AVX2 (12 of the
	// 16 ymm registers)
	gemmKernel("sgemm8x32AVX512", f32, true, 8, 2, 4)
	gemmKernelOf("sgemm8x32AVX512Bias", f32, true, 8, 2, 4, true) // a linear layer's bias added as it stores
	gemmKernelRows("sgemm8x32RowsAVX512", 2, 4, false)            // A read in place (gemm.go's macroTileRows)
	gemmKernelRows("sgemm8x32RowsAVX512Bias", 2, 4, true)
	gemmKernelCols("sgemm8x32ColsAVX512", 2, 4)
	gemmKernel("sgemm14x32AVX512", f32, true, 14, 2, 4)
	gemmKernel("sgemm6x64AVX512", f32, true, 6, 4, 4)
	gemmKernel("sgemm6x16AVX2", f32, false, 6, 2, 4)
	gemmKernelOf("sgemm6x16AVX2Bias", f32, false, 6, 2, 4, true) // a linear layer's bias added as it stores
	// the fused attention's tiles multiplied in place (AVX2: attention_gemm_amd64.s)
	attnGemmInPlace("attnGemmRowsAVX512", false)
	attnGemmInPlace("attnGemmColsAVX512", true)
	// float64: 14×16 AVX-512, 6×8 AVX2
	gemmKernel("dgemm14x16AVX512", f64, true, 14, 2, 4)
	gemmKernel("dgemm6x8AVX2", f64, false, 6, 2, 4)
	// bfloat16 (AVX-512 BF16): pairs of k per 32-bit word, float32 C
	gemmKernel("bgemm14x32AVX512", bf16, true, 14, 2, 4)
	gemmKernel("bgemm8x32AVX512", bf16, true, 8, 2, 4)
	gemmKernel("bgemm6x64AVX512", bf16, true, 6, 4, 4)
	bf16Helpers()
	addRowsF32()
	cvtRowsF32BF16()
	packT8()
	axpy()
	dot()
	sumWide()
	accWide()
	accRowsWide()
	dotWide()
	dotTile()
	convChannelKernels()
	ewKernels()
	outGradKernels()
	unaryKernels()
	adam()
	maxPool2x2()
	reluGrad()
	transcendentalKernels()
	transcendentalKernelsAVX2()
	transcendentalKernelsF32AVX512()
	winoKernels()
	Generate()
	if *geluTabOut != "" {
		if err := writeGeluTable(*geluTabOut); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
