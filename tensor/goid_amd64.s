//go:build !purego

#include "textflag.h"

// func getg() uintptr
// Returns the address of the calling goroutine's g structure, which the
// Go runtime keeps in thread-local storage on amd64.
TEXT ·getg(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
