package robusttest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMemoryGuard: the kernel sets the Go heap's memory limit and keeps the
// CPU device's tensor budget below it, so too big a tensor is an ordinary
// error (tensor.ErrOutOfMemory), not a crash.
func TestMemoryGuard(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		k := startKernel(t)
		k.ok("import \"runtime/debug\"\nlimit := debug.SetMemoryLimit(-1)\nbudget := tensor.CPU().MemoryStats().BudgetBytes")
		limit := k.number("limit")
		budget := k.number("budget")
		if limit <= 0 || limit == 1<<63-1 {
			t.Fatalf("memory limit %d: the kernel did not set one", limit)
		}
		if budget <= 0 || float64(budget) > 0.8*float64(limit)+1 {
			t.Errorf("CPU budget %d, want at most 80%% of the memory limit %d", budget, limit)
		}
		k.tooBig("tensor.Zeros(tensor.CPU(), 1<<40)")
	})

	t.Run("GOMEMLIMIT", func(t *testing.T) {
		k := startKernel(t, "GOMEMLIMIT=1GiB")
		k.ok("import \"runtime/debug\"\nlimit := debug.SetMemoryLimit(-1)\nbudget := tensor.CPU().MemoryStats().BudgetBytes")
		if limit := k.number("limit"); limit != 1<<30 {
			t.Errorf("memory limit %d, want GOMEMLIMIT's %d", limit, 1<<30)
		}
		if budget, want := k.number("budget"), int64(858993459); budget != want {
			t.Errorf("CPU budget %d, want %d, 80%% of 1 GiB", budget, want)
		}

		// 1.2 GB of float32: past the budget, though the machine may have it.
		k.tooBig("tensor.Zeros(tensor.CPU(), 300<<20)")
		// Within the budget, tensors work; released, they give it back.
		k.expect("var s float64\ntensor.Scope(func() {\n\ts = tensor.Ones(tensor.CPU(), 25<<20).Sum().Item()\n})\ns", "2.62144e+07")
		k.expect("tensor.CPU().MemoryStats().LiveBytes", "0")
	})
}

// tooBig runs code that allocates too big a tensor: an error reply naming
// the budget, tensor.Try sees tensor.ErrOutOfMemory, and the session goes
// on.
func (k *kern) tooBig(code string) {
	k.t.Helper()
	k.ok("guard := 41")
	r := k.cellError(code, 20*time.Second)
	if !strings.Contains(r.reply.Evalue, "budget") {
		k.t.Errorf("too big a tensor: %s: %s, want an error naming the budget", r.reply.Ename, r.reply.Evalue)
	}
	k.expect("err := tensor.Try(func() { "+code+" })\nerrors.Is(err, tensor.ErrOutOfMemory)", "true")
	k.expect("guard + 1", "42")
}

// number returns the integer an expression shows.
func (k *kern) number(expr string) int64 {
	k.t.Helper()
	s := k.ok(expr).text()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		k.t.Fatalf("%s shows %q, not an integer", expr, s)
	}
	return n
}
