package cpu

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// Measurements of the 2-worker strip GEMM (gemmInStrips), run only when
// asked for: where its time goes (TestSgemmStripTimeline), and its
// variants against each other, interleaved (TestSgemmVariants).

// tracedStrips runs the strips of g one chunk at a time, recording when
// each started and ended (since t0) and on which processor.
type tracedStrips struct {
	g     *gemmStrips[float32]
	t0    time.Time
	start [64]time.Duration
	end   [64]time.Duration
	cpu   [64]int
}

func (r *tracedStrips) runChunk(lo, hi int) {
	for s := lo; s < hi; s++ {
		r.start[s] = time.Since(r.t0)
		r.cpu[s] = currentCPU()
		r.g.runChunk(s, s+1)
		r.end[s] = time.Since(r.t0)
	}
}

// TestSgemmStripTimeline runs 4000 2-worker 128³ GEMMs as gemmInStrips
// does (KILN_SGEMM_TIMELINE=1) and logs the distributions of their wall
// time, of the time before the strips start (the shared operand packed
// first, when packLazily is off), of the helper's first strip's start
// after that, of the time from the last strip's end to the join's, of
// a strip's time, how many strips the caller ran, and the pool's
// counters: on a quiet machine a helper parked between jobs shows as
// calls where the caller ran all 8 strips.
//
//	KILN_SGEMM_TIMELINE=1 go test ./backends/cpu -run SgemmStripTimeline -v
func TestSgemmStripTimeline(t *testing.T) {
	if os.Getenv("KILN_SGEMM_TIMELINE") != "1" {
		t.Skip("set KILN_SGEMM_TIMELINE=1 to measure")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	n := 128
	b := New(2)
	x, y := randView(b, backends.Float32, 1, n, n), randView(b, backends.Float32, 2, n, n)
	out := allocView(b, backends.Float32, n, n)
	m, k := n, n
	kern := kernelF32
	A := matSrc[float32]{s: buf(x).f32(), rs: n, cs: 1}
	B := matSrc[float32]{s: buf(y).f32(), rs: n, cs: 1}
	C := matDst[float32]{s: buf(out).f32(), rs: n, cs: 1}
	var totals, packs, helperStart, tails, stripT []time.Duration
	var split [9]int // calls by the strips the caller ran
	r := new(tracedStrips)
	g := new(gemmStrips[float32])
	pre := make([]float32, roundUp(m, kern.mr)*k)
	lazy := new(lazyPack[float32])
	_, kc, mChunk := gemmBlocks(kern, m, n, k)
	st := new(poolCounters)
	poolStats.Store(st)
	defer poolStats.Store(nil)
	for range 4000 {
		*r = tracedStrips{t0: time.Now()}
		*g = gemmStrips[float32]{b: b, kern: kern, m: m, n: n, k: k, A: A, B: B, C: C, byCols: true}
		g.width = stripWidthFor(n, kern.nr, m*n*k, b.workers)
		if packLazily {
			lazy.init(pre, A, m, k, kern.mr, mChunk, kc)
			g.lazy = lazy
		} else {
			prepackParallel(b, pre, kern, m, n, k, A, B, false)
		}
		g.preA = pre
		r.g = g
		packed := time.Since(r.t0)
		strips := (n + g.width - 1) / g.width
		cpu := currentCPU()
		b.parallelRun(strips, 1, r)
		total := time.Since(r.t0)
		totals = append(totals, total)
		packs = append(packs, packed)
		hs := time.Duration(0)
		caller := 0
		var last time.Duration
		for s := range strips {
			stripT = append(stripT, r.end[s]-r.start[s])
			last = max(last, r.end[s])
			if r.cpu[s] == cpu {
				caller++
			} else if hs == 0 {
				hs = r.start[s] - packed
			}
		}
		split[caller]++
		if hs > 0 {
			helperStart = append(helperStart, hs)
		}
		tails = append(tails, total-last)
	}
	pct := func(name string, d []time.Duration) {
		if len(d) == 0 {
			return
		}
		slices.Sort(d)
		var sum time.Duration
		for _, v := range d {
			sum += v
		}
		t.Logf("%-12s n %5d min %8v p10 %8v p50 %8v p90 %8v mean %8v", name, len(d), d[0], d[len(d)/10], d[len(d)/2], d[len(d)*9/10], sum/time.Duration(len(d)))
	}
	pct("total", totals)
	pct("pack", packs)
	pct("helperStart", helperStart)
	pct("tail", tails)
	pct("strip", stripT)
	t.Logf("calls by strips the caller ran (0 to 8): %v", split)
	t.Logf("%v", st)
	t.Logf("wakeup %v spare %v crowded %v others %v", time.Duration(b.pool.wakeup.Load()), b.pool.spare.Load(), b.pool.crowded.Load(), b.pool.others.Load())
}

// TestSgemmVariants alternates variants of the sgemm on 2 workers in
// slices of 25 ms, in rounds (KILN_SGEMM_ROUNDS, default 10) of one slice
// each, and logs each one's best, median and worst rate and the median
// and quartiles of its rate over the first variant's in the same round:
// "old", the shared operand of the strips packed before them (packLazily
// off) and without the pool's rules for a quiet machine (quietBlind);
// "lazy", packed in the strips (lazyPack) without those rules; "new", as
// it is. KILN_SGEMM_N lists the sizes (default 128,1024),
// KILN_SGEMM_THREADS the workers; KILN_SGEMM_QUIET=1 keeps only rounds
// that begin and end with no other process's thread running.
//
//	KILN_SGEMM_VARIANTS=1 go test ./backends/cpu -run SgemmVariants -v
func TestSgemmVariants(t *testing.T) {
	if os.Getenv("KILN_SGEMM_VARIANTS") != "1" {
		t.Skip("set KILN_SGEMM_VARIANTS=1 to measure")
	}
	defer func(old bool) { packLazily = old }(packLazily)
	defer quietBlind.Store(quietBlind.Load())
	threads := 2
	if v := os.Getenv("KILN_SGEMM_THREADS"); v != "" {
		threads, _ = strconv.Atoi(v)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	rounds := 10
	if v := os.Getenv("KILN_SGEMM_ROUNDS"); v != "" {
		rounds, _ = strconv.Atoi(v)
	}
	quietOnly := os.Getenv("KILN_SGEMM_QUIET") == "1"
	sizes := []int{128, 1024}
	if v := os.Getenv("KILN_SGEMM_N"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, _ := strconv.Atoi(f)
			sizes = append(sizes, n)
		}
	}
	variants := []struct {
		name string
		set  func(on bool)
	}{
		{"old", func(on bool) { packLazily = !on; quietBlind.Store(on) }},
		{"lazy", func(on bool) { quietBlind.Store(on) }},
		{"new", func(on bool) {}},
	}
	for _, n := range sizes {
		be := New(threads)
		if n <= 0 {
			t.Fatalf("KILN_SGEMM_N=%q: want sizes above 0", os.Getenv("KILN_SGEMM_N"))
		}
		x, y := randView(be, backends.Float32, 1, n, n), randView(be, backends.Float32, 2, n, n)
		out := allocView(be, backends.Float32, n, n)
		rates := make([][]float64, len(variants))
		skipped := 0
		for deadline := time.Now().Add(60 * time.Second); len(rates[0]) < rounds && time.Now().Before(deadline); {
			if quietOnly && runnableTasks() > threads {
				skipped++
				time.Sleep(2 * time.Millisecond)
				continue
			}
			round := make([]float64, len(variants))
			for i, v := range variants {
				v.set(true)
				be.Matmul(out, x, y)
				calls, start := 0, time.Now()
				for time.Since(start) < 25*time.Millisecond {
					be.Matmul(out, x, y)
					calls++
				}
				round[i] = 2 * float64(n*n*n) * float64(calls) / time.Since(start).Seconds() / 1e9
				v.set(false)
			}
			if quietOnly && runnableTasks() > threads {
				skipped++
				continue
			}
			for i := range variants {
				rates[i] = append(rates[i], round[i])
			}
		}
		t.Logf("n=%d: %d rounds, %d skipped (other processes running)", n, len(rates[0]), skipped)
		if len(rates[0]) == 0 {
			continue
		}
		for i, v := range variants {
			var ratios []float64
			for j := range rates[i] {
				ratios = append(ratios, rates[i][j]/rates[0][j])
			}
			r := rates[i]
			slices.Sort(r)
			slices.Sort(ratios)
			t.Logf("n=%d threads=%d %-8s best %6.1f median %6.1f worst %6.1f GFLOP/s; against %s, median ratio %.3f (quartiles %.3f %.3f)", n, threads, v.name, r[len(r)-1], r[len(r)/2], r[0],
				variants[0].name, ratios[len(ratios)/2], ratios[len(ratios)/4], ratios[len(ratios)*3/4])
		}
	}
}
