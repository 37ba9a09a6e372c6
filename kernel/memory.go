package kernel

import (
	"math"
	"os"
	"runtime/debug"

	"github.com/kiln-ml/kiln/tensor"
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

// CPUBudgetFraction is the share of the Go heap's limit that CPU tensors
// may hold (the CPU device's memory budget, see tensor.Device.SetMemoryBudget).
// CPU tensors live in the Go heap: with a budget above the heap's limit, a
// cell could allocate a tensor the garbage collector cannot make room for
// (it then runs flat out until the operating system kills the process);
// below it, too big a tensor is an ordinary error (tensor.ErrOutOfMemory)
// and the rest leaves room for everything else on the heap.
const CPUBudgetFraction = 0.8

// limitMemory applies Options.MemoryLimit and returns the limit in force.
// Unless told to leave the limit alone, it also lowers the CPU device's
// tensor budget to CPUBudgetFraction of the limit.
func limitMemory(opt int64) int64 {
	limit := setMemoryLimit(opt)
	if opt >= 0 && limit > 0 && limit < math.MaxInt64 {
		cpu := tensor.CPU()
		budget := int64(float64(limit) * CPUBudgetFraction)
		if b := cpu.MemoryStats().BudgetBytes; b == 0 || b > budget {
			cpu.SetMemoryBudget(budget)
		}
	}
	return limit
}

// setMemoryLimit applies Options.MemoryLimit and returns the limit in force.
func setMemoryLimit(limit int64) int64 {
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

// limitStack applies Options.MaxStack.
func limitStack(max int) {
	if max < 0 {
		return
	}
	if max == 0 {
		max = DefaultMaxStack
	}
	debug.SetMaxStack(max)
}
