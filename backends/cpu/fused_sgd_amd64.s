//go:build !purego

#include "textflag.h"

// Hand-written AVX2 SGD with momentum (fused_sgd.go's sgdMomentum for
// float32; contract in fused_sgd_amd64.go), four elements an iteration:
// each product with a float64 scalar is computed in float64 and rounded
// to float32 (VCVTPS2PD, VMULPD, VCVTPD2PS), each sum or difference of
// two float32 is rounded once, as the Go loop does, so the results are
// the same bits.

// func sgdMomentumF32AVX2(outP, outBuf, p, grad, buf *float32, n int, lr, mom, wd float64)
TEXT ·sgdMomentumF32AVX2(SB), NOSPLIT, $0-72
	MOVQ         outP+0(FP), DI
	MOVQ         outBuf+8(FP), R8
	MOVQ         p+16(FP), SI
	MOVQ         grad+24(FP), DX
	MOVQ         buf+32(FP), R9
	MOVQ         n+40(FP), CX
	VBROADCASTSD lr+48(FP), Y13
	VBROADCASTSD mom+56(FP), Y14
	VBROADCASTSD wd+64(FP), Y15
	SHRQ         $2, CX
	JZ           done
	XORQ         BX, BX          // BX: 1 with weight decay
	VXORPD       X0, X0, X0
	VUCOMISD     wd+64(FP), X0
	SETNE        BL
	SETPS        AL
	ORB          AL, BL

loop:
	VCVTPS2PD  (R9), Y1
	VMULPD     Y14, Y1, Y1
	VCVTPD2PSY Y1, X1         // T(buf·mom)
	TESTQ      BX, BX
	JNZ        decay
	VADDPS     (DX), X1, X1   // bi = T(buf·mom) + g
	JMP        update

decay:
	VCVTPS2PD  (SI), Y4
	VMULPD     Y15, Y4, Y4
	VCVTPD2PSY Y4, X4
	VADDPS     (DX), X4, X4   // g + T(p·wd)
	VADDPS     X4, X1, X1     // bi = T(buf·mom) + (g + T(p·wd))

update:
	VMOVUPS    X1, (R8)
	VCVTPS2PD  X1, Y2
	VMULPD     Y13, Y2, Y2
	VCVTPD2PSY Y2, X2
	VMOVUPS    (SI), X3
	VSUBPS     X2, X3, X3     // p − T(bi·lr)
	VMOVUPS    X3, (DI)
	ADDQ       $16, SI
	ADDQ       $16, DX
	ADDQ       $16, R9
	ADDQ       $16, DI
	ADDQ       $16, R8
	DECQ       CX
	JNZ        loop

done:
	VZEROUPPER
	RET
