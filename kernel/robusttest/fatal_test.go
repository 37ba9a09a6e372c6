package robusttest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// TestProcessFatal runs cells that end the kernel process in ways Go cannot
// recover from. Each time the client sees the kernel die promptly (no
// hang) with a *jupyter.KernelDiedError whose stderr ends with the crash
// monitor's line naming the reason, and a restarted kernel works.
func TestProcessFatal(t *testing.T) {
	k := startKernel(t)
	for _, tc := range []struct {
		name, code string
		// reason must be in the final "kiln kernel: the process ended" line.
		reason string
		within time.Duration
	}{
		{
			name:   "stack overflow",
			code:   "func down(n int) int {\n\treturn down(n+1) + 1\n}\ndown(0)",
			reason: "fatal error: stack overflow (runtime: goroutine stack exceeds 134217728-byte limit)",
			within: 20 * time.Second,
		},
		{
			// A go statement's goroutine is guarded (TestGoroutinePanic);
			// one that compiled code starts is not.
			name:   "panic in a goroutine compiled code started",
			code:   "time.AfterFunc(0, func() {\n\tpanic(\"from a timer\")\n})\ntime.Sleep(10 * time.Second)",
			reason: "panic: from a timer",
			within: 5 * time.Second,
		},
		{
			name:   "runtime error in a goroutine compiled code started",
			code:   "var s []int\ntime.AfterFunc(0, func() {\n\t_ = s[5]\n})\ntime.Sleep(10 * time.Second)",
			reason: "panic: ",
			within: 5 * time.Second,
		},
		{
			name: "concurrent map writes",
			code: "m := map[int]int{}\nfor w := 0; w < 2; w++ {\n\tgo func() {\n\t\tfor i := 0; ; i++ {\n\t\t\tm[i%64] = i\n\t\t}\n\t}()\n}\n" +
				"time.Sleep(10 * time.Second)",
			reason: "fatal error: concurrent map writes",
			within: 5 * time.Second,
		},
		{
			// Not a tensor: plain Go memory, which has no budget. 128 TiB
			// fails even where memory is overcommitted: no address space
			// holds it.
			name:   "huge allocation",
			code:   "b := make([]byte, 1<<47)\nlen(b)",
			reason: "out of memory",
			within: 5 * time.Second,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k.t = t
			k.ok("before := 41")
			r := k.exec(tc.code, tc.within)
			var died *jupyter.KernelDiedError
			if !errors.As(r.err, &died) {
				t.Fatalf("cell: %s; want the kernel to die within %v", r, tc.within)
			}
			t.Logf("died after %v: exit %d %s", r.took.Round(time.Millisecond), died.ExitCode, died.Signal)
			if died.ExitCode != 2 {
				t.Errorf("exit code %d (signal %q), want 2, Go's status for fatal errors", died.ExitCode, died.Signal)
			}
			lines := strings.Split(strings.TrimRight(died.Stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, kernel.CrashLinePrefix) || !strings.Contains(last, tc.reason) {
				t.Errorf("last stderr line %q, want %q naming %q", last, kernel.CrashLinePrefix+"…", tc.reason)
			}
			if !strings.Contains(died.Error(), tc.reason) {
				t.Errorf("KernelDiedError %q does not name %q", died.Error(), tc.reason)
			}
			// The Go runtime's own report reached the kernel's stderr too.
			if !strings.Contains(died.Stderr, "goroutine ") {
				t.Errorf("no goroutine trace in the kernel's stderr:\n%s", clip(died.Stderr))
			}
			if k.c.Err() == nil {
				t.Error("the client did not notice that its kernel died")
			}

			k.restart()
			k.expect("before := 41\nbefore + 1", "42")
		})
	}
}

// TestKilledKernel kills the kernel process alone, as the out-of-memory
// killer does: the crash monitor says it ended without a Go crash report,
// and a restarted kernel works.
func TestKilledKernel(t *testing.T) {
	k := startKernel(t)
	k.ok("x := 1")
	if err := k.p.Signal(killSignal); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	var died *jupyter.KernelDiedError
	if err := k.p.Wait(ctx); !errors.As(err, &died) {
		t.Fatalf("wait: %v", err)
	}
	if died.Signal == "" || !strings.Contains(died.Stderr, kernel.CrashLinePrefix+"without a Go crash report") {
		t.Errorf("died: signal %q, stderr %q; want a signal and the monitor's line", died.Signal, died.Stderr)
	}
	k.restart()
	k.expect("x := 2\nx * 21", "42")
}

// TestCleanShutdown: a kernel that is shut down says nothing about crashes.
func TestCleanShutdown(t *testing.T) {
	k := startKernel(t)
	k.ok("x := 1")
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	if err := k.p.Shutdown(ctx, k.c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var died *jupyter.KernelDiedError
	if !errors.As(k.p.Err(), &died) || died.ExitCode != 0 {
		t.Fatalf("after shutdown: %v", k.p.Err())
	}
	if strings.Contains(died.Stderr, kernel.CrashLinePrefix) {
		t.Errorf("stderr after a clean shutdown: %q", died.Stderr)
	}
}
