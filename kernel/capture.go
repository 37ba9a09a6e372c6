package kernel

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// File-descriptor capture: compiled code (Kiln's own packages, cgo
// libraries, the Go runtime's warnings) writes to fd 1 and 2 directly, not
// through the interpreter's writers. As ipykernel does, the session points
// fd 1 and 2 at pipes (dup2) and streams what comes out of them to the
// running cell, keeping duplicates of the original descriptors for the
// kernel's own logging. It is process-wide: one session at a time.

var (
	captureMu     sync.Mutex
	captureActive bool
)

type fdCapture struct {
	orig  [3]*os.File    // duplicates of the original fd 1 and 2
	pipes [3]*streamPipe // the readers of the pipes now at fd 1 and 2
}

// startCapture redirects fd 1 and 2 into r.
func startCapture(r *router) (*fdCapture, error) {
	captureMu.Lock()
	defer captureMu.Unlock()
	if captureActive {
		return nil, errors.New("kernel: file descriptors 1 and 2 are already captured by another session")
	}
	c := &fdCapture{}
	for _, s := range []Stream{Stdout, Stderr} {
		orig, reader, err := redirect(int(s))
		if err != nil {
			c.restore()
			return nil, err
		}
		c.orig[s] = orig
		if c.pipes[s], err = newStreamPipe(s, r, reader); err != nil {
			reader.Close()
			c.restore()
			return nil, fmt.Errorf("kernel: capture fd %d: %w", s, err)
		}
	}
	captureActive = true
	return c, nil
}

// close delivers what is pending, puts the original descriptors back and
// waits for the readers to finish (a child process that inherited fd 1 or
// 2 may keep a pipe open: then not for long).
func (c *fdCapture) close() {
	deadline := time.Now().Add(time.Second)
	for _, p := range c.pipes {
		if p != nil {
			p.sync(deadline)
		}
	}
	captureMu.Lock()
	c.restore()
	captureActive = false
	captureMu.Unlock()
	for _, p := range c.pipes {
		if p != nil {
			p.wait(time.Until(deadline) + 100*time.Millisecond)
		}
	}
}

func (c *fdCapture) restore() {
	for _, s := range []Stream{Stdout, Stderr} {
		if c.orig[s] != nil {
			_ = restoreFD(int(s), c.orig[s])
			c.orig[s] = nil
		}
	}
}

// startCrashMonitor starts the crash monitor (see crash.go) on the original
// stderr, giving it the read end of fd 2's pipe.
func (c *fdCapture) startCrashMonitor(argv []string) (*crashMonitor, error) {
	var fd2Pipe *os.File
	// SyscallConn, not Fd: Fd would make the pipe blocking under the
	// reader's feet.
	p := c.pipes[Stderr]
	var err error
	cerr := p.rc.Control(func(fd uintptr) { fd2Pipe, err = dupFile(fd, "fd 2 pipe") })
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("kernel: crash monitor: %w", err)
	}
	defer fd2Pipe.Close()
	m, err := startCrashMonitor(argv, c.orig[Stderr], fd2Pipe)
	if err == nil {
		p.settle.Store(true)
	}
	return m, err
}
