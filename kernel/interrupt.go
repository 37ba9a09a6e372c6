package kernel

import (
	"bytes"
	"context"
	"runtime"
	"time"
)

// How interrupting works, and why it waits.
//
// A cell runs under yaegi's ExecuteWithContext. Cancelling the cell's
// context makes yaegi bump the interpreter's run id and close the run's
// done channel: interpreted code notices at its next step (every loop
// iteration, every statement) and channel operations return, so interpreted
// code stops at once, goroutines started by earlier cells included.
// ExecuteWithContext returns immediately, but the goroutine that ran the
// cell is still alive until it notices, and if it is inside a compiled
// call (time.Sleep, a long Kiln op that ignores ctx) it notices only when
// that call returns.
//
// The statements of a cell run on yaegi's global frame, and every later
// execution resets the global frame's run id to the current one. So if the
// next cell started while the interrupted one sits in a compiled call, the
// interrupted cell would go on with its remaining statements when the call
// returns. The session therefore never runs two cells' code at once: after
// an interrupt it waits a little for the old goroutine to end, and if it
// has not, the next cell waits for it (saying so on stderr; interrupting
// again gives up, the cell does not run). Kiln's long-running calls take a
// context and return when it is cancelled, so the wait is short in
// practice.

// executionMarker is the function yaegi's ExecuteWithContext runs a program
// in; a goroutine in it is a cell's execution.
var executionMarker = []byte("interp.(*Interpreter).ExecuteWithContext.func1")

// executionAlive reports whether some goroutine is still running a cell.
// yaegi gives no handle on the goroutine ExecuteWithContext starts, so this
// looks for it in the stacks of all goroutines (only done after an
// interrupt).
func executionAlive() bool {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], executionMarker)
		}
		buf = make([]byte, 2*len(buf))
	}
}

// awaitExecution waits until no cell's goroutine is alive, for at most
// timeout, or until ctx is done. It reports whether none is alive.
func awaitExecution(ctx context.Context, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		if !executionAlive() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// awaitInterrupted makes a new cell wait for an interrupted one that is
// still inside a compiled call. Callers hold evalMu.
func (s *Session) awaitInterrupted(r *run, out Output) error {
	if !s.lingering {
		return nil
	}
	if awaitExecution(r.ctx, 100*time.Millisecond) {
		s.lingering = false
		return nil
	}
	s.router.write(Stderr, []byte("kernel: waiting for the interrupted cell's compiled call to return "+
		"(interrupt again to give up; restart the kernel if it never returns)\n"))
	if awaitExecution(r.ctx, 365*24*time.Hour) {
		s.lingering = false
		return nil
	}
	msg := "this cell did not run: the interrupted cell is still inside a compiled call"
	return &Error{Name: "Interrupted", Value: msg, Traceback: []string{msg}, err: ErrInterrupted}
}

// stopGoroutines halts every interpreted goroutine when no cell runs:
// yaegi's EvalWithContext with an already cancelled context bumps the run
// id (the trick of yaegi issue #1686). The source given is invalid on
// purpose: it fails to compile, so nothing is executed, and executing
// anything would reset the global frame's run id (see above). Callers hold
// evalMu.
func (s *Session) stopGoroutines() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = s.interp.EvalWithContext(ctx, "}")
	s.noteStop()
}
