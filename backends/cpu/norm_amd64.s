//go:build !purego

#include "textflag.h"

// Hand-written AVX-512 row kernels of the fused normalisation (norm.go);
// see norm_amd64.go for their contracts. Rows are walked 16 floats at a
// time, the last partial vector under a mask (masked loads read zeros).

// HSUM sets the low float of X(reg) to the sum of the 16 floats of Z(reg),
// clobbering Z(tmp).
#define HSUM(reg, ymm, xmm, tmpy, tmpx) \
	VEXTRACTF64X4 $1, reg, tmpy \
	VADDPS        tmpy, ymm, ymm \
	VEXTRACTF128  $1, ymm, tmpx \
	VADDPS        tmpx, xmm, xmm \
	VHADDPS       xmm, xmm, xmm \
	VHADDPS       xmm, xmm, xmm

// TAILMASK sets K1 to the low CX bits (CX < 16), clobbering AX.
#define TAILMASK \
	MOVL  $1, AX \
	SHLL  CX, AX \
	DECL  AX \
	KMOVW AX, K1

// func lnRowF32AVX512(y, x, w, b *float32, n int, invN, eps float32, rms bool, stats *[2]float32)
TEXT ·lnRowF32AVX512(SB), NOSPLIT, $0-64
	MOVQ x+8(FP), SI
	MOVQ n+32(FP), DX
	VBROADCASTSS invN+40(FP), Z10
	VXORPS Z8, Z8, Z8
	MOVBLZX rms+48(FP), AX
	TESTL AX, AX
	JNZ   variance

	// pass 1: the mean
	VXORPS Z0, Z0, Z0
	MOVQ   SI, R8
	MOVQ   DX, CX

meanloop:
	CMPQ CX, $16
	JL   meantail
	VADDPS (R8), Z0, Z0
	ADDQ   $64, R8
	SUBQ   $16, CX
	JMP    meanloop

meantail:
	TESTQ CX, CX
	JZ    meandone
	TAILMASK
	VMOVUPS.Z (R8), K1, Z1
	VADDPS    Z1, Z0, Z0

meandone:
	HSUM(Z0, Y0, X0, Y1, X1)
	VMULSS       X10, X0, X0
	VBROADCASTSS X0, Z8

variance:
	// pass 2: Σ (x − mean)² (Σ x² for RMS, mean 0)
	VXORPS Z2, Z2, Z2
	MOVQ   SI, R8
	MOVQ   DX, CX

varloop:
	CMPQ CX, $16
	JL   vartail
	VMOVUPS     (R8), Z1
	VSUBPS      Z8, Z1, Z1
	VFMADD231PS Z1, Z1, Z2
	ADDQ        $64, R8
	SUBQ        $16, CX
	JMP         varloop

vartail:
	TESTQ CX, CX
	JZ    vardone
	TAILMASK
	VMOVUPS.Z   (R8), K1, Z1
	VSUBPS      Z8, Z1, Z1
	VFMADD231PS Z1, Z1, K1, Z2

vardone:
	HSUM(Z2, Y2, X2, Y1, X1)
	VMULSS  X10, X2, X2
	VADDSS  eps+44(FP), X2, X2
	VSQRTSS X2, X2, X2
	MOVL    $0x3f800000, AX
	VMOVD   AX, X3
	VDIVSS  X2, X3, X3
	VBROADCASTSS X3, Z9
	MOVQ    stats+56(FP), AX
	VMOVSS  X8, (AX)
	VMOVSS  X3, 4(AX)

	// pass 3: y = (x − mean)·rstd·w + b
	MOVQ y+0(FP), DI
	MOVQ w+16(FP), R9
	MOVQ b+24(FP), R10
	MOVQ SI, R8
	MOVQ DX, CX

outloop:
	CMPQ CX, $16
	JL   outtail
	VMOVUPS (R8), Z1
	VSUBPS  Z8, Z1, Z1
	VMULPS  Z9, Z1, Z1
	VMULPS  (R9), Z1, Z1
	VADDPS  (R10), Z1, Z1
	VMOVUPS Z1, (DI)
	ADDQ    $64, R8
	ADDQ    $64, R9
	ADDQ    $64, R10
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     outloop

outtail:
	TESTQ CX, CX
	JZ    outdone
	TAILMASK
	VMOVUPS.Z (R8), K1, Z1
	VMOVUPS.Z (R9), K1, Z3
	VMOVUPS.Z (R10), K1, Z4
	VSUBPS    Z8, Z1, Z1
	VMULPS    Z9, Z1, Z1
	VMULPS    Z3, Z1, Z1
	VADDPS    Z4, Z1, Z1
	VMOVUPS   Z1, K1, (DI)

outdone:
	VZEROUPPER
	RET

// func lnGradRowF32AVX512(dx, xh, dy, x, w, pw, pb *float32, n int, mean, rstd, invN float32, rms bool)
TEXT ·lnGradRowF32AVX512(SB), NOSPLIT, $0-77
	MOVQ xh+8(FP), DI
	MOVQ dy+16(FP), SI
	MOVQ x+24(FP), R8
	MOVQ w+32(FP), R9
	MOVQ pw+40(FP), R10
	MOVQ pb+48(FP), R11
	MOVQ n+56(FP), DX
	VBROADCASTSS mean+64(FP), Z8
	VBROADCASTSS rstd+68(FP), Z9
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	MOVQ DX, CX

	// pass 1: x̂, Σ ĝ, Σ ĝ·x̂ (ĝ = dy·w), and the partials pw += dy·x̂, pb += dy
g1loop:
	CMPQ CX, $16
	JL   g1tail
	VMOVUPS     (R8), Z0
	VSUBPS      Z8, Z0, Z0
	VMULPS      Z9, Z0, Z0
	VMOVUPS     Z0, (DI)
	VMOVUPS     (SI), Z1
	VMULPS      (R9), Z1, Z2
	VADDPS      Z2, Z4, Z4
	VFMADD231PS Z2, Z0, Z5
	VMOVUPS     (R10), Z3
	VFMADD231PS Z1, Z0, Z3
	VMOVUPS     Z3, (R10)
	VADDPS      (R11), Z1, Z3
	VMOVUPS     Z3, (R11)
	ADDQ        $64, R8
	ADDQ        $64, DI
	ADDQ        $64, SI
	ADDQ        $64, R9
	ADDQ        $64, R10
	ADDQ        $64, R11
	SUBQ        $16, CX
	JMP         g1loop

g1tail:
	TESTQ CX, CX
	JZ    g1done
	TAILMASK
	VMOVUPS.Z   (R8), K1, Z0
	VSUBPS      Z8, Z0, Z0
	VMULPS      Z9, Z0, Z0
	VMOVUPS     Z0, K1, (DI)
	VMOVUPS.Z   (SI), K1, Z1
	VMOVUPS.Z   (R9), K1, Z6
	VMULPS      Z6, Z1, Z2
	VADDPS      Z2, Z4, Z4
	VFMADD231PS Z2, Z0, Z5
	VMOVUPS.Z   (R10), K1, Z3
	VFMADD231PS Z1, Z0, Z3
	VMOVUPS     Z3, K1, (R10)
	VMOVUPS.Z   (R11), K1, Z3
	VADDPS      Z1, Z3, Z3
	VMOVUPS     Z3, K1, (R11)

g1done:
	VBROADCASTSS invN+72(FP), X10
	HSUM(Z4, Y4, X4, Y1, X1)
	HSUM(Z5, Y5, X5, Y1, X1)
	VMULSS X10, X4, X4
	VMULSS X10, X5, X5
	MOVBLZX rms+76(FP), AX
	TESTL AX, AX
	JZ    g2start
	VXORPS X4, X4, X4

g2start:
	VBROADCASTSS X4, Z4
	VBROADCASTSS X5, Z5

	// pass 2: dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂))
	MOVQ dx+0(FP), R12
	MOVQ xh+8(FP), DI
	MOVQ dy+16(FP), SI
	MOVQ w+32(FP), R9
	MOVQ DX, CX

g2loop:
	CMPQ CX, $16
	JL   g2tail
	VMOVUPS      (SI), Z1
	VMULPS       (R9), Z1, Z1
	VSUBPS       Z4, Z1, Z1
	VFNMADD231PS (DI), Z5, Z1
	VMULPS       Z9, Z1, Z1
	VMOVUPS      Z1, (R12)
	ADDQ         $64, SI
	ADDQ         $64, R9
	ADDQ         $64, DI
	ADDQ         $64, R12
	SUBQ         $16, CX
	JMP          g2loop

g2tail:
	TESTQ CX, CX
	JZ    g2done
	TAILMASK
	VMOVUPS.Z    (SI), K1, Z1
	VMOVUPS.Z    (R9), K1, Z6
	VMOVUPS.Z    (DI), K1, Z0
	VMULPS       Z6, Z1, Z1
	VSUBPS       Z4, Z1, Z1
	VFNMADD231PS Z0, Z5, Z1
	VMULPS       Z9, Z1, Z1
	VMOVUPS      Z1, K1, (R12)

g2done:
	VZEROUPPER
	RET
