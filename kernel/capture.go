package kernel

import (
	"bytes"
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

// syncMarker is written into a captured fd to learn when everything written
// before it has been delivered; the reader strips it.
var syncMarker = []byte("\x00\x1b[kiln-sync]\x00")

type fdCapture struct {
	r      *router
	orig   [3]*os.File // duplicates of the original fd 1 and 2
	reader [3]*os.File // the pipes' read ends
	wg     sync.WaitGroup

	mu     sync.Mutex
	sent   [3]uint64
	seen   [3]uint64
	notify chan struct{}
}

// startCapture redirects fd 1 and 2 into r.
func startCapture(r *router) (*fdCapture, error) {
	captureMu.Lock()
	defer captureMu.Unlock()
	if captureActive {
		return nil, errors.New("kernel: file descriptors 1 and 2 are already captured by another session")
	}
	c := &fdCapture{r: r, notify: make(chan struct{})}
	for _, s := range []Stream{Stdout, Stderr} {
		orig, reader, err := redirect(int(s))
		if err != nil {
			c.restore()
			return nil, err
		}
		c.orig[s] = orig
		c.reader[s] = reader
		c.wg.Add(1)
		go c.read(s, reader)
	}
	captureActive = true
	return c, nil
}

// read copies what arrives on one pipe to the router until the pipe closes.
func (c *fdCapture) read(s Stream, f *os.File) {
	defer c.wg.Done()
	defer f.Close()
	buf := make([]byte, 32<<10)
	var data []byte
	read := f.Read
	if s == Stderr {
		read = settledReader(f)
	}
	for {
		n, err := read(buf)
		data = append(data, buf[:n]...)
		for {
			i := bytes.Index(data, syncMarker)
			if i < 0 {
				break
			}
			if i > 0 {
				c.r.write(s, data[:i])
			}
			data = data[i+len(syncMarker):]
			c.marked(s)
		}
		// Hold back a tail that may be the start of a marker.
		keep := partialSuffix(data, syncMarker)
		if err != nil {
			keep = 0
		}
		if len(data) > keep {
			c.r.write(s, data[:len(data)-keep])
		}
		data = append(data[:0], data[len(data)-keep:]...)
		if err != nil {
			return
		}
	}
}

// partialSuffix returns the length of the longest suffix of data that is a
// proper prefix of marker.
func partialSuffix(data, marker []byte) int {
	for k := min(len(marker)-1, len(data)); k > 0; k-- {
		if bytes.Equal(data[len(data)-k:], marker[:k]) {
			return k
		}
	}
	return 0
}

func (c *fdCapture) marked(s Stream) {
	c.mu.Lock()
	c.seen[s]++
	close(c.notify)
	c.notify = make(chan struct{})
	c.mu.Unlock()
}

// sync returns once everything written to fd 1 and 2 before the call has
// been handed to the router, or after timeout.
func (c *fdCapture) sync(timeout time.Duration) {
	var target [3]uint64
	for _, s := range []Stream{Stdout, Stderr} {
		c.mu.Lock()
		c.sent[s]++
		target[s] = c.sent[s]
		c.mu.Unlock()
		if err := writeFD(int(s), syncMarker); err != nil {
			c.mu.Lock()
			c.sent[s]--
			target[s] = 0
			c.mu.Unlock()
		}
	}
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		done := c.seen[Stdout] >= target[Stdout] && c.seen[Stderr] >= target[Stderr]
		ch := c.notify
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}

// close delivers what is pending, puts the original descriptors back and
// waits for the readers to finish.
func (c *fdCapture) close() {
	c.sync(time.Second)
	captureMu.Lock()
	c.restore()
	captureActive = false
	captureMu.Unlock()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
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
	rc, err := c.reader[Stderr].SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { fd2Pipe, err = dupFile(fd, "fd 2 pipe") })
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kernel: crash monitor: %w", err)
	}
	defer fd2Pipe.Close()
	return startCrashMonitor(argv, c.orig[Stderr], fd2Pipe)
}
