package main

// attnGemmInPlace generates the fused attention's AVX-512 float32 8×32
// micro-kernel with its A operand read in place from a tile, by rows
// (element (i, p) at a[i·lda+p]) or, with byCols, by columns (a[p·lda+i]),
// instead of from a packed panel, and B's rows ldb elements apart (32 for
// a packed panel, or a matrix read in place): gemmKernel's sgemm8x32AVX512
// with those operands (gemmShape.attn), summing in its order with the same
// fused multiply-adds and adding to C (with accum) as it does, so that it
// gives its bits. It stores all 32 columns of rows i < mv and reads all 8
// rows of A. It is the AVX-512 counterpart of attention_gemm_amd64.s's
// hand-written AVX2 kernels: on the tiles of attention, 64×64 with 64
// features, packing them cost as much as the products saved by the wider
// kernel.
func attnGemmInPlace(name string, byCols bool) {
	gemmKernelGen(name, f32, true, 8, 2, 4, gemmShape{aRows: !byCols, aCols: byCols, attn: true})
}
