package kernel

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// How interrupting works, and why it is built this way.
//
// yaegi stops interpreted code in one way: its (unexported) stop bumps the
// interpreter's run id, which interpreted code checks at every step (every
// loop iteration, every statement), and closes the interpreter's done
// channel, on which the channel operations of interpreted code also wait.
// stop runs only in the cancellation branch of EvalWithContext,
// ExecuteWithContext and EvalPathWithContext. Each runs its work in a
// goroutine of its own and, when its context is cancelled, returns without
// waiting for it; ExecuteWithContext and EvalPathWithContext then write
// their named results from both goroutines (a data race inside yaegi), and
// the abandoned goroutine goes on using the interpreter (the end of Execute
// reads the global frame) with nothing the session could wait on. So the
// session never runs a cell under one of them.
//
// A cell runs in a goroutine of the session's own under plain Execute, and
// a stop point arms yaegi's cancellation beside it: an EvalPathWithContext
// call for a path that the interpreter's source filesystem (stopFS) answers
// by parking, inside fs.Stat, before yaegi has touched anything else, until
// the session releases it. The call has made a fresh done channel, which the
// cell's code picks up when it starts. To interrupt, the session cancels the
// call's context: yaegi stops the interpreter (loops end at their next step,
// blocked channel operations return) and the call returns. Only then does
// the session release the parked goroutine, which finds that the file cannot
// be read and ends without touching the interpreter; that order keeps
// yaegi's two writes of the results apart. A cell that ends by itself
// releases its stop point first, and the call returns normally.
//
// Interrupted interpreted code ends at its next step, but a cell inside a
// compiled call (time.Sleep, a long Kiln op that ignores ctx) notices only
// when the call returns. Every execution resets the global frame's run id,
// so a cell started meanwhile would let the interrupted one go on with its
// remaining statements, and both would use the interpreter at once. The
// session therefore touches the interpreter again only once the interrupted
// cell's goroutine has returned: after an interrupt it waits a little for
// it, and if it has not returned the next cell waits for it (saying so on
// stderr; interrupting again gives up, and the cell does not run).
// Completion and inspection meanwhile use the variables' types as the last
// finished cell left them. Kiln's long-running calls take a context and
// return when it is cancelled, so the wait is short in practice.

// stopPrefix starts the paths of stop points. No real file is looked up
// under it (a NUL byte is not valid in a path).
const stopPrefix = "\x00kiln-stop/"

// stopFS is the interpreter's source filesystem: the host's, as yaegi's
// default, except for the paths of stop points, where Stat parks until the
// point is released and Open fails.
type stopFS struct {
	next   atomic.Uint64
	mu     sync.Mutex
	points map[string]*stopPoint
}

// Open opens a file of the host for yaegi (source imports).
func (f *stopFS) Open(name string) (fs.File, error) {
	if strings.HasPrefix(name, stopPrefix) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return os.Open(name)
}

// Stat describes a file of the host; for a stop point it parks until the
// point is released and then describes a regular file, so that yaegi goes
// on to read it (which fails) instead of looking for a package there.
func (f *stopFS) Stat(name string) (fs.FileInfo, error) {
	if !strings.HasPrefix(name, stopPrefix) {
		return os.Stat(name)
	}
	f.mu.Lock()
	p := f.points[name]
	f.mu.Unlock()
	if p != nil {
		close(p.armed)
		<-p.release
	}
	return stopInfo(name), nil
}

// stopInfo is the fs.FileInfo of a stop point: an empty regular file.
type stopInfo string

func (i stopInfo) Name() string       { return string(i) }
func (i stopInfo) Size() int64        { return 0 }
func (i stopInfo) Mode() fs.FileMode  { return 0 }
func (i stopInfo) ModTime() time.Time { return time.Time{} }
func (i stopInfo) IsDir() bool        { return false }
func (i stopInfo) Sys() any           { return nil }

// stopPoint is one armed EvalPathWithContext call (see above).
type stopPoint struct {
	fs       *stopFS
	path     string
	cancel   context.CancelFunc
	armed    chan struct{} // closed when the call's goroutine is parked
	release  chan struct{} // closed to let it go on
	returned chan struct{} // closed when EvalPathWithContext has returned
	err      error         // what it returned; valid once returned is closed
}

// armStop arms yaegi's cancellation: it makes the interpreter a fresh done
// channel, which code executed from now on waits on, and returns the stop
// point that can close it. Callers hold evalMu and call fire or disarm
// before they release it.
func (s *Session) armStop() *stopPoint {
	ctx, cancel := context.WithCancel(context.Background())
	f := s.stopFS
	p := &stopPoint{
		fs:       f,
		path:     stopPrefix + strconv.FormatUint(f.next.Add(1), 10),
		cancel:   cancel,
		armed:    make(chan struct{}),
		release:  make(chan struct{}),
		returned: make(chan struct{}),
	}
	f.mu.Lock()
	f.points[p.path] = p
	f.mu.Unlock()
	in := s.interp
	go func() {
		_, p.err = in.EvalPathWithContext(ctx, p.path)
		close(p.returned)
	}()
	select {
	case <-p.armed:
	case <-p.returned: // yaegi did not stat the path; fire then does nothing
	}
	return p
}

// fire stops the interpreter: interpreted code stops at its next step, and
// the channel operations of code executed since the point was armed
// return. It reports whether yaegi stopped the interpreter.
func (p *stopPoint) fire() bool {
	p.cancel()
	<-p.returned
	p.done()
	return errors.Is(p.err, context.Canceled)
}

// disarm lets the stop point's call return without stopping anything.
func (p *stopPoint) disarm() {
	p.done()
	<-p.returned
	p.cancel()
}

// done releases the parked goroutine and forgets the point.
func (p *stopPoint) done() {
	p.fs.mu.Lock()
	if _, ok := p.fs.points[p.path]; ok {
		delete(p.fs.points, p.path)
		close(p.release)
	}
	p.fs.mu.Unlock()
}

// awaitInterrupted makes a new cell wait for an interrupted one that is
// still inside a compiled call. Callers hold evalMu.
func (s *Session) awaitInterrupted(r *run, out Output) error {
	if s.lingering == nil {
		return nil
	}
	select {
	case <-s.lingering:
		s.lingering = nil
		return nil
	case <-time.After(100 * time.Millisecond):
	}
	s.router.write(Stderr, []byte("kernel: waiting for the interrupted cell's compiled call to return "+
		"(interrupt again to give up; restart the kernel if it never returns)\n"))
	select {
	case <-s.lingering:
		s.lingering = nil
		return nil
	case <-r.ctx.Done():
	}
	msg := "this cell did not run: the interrupted cell is still inside a compiled call"
	return &Error{Name: "Interrupted", Value: msg, Traceback: []string{msg}, err: ErrInterrupted}
}

// stopGoroutines halts every interpreted goroutine when no cell runs, by
// arming a stop point and firing it at once. Nothing is executed, so the
// global frame's run id stays behind (see above). Callers hold evalMu.
func (s *Session) stopGoroutines() {
	s.armStop().fire()
	s.noteStop()
}
