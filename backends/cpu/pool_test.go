package cpu

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// forcedBackend returns a backend of workers whose pool runs every job as
// mode says (forceParallel, forceSerial, or 0 for the tuner's choice).
func forcedBackend(workers int, mode int32) *Backend {
	be := New(workers)
	be.pool.forced = mode
	return be
}

// waitIdle waits (up to a second) until be's helpers are ready for work,
// so that a test's job is offered to them.
func waitIdle(be *Backend) {
	deadline := time.Now().Add(time.Second)
	for i := range be.pool.slots {
		for st := &be.pool.slots[i].state; st.Load() != slotSpinning && st.Load() != slotParked && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	}
}

// within fails t if fn does not return within d (a deadlock).
func within(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("no result after %v: deadlock", d)
	}
}

// TestPoolRunsEveryChunkOnce checks that every chunk runs exactly once
// with the boundaries n and grain give, in parallel, serially and as the
// tuner chooses, on 1 to 4 workers.
func TestPoolRunsEveryChunkOnce(t *testing.T) {
	for _, mode := range []struct {
		name string
		m    int32
	}{{"parallel", forceParallel}, {"serial", forceSerial}, {"tuned", 0}} {
		for _, workers := range []int{1, 2, 3, 4} {
			be := forcedBackend(workers, mode.m)
			for _, c := range []struct{ n, grain int }{{1, 1}, {2, 1}, {3, 2}, {100, 1}, {1000, 7}, {1 << 16, 1000}} {
				t.Run(fmt.Sprintf("%s/workers=%d/n=%d/grain=%d", mode.name, workers, c.n, c.grain), func(t *testing.T) {
					for range 20 { // repeated, so the tuner tries both ways
						chunks := (c.n + c.grain - 1) / c.grain
						runs := make([]atomic.Int32, chunks)
						be.parallel(c.n, c.grain, func(lo, hi int) {
							if lo%c.grain != 0 || hi != min(lo+c.grain, c.n) {
								t.Errorf("chunk [%d,%d)", lo, hi)
								return
							}
							runs[lo/c.grain].Add(1)
						})
						for i := range runs {
							if r := runs[i].Load(); r != 1 {
								t.Fatalf("chunk %d ran %d times", i, r)
							}
						}
					}
				})
			}
		}
	}
}

// TestPoolRunnerEveryChunkOnce is TestPoolRunsEveryChunkOnce for
// parallelRun, with a costed runner.
func TestPoolRunnerEveryChunkOnce(t *testing.T) {
	be := forcedBackend(3, forceParallel)
	for range 50 {
		r := &countingRunner{runs: make([]atomic.Int32, 37)}
		be.parallelRun(37, 1, r)
		for i := range r.runs {
			if n := r.runs[i].Load(); n != 1 {
				t.Fatalf("task %d ran %d times", i, n)
			}
		}
	}
}

type countingRunner struct{ runs []atomic.Int32 }

func (r *countingRunner) runChunk(lo, hi int) {
	for i := lo; i < hi; i++ {
		r.runs[i].Add(1)
	}
}

func (r *countingRunner) parallelCost() int { return len(r.runs) }

// bothStarted returns a chunk body's rendezvous for be: each of the first
// two chunks to start waits (up to a second) until the other has started
// too, so that, when a helper is free, the two run on different goroutines.
func bothStarted(be *Backend) func() {
	var started atomic.Int32
	return func() {
		if be.pool.usable.Load() == 0 {
			return
		}
		started.Add(1)
		deadline := time.Now().Add(time.Second)
		for started.Load() < 2 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
	}
}

// TestPoolPanicReachesCaller checks that a panic in a chunk, on a helper
// or on the caller, is raised again on the caller with its value once the
// running chunks end, that later chunks are skipped, and that the pool
// works afterwards.
func TestPoolPanicReachesCaller(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		for _, which := range []int{0, 1} {
			t.Run(fmt.Sprintf("workers=%d/chunk=%d", workers, which), func(t *testing.T) {
				be := forcedBackend(workers, forceParallel)
				boom := errors.New("boom")
				var running, ran atomic.Int32
				var got any
				within(t, 10*time.Second, func() {
					defer func() { got = recover() }()
					waitIdle(be)
					rendezvous := bothStarted(be)
					be.parallel(2000, 1, func(lo, hi int) {
						running.Add(1)
						defer running.Add(-1)
						ran.Add(1)
						if lo < 2 {
							rendezvous()
						}
						if lo == which {
							panic(boom)
						}
						time.Sleep(time.Microsecond)
					})
				})
				if got != boom {
					t.Fatalf("recovered %v, want the task's panic %v", got, boom)
				}
				if r := running.Load(); r != 0 {
					t.Errorf("%d chunks still running when the panic reached the caller", r)
				}
				if r := ran.Load(); r >= 2000 {
					t.Errorf("all %d chunks ran after the panic; want the rest skipped", r)
				}
				checkPoolWorks(t, be)
			})
		}
	}
}

// TestPoolGoexitInTask checks that runtime.Goexit in a chunk does not hang
// the job: the caller panics with errGoexit (or exits, when the chunk ran
// on it), and the pool still works, its helper replaced.
func TestPoolGoexitInTask(t *testing.T) {
	be := forcedBackend(2, forceParallel)
	for range 5 {
		var got any
		within(t, 10*time.Second, func() {
			done := make(chan any, 1)
			go func() {
				returned := false
				defer func() {
					if !returned {
						done <- recover()
					}
				}()
				waitIdle(be)
				rendezvous := bothStarted(be)
				be.parallel(2, 1, func(lo, hi int) {
					rendezvous()
					if lo == 1 {
						runtime.Goexit()
					}
				})
				returned = true
				done <- "returned"
			}()
			got = <-done
		})
		if got != nil && got != errGoexit {
			t.Fatalf("caller saw %v, want errGoexit or its own Goexit", got)
		}
		checkPoolWorks(t, be)
	}
}

// checkPoolWorks runs a parallel sum on be and checks it.
func checkPoolWorks(t *testing.T, be *Backend) {
	t.Helper()
	var total atomic.Int64
	within(t, 10*time.Second, func() {
		be.parallel(10000, 10, func(lo, hi int) { total.Add(int64(hi - lo)) })
	})
	if total.Load() != 10000 {
		t.Fatalf("after the panic a job covered %d of 10000 elements", total.Load())
	}
}

// TestPoolNestedCallsDoNotDeadlock runs parallel calls three deep from
// several goroutines at once, on more workers than processors too.
func TestPoolNestedCallsDoNotDeadlock(t *testing.T) {
	for _, workers := range []int{2, 3, 8} {
		for _, mode := range []int32{forceParallel, 0} {
			be := forcedBackend(workers, mode)
			within(t, 30*time.Second, func() {
				var wg sync.WaitGroup
				var total atomic.Int64
				for range 4 {
					wg.Go(func() {
						for range 10 {
							be.parallel(6, 1, func(lo, hi int) {
								be.parallel(5, 1, func(lo, hi int) {
									be.parallel(40, 3, func(lo, hi int) { total.Add(int64(hi - lo)) })
								})
							})
						}
					})
				}
				wg.Wait()
				if want := int64(4 * 10 * 6 * 5 * 40); total.Load() != want {
					t.Errorf("workers %d: nested jobs covered %d elements, want %d", workers, total.Load(), want)
				}
			})
		}
	}
}

// TestPoolGOMAXPROCS1 checks that jobs complete, nested and concurrent, when
// the runtime has one processor for more workers: the pool then uses no
// helper.
func TestPoolGOMAXPROCS1(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, mode := range []int32{forceParallel, 0} {
		be := forcedBackend(4, mode)
		if u := be.pool.usable.Load(); u != 0 {
			t.Errorf("GOMAXPROCS 1: %d usable helpers, want 0", u)
		}
		within(t, 30*time.Second, func() {
			var total atomic.Int64
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					be.parallel(100, 1, func(lo, hi int) {
						be.parallel(10, 1, func(lo, hi int) { total.Add(int64(hi - lo)) })
					})
				})
			}
			wg.Wait()
			if total.Load() != 3000 {
				t.Errorf("covered %d of 3000", total.Load())
			}
		})
	}
}

// TestPoolFollowsGOMAXPROCS checks that a pool re-reads GOMAXPROCS: it uses
// fewer helpers when the runtime has fewer processors, however many the
// backend has.
func TestPoolFollowsGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	be := New(4)
	be.pool.refreshLimit(time.Now())
	want := 1
	if l := cgroupCPULimit(); l == 1 {
		want = 0
	}
	if u := be.pool.usable.Load(); int(u) != want {
		t.Errorf("GOMAXPROCS 2, 4 workers: %d usable helpers, want %d", u, want)
	}
	runtime.GOMAXPROCS(1)
	// as if limitRefresh had passed (0 is not enough within limitRefresh of
	// the process's start, epoch)
	be.pool.limitAt.Store(-int64(2 * limitRefresh))
	be.parallel(10, 1, func(lo, hi int) {})
	if u := be.pool.usable.Load(); u != 0 {
		t.Errorf("GOMAXPROCS 1: %d usable helpers, want 0", u)
	}
}

// TestPoolHelpersPark checks that idle helpers stop spinning: after a burst
// of jobs and a pause, every helper is parked.
func TestPoolHelpersPark(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two processors")
	}
	be := forcedBackend(3, forceParallel)
	for range 100 {
		be.parallel(64, 1, func(lo, hi int) {})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		parked := 0
		for i := range be.pool.slots {
			if be.pool.slots[i].state.Load() == slotParked {
				parked++
			}
		}
		if parked == len(be.pool.slots) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d helpers parked 5 s after the last job", parked, len(be.pool.slots))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWorthWakingWeighsWakeupTime checks when a job wakes a parked
// helper: always while its site is unmeasured, never under wakeWorth, and
// above it only when the job is at least wakeFactor times the measured
// wake-up time, or when no job has woken one for rewakeEvery (once, to
// measure the wake-up time again), or on a quiet machine quietRewake;
// latencyBlind wakes for every job of wakeWorth or more. The machine is
// busy (another process's thread runs) unless the case says quiet.
func TestWorthWakingWeighsWakeupTime(t *testing.T) {
	us := int64(time.Microsecond)
	now := int64(time.Second)
	cases := []struct {
		name              string
		serial, wakeup    int64 // ns; serial 0: unmeasured
		wokeAt            int64 // ns since epoch
		blind             bool  // latencyBlind
		want, wantAgainAt bool  // the answer, and a second answer at the same time
		quiet             bool  // no other process's thread runs
	}{
		{"unmeasured site", 0, 500 * us, now, false, true, true, false},
		{"job shorter than wakeWorth", 30 * us, 1 * us, 0, false, false, false, false},
		{"fast wake-ups", 100 * us, 20 * us, now, false, true, true, false},
		{"wake-up half the job", 100 * us, 50 * us, now, false, true, true, false},
		{"slow wake-ups", 100 * us, 300 * us, now - int64(rewakeEvery)/2, false, false, false, false},
		{"slow wake-ups, none lately: one to measure", 100 * us, 300 * us, now - 2*int64(rewakeEvery), false, true, false, false},
		{"latency-blind rule", 100 * us, 300 * us, now, true, true, true, false},
		{"quiet machine, slow wake-ups, one lately", 100 * us, 300 * us, now - int64(quietRewake)/2, false, false, false, true},
		{"quiet machine, slow wake-ups, none lately", 100 * us, 300 * us, now - 2*int64(quietRewake), false, true, false, true},
		{"quiet machine, job shorter than wakeWorth", 30 * us, 300 * us, 0, false, false, false, true},
	}
	defer latencyBlind.Store(latencyBlind.Load())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			latencyBlind.Store(c.blind)
			var p pool
			p.wakeup.Store(c.wakeup)
			p.wokeAt.Store(c.wokeAt)
			if !c.quiet {
				p.others.Store(one)
			}
			var s site
			s.ser.Store(c.serial)
			if got := p.worthWaking(&s, now); got != c.want {
				t.Errorf("first job: %v, want %v", got, c.want)
			}
			if got := p.worthWaking(&s, now); got != c.wantAgainAt {
				t.Errorf("second job at the same time: %v, want %v", got, c.wantAgainAt)
			}
		})
	}
}

// TestSpinBudgetFollowsWakeups checks an idle helper's spin: the recent
// wake-up time within [minSpin, maxSpin], and only minSpin when wake-ups
// take longer than maxSpin (cores oversubscribed), unless latencyBlind is
// set; on a quiet machine (no other process's thread running, or one now
// and then) maxSpin whatever the wake-ups take, unless quietBlind is set.
func TestSpinBudgetFollowsWakeups(t *testing.T) {
	cases := []struct {
		wakeup time.Duration
		blind  bool
		want   time.Duration
		others int64 // other processes' threads (one = 1024); -1: unknown
		qBlind bool  // quietBlind
	}{
		{0, false, minSpin, one, false},
		{5 * time.Microsecond, false, minSpin, one, false},
		{100 * time.Microsecond, false, 100 * time.Microsecond, one, false},
		{maxSpin, false, maxSpin, one, false},
		{maxSpin + time.Microsecond, false, minSpin, one, false},
		{2 * maxSpin, false, minSpin, one, false},
		{2 * maxSpin, true, maxSpin, one, false},
		{5 * time.Microsecond, false, minSpin, -1, false},
		{5 * time.Microsecond, false, maxSpin, 0, false},
		{2 * maxSpin, false, maxSpin, one / 4, false},
		{2 * maxSpin, false, minSpin, one / 2, false},
		{5 * time.Microsecond, false, minSpin, 0, true},
	}
	defer latencyBlind.Store(latencyBlind.Load())
	defer quietBlind.Store(quietBlind.Load())
	for _, c := range cases {
		latencyBlind.Store(c.blind)
		quietBlind.Store(c.qBlind)
		var p pool
		p.wakeup.Store(int64(c.wakeup))
		p.others.Store(c.others)
		if got := p.spinBudget(); got != c.want {
			t.Errorf("wake-ups of %v (latency-blind %v, others %d/%d, quiet-blind %v): spin %v, want %v", c.wakeup, c.blind, c.others, one, c.qBlind, got, c.want)
		}
	}
}

// TestTunerBacksOff feeds a site the measurements of parallel runs that
// take twice the serial time (a helper descheduled in its chunks), checks
// that the site turns serial and tries parallel again at about
// 1/exploreShare of its run time, then that it returns to parallel when
// the tries show parallel paying again.
func TestTunerBacksOff(t *testing.T) {
	var tu tuner
	s := tu.site(siteKey(1, 100, 1, 0))
	const serial = 20 * time.Microsecond
	run := func(calls int, parallelTakes time.Duration) (parallel, tries int) {
		for range calls {
			par, try := s.choose()
			if try {
				tries++
			}
			if par {
				parallel++
				s.recordParallel(parallelTakes, serial, try)
			} else {
				s.recordSerial(serial)
			}
		}
		return parallel, tries
	}
	if par, _ := s.choose(); !par {
		t.Fatal("a new site should start parallel")
	}
	if parallel, _ := run(50, 2*serial); parallel > 20 {
		t.Errorf("parallel %d of 50 times while parallel took twice the serial time; want a few, then serial", parallel)
	}
	parallel, tries := run(10000, 2*serial)
	if parallel != tries || tries == 0 || tries > 10000/exploreShare+2 {
		t.Errorf("%d parallel runs, %d tries in 10000 calls; want only tries, at most %d", parallel, tries, 10000/exploreShare+2)
	}
	// the load goes away: parallel takes 60% of the serial time
	run(5000, serial*6/10)
	if parallel, _ := run(5000, serial*6/10); parallel < 4990 {
		t.Errorf("after the load went: parallel %d of 5000 times, want all", parallel)
	}
}

// TestTunerWeighsStalls checks that the tuner judges sharing by its total
// cost: one parallel run held up by a descheduled helper turns a site
// serial only for a while (it is back to parallel within a few hundred
// calls), while stalls as rare as one in 50 runs, each costing a scheduler
// time slice, keep it serial, as they make sharing slower than the caller
// alone however fast the other runs are.
func TestTunerWeighsStalls(t *testing.T) {
	var tu tuner
	const serial = 10 * time.Microsecond
	s := tu.site(siteKey(2, 100, 1, 0))
	for range 100 {
		s.recordParallel(6*time.Microsecond, serial, false)
	}
	s.recordParallel(10*time.Millisecond, serial, false)
	back := -1
	for i := range 1000 {
		par, try := s.choose()
		if !par {
			s.recordSerial(serial)
			continue
		}
		s.recordParallel(6*time.Microsecond, serial, try)
		if !try {
			back = i
			break
		}
	}
	if back < 0 || back > 500 {
		t.Errorf("after one stall: parallel again after %d calls, want within 500", back)
	}

	s = tu.site(siteKey(3, 100, 1, 0))
	parallel := 0
	for i := range 5000 {
		par, try := s.choose()
		if !par {
			s.recordSerial(serial)
			continue
		}
		parallel++
		took := 6 * time.Microsecond
		if i%50 == 49 {
			took = 5 * time.Millisecond
		}
		s.recordParallel(took, serial, try)
	}
	if parallel > 1000 {
		t.Errorf("a 5 ms stall every 50 runs of 10 µs: parallel %d of 5000 times, want mostly serial", parallel)
	}
}

// TestTunerSitesKeepApart checks that keys in one set of the site table do
// not erase each other's measurements while two of them are in use.
func TestTunerSitesKeepApart(t *testing.T) {
	var tu tuner
	a, b := uint64(5), uint64(5+tunerSites*2) // the same set
	tu.site(a).recordSerial(time.Millisecond)
	tu.site(b).recordSerial(time.Microsecond)
	if q := tu.site(a).ser.Load(); q != int64(time.Millisecond) {
		t.Errorf("site a: serial %d ns after site b came, want 1e6", q)
	}
	if q := tu.site(b).ser.Load(); q != int64(time.Microsecond) {
		t.Errorf("site b: serial %d ns, want 1e3", q)
	}
}

// TestCPULimitFrom reads CPU limits from fake cgroup trees: v2, nested v2
// (the lowest limit counts), v1, hybrid, unlimited and missing.
func TestCPULimitFrom(t *testing.T) {
	for _, c := range []struct {
		name   string
		cgroup string
		files  map[string]string
		want   int
	}{
		{"v2 unlimited", "0::/\n", map[string]string{"cpu.max": "max 100000\n"}, 0},
		{"v2 one and a half", "0::/\n", map[string]string{"cpu.max": "150000 100000\n"}, 2},
		{"v2 exactly one", "0::/a\n", map[string]string{"a/cpu.max": "100000 100000\n"}, 1},
		{"v2 parent lower", "0::/a/b\n", map[string]string{"a/cpu.max": "200000 100000\n", "a/b/cpu.max": "400000 100000\n"}, 2},
		{"v2 hybrid", "1:cpu:/\n0::/x\n", map[string]string{"unified/x/cpu.max": "50000 100000\n"}, 1},
		{"v1 quota", "3:cpu,cpuacct:/k\n", map[string]string{"cpu,cpuacct/k/cpu.cfs_quota_us": "300000\n",
			"cpu,cpuacct/k/cpu.cfs_period_us": "100000\n"}, 3},
		{"v1 unlimited", "2:cpu:/\n", map[string]string{"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, 0},
		{"no files", "0::/\n", nil, 0},
		{"garbage", "0::/\n", map[string]string{"cpu.max": "lots\n"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for name, data := range c.files {
				p := filepath.Join(root, "fs", name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cg := filepath.Join(root, "cgroup")
			if err := os.WriteFile(cg, []byte(c.cgroup), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := cpuLimitFrom(cg, filepath.Join(root, "fs")); got != c.want {
				t.Errorf("limit %d, want %d", got, c.want)
			}
		})
	}
	if got := cpuLimitFrom(filepath.Join(t.TempDir(), "none"), "/nonexistent"); got != 0 {
		t.Errorf("no cgroup file: %d, want 0", got)
	}
}

// TestPoolWarmCallAllocatesNothing checks that a parallel job with a
// pooled runner allocates nothing once warm, in parallel and serially.
func TestPoolWarmCallAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	for _, mode := range []int32{forceParallel, forceSerial} {
		be := forcedBackend(2, mode)
		r := &countingRunner{runs: make([]atomic.Int32, 8)}
		be.parallelRun(8, 1, r)
		if a := testing.AllocsPerRun(100, func() { be.parallelRun(8, 1, r) }); a > 0 {
			t.Errorf("mode %d: %v allocations a call", mode, a)
		}
	}
}

// TestPoolChoiceKeepsResults runs kernels with many chunks (GEMMs, the
// segmented reductions, a fused convolution and its gradients) with every
// job parallel and with every job serial, on 2 and 3 workers, and requires
// the same bits: the tuner's choice, like the worker count, never shows in
// a result.
func TestPoolChoiceKeepsResults(t *testing.T) {
	f32 := backends.Float32
	src := New(1)
	a, bm := randView(src, f32, 1, 300, 513), randView(src, f32, 2, 513, 200)
	long, wide := randView(src, f32, 6, 100003), randView(src, f32, 7, 3, 70000)
	x, w := randView(src, f32, 3, 16, 4, 20, 20), randView(src, f32, 4, 8, 4, 3, 3)
	g := withOut(backends.ConvGeometry{N: 16, C: 4, H: 20, W: 20, KH: 3, KW: 3, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1})
	dy := randView(src, f32, 5, 16, 8, 18, 18)
	cases := []struct {
		name string
		fn   func(be *Backend) backends.View
	}{
		{"matmul", func(be *Backend) backends.View {
			out := allocView(src, f32, 300, 200)
			be.Matmul(out, a, bm)
			return out
		}},
		{"sum all", func(be *Backend) backends.View {
			out := allocView(src, f32, 1)
			be.Reduce(backends.Sum, out, long, []int{0})
			return out
		}},
		{"sum rows", func(be *Backend) backends.View {
			out := allocView(src, f32, 3, 1)
			be.Reduce(backends.Sum, out, wide, []int{1})
			return out
		}},
		{"conv2d", func(be *Backend) backends.View {
			out := allocView(src, f32, 16, 8, 18, 18)
			be.Conv2d(out, x, w, g)
			return out
		}},
		{"conv2d weight grad", func(be *Backend) backends.View {
			out := allocView(src, f32, 8, 4, 3, 3)
			be.Conv2dWeightGrad(out, dy, x, g)
			return out
		}},
		{"conv2d input grad", func(be *Backend) backends.View {
			out := allocView(src, f32, 16, 4, 20, 20)
			be.Conv2dInputGrad(out, dy, w, g)
			return out
		}},
	}
	for _, c := range cases {
		ref := rawSnapshot(c.fn(forcedBackend(1, 0)))
		for _, workers := range []int{2, 3} {
			for _, mode := range []int32{forceParallel, forceSerial} {
				be := forcedBackend(workers, mode)
				for range 3 {
					if got := rawSnapshot(c.fn(be)); !bytes.Equal(got, ref) {
						t.Errorf("%s: %d workers, mode %d: differs from 1 worker", c.name, workers, mode)
					}
				}
				if err := be.Sync(); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			}
		}
	}
}

// soloCounter is a soloRunner that counts its chunks and whole runs.
type soloCounter struct {
	countingRunner
	alone atomic.Int32
}

func (r *soloCounter) runAlone() { r.alone.Add(1) }

// TestPoolSoloRunner checks that a soloRunner's job runs as a whole on
// the caller (runAlone, no chunks) when the tuner runs it serially and
// when no helper is free to take it, and as chunks, each once, when
// helpers take part.
func TestPoolSoloRunner(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two processors")
	}
	check := func(name string, r *soloCounter, alone bool) {
		t.Helper()
		wantAlone, wantRuns := int32(0), int32(1)
		if alone {
			wantAlone, wantRuns = 1, 0
		}
		if a := r.alone.Load(); a != wantAlone {
			t.Fatalf("%s: runAlone ran %d times, want %d", name, a, wantAlone)
		}
		for i := range r.runs {
			if n := r.runs[i].Load(); n != wantRuns {
				t.Fatalf("%s: chunk %d ran %d times, want %d", name, i, n, wantRuns)
			}
		}
	}
	newRunner := func() *soloCounter {
		return &soloCounter{countingRunner: countingRunner{runs: make([]atomic.Int32, 9)}}
	}

	r := newRunner()
	forcedBackend(2, forceSerial).parallelRun(9, 1, r)
	check("serial", r, true)

	be := forcedBackend(2, forceParallel)
	waitIdle(be)
	r = newRunner()
	be.parallelRun(9, 1, r)
	if r.alone.Load() == 0 { // a helper took the job
		check("parallel", r, false)
	}

	// Inside a job whose two chunks hold the caller and the only helper,
	// the inner job finds no free helper.
	waitIdle(be)
	r = newRunner()
	var started atomic.Int32
	var first, met atomic.Bool
	done := make(chan struct{})
	be.parallel(2, 1, func(lo, hi int) {
		started.Add(1)
		for deadline := time.Now().Add(time.Second); started.Load() < 2 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		if first.CompareAndSwap(false, true) {
			met.Store(started.Load() == 2) // the other chunk is running and waits for done
			be.parallelRun(9, 1, r)
			close(done)
			return
		}
		<-done
	})
	if met.Load() {
		check("no free helper", r, true)
	} else {
		t.Log("the helper did not take the outer job's second chunk: not checked")
	}
}

// TestPoolLateJoin checks pool.lead: a job handed out while the only
// helper runs another job's chunk is shared with the helper once it is
// idle again, without a wake-up. The other job (on its own goroutine)
// holds the helper until the test's job has started; the test's job is
// many short chunks, so that the caller looks for an idle helper before
// each. Two of its chunks running at once means the helper joined it.
// Whether the released helper gets a processor while the caller runs is
// the operating system's choice: on a busy machine it may take turns with
// the caller on one core, and park before the caller sees it spinning.
// So each try also counts the chunks that started while the helper was
// spinning; the test fails when no try joined although some try saw the
// helper spinning at the start of three chunks or more (each chunk's
// start follows a look for a spinning helper), and is skipped when none
// saw it. The pool is told the machine is quiet, where it asks for late
// joins, whatever other processes run beside the test.
func TestPoolLateJoin(t *testing.T) {
	defer placeBlind.Store(placeBlind.Load())
	placeBlind.Store(true) // the helper takes chunks on whatever processor it runs
	be := forcedBackend(2, forceParallel)
	defer be.pool.stop()
	be.pool.others.Store(0)                  // no other process's thread wants a processor: quiet
	be.pool.limitAt.Store(math.MaxInt64 / 2) // and refreshLimit, which would measure it, does not run
	if !be.pool.quiet() {
		t.Fatal("the pool does not take the machine for quiet")
	}
	seen := int32(0) // the most chunks of a try that started while the helper spun
	for try := range 5 {
		waitIdle(be)
		release := make(chan struct{})
		var held atomic.Int32
		other := make(chan struct{})
		go func() { // the other job: two chunks, each held until release
			defer close(other)
			be.parallel(2, 1, func(lo, hi int) {
				held.Add(1)
				<-release
			})
		}()
		for deadline := time.Now().Add(time.Second); held.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
		if held.Load() < 2 {
			close(release)
			<-other
			t.Logf("try %d: the helper did not take the other job's chunk", try)
			continue
		}
		var inFlight, most, spun atomic.Int32
		var once sync.Once
		sums := make([]float64, 4000)
		be.parallel(len(sums), 1, func(lo, hi int) {
			if be.pool.slots[0].state.Load() == slotSpinning {
				spun.Add(1)
			}
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if lo == 20 {
				once.Do(func() { close(release) }) // the helper leaves the other job and goes idle
			}
			for deadline := time.Now().Add(5 * time.Microsecond); time.Now().Before(deadline); {
				sums[lo] += 1 // a few microseconds of work
			}
			inFlight.Add(-1)
		})
		once.Do(func() { close(release) })
		<-other
		if most.Load() >= 2 {
			return
		}
		seen = max(seen, spun.Load())
		t.Logf("try %d: no two chunks ran at once; %d started while the helper spun", try, spun.Load())
	}
	if seen < 3 {
		t.Skip("the helper was never seen spinning while the caller ran (a busy machine): not checked")
	}
	t.Fatal("the helper, spinning, never joined the running job")
}
