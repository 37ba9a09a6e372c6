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
	MOVL $0x7fffffff, AX
	VMOVQ AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x7f800000, AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x7f800001, AX
	VMOVQ AX, X13
	VPBROADCASTD X13, Y13
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
