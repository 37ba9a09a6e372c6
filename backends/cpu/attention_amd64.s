//go:build !purego

#include "textflag.h"

// Hand-written AVX-512 kernels of the fused attention (attention.go); see
// attention_amd64.go for their contracts.

// The float32 exponential: x clamped to [-104, 89] (NaN kept), k =
// round(x·log2 e), r = x − k·ln2 (two parts, fused), Cephes' polynomial
// e^r ≈ 1 + r + r²·P(r), then VSCALEFPS multiplies by 2^k, giving 0,
// denormals and +Inf where they belong.
#define EXP_CONSTANTS \
	MOVL $0x3fb8aa3b, AX \
	VPBROADCASTD AX, Z9 \
	MOVL $0x3f318000, AX \
	VPBROADCASTD AX, Z10 \
	MOVL $0xb95e8083, AX \
	VPBROADCASTD AX, Z11 \
	MOVL $0xc2d00000, AX \
	VPBROADCASTD AX, Z12 \
	MOVL $0x39506967, AX \
	VPBROADCASTD AX, Z13 \
	MOVL $0x3ab743ce, AX \
	VPBROADCASTD AX, Z14 \
	MOVL $0x3c088908, AX \
	VPBROADCASTD AX, Z15 \
	MOVL $0x3d2aa9c1, AX \
	VPBROADCASTD AX, Z16 \
	MOVL $0x3e2aaaaa, AX \
	VPBROADCASTD AX, Z17 \
	MOVL $0x3f000000, AX \
	VPBROADCASTD AX, Z18 \
	MOVL $0x3f800000, AX \
	VPBROADCASTD AX, Z19 \
	MOVL $0x42b20000, AX \
	VPBROADCASTD AX, Z20

// EXP sets Z2 = e^Z0, clobbering Z0, Z1, Z3.
#define EXP \
	VMAXPS Z0, Z12, Z0 \
	VMINPS Z0, Z20, Z0 \
	VMULPS Z9, Z0, Z1 \
	VRNDSCALEPS $8, Z1, Z1 \
	VFNMADD231PS Z10, Z1, Z0 \
	VFNMADD231PS Z11, Z1, Z0 \
	VMOVAPS Z13, Z2 \
	VFMADD213PS Z14, Z0, Z2 \
	VFMADD213PS Z15, Z0, Z2 \
	VFMADD213PS Z16, Z0, Z2 \
	VFMADD213PS Z17, Z0, Z2 \
	VFMADD213PS Z18, Z0, Z2 \
	VMULPS Z0, Z0, Z3 \
	VFMADD213PS Z0, Z3, Z2 \
	VADDPS Z19, Z2, Z2 \
	VSCALEFPS Z1, Z2, Z2

// func expShiftSumF32AVX512(s *float32, n int, scale, shift float32) float32
TEXT ·expShiftSumF32AVX512(SB), NOSPLIT, $0-28
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS scale+16(FP), Z21
	VBROADCASTSS shift+20(FP), Z8
	EXP_CONSTANTS
	VXORPS Z7, Z7, Z7

exploop:
	CMPQ CX, $16
	JL   exptail
	VMOVUPS     (DI), Z0
	VFMSUB213PS Z8, Z21, Z0
	EXP
	VMOVUPS Z2, (DI)
	VADDPS  Z2, Z7, Z7
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     exploop

exptail:
	TESTQ CX, CX
	JZ    expdone
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	VMOVUPS.Z   (DI), K1, Z0
	VFMSUB213PS Z8, Z21, Z0
	EXP
	VMOVUPS Z2, K1, (DI)
	VADDPS  Z2, Z7, K1, Z7

expdone:
	VEXTRACTF64X4 $1, Z7, Y1
	VADDPS        Y1, Y7, Y7
	VEXTRACTF128  $1, Y7, X1
	VADDPS        X1, X7, X7
	VHADDPS       X7, X7, X7
	VHADDPS       X7, X7, X7
	VMOVSS        X7, ret+24(FP)
	VZEROUPPER
	RET

// func maxF32AVX512(s *float32, n int) float32
TEXT ·maxF32AVX512(SB), NOSPLIT, $0-20
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), CX
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z7

maxloop:
	CMPQ CX, $16
	JL   maxtail
	VMAXPS (DI), Z7, Z7
	ADDQ   $64, DI
	SUBQ   $16, CX
	JMP    maxloop

maxtail:
	TESTQ CX, CX
	JZ    maxdone
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	VMAXPS (DI), Z7, K1, Z7

maxdone:
	VEXTRACTF64X4 $1, Z7, Y1
	VMAXPS        Y1, Y7, Y7
	VEXTRACTF128  $1, Y7, X1
	VMAXPS        X1, X7, X7
	VPERMILPS     $0x4e, X7, X1
	VMAXPS        X1, X7, X7
	VPERMILPS     $0xb1, X7, X1
	VMAXPS        X1, X7, X7
	VMOVSS        X7, ret+16(FP)
	VZEROUPPER
	RET

// func dsRowF32AVX512(ds, p *float32, n int, d float32)
TEXT ·dsRowF32AVX512(SB), NOSPLIT, $0-28
	MOVQ ds+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS d+24(FP), Z8

dsloop:
	CMPQ CX, $16
	JL   dstail
	VMOVUPS (DI), Z0
	VSUBPS  Z8, Z0, Z0
	VMULPS  (SI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     dsloop

dstail:
	TESTQ CX, CX
	JZ    dsdone
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	VMOVUPS.Z (DI), K1, Z0
	VMOVUPS.Z (SI), K1, Z1
	VSUBPS    Z8, Z0, Z0
	VMULPS    Z1, Z0, Z0
	VMOVUPS   Z0, K1, (DI)

dsdone:
	VZEROUPPER
	RET
