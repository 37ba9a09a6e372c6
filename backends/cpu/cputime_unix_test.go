//go:build unix

package cpu

import "syscall"

// cpuSeconds returns the process's user+system CPU time, so benchmarks can
// report throughput per CPU-second, which is less disturbed than wall time
// when other processes share the cores.
func cpuSeconds() float64 {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return 0
	}
	return float64(r.Utime.Sec+r.Stime.Sec) + float64(r.Utime.Usec+r.Stime.Usec)/1e6
}
