package robusttest

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/jupyter"
)

// interruptLimit is how soon after the interrupt the cell's reply must
// arrive.
const interruptLimit = 2 * time.Second

// interruptCell runs code, lets it run for settle after it started, calls
// stop, and returns the cell's result and how long after stop the
// execution finished (reply and idle status).
func (k *kern) interruptCell(code string, settle time.Duration, stop func() error) (*result, time.Duration) {
	k.t.Helper()
	started := make(chan struct{})
	done := make(chan *result, 1)
	go func() {
		done <- k.execReq(jupyter.NewExecuteRequest(code), 60*time.Second, &jupyter.ExecuteHandlers{
			Output: func(m *jupyter.Message) {
				if m.Type() == "execute_input" {
					close(started)
				}
			}})
	}()
	select {
	case <-started:
	case r := <-done:
		k.t.Fatalf("cell %q ended before it was interrupted: %s", code, r)
	case <-time.After(20 * time.Second):
		k.t.Fatalf("cell %q did not start", code)
	}
	time.Sleep(settle)
	select {
	case r := <-done:
		k.t.Fatalf("cell %q ended before it was interrupted: %s", code, r)
	default:
	}
	t0 := time.Now()
	if err := stop(); err != nil {
		k.t.Fatalf("interrupt: %v", err)
	}
	r := <-done
	return r, time.Since(t0)
}

// TestInterrupt interrupts cells that run for ever, in interpreted and in
// compiled code, with interrupt_request on the control channel and with
// SIGINT; each stops within interruptLimit, and the next cell sees the
// variables of earlier ones.
func TestInterrupt(t *testing.T) {
	k := startKernel(t)
	k.ok("n := 0\nx := tensor.Randn(tensor.CPU(), 256, 256)")
	byMessage := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return k.c.Interrupt(ctx)
	}
	// As jupyter_client does for kernels with interrupt_mode "signal": to
	// the kernel's process group (the crash monitor in it ignores it).
	bySignal := func() error { return syscall.Kill(-k.p.Pid(), syscall.SIGINT) }
	for _, tc := range []struct {
		name, code string
		stop       func() error
	}{
		{"empty interpreted loop", "for {}", byMessage},
		{"interpreted loop changing a variable", "for {\n\tn++\n}", byMessage},
		{"time.Sleep for an hour", "n = -1\ntime.Sleep(1 * time.Hour)\nn = -2", byMessage},
		{"loop of compiled tensor ops", "for {\n\ty := x.Matmul(x).Tanh()\n\ty.Release()\n\tn++\n}", byMessage},
		{"interpreted loop by SIGINT", "for {\n\tn++\n}", bySignal},
		{"time.Sleep by SIGINT", "time.Sleep(1 * time.Hour)", bySignal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k.t = t
			before := k.ok("n").text()
			r, took := k.interruptCell(tc.code, 300*time.Millisecond, tc.stop)
			if r.err != nil {
				t.Fatalf("execute: %v", r.err)
			}
			if took > interruptLimit {
				t.Errorf("the cell stopped %v after the interrupt, want within %v", took, interruptLimit)
			}
			if r.reply.Status != jupyter.StatusError || r.reply.ErrorContent == nil || r.reply.Ename != "Interrupted" {
				t.Errorf("reply: %s; want an Interrupted error", r)
			}
			// The next cell runs at once and sees what the interrupted one did.
			next := k.exec("n", 5*time.Second)
			if next.err != nil || next.reply.Status != jupyter.StatusOK {
				t.Fatalf("the next cell: %s", next)
			}
			after := next.text()
			switch {
			case strings.Contains(tc.code, "n++") && after == before:
				t.Errorf("n is still %s: the interrupted loop did not run, or its work was lost", after)
			case strings.Contains(tc.code, "n = -1") && after != "-1":
				t.Errorf("n = %s after the interrupted sleep, want -1 (set before it; the line after it must not run)", after)
			}
			k.expect("x.Shape()", "[256 256]")
		})
	}
	k.t = t
	// Nothing left running: a cell after all those finishes at once.
	k.expect("n = 7\nn * 6", "42")
	if strings.Contains(k.stderr.String(), kernel.CrashLinePrefix) {
		t.Errorf("kernel stderr mentions a crash:\n%s", k.stderr.String())
	}
}
