package kernel

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A streamPipe carries a cell's output through a pipe: cells' os.Stdout
// and os.Stderr (stdio.go) and, when the session captures them, file
// descriptors 1 and 2 (capture.go) write into one, and its reader hands
// what arrives to the router.
//
// Output must reach the cell in the order it was written, also relative to
// what goes to the router directly (fmt.Print* and log in interpreted code,
// displays) and before the cell's reply. So whoever is about to write
// directly, or to end the cell, first syncs the pipes: sync returns once
// every byte written into the pipe before it was called has been delivered.
// The reader counts the bytes it takes out of the pipe and the bytes it has
// delivered; sync adds the bytes still in the pipe (FIONREAD) to the first
// count, under the same lock as the read, and waits for the second to reach
// the sum. Nothing is written into the pipe to sync it and nothing sleeps:
// a cell that printed nothing costs one ioctl per pipe.
type streamPipe struct {
	s  Stream
	r  *router
	f  *os.File // the read end
	rc syscall.RawConn

	// settle makes the reader wait settleDelay before reading data that
	// arrived on an idle pipe, unless someone syncs (see settleDelay in
	// capture_unix.go): set on fd 2's pipe when a crash monitor runs.
	settle  atomic.Bool
	syncers atomic.Int32
	hurry   chan struct{} // a sync started: end a settle now

	mu        sync.Mutex
	read      uint64        // bytes taken out of the pipe
	delivered uint64        // bytes handed to the router
	ended     bool          // the reader returned: nothing more comes
	waiting   bool          // someone waits on notify
	notify    chan struct{} // closed when delivered grows or the reader ends, if waiting
	done      chan struct{} // closed when the reader has returned
}

// newStreamPipe starts a reader on f, the read end of a pipe, delivering to
// stream s of r. It takes f over: the reader closes it when the pipe ends.
func newStreamPipe(s Stream, r *router, f *os.File) (*streamPipe, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	p := &streamPipe{s: s, r: r, f: f, rc: rc, hurry: make(chan struct{}, 1),
		notify: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p, nil
}

// run delivers what arrives until the pipe ends (every write end closed).
func (p *streamPipe) run() {
	defer close(p.done)
	defer p.f.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := p.readChunk(buf)
		if n > 0 {
			p.r.write(p.s, buf[:n])
		}
		p.mu.Lock()
		p.delivered += uint64(n)
		if err != nil {
			p.ended = true
		}
		if p.waiting {
			close(p.notify)
			p.notify = make(chan struct{})
			p.waiting = false
		}
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// settleWait waits settleDelay, or less if a sync starts or runs.
func (p *streamPipe) settleWait() {
	// Drop the word of a sync that has ended since (a sync still running
	// counts in syncers: it was added before the word was sent).
	select {
	case <-p.hurry:
	default:
	}
	if p.syncers.Load() > 0 {
		return
	}
	t := time.NewTimer(settleDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.hurry:
	}
}

// sync returns true once everything written into the pipe before the call
// has been handed to the router (or the pipe has ended), false if that did
// not happen by deadline.
func (p *streamPipe) sync(deadline time.Time) bool {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return true
	}
	var pending int
	cerr := p.rc.Control(func(fd uintptr) { pending, _ = unreadBytes(fd) })
	if cerr != nil { // closed under us: the reader is ending
		pending = 0
	}
	target := p.read + uint64(pending)
	if p.delivered >= target {
		p.mu.Unlock()
		return true
	}
	p.syncers.Add(1)
	defer p.syncers.Add(-1)
	select {
	case p.hurry <- struct{}{}:
	default:
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for p.delivered < target && !p.ended {
		p.waiting = true
		ch := p.notify
		p.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return false
		}
		p.mu.Lock()
	}
	p.mu.Unlock()
	return true
}

// wait waits for the reader to return, at most timeout.
func (p *streamPipe) wait(timeout time.Duration) {
	select {
	case <-p.done:
	case <-time.After(timeout):
	}
}
