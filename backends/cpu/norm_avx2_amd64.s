//go:build !purego

#include "textflag.h"

// Hand-written AVX2+FMA row kernels of the fused normalisation (norm.go),
// for CPUs without AVX-512; see norm_amd64.go for their contracts. They
// give the same bits as the AVX-512 kernels (norm_amd64.s): each of those
// kernels' 16-float steps is done here as two 8-float halves, with one
// accumulator per half (lo: lanes 0–7, hi: lanes 8–15), and the sums are
// reduced as HSUM reduces 16 lanes. A partial last half is loaded under a
// lane mask (masked loads read zeros) and stored under it, as the AVX-512
// kernels' masked tails are.

// normTailMask: 8 all-ones int32s then 8 zeros; the 8 int32s from
// normTailMask<>+4·(8−c) have their first c lanes set.
DATA normTailMask<>+0x00(SB)/8, $0xffffffffffffffff
DATA normTailMask<>+0x08(SB)/8, $0xffffffffffffffff
DATA normTailMask<>+0x10(SB)/8, $0xffffffffffffffff
DATA normTailMask<>+0x18(SB)/8, $0xffffffffffffffff
DATA normTailMask<>+0x20(SB)/8, $0
DATA normTailMask<>+0x28(SB)/8, $0
DATA normTailMask<>+0x30(SB)/8, $0
DATA normTailMask<>+0x38(SB)/8, $0
GLOBL normTailMask<>(SB), RODATA|NOPTR, $0x40

// NORM_MASK sets Y15 to the mask of the first CX lanes (0 < CX < 8),
// clobbering AX.
#define NORM_MASK \
	LEAQ    normTailMask<>+32(SB), AX \
	SHLQ    $2, CX \
	SUBQ    CX, AX \
	SHRQ    $2, CX \
	VMOVDQU (AX), Y15

// HSUM2 sets the low float of xlo to the sum of the 16 lanes held in ylo
// (lanes 0–7) and yhi (lanes 8–15), in the AVX-512 kernels' order,
// clobbering tmpx.
#define HSUM2(ylo, yhi, xlo, tmpx) \
	VADDPS       yhi, ylo, ylo \
	VEXTRACTF128 $1, ylo, tmpx \
	VADDPS       tmpx, xlo, xlo \
	VHADDPS      xlo, xlo, xlo \
	VHADDPS      xlo, xlo, xlo

// VAR8(d, acc) adds the squares of d − mean (mean in Y8) to acc.
#define VAR8(d, acc) \
	VSUBPS      Y8, d, d \
	VFMADD231PS d, d, acc

// OUT8(v, wmem, bmem) sets v = (v − mean)·rstd·w + b, w and b the 8
// floats of wmem and bmem (mean in Y8, rstd in Y9).
#define OUT8(v, wmem, bmem) \
	VSUBPS Y8, v, v \
	VMULPS Y9, v, v \
	VMULPS wmem, v, v \
	VADDPS bmem, v, v

// func lnRowF32AVX2(y, x, w, b *float32, n int, invN, eps float32, rms bool, stats *[2]float32)
TEXT ·lnRowF32AVX2(SB), NOSPLIT, $0-64
	MOVQ         x+8(FP), SI
	MOVQ         n+32(FP), DX
	VBROADCASTSS invN+40(FP), Y10
	VXORPS       Y8, Y8, Y8
	MOVBLZX      rms+48(FP), AX
	TESTL        AX, AX
	JNZ          variance

	// pass 1: the mean
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ   SI, R8
	MOVQ   DX, CX

meanloop:
	CMPQ   CX, $16
	JL     meantail
	VADDPS (R8), Y0, Y0
	VADDPS 32(R8), Y1, Y1
	ADDQ   $64, R8
	SUBQ   $16, CX
	JMP    meanloop

meantail:
	CMPQ       CX, $8
	JL         meanpart
	VADDPS     (R8), Y0, Y0
	ADDQ       $32, R8
	SUBQ       $8, CX
	TESTQ      CX, CX
	JZ         meandone
	NORM_MASK
	VMASKMOVPS (R8), Y15, Y2
	VADDPS     Y2, Y1, Y1
	JMP        meandone

meanpart:
	TESTQ      CX, CX
	JZ         meandone
	NORM_MASK
	VMASKMOVPS (R8), Y15, Y2
	VADDPS     Y2, Y0, Y0

meandone:
	HSUM2(Y0, Y1, X0, X1)
	VMULSS       X10, X0, X0
	VBROADCASTSS X0, Y8

variance:
	// pass 2: Σ (x − mean)² (Σ x² for RMS, mean 0); the lanes past the
	// row add 0² (the AVX-512 kernel leaves them out under its mask)
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   SI, R8
	MOVQ   DX, CX

varloop:
	CMPQ    CX, $16
	JL      vartail
	VMOVUPS (R8), Y0
	VMOVUPS 32(R8), Y1
	VAR8(Y0, Y2)
	VAR8(Y1, Y3)
	ADDQ    $64, R8
	SUBQ    $16, CX
	JMP     varloop

vartail:
	CMPQ       CX, $8
	JL         varpart
	VMOVUPS    (R8), Y0
	VAR8(Y0, Y2)
	ADDQ       $32, R8
	SUBQ       $8, CX
	TESTQ      CX, CX
	JZ         vardone
	NORM_MASK
	VMASKMOVPS (R8), Y15, Y1
	VSUBPS     Y8, Y1, Y1
	VANDPS     Y15, Y1, Y1
	VFMADD231PS Y1, Y1, Y3
	JMP        vardone

varpart:
	TESTQ       CX, CX
	JZ          vardone
	NORM_MASK
	VMASKMOVPS  (R8), Y15, Y1
	VSUBPS      Y8, Y1, Y1
	VANDPS      Y15, Y1, Y1
	VFMADD231PS Y1, Y1, Y2

vardone:
	HSUM2(Y2, Y3, X2, X1)
	VMULSS       X10, X2, X2
	VADDSS       eps+44(FP), X2, X2
	VSQRTSS      X2, X2, X2
	MOVL         $0x3f800000, AX
	VMOVD        AX, X3
	VDIVSS       X2, X3, X3
	VBROADCASTSS X3, Y9
	MOVQ         stats+56(FP), AX
	VMOVSS       X8, (AX)
	VMOVSS       X3, 4(AX)

	// pass 3: y = (x − mean)·rstd·w + b
	MOVQ y+0(FP), DI
	MOVQ w+16(FP), R9
	MOVQ b+24(FP), R10
	MOVQ SI, R8
	MOVQ DX, CX

outloop:
	CMPQ    CX, $16
	JL      outtail
	VMOVUPS (R8), Y0
	VMOVUPS 32(R8), Y1
	OUT8(Y0, (R9), (R10))
	OUT8(Y1, 32(R9), 32(R10))
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, R8
	ADDQ    $64, R9
	ADDQ    $64, R10
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     outloop

outtail:
	CMPQ    CX, $8
	JL      outpart
	VMOVUPS (R8), Y0
	OUT8(Y0, (R9), (R10))
	VMOVUPS Y0, (DI)
	ADDQ    $32, R8
	ADDQ    $32, R9
	ADDQ    $32, R10
	ADDQ    $32, DI
	SUBQ    $8, CX

outpart:
	TESTQ      CX, CX
	JZ         outdone
	NORM_MASK
	VMASKMOVPS (R8), Y15, Y0
	VMASKMOVPS (R9), Y15, Y3
	VMASKMOVPS (R10), Y15, Y4
	OUT8(Y0, Y3, Y4)
	VMASKMOVPS Y0, Y15, (DI)

outdone:
	VZEROUPPER
	RET

// G1(off, ag, agx) is the backward pass 1 for the 8 floats at off from
// R8 (x), DI (x̂), SI (dy), R9 (w), R10 (pw) and R11 (pb): x̂ stored, ĝ
// and ĝ·x̂ added to ag and agx, pw += dy·x̂, pb += dy. Clobbers Y0–Y3.
#define G1(off, ag, agx) \
	VMOVUPS     off(R8), Y0 \
	VSUBPS      Y8, Y0, Y0 \
	VMULPS      Y9, Y0, Y0 \
	VMOVUPS     Y0, off(DI) \
	VMOVUPS     off(SI), Y1 \
	VMULPS      off(R9), Y1, Y2 \
	VADDPS      Y2, ag, ag \
	VFMADD231PS Y2, Y0, agx \
	VMOVUPS     off(R10), Y3 \
	VFMADD231PS Y1, Y0, Y3 \
	VMOVUPS     Y3, off(R10) \
	VADDPS      off(R11), Y1, Y3 \
	VMOVUPS     Y3, off(R11)

// G1MASKED is G1 at offset 0 for the first CX floats (mask in Y15): the
// loads read zeros past them, and only they are stored.
#define G1MASKED(ag, agx) \
	VMASKMOVPS  (R8), Y15, Y0 \
	VSUBPS      Y8, Y0, Y0 \
	VMULPS      Y9, Y0, Y0 \
	VMASKMOVPS  Y0, Y15, (DI) \
	VMASKMOVPS  (SI), Y15, Y1 \
	VMASKMOVPS  (R9), Y15, Y11 \
	VMULPS      Y11, Y1, Y2 \
	VADDPS      Y2, ag, ag \
	VFMADD231PS Y2, Y0, agx \
	VMASKMOVPS  (R10), Y15, Y3 \
	VFMADD231PS Y1, Y0, Y3 \
	VMASKMOVPS  Y3, Y15, (R10) \
	VMASKMOVPS  (R11), Y15, Y3 \
	VADDPS      Y1, Y3, Y3 \
	VMASKMOVPS  Y3, Y15, (R11)

// G1ADVANCE moves the pass 1 pointers by bytes.
#define G1ADVANCE(bytes) \
	ADDQ bytes, R8 \
	ADDQ bytes, DI \
	ADDQ bytes, SI \
	ADDQ bytes, R9 \
	ADDQ bytes, R10 \
	ADDQ bytes, R11

// G2(off) writes dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) for the 8 floats
// at off from SI (dy), R9 (w), DI (x̂) and R12 (dx); mean(ĝ) in Y4,
// mean(ĝ·x̂) in Y5. Clobbers Y1.
#define G2(off) \
	VMOVUPS      off(SI), Y1 \
	VMULPS       off(R9), Y1, Y1 \
	VSUBPS       Y4, Y1, Y1 \
	VFNMADD231PS off(DI), Y5, Y1 \
	VMULPS       Y9, Y1, Y1 \
	VMOVUPS      Y1, off(R12)

// G2ADVANCE moves the pass 2 pointers by bytes.
#define G2ADVANCE(bytes) \
	ADDQ bytes, SI \
	ADDQ bytes, R9 \
	ADDQ bytes, DI \
	ADDQ bytes, R12

// func lnGradRowF32AVX2(dx, xh, dy, x, w, pw, pb *float32, n int, mean, rstd, invN float32, rms bool)
TEXT ·lnGradRowF32AVX2(SB), NOSPLIT, $0-77
	MOVQ         xh+8(FP), DI
	MOVQ         dy+16(FP), SI
	MOVQ         x+24(FP), R8
	MOVQ         w+32(FP), R9
	MOVQ         pw+40(FP), R10
	MOVQ         pb+48(FP), R11
	MOVQ         n+56(FP), DX
	VBROADCASTSS mean+64(FP), Y8
	VBROADCASTSS rstd+68(FP), Y9
	VXORPS       Y4, Y4, Y4
	VXORPS       Y5, Y5, Y5
	VXORPS       Y6, Y6, Y6
	VXORPS       Y7, Y7, Y7
	MOVQ         DX, CX

	// pass 1: x̂, Σ ĝ (Y4, Y6), Σ ĝ·x̂ (Y5, Y7) (ĝ = dy·w), and the
	// partials pw += dy·x̂, pb += dy
g1loop:
	CMPQ CX, $16
	JL   g1tail
	G1(0, Y4, Y5)
	G1(32, Y6, Y7)
	G1ADVANCE($64)
	SUBQ $16, CX
	JMP  g1loop

g1tail:
	CMPQ  CX, $8
	JL    g1part
	G1(0, Y4, Y5)
	G1ADVANCE($32)
	SUBQ  $8, CX
	TESTQ CX, CX
	JZ    g1done
	NORM_MASK
	G1MASKED(Y6, Y7)
	JMP   g1done

g1part:
	TESTQ CX, CX
	JZ    g1done
	NORM_MASK
	G1MASKED(Y4, Y5)

g1done:
	VBROADCASTSS invN+72(FP), X10
	HSUM2(Y4, Y6, X4, X1)
	HSUM2(Y5, Y7, X5, X1)
	VMULSS       X10, X4, X4
	VMULSS       X10, X5, X5
	MOVBLZX      rms+76(FP), AX
	TESTL        AX, AX
	JZ           g2start
	VXORPS       X4, X4, X4

g2start:
	VBROADCASTSS X4, Y4
	VBROADCASTSS X5, Y5

	// pass 2: dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂))
	MOVQ dx+0(FP), R12
	MOVQ xh+8(FP), DI
	MOVQ dy+16(FP), SI
	MOVQ w+32(FP), R9
	MOVQ DX, CX

g2loop:
	CMPQ CX, $16
	JL   g2tail
	G2(0)
	G2(32)
	G2ADVANCE($64)
	SUBQ $16, CX
	JMP  g2loop

g2tail:
	CMPQ CX, $8
	JL   g2part
	G2(0)
	G2ADVANCE($32)
	SUBQ $8, CX

g2part:
	TESTQ        CX, CX
	JZ           g2done
	NORM_MASK
	VMASKMOVPS   (SI), Y15, Y1
	VMASKMOVPS   (R9), Y15, Y11
	VMASKMOVPS   (DI), Y15, Y0
	VMULPS       Y11, Y1, Y1
	VSUBPS       Y4, Y1, Y1
	VFNMADD231PS Y0, Y5, Y1
	VMULPS       Y9, Y1, Y1
	VMASKMOVPS   Y1, Y15, (R12)

g2done:
	VZEROUPPER
	RET
