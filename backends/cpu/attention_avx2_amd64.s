//go:build !purego

#include "textflag.h"

// Hand-written AVX2+FMA kernels of the fused attention (attention.go), for
// CPUs without AVX-512; see attention_amd64.go for their contracts.
//
// The row passes give the same bits as the AVX-512 kernels
// (attention_amd64.s): the same operations in the same order, each 16-float
// step of those done as two 8-float halves with one accumulator per half
// (lo: lanes 0–7, hi: lanes 8–15), reduced at the end as the AVX-512
// kernels reduce their 16 lanes. A partial last step is done under a lane
// mask (attnTailMask), the lanes past the row neither loaded nor stored and
// leaving the accumulators as they were.

// attnExpConst holds the exponential's constants, 8 copies of each:
// clamps −104 and 89, log2 e, ln 2 in two parts, Cephes' polynomial
// P0…P5 and 1.
DATA attnExpConst<>+0x000(SB)/8, $0xc2d00000c2d00000
DATA attnExpConst<>+0x008(SB)/8, $0xc2d00000c2d00000
DATA attnExpConst<>+0x010(SB)/8, $0xc2d00000c2d00000
DATA attnExpConst<>+0x018(SB)/8, $0xc2d00000c2d00000
DATA attnExpConst<>+0x020(SB)/8, $0x42b2000042b20000
DATA attnExpConst<>+0x028(SB)/8, $0x42b2000042b20000
DATA attnExpConst<>+0x030(SB)/8, $0x42b2000042b20000
DATA attnExpConst<>+0x038(SB)/8, $0x42b2000042b20000
DATA attnExpConst<>+0x040(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA attnExpConst<>+0x048(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA attnExpConst<>+0x050(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA attnExpConst<>+0x058(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA attnExpConst<>+0x060(SB)/8, $0x3f3180003f318000
DATA attnExpConst<>+0x068(SB)/8, $0x3f3180003f318000
DATA attnExpConst<>+0x070(SB)/8, $0x3f3180003f318000
DATA attnExpConst<>+0x078(SB)/8, $0x3f3180003f318000
DATA attnExpConst<>+0x080(SB)/8, $0xb95e8083b95e8083
DATA attnExpConst<>+0x088(SB)/8, $0xb95e8083b95e8083
DATA attnExpConst<>+0x090(SB)/8, $0xb95e8083b95e8083
DATA attnExpConst<>+0x098(SB)/8, $0xb95e8083b95e8083
DATA attnExpConst<>+0x0a0(SB)/8, $0x3950696739506967
DATA attnExpConst<>+0x0a8(SB)/8, $0x3950696739506967
DATA attnExpConst<>+0x0b0(SB)/8, $0x3950696739506967
DATA attnExpConst<>+0x0b8(SB)/8, $0x3950696739506967
DATA attnExpConst<>+0x0c0(SB)/8, $0x3ab743ce3ab743ce
DATA attnExpConst<>+0x0c8(SB)/8, $0x3ab743ce3ab743ce
DATA attnExpConst<>+0x0d0(SB)/8, $0x3ab743ce3ab743ce
DATA attnExpConst<>+0x0d8(SB)/8, $0x3ab743ce3ab743ce
DATA attnExpConst<>+0x0e0(SB)/8, $0x3c0889083c088908
DATA attnExpConst<>+0x0e8(SB)/8, $0x3c0889083c088908
DATA attnExpConst<>+0x0f0(SB)/8, $0x3c0889083c088908
DATA attnExpConst<>+0x0f8(SB)/8, $0x3c0889083c088908
DATA attnExpConst<>+0x100(SB)/8, $0x3d2aa9c13d2aa9c1
DATA attnExpConst<>+0x108(SB)/8, $0x3d2aa9c13d2aa9c1
DATA attnExpConst<>+0x110(SB)/8, $0x3d2aa9c13d2aa9c1
DATA attnExpConst<>+0x118(SB)/8, $0x3d2aa9c13d2aa9c1
DATA attnExpConst<>+0x120(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA attnExpConst<>+0x128(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA attnExpConst<>+0x130(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA attnExpConst<>+0x138(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA attnExpConst<>+0x140(SB)/8, $0x3f0000003f000000
DATA attnExpConst<>+0x148(SB)/8, $0x3f0000003f000000
DATA attnExpConst<>+0x150(SB)/8, $0x3f0000003f000000
DATA attnExpConst<>+0x158(SB)/8, $0x3f0000003f000000
DATA attnExpConst<>+0x160(SB)/8, $0x3f8000003f800000
DATA attnExpConst<>+0x168(SB)/8, $0x3f8000003f800000
DATA attnExpConst<>+0x170(SB)/8, $0x3f8000003f800000
DATA attnExpConst<>+0x178(SB)/8, $0x3f8000003f800000
DATA attnExpConst<>+0x180(SB)/8, $0x0000007f0000007f
DATA attnExpConst<>+0x188(SB)/8, $0x0000007f0000007f
DATA attnExpConst<>+0x190(SB)/8, $0x0000007f0000007f
DATA attnExpConst<>+0x198(SB)/8, $0x0000007f0000007f
GLOBL attnExpConst<>(SB), RODATA|NOPTR, $0x1a0

#define EXP_LO attnExpConst<>+0x000(SB)
#define EXP_HI attnExpConst<>+0x020(SB)
#define EXP_LOG2E attnExpConst<>+0x040(SB)
#define EXP_LN2HI attnExpConst<>+0x060(SB)
#define EXP_LN2LO attnExpConst<>+0x080(SB)
#define EXP_P0 attnExpConst<>+0x0a0(SB)
#define EXP_P1 attnExpConst<>+0x0c0(SB)
#define EXP_P2 attnExpConst<>+0x0e0(SB)
#define EXP_P3 attnExpConst<>+0x100(SB)
#define EXP_P4 attnExpConst<>+0x120(SB)
#define EXP_P5 attnExpConst<>+0x140(SB)
#define EXP_ONE attnExpConst<>+0x160(SB)
#define EXP_BIAS attnExpConst<>+0x180(SB)

// attnTailMask: 8 all-ones int32s then 8 zeros; the 8 int32s from
// attnTailMask<>+4·(8−c) have their first c lanes set.
DATA attnTailMask<>+0x00(SB)/8, $0xffffffffffffffff
DATA attnTailMask<>+0x08(SB)/8, $0xffffffffffffffff
DATA attnTailMask<>+0x10(SB)/8, $0xffffffffffffffff
DATA attnTailMask<>+0x18(SB)/8, $0xffffffffffffffff
DATA attnTailMask<>+0x20(SB)/8, $0
DATA attnTailMask<>+0x28(SB)/8, $0
DATA attnTailMask<>+0x30(SB)/8, $0
DATA attnTailMask<>+0x38(SB)/8, $0
GLOBL attnTailMask<>(SB), RODATA|NOPTR, $0x40

// ATTN_MASK sets Y15 to the mask of the first CX lanes (0 < CX < 8),
// clobbering AX.
#define ATTN_MASK \
	LEAQ    attnTailMask<>+32(SB), AX \
	SHLQ    $2, CX \
	SUBQ    CX, AX \
	SHRQ    $2, CX \
	VMOVDQU (AX), Y15

// EXP8(x, t, k, r) sets x = e^x for the 8 floats of x as the AVX-512 EXP
// does, clobbering t, k and r. Y8 and Y9 hold the clamps: in registers, as
// a NaN x is kept only as the second operand of VMAXPS and VMINPS, which
// must then be the register-or-memory one. VSCALEFPS's multiplication by
// 2^k (k in [−150, 128]) is done as two, by 2^(k>>1) and 2^(k−(k>>1)),
// both normal floats: the first is exact, so the result is rounded once,
// denormal results included, as VSCALEFPS rounds it.
#define EXP8(x, t, k, r) \
	VMAXPS       x, Y8, x \
	VMINPS       x, Y9, x \
	VMULPS       EXP_LOG2E, x, k \
	VROUNDPS     $8, k, k \
	VFNMADD231PS EXP_LN2HI, k, x \
	VFNMADD231PS EXP_LN2LO, k, x \
	VMOVUPS      EXP_P0, r \
	VFMADD213PS  EXP_P1, x, r \
	VFMADD213PS  EXP_P2, x, r \
	VFMADD213PS  EXP_P3, x, r \
	VFMADD213PS  EXP_P4, x, r \
	VFMADD213PS  EXP_P5, x, r \
	VMULPS       x, x, t \
	VFMADD213PS  x, t, r \
	VADDPS       EXP_ONE, r, r \
	VCVTTPS2DQ   k, k \
	VPSRAD       $1, k, t \
	VPSUBD       t, k, k \
	VPADDD       EXP_BIAS, t, t \
	VPADDD       EXP_BIAS, k, k \
	VPSLLD       $23, t, t \
	VPSLLD       $23, k, k \
	VMULPS       t, r, r \
	VMULPS       k, r, x

// func expShiftSumF32AVX2(s *float32, n int, scale, shift float32) float32
TEXT ·expShiftSumF32AVX2(SB), NOSPLIT, $0-28
	MOVQ         s+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y13
	VBROADCASTSS shift+20(FP), Y14
	VMOVUPS      EXP_LO, Y8
	VMOVUPS      EXP_HI, Y9
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11

exploop:
	CMPQ        CX, $16
	JL          exptail
	VMOVUPS     (DI), Y0
	VMOVUPS     32(DI), Y4
	VFMSUB213PS Y14, Y13, Y0
	VFMSUB213PS Y14, Y13, Y4
	EXP8(Y0, Y1, Y2, Y3)
	EXP8(Y4, Y5, Y6, Y7)
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y4, 32(DI)
	VADDPS      Y0, Y10, Y10
	VADDPS      Y4, Y11, Y11
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         exploop

exptail:
	CMPQ        CX, $8
	JL          exppart
	VMOVUPS     (DI), Y0
	VFMSUB213PS Y14, Y13, Y0
	EXP8(Y0, Y1, Y2, Y3)
	VMOVUPS     Y0, (DI)
	VADDPS      Y0, Y10, Y10
	ADDQ        $32, DI
	SUBQ        $8, CX
	TESTQ       CX, CX
	JZ          expdone
	ATTN_MASK
	VMASKMOVPS  (DI), Y15, Y0
	VFMSUB213PS Y14, Y13, Y0
	EXP8(Y0, Y1, Y2, Y3)
	VMASKMOVPS  Y0, Y15, (DI)
	VANDPS      Y15, Y0, Y0
	VADDPS      Y0, Y11, Y11
	JMP         expdone

exppart:
	TESTQ       CX, CX
	JZ          expdone
	ATTN_MASK
	VMASKMOVPS  (DI), Y15, Y0
	VFMSUB213PS Y14, Y13, Y0
	EXP8(Y0, Y1, Y2, Y3)
	VMASKMOVPS  Y0, Y15, (DI)
	VANDPS      Y15, Y0, Y0
	VADDPS      Y0, Y10, Y10

expdone:
	VADDPS       Y11, Y10, Y10
	VEXTRACTF128 $1, Y10, X1
	VADDPS       X1, X10, X10
	VHADDPS      X10, X10, X10
	VHADDPS      X10, X10, X10
	VMOVSS       X10, ret+24(FP)
	VZEROUPPER
	RET

// func maxF32AVX2(s *float32, n int) float32
TEXT ·maxF32AVX2(SB), NOSPLIT, $0-20
	MOVQ         s+0(FP), DI
	MOVQ         n+8(FP), CX
	MOVL         $0xff800000, AX
	VMOVD        AX, X10
	VBROADCASTSS X10, Y10
	VMOVAPS      Y10, Y11

maxloop:
	CMPQ   CX, $16
	JL     maxtail
	VMAXPS (DI), Y10, Y10
	VMAXPS 32(DI), Y11, Y11
	ADDQ   $64, DI
	SUBQ   $16, CX
	JMP    maxloop

maxtail:
	CMPQ       CX, $8
	JL         maxpart
	VMAXPS     (DI), Y10, Y10
	ADDQ       $32, DI
	SUBQ       $8, CX
	TESTQ      CX, CX
	JZ         maxdone
	ATTN_MASK
	VMASKMOVPS (DI), Y15, Y0
	VMAXPS     Y0, Y11, Y0
	VBLENDVPS  Y15, Y0, Y11, Y11
	JMP        maxdone

maxpart:
	TESTQ      CX, CX
	JZ         maxdone
	ATTN_MASK
	VMASKMOVPS (DI), Y15, Y0
	VMAXPS     Y0, Y10, Y0
	VBLENDVPS  Y15, Y0, Y10, Y10

maxdone:
	VMAXPS       Y11, Y10, Y10
	VEXTRACTF128 $1, Y10, X1
	VMAXPS       X1, X10, X10
	VPERMILPS    $0x4e, X10, X1
	VMAXPS       X1, X10, X10
	VPERMILPS    $0xb1, X10, X1
	VMAXPS       X1, X10, X10
	VMOVSS       X10, ret+16(FP)
	VZEROUPPER
	RET

// func dsRowF32AVX2(ds, p *float32, n int, d float32)
TEXT ·dsRowF32AVX2(SB), NOSPLIT, $0-28
	MOVQ         ds+0(FP), DI
	MOVQ         p+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS d+24(FP), Y8

dsloop:
	CMPQ    CX, $16
	JL      dstail
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VSUBPS  Y8, Y0, Y0
	VSUBPS  Y8, Y1, Y1
	VMULPS  (SI), Y0, Y0
	VMULPS  32(SI), Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     dsloop

dstail:
	CMPQ    CX, $8
	JL      dspart
	VMOVUPS (DI), Y0
	VSUBPS  Y8, Y0, Y0
	VMULPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, CX

dspart:
	TESTQ      CX, CX
	JZ         dsdone
	ATTN_MASK
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (SI), Y15, Y1
	VSUBPS     Y8, Y0, Y0
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)

dsdone:
	VZEROUPPER
	RET
