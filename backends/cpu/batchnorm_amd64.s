//go:build !purego

#include "textflag.h"

// Hand-written AVX2 batch-normalisation loops (batchnorm.go); see
// batchnorm_amd64.go for the contracts. The sums keep the Go loops' four
// float64 accumulators as the four lanes of one register, and compute
// without fused multiply-adds, as the Go loops do, so that their results
// are the same bits; the element-wise ones likewise multiply and add
// separately.

// func bnSumsF32AVX2(x *float32, n int, x0 float64, acc *[8]float64)
TEXT ·bnSumsF32AVX2(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD x0+16(FP), Y2
	MOVQ         acc+24(FP), DI
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	SHRQ         $2, CX
	JZ           sumsDone

sumsLoop:
	VCVTPS2PD (SI), Y3
	VSUBPD    Y2, Y3, Y3
	VADDPD    Y3, Y0, Y0
	VMULPD    Y3, Y3, Y3
	VADDPD    Y3, Y1, Y1
	ADDQ      $16, SI
	DECQ      CX
	JNZ       sumsLoop

sumsDone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func bnGradSumsF32AVX2(dy, x *float32, n int, mean float64, acc *[8]float64)
TEXT ·bnGradSumsF32AVX2(SB), NOSPLIT, $0-40
	MOVQ         dy+0(FP), SI
	MOVQ         x+8(FP), DX
	MOVQ         n+16(FP), CX
	VBROADCASTSD mean+24(FP), Y2
	MOVQ         acc+32(FP), DI
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	SHRQ         $2, CX
	JZ           gradDone

gradLoop:
	VCVTPS2PD (SI), Y3
	VCVTPS2PD (DX), Y4
	VADDPD    Y3, Y0, Y0
	VSUBPD    Y2, Y4, Y4
	VMULPD    Y4, Y3, Y3
	VADDPD    Y3, Y1, Y1
	ADDQ      $16, SI
	ADDQ      $16, DX
	DECQ      CX
	JNZ       gradLoop

gradDone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func bnAffineF32AVX2(y, x *float32, n int, m, a, b float32)
TEXT ·bnAffineF32AVX2(SB), NOSPLIT, $0-36
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS m+24(FP), Y0
	VBROADCASTSS a+28(FP), Y1
	VBROADCASTSS b+32(FP), Y2
	SHRQ         $3, CX
	JZ           affineDone

affineLoop:
	VMOVUPS (SI), Y3
	VSUBPS  Y0, Y3, Y3
	VMULPS  Y1, Y3, Y3
	VADDPS  Y2, Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     affineLoop

affineDone:
	VZEROUPPER
	RET

// func bnInputGradF32AVX2(dx, dy, x *float32, n int, m, a, b, c float32)
TEXT ·bnInputGradF32AVX2(SB), NOSPLIT, $0-48
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS m+32(FP), Y0
	VBROADCASTSS a+36(FP), Y1
	VBROADCASTSS b+40(FP), Y2
	VBROADCASTSS c+44(FP), Y5
	SHRQ         $3, CX
	JZ           inputDone

inputLoop:
	VMULPS  (SI), Y1, Y3
	VMOVUPS (DX), Y4
	VSUBPS  Y0, Y4, Y4
	VMULPS  Y2, Y4, Y4
	VADDPS  Y4, Y3, Y3
	VADDPS  Y5, Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     inputLoop

inputDone:
	VZEROUPPER
	RET

// The channel kernels run the loops above over a channel's segs segments
// of s values (s a multiple of 4), stride floats apart, and add up the
// segments' sums as bnForward and bnBackward do: each segment's four
// lanes as (l0 + l1) + (l2 + l3), then into the channel's total in order.
// They save a call per segment where segments are short (4 to 60 values).

// REDUCE4 adds (l0 + l1) + (l2 + l3) of Y register a into X register tot,
// clobbering X4 and a.
#define REDUCE4(a, xa, tot) \
	VEXTRACTF128 $1, a, X4 \
	VHADDPD      xa, xa, xa \
	VHADDPD      X4, X4, X4 \
	VADDSD       X4, xa, xa \
	VADDSD       xa, tot, tot

// func bnChannelSumsF32AVX2(x *float32, segs, s, stride int, x0 float64, tot *[2]float64)
TEXT ·bnChannelSumsF32AVX2(SB), NOSPLIT, $0-48
	MOVQ         x+0(FP), SI
	MOVQ         segs+8(FP), BX
	MOVQ         s+16(FP), R10
	MOVQ         stride+24(FP), R11
	VBROADCASTSD x0+32(FP), Y2
	MOVQ         tot+40(FP), DI
	SHLQ         $2, R11
	SHRQ         $2, R10
	VXORPD       X8, X8, X8
	VXORPD       X9, X9, X9
	TESTQ        BX, BX
	JZ           chDone

chSeg:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	MOVQ   SI, AX
	MOVQ   R10, CX

chLoop:
	VCVTPS2PD (AX), Y3
	VSUBPD    Y2, Y3, Y3
	VADDPD    Y3, Y0, Y0
	VMULPD    Y3, Y3, Y3
	VADDPD    Y3, Y1, Y1
	ADDQ      $16, AX
	DECQ      CX
	JNZ       chLoop
	REDUCE4(Y0, X0, X8)
	REDUCE4(Y1, X1, X9)
	ADDQ      R11, SI
	DECQ      BX
	JNZ       chSeg

chDone:
	VMOVSD X8, (DI)
	VMOVSD X9, 8(DI)
	VZEROUPPER
	RET

// func bnChannelGradSumsF32AVX2(dy, x *float32, segs, s, stride int, mean float64, tot *[2]float64)
TEXT ·bnChannelGradSumsF32AVX2(SB), NOSPLIT, $0-56
	MOVQ         dy+0(FP), SI
	MOVQ         x+8(FP), DX
	MOVQ         segs+16(FP), BX
	MOVQ         s+24(FP), R10
	MOVQ         stride+32(FP), R11
	VBROADCASTSD mean+40(FP), Y2
	MOVQ         tot+48(FP), DI
	SHLQ         $2, R11
	SHRQ         $2, R10
	VXORPD       X8, X8, X8
	VXORPD       X9, X9, X9
	TESTQ        BX, BX
	JZ           cgDone

cgSeg:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	MOVQ   SI, AX
	MOVQ   DX, R12
	MOVQ   R10, CX

cgLoop:
	VCVTPS2PD (AX), Y3
	VCVTPS2PD (R12), Y5
	VADDPD    Y3, Y0, Y0
	VSUBPD    Y2, Y5, Y5
	VMULPD    Y5, Y3, Y3
	VADDPD    Y3, Y1, Y1
	ADDQ      $16, AX
	ADDQ      $16, R12
	DECQ      CX
	JNZ       cgLoop
	REDUCE4(Y0, X0, X8)
	REDUCE4(Y1, X1, X9)
	ADDQ      R11, SI
	ADDQ      R11, DX
	DECQ      BX
	JNZ       cgSeg

cgDone:
	VMOVSD X8, (DI)
	VMOVSD X9, 8(DI)
	VZEROUPPER
	RET

// func bnChannelAffineF32AVX2(y, x *float32, segs, s, stride int, m, a, b float32)
TEXT ·bnChannelAffineF32AVX2(SB), NOSPLIT, $0-52
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         segs+16(FP), BX
	MOVQ         s+24(FP), R10
	MOVQ         stride+32(FP), R11
	VBROADCASTSS m+40(FP), X0
	VBROADCASTSS a+44(FP), X1
	VBROADCASTSS b+48(FP), X2
	SHLQ         $2, R11
	SHRQ         $2, R10
	TESTQ        BX, BX
	JZ           caDone

caSeg:
	MOVQ SI, AX
	MOVQ DI, R12
	MOVQ R10, CX

caLoop:
	VMOVUPS (AX), X3
	VSUBPS  X0, X3, X3
	VMULPS  X1, X3, X3
	VADDPS  X2, X3, X3
	VMOVUPS X3, (R12)
	ADDQ    $16, AX
	ADDQ    $16, R12
	DECQ    CX
	JNZ     caLoop
	ADDQ    R11, SI
	ADDQ    R11, DI
	DECQ    BX
	JNZ     caSeg

caDone:
	RET

// func bnChannelInputGradF32AVX2(dx, dy, x *float32, segs, s, stride int, m, a, b, c float32)
TEXT ·bnChannelInputGradF32AVX2(SB), NOSPLIT, $0-64
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         segs+24(FP), BX
	MOVQ         s+32(FP), R10
	MOVQ         stride+40(FP), R11
	VBROADCASTSS m+48(FP), X0
	VBROADCASTSS a+52(FP), X1
	VBROADCASTSS b+56(FP), X2
	VBROADCASTSS c+60(FP), X5
	SHLQ         $2, R11
	SHRQ         $2, R10
	TESTQ        BX, BX
	JZ           ciDone

ciSeg:
	MOVQ SI, AX
	MOVQ DX, R12
	MOVQ DI, R13
	MOVQ R10, CX

ciLoop:
	VMULPS  (AX), X1, X3
	VMOVUPS (R12), X4
	VSUBPS  X0, X4, X4
	VMULPS  X2, X4, X4
	VADDPS  X4, X3, X3
	VADDPS  X5, X3, X3
	VMOVUPS X3, (R13)
	ADDQ    $16, AX
	ADDQ    $16, R12
	ADDQ    $16, R13
	DECQ    CX
	JNZ     ciLoop
	ADDQ    R11, SI
	ADDQ    R11, DX
	ADDQ    R11, DI
	DECQ    BX
	JNZ     ciSeg

ciDone:
	RET
