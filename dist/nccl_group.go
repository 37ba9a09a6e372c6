package dist

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// ncclGroup is the in-process side of NewNCCLGroup: its members rendezvous
// in memory, twice per collective. The first round exchanges the members'
// calls (so disagreeing members fail with ErrMismatch, and AllGather learns
// every member's rows); the second issues every member's NCCL call between
// ncclGroupStart and ncclGroupEnd on one OS thread, which is how NCCL wants
// several GPUs driven from one process.
type ncclGroup struct {
	st     *ncclState
	size   int
	thread *osThread // runs ncclCommInitAll, the group calls and ncclCommDestroy

	mu    sync.Mutex
	round *ncclRound
	open  int // members not yet closed
}

// ncclRound is one rendezvous: each member's item, then the outcome.
type ncclRound struct {
	items    []any
	arrived  int
	done     chan struct{}
	finished bool // done is closed
	err      error
}

func (g *ncclGroup) newRound() *ncclRound {
	return &ncclRound{items: make([]any, g.size), done: make(chan struct{})}
}

// finish ends rd with err, once. Callers hold g.mu or own rd alone.
func (rd *ncclRound) finish(err error) {
	if rd.finished {
		return
	}
	rd.finished = true
	rd.err = err
	close(rd.done)
}

// failLocked breaks the group and releases the members waiting in a round
// that is still gathering. Callers hold g.mu.
func (g *ncclGroup) failLocked(err error) {
	g.st.fail(err)
	if rd := g.round; rd.arrived < g.size {
		rd.finish(err)
	}
}

// meet deposits c's item and waits for every member. The last to arrive
// runs last on every item, outside the lock, and every member gets its
// error; a member that waits longer than the timeout for the others breaks
// the group with ErrTimeout naming the ranks that never arrived. It returns
// every member's item.
func (g *ncclGroup) meet(c *ncclComm, name string, item any, last func(items []any) error) ([]any, error) {
	g.mu.Lock()
	if err := g.st.failure(); err != nil {
		g.mu.Unlock()
		return nil, fmt.Errorf("rank %d: %s: group broken: %w", c.rank, name, err)
	}
	rd := g.round
	rd.items[c.rank] = item
	rd.arrived++
	if rd.arrived == g.size {
		g.round = g.newRound()
		g.mu.Unlock()
		err := last(rd.items)
		g.mu.Lock()
		rd.finish(err)
		g.mu.Unlock()
		return rd.items, err
	}
	g.mu.Unlock()

	var expire <-chan time.Time
	if g.st.timeout > 0 {
		timer := time.NewTimer(g.st.timeout)
		defer timer.Stop()
		expire = timer.C
	}
	select {
	case <-rd.done:
	case <-expire:
		g.mu.Lock()
		if rd.arrived < g.size && !rd.finished {
			var missing []int
			for r, it := range rd.items {
				if it == nil {
					missing = append(missing, r)
				}
			}
			g.failLocked(fmt.Errorf("%w: rank %d: %s did not complete in %s: rank(s) %v never arrived", ErrTimeout, c.rank, name, g.st.timeout, missing))
		}
		g.mu.Unlock()
		<-rd.done
	}
	return rd.items, rd.err
}

// agree exchanges the members' calls and checks they fit together.
func (g *ncclGroup) agree(c *ncclComm, call *localCall) ([]*localCall, error) {
	items, err := g.meet(c, call.name, call, func(items []any) error {
		return checkCalls(callsOf(items))
	})
	if err != nil {
		return nil, err
	}
	return callsOf(items), nil
}

func callsOf(items []any) []*localCall {
	calls := make([]*localCall, len(items))
	for r, it := range items {
		calls[r] = it.(*localCall)
	}
	return calls
}

// groupCall is one member's part of a grouped NCCL call.
type groupCall struct {
	rank    int
	handle  uintptr
	stream  uintptr
	enqueue enqueueFunc
	err     error // the member could not prepare its buffers
}

// issue flushes c's device (so that the work queued there before is on its
// stream), then meets the other members; the last one issues every
// member's call inside ncclGroupStart/ncclGroupEnd on the group's thread,
// under the watchdog. It does not wait for the devices.
func (g *ncclGroup) issue(c *ncclComm, name string, f enqueueFunc, prep error) error {
	item := &groupCall{rank: c.rank, handle: c.handle, enqueue: f, err: prep}
	if prep == nil {
		item.err = c.mem.Submit(func(stream uintptr) error {
			item.stream = stream
			return nil
		})
	}
	_, err := g.meet(c, name, item, func(items []any) error {
		for _, it := range items {
			if e := it.(*groupCall).err; e != nil {
				g.st.fail(e)
				return e
			}
		}
		err := c.watch(name, func() error {
			var err error
			g.thread.call(func() { err = g.enqueueAll(name, items) })
			return err
		})
		if err != nil {
			g.st.abort(err)
			return g.st.failure()
		}
		return nil
	})
	return err
}

// enqueueAll issues every member's call as one NCCL group. It runs on the
// group's thread.
func (g *ncclGroup) enqueueAll(name string, items []any) error {
	lib := g.st.lib
	if err := lib.err(-1, "ncclGroupStart", lib.groupStart(), 0); err != nil {
		return err
	}
	var first error
	for _, it := range items {
		gc := it.(*groupCall)
		if err := lib.err(gc.rank, "nccl"+name, gc.enqueue(lib, gc.handle, gc.stream), gc.handle); err != nil && first == nil {
			first = err
		}
	}
	// ncclGroupEnd must close the group even after a failed call.
	if err := lib.err(-1, "ncclGroupEnd ("+name+")", lib.groupEnd(), 0); err != nil && first == nil {
		first = err
	}
	return first
}

// leave closes member c. The first member to leave breaks the group, so
// members that wait for it fail with ErrClosed instead of timing out; the
// last one destroys every member's NCCL communicator and stops the thread.
func (g *ncclGroup) leave(c *ncclComm) error {
	g.mu.Lock()
	g.open--
	if g.size > 1 && g.st.failure() == nil {
		g.failLocked(fmt.Errorf("%w: rank %d left the group", ErrClosed, c.rank))
	}
	last := g.open == 0
	g.mu.Unlock()
	if !last {
		return nil
	}
	defer g.thread.stop()
	st := g.st
	st.mu.Lock()
	released := st.released
	st.released = true
	st.mu.Unlock()
	if released {
		return nil
	}
	var first error
	g.thread.call(func() {
		for r, h := range st.handles {
			if err := st.lib.err(r, "ncclCommDestroy", st.lib.commDestroy(h), 0); err != nil && first == nil {
				first = err
			}
		}
	})
	return first
}

// osThread runs functions one at a time on a goroutine locked to its OS
// thread, for the NCCL calls that must come from one thread (a group's
// ncclGroupStart … ncclGroupEnd) and that change the thread's current CUDA
// device. The thread ends with the goroutine, never unlocked.
type osThread struct {
	work chan func()
}

func newOSThread() *osThread {
	t := &osThread{work: make(chan func())}
	go func() {
		runtime.LockOSThread()
		for f := range t.work {
			f()
		}
	}()
	return t
}

// call runs f on the thread and waits for it.
func (t *osThread) call(f func()) {
	done := make(chan struct{})
	t.work <- func() { f(); close(done) }
	<-done
}

// stop ends the thread after the call under way.
func (t *osThread) stop() { close(t.work) }
