//go:build !linux || !amd64 || purego

package cpu

// currentCPU returns -1: the processor a thread runs on is read only on
// Linux on amd64 (cpunum_amd64.go); elsewhere the pool does without it.
func currentCPU() int { return -1 }
