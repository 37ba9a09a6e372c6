//go:build !purego

#include "textflag.h"

// AVX2 helpers of the bfloat16 GEMM for CPUs without VDPBF16PS
// (gemm_bf16_avx2_amd64.go): widening pair panels to float32 panels, and
// rounding float32 panels to bfloat16 precision, for the float32
// micro-kernel to multiply.

// bf16HiMask is 0xffff0000 eight times.
DATA bf16HiMask<>+0x00(SB)/8, $0xffff0000ffff0000
DATA bf16HiMask<>+0x08(SB)/8, $0xffff0000ffff0000
DATA bf16HiMask<>+0x10(SB)/8, $0xffff0000ffff0000
DATA bf16HiMask<>+0x18(SB)/8, $0xffff0000ffff0000
GLOBL bf16HiMask<>(SB), RODATA|NOPTR, $32

// bf16Tail is eight all-ones then eight zero dwords: the 8 dwords from
// bf16Tail+4·(8−r) have their first r lanes set.
DATA bf16Tail<>+0x00(SB)/8, $0xffffffffffffffff
DATA bf16Tail<>+0x08(SB)/8, $0xffffffffffffffff
DATA bf16Tail<>+0x10(SB)/8, $0xffffffffffffffff
DATA bf16Tail<>+0x18(SB)/8, $0xffffffffffffffff
DATA bf16Tail<>+0x20(SB)/8, $0
DATA bf16Tail<>+0x28(SB)/8, $0
DATA bf16Tail<>+0x30(SB)/8, $0
DATA bf16Tail<>+0x38(SB)/8, $0
GLOBL bf16Tail<>(SB), RODATA|NOPTR, $64

// bf16Round holds, 8 times each: 0x7fff (half an ulp of bfloat16 less
// one), 1, 0x7f800000 (the largest non-NaN magnitude) and 0x00400000 (the
// quiet bit of a float32 NaN).
DATA bf16Round<>+0x00(SB)/8, $0x00007fff00007fff
DATA bf16Round<>+0x08(SB)/8, $0x00007fff00007fff
DATA bf16Round<>+0x10(SB)/8, $0x00007fff00007fff
DATA bf16Round<>+0x18(SB)/8, $0x00007fff00007fff
DATA bf16Round<>+0x20(SB)/8, $0x0000000100000001
DATA bf16Round<>+0x28(SB)/8, $0x0000000100000001
DATA bf16Round<>+0x30(SB)/8, $0x0000000100000001
DATA bf16Round<>+0x38(SB)/8, $0x0000000100000001
DATA bf16Round<>+0x40(SB)/8, $0x7f8000007f800000
DATA bf16Round<>+0x48(SB)/8, $0x7f8000007f800000
DATA bf16Round<>+0x50(SB)/8, $0x7f8000007f800000
DATA bf16Round<>+0x58(SB)/8, $0x7f8000007f800000
DATA bf16Round<>+0x60(SB)/8, $0x0040000000400000
DATA bf16Round<>+0x68(SB)/8, $0x0040000000400000
DATA bf16Round<>+0x70(SB)/8, $0x0040000000400000
DATA bf16Round<>+0x78(SB)/8, $0x0040000000400000
DATA bf16Round<>+0x80(SB)/8, $0x7fffffff7fffffff
DATA bf16Round<>+0x88(SB)/8, $0x7fffffff7fffffff
DATA bf16Round<>+0x90(SB)/8, $0x7fffffff7fffffff
DATA bf16Round<>+0x98(SB)/8, $0x7fffffff7fffffff
GLOBL bf16Round<>(SB), RODATA|NOPTR, $160

// BF16RND rounds the 8 float32 in x to bfloat16 precision (the low 16
// bits zero), to nearest even, a NaN made quiet: (x + 0x7fff + bit 16 of
// x) with the low half cleared, or for a NaN (x | quiet bit) so cleared.
// Uses t1, t2; the constants in Y10–Y15 (see roundSwapPairsAVX2).
#define BF16RND(x, t1, t2) \
	VPSRLD    $16, x, t1 \
	VPAND     Y11, t1, t1 \
	VPADDD    Y10, t1, t1 \
	VPADDD    x, t1, t1 \
	VPAND     Y14, x, t2 \
	VPCMPGTD  Y12, t2, t2 \
	VPOR      Y13, x, x \
	VBLENDVPS t2, x, t1, x \
	VPAND     Y15, x, x

// func expandPairsAVX2(dst *float32, src *uint32, w, rows int)
//
// For each of rows rows of w pair words: the high halves (odd k) as w
// float32, then the low halves (even k) as w float32; 8 words at a time,
// the last 1–8 of a row under a lane mask.
TEXT ·expandPairsAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ w+16(FP), R8
	MOVQ rows+24(FP), R9
	VMOVDQU bf16HiMask<>(SB), Y15
	LEAQ bf16Tail<>(SB), R10
	LEAQ (R8*4), R11 // w in bytes
	TESTQ R9, R9
	JZ   xdone

xrow:
	MOVQ R8, CX // words left in the row
	XORQ AX, AX // byte offset within the row

xchunk:
	CMPQ CX, $8
	JLE  xlast
	VMOVDQU (SI)(AX*1), Y0
	VPAND   Y15, Y0, Y1
	VPSLLD  $16, Y0, Y2
	VMOVDQU Y1, (DI)(AX*1)
	LEAQ    (DI)(R11*1), DX
	VMOVDQU Y2, (DX)(AX*1)
	ADDQ    $32, AX
	SUBQ    $8, CX
	JMP     xchunk

xlast:
	MOVQ    $8, BX
	SUBQ    CX, BX
	VMOVDQU (R10)(BX*4), Y3
	VMASKMOVPS (SI)(AX*1), Y3, Y0
	VPAND   Y15, Y0, Y1
	VPSLLD  $16, Y0, Y2
	VMASKMOVPS Y1, Y3, (DI)(AX*1)
	LEAQ    (DI)(R11*1), DX
	VMASKMOVPS Y2, Y3, (DX)(AX*1)
	ADDQ    R11, SI
	LEAQ    (DI)(R11*2), DI
	DECQ    R9
	JNZ     xrow

xdone:
	VZEROUPPER
	RET

// func roundSwapPairsAVX2(v *float32, w, pairs int)
//
// For each of pairs pairs of rows of w float32 (the even row, then the
// odd one): both rounded to bfloat16 precision (BF16RND) and swapped; 8
// values at a time, the last 1–8 of a row under a lane mask.
TEXT ·roundSwapPairsAVX2(SB), NOSPLIT, $0-24
	MOVQ v+0(FP), DI
	MOVQ w+8(FP), R8
	MOVQ pairs+16(FP), R9
	VMOVDQU bf16Round<>+0x00(SB), Y10
	VMOVDQU bf16Round<>+0x20(SB), Y11
	VMOVDQU bf16Round<>+0x40(SB), Y12
	VMOVDQU bf16Round<>+0x60(SB), Y13
	VMOVDQU bf16Round<>+0x80(SB), Y14
	VMOVDQU bf16HiMask<>(SB), Y15
	LEAQ bf16Tail<>(SB), R10
	LEAQ (R8*4), R11 // w in bytes
	TESTQ R9, R9
	JZ   sdone

srow:
	MOVQ R8, CX
	XORQ AX, AX
	LEAQ (DI)(R11*1), DX // the odd row

schunk:
	CMPQ CX, $8
	JLE  slast
	VMOVDQU (DI)(AX*1), Y0
	VMOVDQU (DX)(AX*1), Y1
	BF16RND(Y0, Y2, Y3)
	BF16RND(Y1, Y4, Y5)
	VMOVDQU Y1, (DI)(AX*1)
	VMOVDQU Y0, (DX)(AX*1)
	ADDQ    $32, AX
	SUBQ    $8, CX
	JMP     schunk

slast:
	MOVQ    $8, BX
	SUBQ    CX, BX
	VMOVDQU (R10)(BX*4), Y9
	VMASKMOVPS (DI)(AX*1), Y9, Y0
	VMASKMOVPS (DX)(AX*1), Y9, Y1
	BF16RND(Y0, Y2, Y3)
	BF16RND(Y1, Y4, Y5)
	VMASKMOVPS Y1, Y9, (DI)(AX*1)
	VMASKMOVPS Y0, Y9, (DX)(AX*1)
	LEAQ    (DI)(R11*2), DI
	DECQ    R9
	JNZ     srow

sdone:
	VZEROUPPER
	RET
