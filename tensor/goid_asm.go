//go:build (amd64 || arm64) && !purego

package tensor

// getg returns the address of the calling goroutine's runtime descriptor.
// While a goroutine runs, no other live goroutine has the same address, so
// it identifies the owner of an open Scope (which lives on that goroutine's
// stack) without the cost of reading a stack trace.
func getg() uintptr

func goroutineKey() uint64 { return uint64(getg()) }
