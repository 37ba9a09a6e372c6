//go:build !purego

#include "textflag.h"

// Hand-written packing loops for the AVX2 GEMM's panel widths (6-row A
// panels and 16-column B panels of sgemm6x16AVX2) and the AVX-512 8×32
// kernel's (8-row A and 32-column B panels); see pack_amd64.go for their
// contracts. The generic Go loops move these element by element or call
// memmove once per panel line.

// ROWS_ARGS loads packRows*F32's arguments (dst in DI, src in SI, the
// source and panel strides in bytes in R8 and R10, the lines in CX and the
// panels in R9) and jumps to done when there are no lines or no panels.
#define ROWS_ARGS(done) \
	MOVQ  dst+0(FP), DI; \
	MOVQ  src+8(FP), SI; \
	MOVQ  ss+16(FP), R8; \
	MOVQ  cn+24(FP), CX; \
	MOVQ  np+32(FP), R9; \
	MOVQ  ds+40(FP), R10; \
	SHLQ  $2, R8; \
	SHLQ  $2, R10; \
	TESTQ CX, CX; \
	JZ    done; \
	TESTQ R9, R9; \
	JZ    done

// T6 transposes columns 0..3 (at byte offset soff of each of the six
// rows from SI, R8 bytes apart; R9 = 3·R8, R10 = 5·R8) into 24 floats at
// byte offset doff from DI, clobbering X0-X11.
#define T6(soff, doff) \
	VMOVUPS   soff(SI), X0 \
	VMOVUPS   soff(SI)(R8*1), X1 \
	VMOVUPS   soff(SI)(R8*2), X2 \
	VMOVUPS   soff(SI)(R9*1), X3 \
	VMOVUPS   soff(SI)(R8*4), X4 \
	VMOVUPS   soff(SI)(R10*1), X5 \
	VUNPCKLPS X1, X0, X6 \
	VUNPCKHPS X1, X0, X7 \
	VUNPCKLPS X3, X2, X8 \
	VUNPCKHPS X3, X2, X9 \
	VUNPCKLPS X5, X4, X10 \
	VUNPCKHPS X5, X4, X11 \
	VUNPCKLPD X8, X6, X0 \
	VUNPCKHPD X8, X6, X1 \
	VUNPCKLPD X9, X7, X2 \
	VUNPCKHPD X9, X7, X3 \
	VMOVUPS   X0, doff(DI) \
	VMOVLPS   X10, doff+16(DI) \
	VMOVUPS   X1, doff+24(DI) \
	VMOVHPS   X10, doff+40(DI) \
	VMOVUPS   X2, doff+48(DI) \
	VMOVLPS   X11, doff+64(DI) \
	VMOVUPS   X3, doff+72(DI) \
	VMOVHPS   X11, doff+88(DI)

// func packT6F32(dst, src *float32, lds, cn int)
//
// Rows a..f become, for each column j, aj bj cj dj ej fj: unpacking pairs
// of rows (a0 b0 a1 b1, ...) then pairs of pairs (a0 b0 c0 d0) gives four
// columns' first four rows in one register each, and the e, f pairs are
// stored 8 bytes at a time; the main loop takes 16 columns (a cache line
// of each row) per step. Prefetching the next panel's rows measured slower
// (the hardware prefetcher follows the six streams).
TEXT ·packT6F32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ cn+24(FP), CX
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9  // 3 rows
	LEAQ (R8)(R8*4), R10 // 5 rows
	SHRQ $2, CX
	JZ   t6done

t6loop16:
	CMPQ CX, $4
	JL   t6loop
	T6(0, 0)
	T6(16, 96)
	T6(32, 192)
	T6(48, 288)
	ADDQ $64, SI
	ADDQ $384, DI
	SUBQ $4, CX
	JNZ  t6loop16
	RET

t6loop:
	T6(0, 0)
	ADDQ $16, SI
	ADDQ $96, DI
	DECQ CX
	JNZ  t6loop

t6done:
	RET

// func packRows6F32(dst, src *float32, ss, cn, np, ds int)
TEXT ·packRows6F32(SB), NOSPLIT, $0-48
	ROWS_ARGS(r6done)

r6line:
	MOVQ SI, R12
	MOVQ DI, R13
	MOVQ R9, R11

r6panel:
	VMOVUPS (R12), X0
	MOVQ    16(R12), AX
	VMOVUPS X0, (R13)
	MOVQ    AX, 16(R13)
	ADDQ    $24, R12
	ADDQ    R10, R13
	DECQ    R11
	JNZ     r6panel
	ADDQ    R8, SI
	ADDQ    $24, DI
	DECQ    CX
	JNZ     r6line

r6done:
	RET

// func packRows16F32(dst, src *float32, ss, cn, np, ds int)
TEXT ·packRows16F32(SB), NOSPLIT, $0-48
	ROWS_ARGS(r16done)

r16line:
	MOVQ SI, R12
	MOVQ DI, R13
	MOVQ R9, R11

r16panel:
	VMOVUPS (R12), Y0
	VMOVUPS 32(R12), Y1
	VMOVUPS Y0, (R13)
	VMOVUPS Y1, 32(R13)
	ADDQ    $64, R12
	ADDQ    R10, R13
	DECQ    R11
	JNZ     r16panel
	ADDQ    R8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     r16line
	VZEROUPPER

r16done:
	RET

// func packRows32F32(dst, src *float32, ss, cn, np, ds int)
TEXT ·packRows32F32(SB), NOSPLIT, $0-48
	ROWS_ARGS(r32done)

r32line:
	MOVQ SI, R12
	MOVQ DI, R13
	MOVQ R9, R11

r32panel:
	VMOVUPS (R12), Y0
	VMOVUPS 32(R12), Y1
	VMOVUPS 64(R12), Y2
	VMOVUPS 96(R12), Y3
	VMOVUPS Y0, (R13)
	VMOVUPS Y1, 32(R13)
	VMOVUPS Y2, 64(R13)
	VMOVUPS Y3, 96(R13)
	ADDQ    $128, R12
	ADDQ    R10, R13
	DECQ    R11
	JNZ     r32panel
	ADDQ    R8, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     r32line
	VZEROUPPER

r32done:
	RET

// func packRows8F32(dst, src *float32, ss, cn, np, ds int)
TEXT ·packRows8F32(SB), NOSPLIT, $0-48
	ROWS_ARGS(r8done)

r8line:
	MOVQ SI, R12
	MOVQ DI, R13
	MOVQ R9, R11

r8panel:
	VMOVUPS (R12), Y0
	VMOVUPS Y0, (R13)
	ADDQ    $32, R12
	ADDQ    R10, R13
	DECQ    R11
	JNZ     r8panel
	ADDQ    R8, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     r8line
	VZEROUPPER

r8done:
	RET
