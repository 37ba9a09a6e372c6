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
