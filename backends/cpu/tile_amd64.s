//go:build !purego

#include "textflag.h"

// The float32-by-float64-scalar kernels of tile_amd64.go: eight elements
// an iteration, each widened to float64, combined with s and rounded back
// to float32 (VCVTPS2PD and VCVTPD2PS round as Go's conversions do). n is a
// multiple of 8.

#define TILE_F64S(name, OP) \
TEXT name(SB), NOSPLIT, $0-32 \
	MOVQ         dst+0(FP), DI \
	MOVQ         x+8(FP), SI \
	MOVQ         n+24(FP), CX \
	VBROADCASTSD s+16(FP), Y15 \
	SHRQ         $3, CX \
	JZ           done \
loop: \
	VCVTPS2PD    (SI), Y0 \
	VCVTPS2PD    16(SI), Y1 \
	OP \
	VCVTPD2PSY   Y0, X0 \
	VCVTPD2PSY   Y1, X1 \
	VMOVUPS      X0, (DI) \
	VMOVUPS      X1, 16(DI) \
	ADDQ         $32, SI \
	ADDQ         $32, DI \
	DECQ         CX \
	JNZ          loop \
done: \
	VZEROUPPER \
	RET

#define MUL_OP VMULPD Y15, Y0, Y0; VMULPD Y15, Y1, Y1
#define ADD_OP VADDPD Y15, Y0, Y0; VADDPD Y15, Y1, Y1
#define DIV_OP VDIVPD Y15, Y0, Y0; VDIVPD Y15, Y1, Y1
#define RDIV_OP VDIVPD Y0, Y15, Y0; VDIVPD Y1, Y15, Y1

TILE_F64S(·mulF32F64s, MUL_OP)
TILE_F64S(·addF32F64s, ADD_OP)
TILE_F64S(·divF32F64s, DIV_OP)
TILE_F64S(·rdivF32F64s, RDIV_OP)
