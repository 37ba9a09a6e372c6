//go:build linux && !purego

package cpu

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/klauspost/cpuid/v2"
	"golang.org/x/sys/unix"
)

// hasRDTSCP reports whether the processor has RDTSCP, which Linux sets up
// to tell the processor a thread runs on.
var hasRDTSCP = cpuid.CPU.Supports(cpuid.RDTSCP)

// rdtscpChecks counts the calls of currentCPU whose RDTSCP answer is
// checked against the getcpu system call, and rdtscpWrong is set once one
// disagreed. Linux writes each processor's number into its TSC_AUX
// register, but a hypervisor that does not keep that register per
// processor would have every thread report one number, and the pool
// would then take every helper for one on its caller's core and run
// alone. The first checkedCPUCalls calls (a few hundred nanoseconds each)
// look; one disagreement turns the processor number off for good.
var (
	rdtscpChecks atomic.Int32
	rdtscpWrong  atomic.Bool
)

const checkedCPUCalls = 4096

// currentCPU returns the number of the processor the calling thread runs
// on (it may have moved by the time the caller looks), or -1 where that is
// not known. It costs a few dozen cycles, no system call (once checked).
func currentCPU() int {
	if !hasRDTSCP || rdtscpWrong.Load() {
		return -1
	}
	c := rdtscpCPU()
	if rdtscpChecks.Load() < checkedCPUCalls {
		rdtscpChecks.Add(1)
		var sys uint32
		_, _, errno := syscall.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&sys)), 0, 0)
		// a thread that moved between the reads proves nothing either way
		if after := rdtscpCPU(); errno == 0 && after == c && int(sys) != c {
			rdtscpWrong.Store(true)
			return -1
		}
	}
	return c
}

func rdtscpCPU() int
