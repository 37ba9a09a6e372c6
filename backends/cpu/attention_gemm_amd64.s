//go:build !purego

#include "textflag.h"

// Hand-written AVX2+FMA micro-kernels of the fused attention
// (attention_gemm_amd64.go): sgemm6x16AVX2 (kernels_amd64.s) with the A
// operand read in place from a tile, by rows (a[i·lda+p]) or by columns
// (a[p·lda+i]), instead of from a packed panel (a[p·6+i]), and the B
// operand's rows ldb apart (16 for a packed panel, b[p·16+j], or a matrix
// read in place). The products are summed in the same order with the same
// fused multiply-adds, so they give sgemm6x16AVX2's bits. They store all
// 16 columns of rows i < mv.
//
// Registers: CX k left, SI and R11 the A pointers, R10 lda in bytes, DI
// B's row, R12 ldb in bytes, DX C, R8 ldc in bytes, R9 mv; Y0 and Y1 hold
// a row of B, Y2 a broadcast element of A, Y3…Y14 the 6×16 sums (row i in
// Y(3+2i), Y(4+2i)).

// ATTN_FMA2(x, lo, hi) adds the row of B (Y0, Y1) times the element at x
// to lo and hi.
#define ATTN_FMA2(x, lo, hi) \
	VBROADCASTSS x, Y2 \
	VFMADD231PS  Y0, Y2, lo \
	VFMADD231PS  Y1, Y2, hi

// ATTN_ROWS_STEP(pa) does one step of the by-rows kernel: A's column at
// byte offset pa from SI (row 0) and R11 (row 3), B's row at DI; DI moves
// to the next row.
#define ATTN_ROWS_STEP(pa) \
	VMOVUPS (DI), Y0 \
	VMOVUPS 32(DI), Y1 \
	ADDQ    R12, DI \
	ATTN_FMA2(pa(SI), Y3, Y4) \
	ATTN_FMA2(pa(SI)(R10*1), Y5, Y6) \
	ATTN_FMA2(pa(SI)(R10*2), Y7, Y8) \
	ATTN_FMA2(pa(R11), Y9, Y10) \
	ATTN_FMA2(pa(R11)(R10*1), Y11, Y12) \
	ATTN_FMA2(pa(R11)(R10*2), Y13, Y14)

// ATTN_COLS_STEP does one step of the by-columns kernel: SI points to the
// 6 elements of A's column, B's row at DI; SI and DI move to the next.
#define ATTN_COLS_STEP \
	VMOVUPS (DI), Y0 \
	VMOVUPS 32(DI), Y1 \
	ADDQ    R12, DI \
	ATTN_FMA2(0(SI), Y3, Y4) \
	ATTN_FMA2(4(SI), Y5, Y6) \
	ATTN_FMA2(8(SI), Y7, Y8) \
	ATTN_FMA2(12(SI), Y9, Y10) \
	ATTN_FMA2(16(SI), Y11, Y12) \
	ATTN_FMA2(20(SI), Y13, Y14) \
	ADDQ R10, SI

// ATTN_ZERO clears the sums.
#define ATTN_ZERO \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11 \
	VXORPS Y12, Y12, Y12 \
	VXORPS Y13, Y13, Y13 \
	VXORPS Y14, Y14, Y14

// ATTN_SET(i, lo, hi, done) stores row i (lo, hi) at DX and moves DX to the
// next row, or jumps to done when i ≥ mv.
#define ATTN_SET(i, lo, hi, done) \
	CMPQ    R9, $i \
	JLE     done \
	VMOVUPS lo, (DX) \
	VMOVUPS hi, 32(DX) \
	ADDQ    R8, DX

// ATTN_ACC is ATTN_SET adding the row to what C holds (C + sum, as
// sgemm6x16AVX2 adds).
#define ATTN_ACC(i, lo, hi, done) \
	CMPQ    R9, $i \
	JLE     done \
	VADDPS  (DX), lo, lo \
	VADDPS  32(DX), hi, hi \
	VMOVUPS lo, (DX) \
	VMOVUPS hi, 32(DX) \
	ADDQ    R8, DX

// func attnGemmRowsAVX2(kc int, a *float32, lda int, b *float32, ldb int, c *float32, ldc, mv int, accum bool)
TEXT ·attnGemmRowsAVX2(SB), NOSPLIT, $0-65
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R12
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	MOVQ mv+56(FP), R9
	SHLQ $2, R8
	SHLQ $2, R10
	SHLQ $2, R12
	LEAQ (SI)(R10*2), R11
	ADDQ R10, R11
	ATTN_ZERO
	MOVQ CX, AX
	SHRQ $2, AX
	JZ   rowstail

rowsloop:
	ATTN_ROWS_STEP(0)
	ATTN_ROWS_STEP(4)
	ATTN_ROWS_STEP(8)
	ATTN_ROWS_STEP(12)
	ADDQ $16, SI
	ADDQ $16, R11
	DECQ AX
	JNZ  rowsloop

rowstail:
	ANDQ $3, CX
	JZ   rowsstore

rowstailloop:
	ATTN_ROWS_STEP(0)
	ADDQ $4, SI
	ADDQ $4, R11
	DECQ CX
	JNZ  rowstailloop

rowsstore:
	MOVBLZX accum+64(FP), BX
	TESTB   BL, BL
	JNZ     rowsacc
	ATTN_SET(0, Y3, Y4, rowsdone)
	ATTN_SET(1, Y5, Y6, rowsdone)
	ATTN_SET(2, Y7, Y8, rowsdone)
	ATTN_SET(3, Y9, Y10, rowsdone)
	ATTN_SET(4, Y11, Y12, rowsdone)
	ATTN_SET(5, Y13, Y14, rowsdone)
	JMP     rowsdone

rowsacc:
	ATTN_ACC(0, Y3, Y4, rowsdone)
	ATTN_ACC(1, Y5, Y6, rowsdone)
	ATTN_ACC(2, Y7, Y8, rowsdone)
	ATTN_ACC(3, Y9, Y10, rowsdone)
	ATTN_ACC(4, Y11, Y12, rowsdone)
	ATTN_ACC(5, Y13, Y14, rowsdone)

rowsdone:
	VZEROUPPER
	RET

// func attnGemmColsAVX2(kc int, a *float32, lda int, b *float32, ldb int, c *float32, ldc, mv int, accum bool)
TEXT ·attnGemmColsAVX2(SB), NOSPLIT, $0-65
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R12
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	MOVQ mv+56(FP), R9
	SHLQ $2, R8
	SHLQ $2, R10
	SHLQ $2, R12
	ATTN_ZERO
	MOVQ CX, AX
	SHRQ $2, AX
	JZ   colstail

colsloop:
	ATTN_COLS_STEP
	ATTN_COLS_STEP
	ATTN_COLS_STEP
	ATTN_COLS_STEP
	DECQ AX
	JNZ  colsloop

colstail:
	ANDQ $3, CX
	JZ   colsstore

colstailloop:
	ATTN_COLS_STEP
	DECQ CX
	JNZ  colstailloop

colsstore:
	MOVBLZX accum+64(FP), BX
	TESTB   BL, BL
	JNZ     colsacc
	ATTN_SET(0, Y3, Y4, colsdone)
	ATTN_SET(1, Y5, Y6, colsdone)
	ATTN_SET(2, Y7, Y8, colsdone)
	ATTN_SET(3, Y9, Y10, colsdone)
	ATTN_SET(4, Y11, Y12, colsdone)
	ATTN_SET(5, Y13, Y14, colsdone)
	JMP     colsdone

colsacc:
	ATTN_ACC(0, Y3, Y4, colsdone)
	ATTN_ACC(1, Y5, Y6, colsdone)
	ATTN_ACC(2, Y7, Y8, colsdone)
	ATTN_ACC(3, Y9, Y10, colsdone)
	ATTN_ACC(4, Y11, Y12, colsdone)
	ATTN_ACC(5, Y13, Y14, colsdone)

colsdone:
	VZEROUPPER
	RET
