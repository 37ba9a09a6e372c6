//go:build !purego

#include "textflag.h"

// func getg() uintptr
// Returns the address of the calling goroutine's g structure, which the
// Go runtime keeps in register g (R28) on arm64.
TEXT ·getg(SB), NOSPLIT, $0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET
