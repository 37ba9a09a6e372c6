//go:build linux && !purego

#include "textflag.h"

// func rdtscpCPU() int
//
// RDTSCP returns the time stamp counter in DX:AX and the processor's
// IA32_TSC_AUX in CX, where Linux keeps the node (above bit 12) and the
// processor number (the low 12 bits), as its vDSO getcpu reads them.
TEXT ·rdtscpCPU(SB), NOSPLIT, $0-8
	RDTSCP
	ANDQ $0xfff, CX
	MOVQ CX, ret+0(FP)
	RET
