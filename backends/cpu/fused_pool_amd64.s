//go:build !purego

#include "textflag.h"

// Hand-written AVX2 2×2 max pooling (fused_pool.go); see
// fused_pool_amd64.go for the contract. Each block of 8 outputs loads 16
// floats of each input row, splits them into the windows' four corners
// (VSHUFPS leaves the outputs in the order 0 1 4 5 2 3 6 7 and VPERMPD
// restores it), and keeps the corner with the greater integer key (the
// order < gives floats, ±0 equal, every NaN above +Inf and equal to each
// other), the earlier corner on a tie.

// KEY sets dst to the key of the floats in src, clobbering t1 and t2:
// |x| for x ≥ 0, −|x| for x < 0, 0x7f800001 for NaN.
#define KEY(src, dst, t1, t2) \
	VPAND    Y15, src, dst \
	VPCMPGTD Y14, dst, t2  \
	VPSRAD   $31, src, t1  \
	VPXOR    t1, dst, dst  \
	VPSUBD   t1, dst, dst  \
	VBLENDVPS t2, Y13, dst, dst

// KEYCONSTS sets the constants KEY reads (Y13-Y15), clobbering r.
#define KEYCONSTS(r) \
	MOVL $0x7fffffff, r \
	VMOVQ r, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL $0x7f800000, r \
	VMOVQ r, X14 \
	VPBROADCASTD X14, Y14 \
	MOVL $0x7f800001, r \
	VMOVQ r, X13 \
	VPBROADCASTD X13, Y13

// PICK replaces (Y0, Y4, Y5) = (value, key, corner) by (u, key(u), at)
// where key(u) is greater, clobbering Y6-Y8.
#define PICK(u, at) \
	KEY(u, Y6, Y7, Y8) \
	VPCMPGTD  Y4, Y6, Y7 \
	VBLENDVPS Y7, u, Y0, Y0 \
	VBLENDVPS Y7, Y6, Y4, Y4 \
	VBLENDVPS Y7, at, Y5, Y5

// func maxPool2x2BlocksAVX2(dst *float32, di *int64, r0, r1 *float32, blocks, w int, pos *[4]int64)
TEXT ·maxPool2x2BlocksAVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ di+8(FP), SI
	MOVQ r0+16(FP), R8
	MOVQ r1+24(FP), R9
	MOVQ blocks+32(FP), CX
	MOVQ w+40(FP), R11
	MOVQ pos+48(FP), AX
	VMOVDQU (AX), Y9
	KEYCONSTS(AX)
	MOVL $1, AX
	VMOVQ AX, X12
	VPBROADCASTD X12, Y12
	VMOVQ R11, X11
	VPBROADCASTD X11, Y11
	MOVQ $8, AX
	VMOVQ AX, X10
	VPBROADCASTQ X10, Y10
	TESTQ CX, CX
	JZ    done

loop:
	VMOVUPS  (R8), Y4
	VMOVUPS  32(R8), Y5
	VSHUFPS  $0x88, Y5, Y4, Y0
	VSHUFPS  $0xdd, Y5, Y4, Y1
	VMOVUPS  (R9), Y4
	VMOVUPS  32(R9), Y5
	VSHUFPS  $0x88, Y5, Y4, Y2
	VSHUFPS  $0xdd, Y5, Y4, Y3
	KEY(Y0, Y4, Y6, Y7)
	VPXOR    Y5, Y5, Y5
	PICK(Y1, Y12)
	PICK(Y2, Y11)
	VPADDD   Y12, Y11, Y1
	PICK(Y3, Y1)
	VPERMPD  $0xd8, Y0, Y0
	VPERMPD  $0xd8, Y5, Y5
	VMOVUPS  Y0, (DI)
	VPMOVSXDQ X5, Y6
	VEXTRACTI128 $1, Y5, X7
	VPMOVSXDQ X7, Y7
	VPADDQ   Y9, Y6, Y6
	VPADDQ   Y10, Y9, Y9
	VPADDQ   Y9, Y7, Y7
	VPADDQ   Y10, Y9, Y9
	VMOVDQU  Y6, (SI)
	VMOVDQU  Y7, 32(SI)
	ADDQ     $64, R8
	ADDQ     $64, R9
	ADDQ     $32, DI
	ADDQ     $64, SI
	DECQ     CX
	JNZ      loop

done:
	VZEROUPPER
	RET

// The 3×3, stride-2 kernel: each block of 8 outputs loads 17 floats of each
// of the three input rows; VSHUFPS splits the first 16 into even columns
// (the windows' left taps) and odd ones (middle taps), in the lane order
// 0 1 4 5 2 3 6 7, and the right taps are the even columns moved one
// output along (VPERMPS by pool3x3perm) with the 17th float put in the last
// lane. The nine taps are picked in scan order; the positions, relative to
// the block's first window, come from the caller's table in the same lane
// order, and VPERMPD restores the order before the stores.

DATA pool3x3perm<>+0(SB)/4, $1
DATA pool3x3perm<>+4(SB)/4, $4
DATA pool3x3perm<>+8(SB)/4, $3
DATA pool3x3perm<>+12(SB)/4, $6
DATA pool3x3perm<>+16(SB)/4, $5
DATA pool3x3perm<>+20(SB)/4, $2
DATA pool3x3perm<>+24(SB)/4, $7
DATA pool3x3perm<>+28(SB)/4, $0
GLOBL pool3x3perm<>(SB), RODATA|NOPTR, $32

DATA pool3x3step<>+0(SB)/8, $16
DATA pool3x3step<>+8(SB)/8, $16
DATA pool3x3step<>+16(SB)/8, $16
DATA pool3x3step<>+24(SB)/8, $16
GLOBL pool3x3step<>(SB), RODATA|NOPTR, $32

// ROW3 loads the three taps of a row at r into Y3 (left), Y9 (middle)
// and Y10 (right), clobbering Y1 and Y2.
#define ROW3(r) \
	VMOVUPS      (r), Y1        \
	VMOVUPS      32(r), Y2      \
	VSHUFPS      $0x88, Y2, Y1, Y3 \
	VSHUFPS      $0xdd, Y2, Y1, Y9 \
	VBROADCASTSS 64(r), Y2      \
	VPERMPS      Y3, Y12, Y10   \
	VBLENDPS     $0x80, Y2, Y10, Y10

// func maxPool3x3s2BlocksAVX2(dst *float32, di *int64, r0, r1, r2 *float32, blocks int, at *[9][8]int32, base int64)
TEXT ·maxPool3x3s2BlocksAVX2(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ di+8(FP), SI
	MOVQ r0+16(FP), R8
	MOVQ r1+24(FP), R9
	MOVQ r2+32(FP), R10
	MOVQ blocks+40(FP), CX
	MOVQ at+48(FP), AX
	VPBROADCASTQ base+56(FP), Y11
	KEYCONSTS(DX)
	VMOVDQU pool3x3perm<>(SB), Y12
	TESTQ CX, CX
	JZ    done3

loop3:
	ROW3(R8)
	VMOVAPS  Y3, Y0
	KEY(Y3, Y4, Y6, Y7)
	VMOVDQU  (AX), Y5
	PICK(Y9, 32(AX))
	PICK(Y10, 64(AX))
	ROW3(R9)
	PICK(Y3, 96(AX))
	PICK(Y9, 128(AX))
	PICK(Y10, 160(AX))
	ROW3(R10)
	PICK(Y3, 192(AX))
	PICK(Y9, 224(AX))
	PICK(Y10, 256(AX))
	VPERMPD  $0xd8, Y0, Y0
	VPERMPD  $0xd8, Y5, Y5
	VMOVUPS  Y0, (DI)
	VPMOVSXDQ X5, Y6
	VEXTRACTI128 $1, Y5, X7
	VPMOVSXDQ X7, Y7
	VPADDQ   Y11, Y6, Y6
	VPADDQ   Y11, Y7, Y7
	VMOVDQU  Y6, (SI)
	VMOVDQU  Y7, 32(SI)
	VPADDQ   pool3x3step<>(SB), Y11, Y11
	ADDQ     $64, R8
	ADDQ     $64, R9
	ADDQ     $64, R10
	ADDQ     $32, DI
	ADDQ     $64, SI
	DECQ     CX
	JNZ      loop3

done3:
	VZEROUPPER
	RET
