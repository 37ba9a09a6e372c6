package kernel

import (
	"os"
	"runtime/debug"
)

// DefaultMemoryFraction is the share of the machine's memory (or of the
// container's limit, when lower) that a kernel's Go heap may use before the
// garbage collector works flat out to stay below it (debug.SetMemoryLimit).
// It is a soft limit: a cell that really needs more still gets it and may
// be killed by the operating system; the limit makes garbage, not live
// data, the thing that gets squeezed. Device memory is budgeted separately by
// package tensor, which refuses allocations past a device's budget with an
// error. 75% leaves room for the rest of the machine (the notebook server,
// the browser) and for memory Go does not count (cgo, GPU drivers).
const DefaultMemoryFraction = 0.75

// limitMemory applies Options.MemoryLimit and returns the limit in force.
func limitMemory(limit int64) int64 {
	if limit < 0 {
		return debug.SetMemoryLimit(-1)
	}
	if limit == 0 {
		if os.Getenv("GOMEMLIMIT") != "" {
			return debug.SetMemoryLimit(-1)
		}
		total := physicalMemory()
		if total == 0 {
			return debug.SetMemoryLimit(-1)
		}
		limit = int64(float64(total) * DefaultMemoryFraction)
	}
	debug.SetMemoryLimit(limit)
	return limit
}
