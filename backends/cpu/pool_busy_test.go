package cpu

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkPoolBusy runs the load cases as bench_compare.py runs Kiln's
// rows, GOMAXPROCS equal to the worker count, and reports the pool's
// counters (pool_stats.go) per call: run it beside a busy process pinned
// to a core (taskset -c 0 yes > /dev/null) to see what a 2-worker call
// spends its time on.
//
//	go test ./backends/cpu -run '^$' -bench PoolBusy -benchtime 0.5s
func BenchmarkPoolBusy(b *testing.B) {
	only := os.Getenv("KILN_POOL_LOAD_ONLY")
	for _, c := range loadCases {
		if only != "" && only != c.name {
			continue
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", c.name, threads), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
				be := New(threads)
				call, work := c.setup(be)
				call()
				st := new(poolCounters)
				poolStats.Store(st)
				defer poolStats.Store(nil)
				for b.Loop() {
					call()
				}
				b.ReportMetric(work*float64(b.N)/b.Elapsed().Seconds(), c.unit)
				n := float64(b.N)
				b.ReportMetric(float64(st.jobs.Load())/n, "jobs/op")
				b.ReportMetric(float64(st.serial.Load())/n, "serial/op")
				b.ReportMetric(float64(st.tries.Load())/n, "tries/op")
				b.ReportMetric(float64(st.joinWait.Load())/n, "join-ns/op")
				b.ReportMetric(float64(st.joinLong.Load())/n, "joinlong/op")
				if testing.Verbose() {
					b.Log(st)
				}
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// TestPoolBusyTable measures the load cases as bench_compare.py's rows do
// (GOMAXPROCS = workers) on 1 worker and on 2 workers with each of the
// pool variants listed in KILN_POOL_VARIANTS (default "old,new"):
// "new", the pool as it is; "old", without the rules that keep helpers
// off their caller's core (placeBlind); "blind", without those nor the
// rules that weigh the measured wake-up time (latencyBlind); "prev",
// without the rules for a quiet machine (quietBlind) and with the strips'
// shared operand packed before them (packLazily off); "serial", every job
// on the caller. It alternates them in slices of 50 ms, 8
// slices per round (KILN_POOL_LOAD_ROUNDS, default 5), beside whatever
// load the machine has, and logs each one's rate against 1 worker's and
// the pool's counters (pool_stats.go). KILN_POOL_SPARE=1 makes the pools
// take a processor as spare (see refreshLimit) whatever other processes
// run, for runs that keep those off the cores by priority: this test and
// the busy process in a session of its own whose scheduling autogroup
// has nice -20 (setsid, then echo -20 > /proc/self/autogroup), on a
// machine shared with others. It runs only with KILN_POOL_BUSY=1:
//
//	taskset -c 0 yes > /dev/null & KILN_POOL_BUSY=1 go test ./backends/cpu -run PoolBusyTable -v
func TestPoolBusyTable(t *testing.T) {
	if os.Getenv("KILN_POOL_BUSY") != "1" {
		t.Skip("set KILN_POOL_BUSY=1 to measure")
	}
	variants := []string{"old", "new"}
	if v := os.Getenv("KILN_POOL_VARIANTS"); v != "" {
		variants = strings.Split(v, ",")
	}
	rounds := 5
	if v, err := strconv.Atoi(os.Getenv("KILN_POOL_LOAD_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	only := os.Getenv("KILN_POOL_LOAD_ONLY")
	spare := os.Getenv("KILN_POOL_SPARE") == "1"
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer latencyBlind.Store(latencyBlind.Load())
	defer placeBlind.Store(placeBlind.Load())
	defer quietBlind.Store(quietBlind.Load())
	defer func(old bool) { packLazily = old }(packLazily)
	blind := func(variant string) {
		latencyBlind.Store(variant == "blind")
		placeBlind.Store(variant == "old" || variant == "blind")
		quietBlind.Store(variant == "prev")
		packLazily = variant != "prev"
	}
	for _, c := range loadCases {
		if only != "" && !strings.Contains(only, c.name) {
			continue
		}
		type config struct {
			threads int
			variant string
			be      *Backend
			call    func()
			work    float64
			done    float64
			took    time.Duration
			stats   poolCounters
		}
		configs := []*config{{threads: 1, variant: "new"}}
		for _, v := range variants {
			configs = append(configs, &config{threads: 2, variant: v})
		}
		for _, cf := range configs {
			runtime.GOMAXPROCS(cf.threads)
			blind(cf.variant)
			cf.be = New(cf.threads)
			if spare {
				cf.be.pool.spare.Store(true)
				cf.be.pool.limitAt.Store(int64(24 * time.Hour)) // no refreshLimit, which would sample the machine again
			}
			if cf.variant == "serial" {
				cf.be.pool.forced = forceSerial
			}
			cf.call, cf.work = c.setup(cf.be)
			cf.call()
		}
		slice := 50 * time.Millisecond
		for r := range rounds * 8 {
			for k := range configs {
				cf := configs[(r+k)%len(configs)]
				runtime.GOMAXPROCS(cf.threads)
				blind(cf.variant)
				poolStats.Store(&cf.stats)
				w, d := measureRate(cf.call, cf.work, slice)
				poolStats.Store(nil)
				cf.done += w
				cf.took += d
			}
		}
		base := configs[0].done / configs[0].took.Seconds()
		for _, cf := range configs {
			rate := cf.done / cf.took.Seconds()
			t.Logf("%-9s threads %d %-6s: %8.1f %s  x%.2f of 1 thread  %v  others %.1f", c.name, cf.threads, cf.variant,
				rate, c.unit, rate/base, &cf.stats, float64(cf.be.pool.others.Load())/one)
		}
		for _, cf := range configs {
			if err := cf.be.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
