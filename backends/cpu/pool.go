package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pool is a set of persistent helper goroutines that kernels hand chunks of
// work to. A kernel call runs on the calling goroutine too, so a pool for w
// workers has w-1 helpers. Helpers are only ever offered a job when they are
// idle, so nested parallel calls and concurrent kernels never wait for a
// busy helper: the caller simply runs the chunks nobody took.
//
// A helper that finishes a job keeps polling for the next one for spinTime
// before it parks: a training step is a chain of kernels a few
// microseconds to a few hundred apart, and handing a job to a polling
// helper is an atomic store, where waking a parked one costs the operating
// system's futex wake-up (tens of microseconds on a virtual machine).
type pool struct {
	work    chan *job // parked helpers receive here
	quit    chan struct{}
	helpers int
	slots   []helperSlot // one per helper, for the polling hand-off
	stopped sync.Once
}

// helperSlot is one helper's mailbox while it polls.
type helperSlot struct {
	state atomic.Int32 // slotBusy, slotPolling or slotClaimed
	job   atomic.Pointer[job]
	_     [48]byte // a cache line of its own
}

// A helper's slot state: busy (running a job or parked), polling for a job,
// or claimed by a dispatcher that is about to store a job in it.
const (
	slotBusy int32 = iota
	slotPolling
	slotClaimed
)

// spinTime is how long an idle helper polls before it parks, and how long
// a caller polls for its helpers to finish before it parks.
const spinTime = 500 * time.Microsecond

// runner is a parallel loop body held in a reusable object, for hot paths
// that must not allocate a closure per call (see parallelRun).
type runner interface{ runChunk(lo, hi int) }

// job is one parallel loop: chunks [0, chunks) of [0, n) in steps of grain,
// each run by fn or, when fn is nil, by r. finished counts the helpers
// done with it (the caller recycles it only when all are).
type job struct {
	fn       func(lo, hi int)
	r        runner
	n        int
	grain    int
	chunks   int64
	next     atomic.Int64
	finished atomic.Int64
	wg       sync.WaitGroup
}

var jobs = sync.Pool{New: func() any { return new(job) }}

func newPool(workers int) *pool {
	p := &pool{work: make(chan *job), quit: make(chan struct{}), helpers: max(workers-1, 0)}
	p.slots = make([]helperSlot, p.helpers)
	for i := range p.helpers {
		go p.helper(&p.slots[i])
	}
	return p
}

func (p *pool) helper(s *helperSlot) {
	for {
		if j := s.poll(); j != nil {
			j.help()
			continue
		}
		select {
		case j := <-p.work:
			j.help()
		case <-p.quit:
			return
		}
	}
}

// poll waits up to spinTime for a dispatcher to hand s a job and returns
// it, or nil when none came (the helper then parks).
func (s *helperSlot) poll() *job {
	s.state.Store(slotPolling)
	if !spin(func() bool { return s.state.Load() == slotClaimed }) &&
		s.state.CompareAndSwap(slotPolling, slotBusy) {
		return nil
	}
	return s.take() // claimed while polling, or just as it gave up
}

// spin polls done for up to spinTime (reading the clock every 256 polls,
// and only once a first round of them has failed) and reports whether done
// became true.
func spin(done func() bool) bool {
	var deadline time.Time
	for i := 1; !done(); i++ {
		if i%256 != 0 {
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(spinTime)
		} else if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// take returns the job a dispatcher that claimed s stores in it.
func (s *helperSlot) take() *job {
	for {
		if j := s.job.Swap(nil); j != nil {
			s.state.Store(slotBusy)
			return j
		}
		runtime.Gosched()
	}
}

// help runs a job's chunks on a helper and reports it done.
func (j *job) help() {
	j.run()
	j.wg.Done()
	j.finished.Add(1) // the last use of j by this helper
}

// stop ends the helpers once they finish what they are running.
func (p *pool) stop() { p.stopped.Do(func() { close(p.quit) }) }

// run takes chunks until none are left.
func (j *job) run() {
	for {
		c := j.next.Add(1) - 1
		if c >= j.chunks {
			return
		}
		lo := int(c) * j.grain
		if j.fn != nil {
			j.fn(lo, min(lo+j.grain, j.n))
		} else {
			j.r.runChunk(lo, min(lo+j.grain, j.n))
		}
	}
}

// parallel splits [0, n) into chunks of grain elements (the last may be
// shorter) and runs fn on every chunk, on the caller and any idle helpers.
// Chunk boundaries depend only on n and grain, never on the number of
// workers or on which goroutine runs a chunk, so per-chunk arithmetic (and
// any combination of per-chunk results in chunk order) is reproducible.
func (b *Backend) parallel(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	if chunks == 1 || b.pool.helpers == 0 {
		for lo := 0; lo < n; lo += grain {
			fn(lo, min(lo+grain, n))
		}
		return
	}
	b.dispatch(n, grain, chunks, fn, nil)
}

// parallelRun is parallel with the body in r, so that a caller that keeps r
// in a pool allocates nothing.
func (b *Backend) parallelRun(n, grain int, r runner) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	if chunks == 1 || b.pool.helpers == 0 {
		for lo := 0; lo < n; lo += grain {
			r.runChunk(lo, min(lo+grain, n))
		}
		return
	}
	b.dispatch(n, grain, chunks, nil, r)
}

// dispatch runs a job of several chunks on the caller and idle helpers:
// polling ones first (an atomic hand-off), then parked ones (a channel
// send, which only succeeds when one is waiting).
func (b *Backend) dispatch(n, grain, chunks int, fn func(lo, hi int), r runner) {
	p := b.pool
	j := jobs.Get().(*job)
	j.fn, j.r, j.n, j.grain, j.chunks = fn, r, n, grain, int64(chunks)
	j.next.Store(0)
	j.finished.Store(0)
	want, given := min(p.helpers, chunks-1), 0
	for i := range p.slots {
		if given == want {
			break
		}
		if s := &p.slots[i]; s.state.CompareAndSwap(slotPolling, slotClaimed) {
			j.wg.Add(1)
			s.job.Store(j)
			given++
		}
	}
offer:
	for given < want {
		j.wg.Add(1)
		select {
		case p.work <- j:
			given++
		default:
			j.wg.Done() // every helper is busy: do the rest here
			break offer
		}
	}
	j.run()
	// the helpers' last chunks end about when the caller's does: poll
	// before parking on the wait group, as a parked caller waits for the
	// operating system to wake it
	if !spin(func() bool { return j.finished.Load() >= int64(given) }) {
		j.wg.Wait()
		for j.finished.Load() < int64(given) { // a helper between Done and its last touch of j
			runtime.Gosched()
		}
	}
	j.fn, j.r = nil, nil
	jobs.Put(j)
}

// parallelTasks runs fn(i) for i in [0, n), one task per index; tasks must be
// large enough to amortise the hand-off.
func (b *Backend) parallelTasks(n int, fn func(i int)) {
	b.parallel(n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			fn(i)
		}
	})
}

// grainFor returns a chunk size for n units of work costing about cost
// element-operations each, so that chunks are worth handing off (about 32K
// element-operations) and there are not too many of them. It depends only on
// its arguments, so chunking stays independent of the worker count.
func grainFor(n, cost int) int {
	const target = 1 << 15
	g := target / max(cost, 1)
	return max(g, 1, (n+4095)/4096)
}
