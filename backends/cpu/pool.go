package cpu

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// pool is a set of persistent helper goroutines that kernels hand chunks of
// work to. A kernel call runs on the calling goroutine too, so a pool for w
// workers has w-1 helpers. It is built to stay fast when the operating
// system takes cores away (other processes, a quota), which a design
// that assumes a dedicated core gets badly wrong: a helper that was handed
// a chunk and then descheduled holds up the whole call for a scheduler
// time slice (milliseconds), and a helper that spins waiting for work
// takes the core the caller or another process needed.
//
//   - Dynamic chunks. A job is cut into chunks whose boundaries depend
//     only on its size; the caller and the helpers claim them one at a
//     time from an atomic counter, so the share of a helper that has not
//     started yet is run by whoever is free, and results never depend on
//     who ran which chunk.
//   - A join that waits for chunks, not for helpers. The caller waits only
//     for chunks that a helper has claimed and is running. A helper that
//     arrives after the work is gone finds no chunk and leaves; the job
//     is reference-counted, so whoever lets go of it last recycles it.
//   - Bounded spin, then park. An idle helper polls for the next job for as
//     long as waking it from sleep has lately taken (the ski-rental rule:
//     never more than twice the cost of the better choice in hindsight),
//     within [minSpin, maxSpin], then sleeps on a channel; wake-ups longer
//     than maxSpin mean the cores are oversubscribed, and the helper then
//     polls only minSpin, as the core it would hold is one that the caller
//     or another process is waiting for. A caller waiting for a running
//     chunk polls for about the length of a chunk, then sleeps until the
//     chunk's finisher wakes it, so that its core is free for the helper
//     it waits for.
//   - Wake only a helper that can help. A job wakes a parked helper only
//     when it is at least wakeFactor times as long as a wake-up has lately
//     taken: beside a busy process a wake-up takes 0.2 to 2 ms, and a
//     helper woken for a 50 µs job finds the work gone, having cost the
//     caller a system call and competed with it for a core.
//   - Serial when sharing does not pay. For each call site and size, a
//     tuner (sched_tuner.go) measures in every parallel job its wall time
//     against the time the caller's own chunks say it would have taken
//     alone, and runs the site serially while sharing costs more than it
//     saves (a job too small for a hand-off, helpers descheduled in their
//     chunks), trying parallel again now and then at a bounded cost.
//   - Alone, the cheaper way. A job whose caller runs every chunk itself
//     (the tuner chose serial, or no helper was free or worth waking) runs
//     in one piece where its runner has a cheaper form for one goroutine
//     (soloRunner: a GEMM cut into strips runs as one GEMM, as on a
//     1-worker Backend), so that a 2-worker Backend beside a busy process
//     does not pay for a split nobody shares.
//   - Late joins, on a quiet machine. A helper that becomes idle while a
//     job runs, having missed the hand-off (it was finishing another job,
//     or waking for one the caller has done meanwhile), is handed the job
//     by the caller before its next chunk (lead), and a job that a helper
//     is about to be free for runs in chunks rather than in one piece
//     (finishing).
//   - Late helpers step aside. A helper that arrives when only the last
//     chunk is left, and the caller is about to take it, leaves it (see
//     tooLate): taking it would risk the caller waiting for a helper that
//     may be descheduled at any moment.
//   - Helpers keep off their caller's core while a core is free of other
//     processes' threads (refreshLimit counts them). Beside one busy
//     process on a 2-core machine, a 1-thread run gets the free core to
//     itself, while a helper that a 2-thread run wakes is put on its
//     caller's core (the other one is busy), where it only takes turns
//     with the caller, at the cost of the switches: such a helper leaves
//     the job to the caller (onCallersCPU), and parked helpers are not
//     woken while most wake-ups land there (worthWaking).
//   - Quotas. Jobs use at most min(GOMAXPROCS, the cgroup CPU limit) - 1
//     helpers (sysinfo.go), however many the Backend has.
//
// Helpers are only ever offered a job when they are idle (spinning or
// parked), so nested parallel calls and concurrent kernels never wait for a
// busy helper: the caller simply runs the chunks nobody took. A panic in a
// chunk, on any goroutine, is re-raised on the caller once the chunks
// already running have finished; chunks not yet started are skipped.
type pool struct {
	helpers int
	slots   []helperSlot
	quit    chan struct{}
	stopped sync.Once

	wakeup  atomic.Int64 // ns from handing a job to a parked helper to its start, moving average
	wokeAt  atomic.Int64 // when a job last woke a helper that worthWaking would not have (ns since epoch)
	crowded atomic.Int64 // share of woken helpers lately put on their caller's processor (one = 1024), moving average
	others  atomic.Int64 // threads of other processes running or waiting for a processor (one = 1024), moving average; -1: unknown
	spare   atomic.Bool  // some processor has no other process's thread to run (see refreshLimit)
	usable  atomic.Int32 // helpers a job may use now (see refreshLimit)
	limitAt atomic.Int64 // when usable was computed (monotonic ns since epoch)
	tune    tuner
	forced  int32 // tests: forceParallel or forceSerial bypass the tuner; set before use
}

// Values of pool.forced.
const (
	forceParallel int32 = 1 + iota
	forceSerial
)

// helperSlot is one helper's mailbox.
type helperSlot struct {
	state atomic.Int32 // slotBusy, slotSpinning, slotParked or slotClaimed
	wake  chan *job    // capacity 1; only the dispatcher that claimed the slot sends
	// job is the job last handed to the helper, until it is idle again
	// (see finishing)
	job atomic.Pointer[job]
	_   [40]byte // a cache line of its own
}

// A helper's state: running a job, spinning for the next one, parked on
// its channel, or claimed by a dispatcher that is sending it a job.
const (
	slotBusy int32 = iota
	slotSpinning
	slotParked
	slotClaimed
)

// Spin budgets. An idle helper spins as long as a wake-up lately took,
// within [minSpin, maxSpin]: on an idle machine tens of microseconds, on a
// crowded one up to maxSpin, which bounds the time a helper takes from
// other processes between two jobs. A caller waiting for running chunks
// spins about two chunk lengths, within [joinSpin, maxJoinSpin].
const (
	minSpin     = 20 * time.Microsecond
	maxSpin     = 300 * time.Microsecond
	joinSpin    = 2 * time.Microsecond
	maxJoinSpin = 50 * time.Microsecond
)

// limitRefresh is how often a pool re-reads GOMAXPROCS (which the runtime
// moves when the cgroup limit changes, or a program sets it).
const limitRefresh = 100 * time.Millisecond

// epoch is the origin of the pool's monotonic clock.
var epoch = time.Now()

// sinceEpoch returns the monotonic time in ns since epoch.
func sinceEpoch() int64 { return int64(time.Since(epoch)) }

// runner is a parallel loop body held in a reusable object, for hot paths
// that must not allocate a closure per call (see parallelRun).
type runner interface{ runChunk(lo, hi int) }

// costed is implemented by runners whose jobs differ in cost at one number
// of chunks (GEMM strips); the cost, in any unit, tells the tuner's sites
// apart (see pool_cost.go).
type costed interface{ parallelCost() int }

// soloRunner is implemented by runners whose whole job has a cheaper form
// on one goroutine than its chunks run one after another (a GEMM cut into
// strips for several workers, each strip a GEMM with its own set-up and
// packing: gemmStrips). The pool runs that form whenever the caller would
// run every chunk itself: the tuner chose to run the job serially, no
// processor is left for a helper, or no helper took it (beside a busy
// process, where the helpers are parked and a short job is not worth a
// wake-up).
type soloRunner interface{ runAlone() }

// job is one parallel loop: chunks [0, chunks) of [0, n) in steps of grain,
// each run by fn or, when fn is nil, by r.
type job struct {
	fn     func(lo, hi int)
	r      runner
	n      int
	grain  int
	chunks int64
	next   atomic.Int64 // the next chunk to claim
	done   atomic.Int64 // chunks finished (run, or skipped after a panic)
	refs   atomic.Int32 // the caller and the helpers handed j; the last to let go recycles it
	parked atomic.Int32 // 1 while the caller sleeps on wake, 2 once a finisher signalled it
	cpu    int          // the processor the caller ran on when it handed j out; -1: unknown, or no processor spare (see onCallersCPU)
	sent   int64        // monotonic ns (sinceEpoch) when the caller handed j out
	late   int64        // monotonic ns after which a helper arriving for the last chunk leaves it to the caller; 0: never
	wake   chan struct{}
	failed atomic.Pointer[taskFailure]
}

// taskFailure is the first panic of a job's chunks.
type taskFailure struct{ value any }

// errGoexit is re-raised on the caller when a chunk called runtime.Goexit
// (t.FailNow from a helper, say), which would otherwise lose the chunk.
var errGoexit = errors.New("cpu: a parallel task called runtime.Goexit")

var jobs = sync.Pool{New: func() any { return &job{wake: make(chan struct{}, 1)} }}

func newPool(workers int) *pool {
	p := &pool{quit: make(chan struct{}), helpers: max(workers-1, 0)}
	p.others.Store(-1)
	p.slots = make([]helperSlot, p.helpers)
	for i := range p.slots {
		p.slots[i].wake = make(chan *job, 1)
		p.slots[i].state.Store(slotBusy) // until it is ready for work
		go p.helper(&p.slots[i])
	}
	p.refreshLimit(time.Now())
	return p
}

// stop ends the helpers once they finish what they are running.
func (p *pool) stop() { p.stopped.Do(func() { close(p.quit) }) }

// refreshLimit recomputes how many helpers a job may use: one fewer than
// the processors the process may run on at once, GOMAXPROCS or the cgroup
// CPU limit rounded up, whichever is lower.
//
// It also counts the threads of other processes that want a processor,
// to tell two ways a machine is not idle apart. With fewer of them than
// processors (a busy process on one core of two), a processor is spare:
// a thread alone gets a core to itself, and a helper that the operating
// system puts on its caller's core, the others being taken, gains
// nothing, so helpers keep off it (see onCallersCPU). With as many or
// more (every core crowded), each thread gets its share of a core
// wherever it runs, and a second thread of ours gets a second share, on
// the caller's core too.
func (p *pool) refreshLimit(now time.Time) {
	procs := runtime.GOMAXPROCS(0)
	if l := cgroupCPULimit(); l > 0 {
		procs = min(procs, l)
	}
	p.usable.Store(int32(min(p.helpers, max(procs-1, 0))))
	p.limitAt.Store(int64(now.Sub(epoch)))

	r := runnableTasks()
	if r < 0 {
		p.others.Store(-1)
		p.spare.Store(true) // unknown: keep helpers off their caller's core
		return
	}
	ours := 1 // the caller
	for i := range p.slots {
		if p.slots[i].state.Load() != slotParked {
			ours++
		}
	}
	x, old := int64(max(r-ours, 0))*one, p.others.Load()
	if old < 0 {
		old = x
	}
	avg := old + (x-old)/4 // over the last few samples, limitRefresh apart
	p.others.Store(avg)
	p.spare.Store(avg < int64(runtime.NumCPU())*one)
}

// ---------------------------------------------------------------- helpers

func (p *pool) helper(s *helperSlot) {
	clean := false
	defer func() {
		if !clean { // a chunk called runtime.Goexit on this goroutine: replace it
			go p.helper(s)
		}
	}()
	spin := true
	for {
		j, woken := p.idle(s, spin)
		if j == nil {
			clean = true
			return
		}
		shared := j.onCallersCPU()
		if woken && j.cpu >= 0 {
			x := int64(0)
			if shared {
				x = one
			}
			old := p.crowded.Load()
			p.crowded.Store(old + (x-old)/8) // racy, as noteWakeup
		}
		spin = !shared // spinning on the caller's core would take it from the caller
		st := poolStats.Load()
		switch {
		case shared:
			if st != nil {
				st.shared.Add(1)
			}
		case j.tooLate():
			if st != nil {
				st.late.Add(1)
			}
		default:
			ran := j.work()
			if st != nil {
				st.helped.Add(int64(ran))
			}
		}
		s.job.Store(nil)
		j.release()
	}
}

// onCallersCPU reports whether the helper calling it runs on the processor
// that j's caller ran on when it handed j out, and a processor is spare
// (j.cpu is -1 otherwise): the operating system, finding every other core
// busy, has woken it on its caller's core, or left it spinning there.
// Its chunks would only take turns with the caller's, and the job would
// end no sooner than if the caller ran them all, later by the switches;
// such a helper leaves the job to the caller, and parks without spinning.
func (j *job) onCallersCPU() bool {
	return j.cpu >= 0 && !placeBlind.Load() && currentCPU() == j.cpu
}

// placeBlind turns off the rules that keep helpers off their caller's
// core (onCallersCPU, and the share of wake-ups landing there in
// worthWaking), so that the load harness (pool_busy_test.go) can measure
// the pool with and without them, interleaved in one run, and tests that
// need a helper to take chunks wherever it runs.
var placeBlind atomic.Bool

// idle waits for s's next job: it spins for the budget (when spin), then
// parks. It returns the job and whether it was woken from parking, or nil
// when the pool stops.
func (p *pool) idle(s *helperSlot, spin bool) (*job, bool) {
	s.state.Store(slotSpinning)
	budget := time.Duration(0)
	if spin {
		budget = p.spinBudget()
	}
	if !spinUntil(func() bool { return s.state.Load() == slotClaimed }, budget) &&
		s.state.CompareAndSwap(slotSpinning, slotParked) {
		select {
		case j := <-s.wake:
			s.state.Store(slotBusy)
			w := sinceEpoch() - j.sent
			p.noteWakeup(w)
			if st := poolStats.Load(); st != nil {
				st.wakeNs.Add(w)
				st.wakes.Add(1)
			}
			return j, true
		case <-p.quit:
			return nil, false
		}
	}
	j := <-s.wake // claimed while spinning, or just as it gave up
	s.state.Store(slotBusy)
	return j, false
}

// spinBudget is how long an idle helper polls for a job before it parks:
// as long as a wake-up lately took, within [minSpin, maxSpin]. When
// wake-ups take longer than maxSpin, the threads that want a core wait
// for one (a busy process beside us, more threads than cores): a spin
// cannot cover such a wake-up anyway, and the core it holds is one that
// the caller, with work to do, or the other process is waiting for, so
// the helper polls only minSpin (see latencyBlind).
//
// On a quiet machine (see quiet) the helper polls maxSpin whatever a
// wake-up takes: the core it holds is one nobody else wants, and a gap
// between jobs a little longer than a wake-up (a garbage collection, an
// interrupt) would otherwise park it, and a parked helper is often not
// worth waking for the next short job (see worthWaking).
func (p *pool) spinBudget() time.Duration {
	if p.quiet() {
		return maxSpin
	}
	w := time.Duration(p.wakeup.Load())
	if !latencyBlind.Load() && w > maxSpin {
		return minSpin
	}
	return min(max(w, minSpin), maxSpin)
}

// quiet reports whether the machine looks quiet: on average, lately, less
// than half a thread of other processes ran or waited for a processor
// (see refreshLimit). Beside a busy process it does not.
func (p *pool) quiet() bool {
	if quietBlind.Load() {
		return false
	}
	o := p.others.Load()
	return o >= 0 && o < one/2
}

// quietBlind turns off the rules for a quiet machine (spinBudget's and
// worthWaking's), so that benchmarks can measure the pool with and
// without them, interleaved in one run.
var quietBlind atomic.Bool

// noteWakeup adds a parked helper's wake-up time to the moving average,
// bounded (a thread can wait tens of milliseconds for a core on a crowded
// machine; the budget it sets is bounded by maxSpin anyway).
func (p *pool) noteWakeup(ns int64) {
	ns = min(ns, int64(2*maxSpin))
	old := p.wakeup.Load()
	p.wakeup.Store(old + (ns-old)/8) // racy read-modify-write: a lost update only blurs the average
}

// wakeWorth is the serial time under which a job does not wake a parked
// helper: the wake-up costs the caller a system call, and the helper
// would start when the caller has done most of the work.
const wakeWorth = 40 * time.Microsecond

// A job at least wakeWorth long wakes a parked helper only when its serial
// time is at least wakeFactor times the wake-up time the pool measured
// lately. A helper that starts L after the hand-off can take at most half
// of the S-L left of a job of S, saving (S-L)/2; below S = 2L that is at
// most a quarter of the job, less than what the wake-up costs when the
// cores are shared: the caller's system call, and a woken thread that,
// once it finds the work gone, competes for a core with the caller while
// it spins. Beside a busy process (wake-ups of 0.2 to 2 ms), waking for
// every 128³ GEMM (50 µs) made 2 workers 0.64 to 0.77 times as fast as 1,
// with 96% of the woken helpers arriving after the last chunk was taken;
// without those wake-ups, 0.95 to 0.97, as fast as running serially.
//
// Nor does a job wake a parked helper while a processor is spare and more
// than half the helpers woken lately were put on their caller's processor
// (see onCallersCPU): such a helper leaves the job, having cost the
// caller a system call and two switches of its core.
//
// As the pool learns the wake-up time and place only from wake-ups, one
// job in rewakeEvery wakes a helper whatever they were, so that they
// follow the machine when the load goes away. On a quiet machine (see
// quiet) one job in quietRewake does, as long as the place rule allows:
// a helper that parked in a gap between a stream of short jobs (at 128³
// a wake-up, about 100 µs on a virtual machine, is twice the job) is
// otherwise back only after rewakeEvery, hundreds of jobs run by the
// caller alone, while the wake-up costs the caller a system call, at
// most once per quietRewake, and the woken helper then spins (see
// spinBudget) and takes the next jobs.
const (
	wakeFactor  = 2
	rewakeEvery = 20 * time.Millisecond
	quietRewake = time.Millisecond
)

// latencyBlind turns off the rules that weigh the measured wake-up time
// (worthWaking's wakeFactor, spinBudget's short spin when wake-ups are
// slow), so that the load harness (pool_busy_test.go) can measure the pool
// with and without them, interleaved in one run, and tests can check both.
var latencyBlind atomic.Bool

// worthWaking reports whether a job of site, handed out at now (ns since
// epoch), is worth waking a parked helper.
func (p *pool) worthWaking(site *site, now int64) bool {
	q := site.ser.Load()
	switch {
	case q == 0: // not measured yet
		return true
	case time.Duration(q) < wakeWorth:
		return false
	case !placeBlind.Load() && p.spare.Load() && p.crowded.Load() > one/2:
		// most woken helpers land on their caller's processor: only the
		// wake-up that measures again, below
	case latencyBlind.Load() || q >= wakeFactor*p.wakeup.Load():
		return true
	case p.quiet():
		last := p.wokeAt.Load()
		return now-last > int64(quietRewake) && p.wokeAt.CompareAndSwap(last, now)
	}
	last := p.wokeAt.Load()
	return now-last > int64(rewakeEvery) && p.wokeAt.CompareAndSwap(last, now)
}

// spinUntil polls cond for up to d (reading the clock only after 64 polls
// have failed, and every 64 after) and reports whether it became true.
func spinUntil(cond func() bool, d time.Duration) bool {
	var deadline time.Time
	for i := 1; ; i++ {
		if cond() {
			return true
		}
		if i%64 != 0 {
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(d - 100*time.Nanosecond) // about what 64 polls took
		} else if time.Now().After(deadline) {
			return cond()
		}
	}
}

// ---------------------------------------------------------------- jobs

// tooLate reports whether a helper arriving now should leave j alone: only
// the last chunk is left and the caller, done with its own about now, is
// likely to start it before the helper would finish it. Taking it then
// risks the worst case, the caller waiting for a helper that the operating
// system deschedules in the middle of the chunk.
func (j *job) tooLate() bool {
	return j.late != 0 && j.chunks-j.next.Load() <= 1 && sinceEpoch() > j.late
}

// work claims and runs chunks until none are left and returns how many it
// ran. After a panic the remaining chunks are counted done unrun.
func (j *job) work() (ran int) {
	for {
		left, r := j.runNext()
		if !left {
			return ran
		}
		if r {
			ran++
		}
	}
}

// runNext claims the next chunk and runs it, or after a panic counts it done
// unrun (ran false); left is false when no chunk was left to claim.
func (j *job) runNext() (left, ran bool) {
	c := j.next.Add(1) - 1
	if c >= j.chunks {
		return false, false
	}
	if j.failed.Load() == nil {
		j.runChunk(c)
		ran = true
	}
	j.finish()
	return true, ran
}

// runChunk runs chunk c, recording a panic instead of unwinding. A chunk
// that calls runtime.Goexit is recorded and counted done here, as the
// goroutine does not come back to work's loop.
func (j *job) runChunk(c int64) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if v := recover(); v != nil {
			j.failed.CompareAndSwap(nil, &taskFailure{v})
			return
		}
		j.failed.CompareAndSwap(nil, &taskFailure{errGoexit})
		j.finish()
	}()
	lo := int(c) * j.grain
	hi := min(lo+j.grain, j.n)
	if j.fn != nil {
		j.fn(lo, hi)
	} else {
		j.r.runChunk(lo, hi)
	}
	returned = true
}

// finish counts a chunk done and wakes the caller if it sleeps on the last.
func (j *job) finish() {
	if j.done.Add(1) == j.chunks && j.parked.CompareAndSwap(1, 2) {
		j.wake <- struct{}{}
	}
}

// join waits until every chunk is done: it spins for up to spin, then
// sleeps until the last chunk's finisher wakes it. It reports whether it
// slept.
func (j *job) join(spin time.Duration) bool {
	if spinUntil(func() bool { return j.done.Load() == j.chunks }, spin) {
		return false
	}
	j.parked.Store(1)
	if j.done.Load() < j.chunks || !j.parked.CompareAndSwap(1, 0) {
		<-j.wake // the finisher saw parked == 1 and sends (or has sent)
	}
	return true
}

// release drops one reference to j, recycling it on the last.
func (j *job) release() {
	if j.refs.Add(-1) == 0 {
		j.fn, j.r = nil, nil
		j.failed.Store(nil)
		jobs.Put(j)
	}
}

// ---------------------------------------------------------------- dispatch

// parallel splits [0, n) into chunks of grain elements (the last may be
// shorter) and runs fn on every chunk, on the caller and any idle helpers,
// or on the caller alone when the tuner finds that faster. Chunk boundaries
// depend only on n and grain, never on the number of workers or on which
// goroutine runs a chunk, so per-chunk arithmetic (and any combination of
// per-chunk results in chunk order) is reproducible. A panic in fn is
// re-raised here.
func (b *Backend) parallel(n, grain int, fn func(lo, hi int)) {
	b.parallelAt(codeOf(fn), n, grain, fn)
}

// parallelAt is parallel for the call site code (the tuner's key).
func (b *Backend) parallelAt(code uintptr, n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	if chunks == 1 || b.pool.helpers == 0 {
		serialRun(n, grain, fn, nil)
		return
	}
	b.pool.dispatch(n, grain, chunks, fn, nil, siteKey(code, n, grain, 0))
}

// codeOf returns the address of fn's code, which tells call sites apart (a
// func value points to a record whose first word is that address).
func codeOf[F ~func(lo, hi int) | ~func(i int)](fn F) uintptr {
	return **(**uintptr)(unsafe.Pointer(&fn))
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
		serialRun(n, grain, nil, r)
		return
	}
	cost := 0
	if c, ok := r.(costed); ok {
		cost = c.parallelCost()
	}
	typ := uintptr((*[2]unsafe.Pointer)(unsafe.Pointer(&r))[0]) // r's dynamic type tells call sites apart
	b.pool.dispatch(n, grain, chunks, nil, r, siteKey(typ, n, grain, cost))
}

// dispatch runs a job of several chunks, on the caller alone or on the
// caller and idle helpers as the tuner's site for key chooses, and reports
// the time it took to the site.
func (p *pool) dispatch(n, grain, chunks int, fn func(lo, hi int), r runner, key uint64) {
	start := time.Now()
	if time.Duration(int64(start.Sub(epoch))-p.limitAt.Load()) > limitRefresh {
		p.refreshLimit(start)
	}
	want := min(int(p.usable.Load()), chunks-1)
	if want == 0 { // GOMAXPROCS or the quota leave no processor for a helper
		serialRun(n, grain, fn, r)
		return
	}
	site := p.tune.site(key)
	par, try := true, false
	switch p.forced {
	case forceParallel:
	case forceSerial:
		par = false
	default:
		par, try = site.choose()
	}
	st := poolStats.Load()
	if st != nil {
		st.jobs.Add(1)
	}
	if !par {
		serialRun(n, grain, fn, r)
		site.recordSerial(time.Since(start))
		if st != nil {
			st.serial.Add(1)
			st.serialWall.Add(int64(time.Since(start)))
		}
		return
	}

	j := jobs.Get().(*job)
	j.fn, j.r, j.n, j.grain, j.chunks = fn, r, n, grain, int64(chunks)
	j.next.Store(0)
	j.done.Store(0)
	j.parked.Store(0)
	j.cpu = -1
	if p.spare.Load() {
		j.cpu = currentCPU()
	}
	j.sent, j.late = int64(start.Sub(epoch)), 0
	if q := site.ser.Load(); q > 0 {
		j.late = j.sent + q/int64(chunks)/2 // half a chunk in
	}
	j.refs.Store(int32(1 + want))
	// spinning helpers first (a channel send to a goroutine on a core); parked
	// ones only for jobs worth a wake-up
	given := p.offer(j, want, slotSpinning)
	if given < want && (p.forced == forceParallel || p.worthWaking(site, j.sent)) {
		woken := p.offer(j, want-given, slotParked)
		given += woken
		if st != nil {
			st.woken.Add(int64(woken))
		}
	}
	if given < want {
		j.refs.Add(int32(given - want))
	}
	quiet := p.quiet() // late joins only then: see lead
	if s, ok := r.(soloRunner); ok && given == 0 && !(quiet && p.finishing()) {
		// nobody else holds j: the caller runs the whole job its own way
		j.release()
		s.runAlone()
		elapsed := time.Since(start)
		site.recordSerial(elapsed) // nobody helped: a serial run
		if st != nil {
			st.alone.Add(1)
			st.serialWall.Add(int64(elapsed))
		}
		return
	}

	began := time.Now()
	missing := 0
	if quiet {
		missing = want - given
	}
	ran, late := p.lead(j, missing)
	given += late
	if st != nil {
		st.lateJoins.Add(int64(late))
	}
	own := time.Since(began) // the caller's chunks
	spin := p.joinBudget(own, ran, quiet)
	var joined time.Time // for the counters only: no clock read on the hot path otherwise
	if st != nil {
		joined = time.Now()
	}
	slept := j.join(spin)
	elapsed := time.Since(start)
	if st != nil {
		w := time.Since(joined)
		st.joinWait.Add(int64(w))
		if w > time.Millisecond {
			st.joinLong.Add(1)
		}
		if slept {
			st.joinSlept.Add(1)
		} else {
			st.joinSpun.Add(1)
		}
		if try {
			st.tries.Add(1)
		}
		if given == 0 {
			st.alone.Add(1)
		}
		if ran > 0 {
			st.parWall.Add(int64(elapsed))
			st.parEst.Add(int64(own * time.Duration(chunks) / time.Duration(ran)))
		}
	}
	failed := j.failed.Load()
	j.release()

	switch {
	case given == 0:
		site.recordSerial(elapsed) // nobody helped: a serial run
	case ran > 0:
		site.recordParallel(elapsed, own*time.Duration(chunks)/time.Duration(ran), try)
	}
	if failed != nil {
		panic(failed.value)
	}
}

// joinBudget is how long a caller that ran ran chunks in own polls for
// the helpers' running chunks before it sleeps: about two of its chunks,
// within [joinSpin, maxJoinSpin], and on a quiet machine (quiet, as the
// dispatcher found it: see pool.quiet) at least as long as a wake-up has
// lately taken, within maxSpin, as an idle helper polls (spinBudget): the
// core it holds is one nobody else wants, and a caller that sleeps ends
// the job, and starts the next, a wake-up later than the helpers' last
// chunk.
func (p *pool) joinBudget(own time.Duration, ran int, quiet bool) time.Duration {
	spin := maxJoinSpin
	if ran > 0 {
		spin = min(max(2*own/time.Duration(ran), joinSpin), maxJoinSpin)
	}
	if quiet {
		spin = max(spin, min(time.Duration(p.wakeup.Load()), maxSpin))
	}
	return spin
}

// serialRun runs the chunks of [0, n) in order on the caller (r's whole
// job in one piece where r is a soloRunner).
func serialRun(n, grain int, fn func(lo, hi int), r runner) {
	if s, ok := r.(soloRunner); ok && fn == nil {
		s.runAlone()
		return
	}
	for lo := 0; lo < n; lo += grain {
		if fn != nil {
			fn(lo, min(lo+grain, n))
		} else {
			r.runChunk(lo, min(lo+grain, n))
		}
	}
}

// offer hands j to up to count helpers in state from and returns how many
// took it.
func (p *pool) offer(j *job, count int, from int32) int {
	given := 0
	for i := range p.slots {
		if given == count {
			break
		}
		if s := &p.slots[i]; s.state.Load() == from && s.state.CompareAndSwap(from, slotClaimed) {
			s.job.Store(j)
			s.wake <- j
			given++
		}
	}
	return given
}

// lead is the caller's share of j: it claims and runs chunks as work does
// and, while missing helpers that j could use did not take it when it was
// handed out, offers it before each chunk to any helper that has become
// idle and spins since (no wake-ups: a parked helper stays parked). It
// returns the chunks it ran and the helpers that joined late.
//
// Such a helper was finishing another job, typically one that a wake-up
// brought it to too late: beside a stream of jobs, a helper woken for a
// short one (the packing before a GEMM's strips) arrives when the caller
// has run it all and moved on to the next, which without a late hand-off
// the caller then ran alone. On a quiet 2-core virtual machine 2-worker
// GEMMs of 512³ fell into that, call after call, in a sixth of their
// calls (2.5 ms where a shared call took 1.3). The dispatcher asks for
// late joins only on a quiet machine (see quiet): beside a busy process
// a helper that turns up mid-job is often one sharing a core with it,
// whose chunks hold up the job's end, and the pool's rules for that case
// (tooLate, the tuner) were measured without late joins.
func (p *pool) lead(j *job, missing int) (ran, late int) {
	for {
		if missing > 0 && p.spinning() {
			j.refs.Add(1) // before the helper can let go of it
			if p.offer(j, 1, slotSpinning) == 1 {
				missing--
				late++
			} else {
				j.refs.Add(-1) // j is not shared yet: its other holders keep it
			}
		}
		left, r := j.runNext()
		if !left {
			return ran, late
		}
		if r {
			ran++
		}
	}
}

// spinning reports whether some helper is idle and polling for a job.
func (p *pool) spinning() bool {
	for i := range p.slots {
		if p.slots[i].state.Load() == slotSpinning {
			return true
		}
	}
	return false
}

// finishing reports whether some helper will soon be idle although it
// was handed a job: a wake-up is bringing it to a job whose chunks have
// all been taken meanwhile, or it is leaving a job whose chunks are all
// done. A job now handed out then runs in chunks that the helper may join
// (lead) rather than in one piece on the caller (soloRunner). A helper
// running a chunk is not finishing: it may run for as long as the chunk.
func (p *pool) finishing() bool {
	for i := range p.slots {
		s := &p.slots[i]
		st := s.state.Load()
		if st != slotBusy && st != slotClaimed {
			continue
		}
		j := s.job.Load()
		switch {
		case j == nil:
		case st == slotClaimed && j.next.Load() >= j.chunks:
			return true
		case st == slotBusy && j.done.Load() >= j.chunks:
			return true
		}
	}
	return false
}

// parallelTasks runs fn(i) for i in [0, n), one task per index; tasks must be
// large enough to amortise the hand-off.
func (b *Backend) parallelTasks(n int, fn func(i int)) {
	b.parallelAt(codeOf(fn), n, 1, func(lo, hi int) {
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
