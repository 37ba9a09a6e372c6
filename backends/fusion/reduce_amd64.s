//go:build !purego

#include "textflag.h"

// func sumLanesAVX(lanes *[16]float64, x *float32, n int)
// Requires: AVX. Lane k (vector k/4, element k%4) accumulates x[16i+k]
// converted to float64, the accumulator as the first source of each add,
// as the CPU backend's sumF32F64 does.
TEXT ·sumLanesAVX(SB), NOSPLIT, $0-24
	MOVQ    lanes+0(FP), AX
	MOVQ    x+8(FP), CX
	MOVQ    n+16(FP), DX
	VMOVUPD (AX), Y0
	VMOVUPD 32(AX), Y1
	VMOVUPD 64(AX), Y2
	VMOVUPD 96(AX), Y3

loop:
	TESTQ     DX, DX
	JZ        done
	VCVTPS2PD (CX), Y4
	VADDPD    Y4, Y0, Y0
	VCVTPS2PD 16(CX), Y5
	VADDPD    Y5, Y1, Y1
	VCVTPS2PD 32(CX), Y6
	VADDPD    Y6, Y2, Y2
	VCVTPS2PD 48(CX), Y7
	VADDPD    Y7, Y3, Y3
	ADDQ      $64, CX
	SUBQ      $16, DX
	JMP       loop

done:
	VMOVUPD Y0, (AX)
	VMOVUPD Y1, 32(AX)
	VMOVUPD Y2, 64(AX)
	VMOVUPD Y3, 96(AX)
	VZEROUPPER
	RET
