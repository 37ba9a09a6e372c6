package cpu

import (
	"sync"
	"sync/atomic"
)

// pool is a set of persistent helper goroutines that kernels hand chunks of
// work to. A kernel call runs on the calling goroutine too, so a pool for w
// workers has w-1 helpers. Helpers are only ever offered a job when they are
// idle (a non-blocking send on an unbuffered channel), so nested parallel
// calls and concurrent kernels never wait for a busy helper: the caller
// simply runs the chunks nobody took.
type pool struct {
	work    chan *job
	quit    chan struct{}
	helpers int
	stopped sync.Once
}

// runner is a parallel loop body held in a reusable object, for hot paths
// that must not allocate a closure per call (see parallelRun).
type runner interface{ runChunk(lo, hi int) }

// job is one parallel loop: chunks [0, chunks) of [0, n) in steps of grain,
// each run by fn or, when fn is nil, by r.
type job struct {
	fn     func(lo, hi int)
	r      runner
	n      int
	grain  int
	chunks int64
	next   atomic.Int64
	wg     sync.WaitGroup
}

var jobs = sync.Pool{New: func() any { return new(job) }}

func newPool(workers int) *pool {
	p := &pool{work: make(chan *job), quit: make(chan struct{}), helpers: max(workers-1, 0)}
	for range p.helpers {
		go p.helper()
	}
	return p
}

func (p *pool) helper() {
	for {
		select {
		case j := <-p.work:
			j.run()
			j.wg.Done()
		case <-p.quit:
			return
		}
	}
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

// dispatch runs a job of several chunks on the caller and idle helpers.
func (b *Backend) dispatch(n, grain, chunks int, fn func(lo, hi int), r runner) {
	p := b.pool
	j := jobs.Get().(*job)
	j.fn, j.r, j.n, j.grain, j.chunks = fn, r, n, grain, int64(chunks)
	j.next.Store(0)
offer:
	for range min(p.helpers, chunks-1) {
		j.wg.Add(1)
		select {
		case p.work <- j:
		default:
			j.wg.Done() // every helper is busy: do the rest here
			break offer
		}
	}
	j.run()
	j.wg.Wait()
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
