package cpu

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"golang.org/x/sys/unix"
)

// The load harness measures kernels on 1 and 2 workers while a competing
// process (yes > /dev/null) keeps one core busy, as a notebook server, a
// browser or a second training run would: BenchmarkPoolUnderLoad reports
// each case as a Go benchmark, TestPoolLoadTable (KILN_POOL_LOAD=1) runs
// them in interleaved rounds and prints the ratios 2 workers / 1 worker.
//
//	KILN_POOL_LOAD=1 go test ./backends/cpu -run PoolLoadTable -v
//	go test ./backends/cpu -run '^$' -bench PoolUnderLoad

// loadCase is one workload: setup allocates its operands on be and returns
// one call of it and the work that call does (in unit).
type loadCase struct {
	name  string
	unit  string
	setup func(be *Backend) (call func(), work float64)
}

var loadCases = []loadCase{
	{"sgemm128", "GFLOP/s", func(be *Backend) (func(), float64) { return sgemmCall(be, 128) }},
	{"sgemm256", "GFLOP/s", func(be *Backend) (func(), float64) { return sgemmCall(be, 256) }},
	{"sgemm512", "GFLOP/s", func(be *Backend) (func(), float64) { return sgemmCall(be, 512) }},
	{"add1M", "GB/s", func(be *Backend) (func(), float64) {
		const n = 1 << 20
		x, y := randView(be, backends.Float32, 1, n), randView(be, backends.Float32, 2, n)
		out := allocView(be, backends.Float32, n)
		return func() { be.Binary(backends.Add, out, x, y) }, 12 * n / 1e9
	}},
	{"add16M", "GB/s", func(be *Backend) (func(), float64) {
		// bench_compare's stream rows: memory-bound
		const n = 1 << 24
		x, y := randView(be, backends.Float32, 1, n), randView(be, backends.Float32, 2, n)
		out := allocView(be, backends.Float32, n)
		return func() { be.Binary(backends.Add, out, x, y) }, 12 * n / 1e9
	}},
	{"exp16M", "Gelem/s", func(be *Backend) (func(), float64) {
		// bench_compare's activation rows: compute-bound
		const n = 1 << 24
		x := randView(be, backends.Float32, 1, n)
		out := allocView(be, backends.Float32, n)
		return func() { be.Unary(backends.Exp, out, x, 0, 0) }, n / 1e9
	}},
	{"cnnstep", "img/s", cnnStep},
}

func sgemmCall(be *Backend, n int) (func(), float64) {
	x, y := randView(be, backends.Float32, 1, n, n), randView(be, backends.Float32, 2, n, n)
	out := allocView(be, backends.Float32, n, n)
	return func() { be.Matmul(out, x, y) }, 2 * float64(n*n*n) / 1e9
}

// cnnStep is a training step of the MNIST CNN (conv 1→16 3×3, ReLU, max
// pool 2, conv 16→32 3×3, ReLU, max pool 2, linear 800→10, AdamW) at
// batch 128, called on the backend directly: the kernels and their sizes
// of tensor's step without its bookkeeping, and a fixed gradient in place
// of the loss.
func cnnStep(be *Backend) (func(), float64) {
	const n = 128
	f32 := backends.Float32
	conv := func(c, h, o int) backends.ConvGeometry {
		return backends.ConvGeometry{N: n, C: c, H: h, W: h, KH: 3, KW: 3, StrideH: 1, StrideW: 1,
			DilationH: 1, DilationW: 1, OutH: h - 2, OutW: h - 2}
	}
	pool := func(c, h int) backends.ConvGeometry {
		return backends.ConvGeometry{N: n, C: c, H: h, W: h, KH: 2, KW: 2, StrideH: 2, StrideW: 2,
			DilationH: 1, DilationW: 1, OutH: h / 2, OutW: h / 2}
	}
	g1, p1, g2, p2 := conv(1, 28, 16), pool(16, 26), conv(16, 13, 32), pool(32, 11)
	x := randView(be, f32, 1, n, 1, 28, 28)
	w1, w2, w3 := randView(be, f32, 2, 16, 1, 3, 3), randView(be, f32, 3, 32, 16, 3, 3), randView(be, f32, 4, 800, 10)
	y1, r1, dr1, dy1 := allocView(be, f32, n, 16, 26, 26), allocView(be, f32, n, 16, 26, 26),
		allocView(be, f32, n, 16, 26, 26), allocView(be, f32, n, 16, 26, 26)
	q1, i1, dq1 := allocView(be, f32, n, 16, 13, 13), allocView(be, backends.Int64, n, 16, 13, 13), allocView(be, f32, n, 16, 13, 13)
	y2, r2, dr2, dy2 := allocView(be, f32, n, 32, 11, 11), allocView(be, f32, n, 32, 11, 11),
		allocView(be, f32, n, 32, 11, 11), allocView(be, f32, n, 32, 11, 11)
	q2, i2 := allocView(be, f32, n, 32, 5, 5), allocView(be, backends.Int64, n, 32, 5, 5)
	logits, dlogits := allocView(be, f32, n, 10), randView(be, f32, 5, n, 10)
	dq2 := allocView(be, f32, n, 800)
	dw1, dw2, dw3 := allocView(be, f32, 16, 1, 3, 3), allocView(be, f32, 32, 16, 3, 3), allocView(be, f32, 800, 10)
	flat := q2
	flat.Shape, flat.Strides = []int{n, 800}, []int{800, 1}
	flatT := q2 // [800, n], transposed in place
	flatT.Shape, flatT.Strides = []int{800, n}, []int{1, 800}
	w3T := w3
	w3T.Shape, w3T.Strides = []int{10, 800}, []int{1, 10}
	dq2v := dq2
	dq2v.Shape, dq2v.Strides = []int{n, 32, 5, 5}, []int{800, 25, 5, 1}
	type param struct{ p, g, m, v backends.View }
	var params []param
	for _, pg := range [][2]backends.View{{w1, dw1}, {w2, dw2}, {w3, dw3}} {
		m, v := allocView(be, f32, pg[0].Shape...), allocView(be, f32, pg[0].Shape...)
		be.Fill(m, 0)
		be.Fill(v, 0)
		params = append(params, param{pg[0], pg[1], m, v})
	}
	h := backends.AdamHyper{Decay: 1 - 1e-5, Beta1: 0.9, Beta2: 0.999, InvDenom: 1e-3, EpsTerm: 1e-8, MovesParam: true}
	call := func() {
		be.Conv2d(y1, x, w1, g1)
		be.Unary(backends.Relu, r1, y1, 0, 0)
		be.MaxPool2d(q1, i1, r1, p1)
		be.Conv2d(y2, q1, w2, g2)
		be.Unary(backends.Relu, r2, y2, 0, 0)
		be.MaxPool2d(q2, i2, r2, p2)
		be.Matmul(logits, flat, w3)
		be.Matmul(dw3, flatT, dlogits)
		be.Matmul(dq2, dlogits, w3T)
		be.MaxPool2dGrad(dr2, dq2v, i2, p2)
		be.UnaryGrad(backends.Relu, dy2, y2, dr2, 0, 0)
		be.Conv2dWeightGrad(dw2, dy2, q1, g2)
		be.Conv2dInputGrad(dq1, dy2, w2, g2)
		be.MaxPool2dGrad(dr1, dq1, i1, p1)
		be.UnaryGrad(backends.Relu, dy1, y1, dr1, 0, 0)
		be.Conv2dWeightGrad(dw1, dy1, x, g1)
		for _, p := range params {
			be.AdamStep(p.p, p.m, p.v, p.p, p.g, p.m, p.v, h)
		}
	}
	return call, n
}

// competitor is a process that keeps one core busy.
type competitor struct{ cmd *exec.Cmd }

// startCompetitor starts yes > /dev/null, pinned to the last CPU when
// pinned (the Go runtime's threads stay free to move), or fails tb.
func startCompetitor(tb testing.TB, pinned bool) *competitor {
	tb.Helper()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer devnull.Close()
	cmd := exec.Command("yes")
	cmd.Stdout = devnull
	if err := cmd.Start(); err != nil {
		tb.Skipf("no competing process: %v", err)
	}
	if pinned {
		var set unix.CPUSet
		set.Set(runtime.NumCPU() - 1)
		if err := unix.SchedSetaffinity(cmd.Process.Pid, &set); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			tb.Fatalf("pinning the competitor: %v", err)
		}
	}
	time.Sleep(20 * time.Millisecond) // let the scheduler place it
	return &competitor{cmd}
}

func (c *competitor) stop() {
	if c == nil {
		return
	}
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// loadModes are the competitors: none, an unpinned busy process, one pinned
// to a core.
var loadModes = []string{"none", "busy", "pinned"}

func startLoad(tb testing.TB, mode string) *competitor {
	switch mode {
	case "busy":
		return startCompetitor(tb, false)
	case "pinned":
		return startCompetitor(tb, true)
	}
	return nil
}

// BenchmarkPoolUnderLoad runs every load case on 1 and 2 workers with and
// without a competing busy process.
func BenchmarkPoolUnderLoad(b *testing.B) {
	for _, c := range loadCases {
		for _, mode := range loadModes {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/load=%s/threads=%d", c.name, mode, threads), func(b *testing.B) {
					be := New(threads)
					call, work := c.setup(be)
					call()
					comp := startLoad(b, mode)
					defer comp.stop()
					b.ResetTimer()
					for b.Loop() {
						call()
					}
					b.StopTimer()
					b.ReportMetric(work*float64(b.N)/b.Elapsed().Seconds(), c.unit)
					if err := be.Sync(); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}

// measureRate calls call for about d and returns the work done and the
// time taken.
func measureRate(call func(), work float64, d time.Duration) (float64, time.Duration) {
	reps, t0 := 0, time.Now()
	for {
		call()
		reps++
		if el := time.Since(t0); el >= d {
			return work * float64(reps), el
		}
	}
}

// TestPoolLoadTable prints, for every load case and competitor, the rates
// on 1 and 2 workers and their ratio. Each of KILN_POOL_LOAD_ROUNDS rounds
// (default 5) measures both for KILN_POOL_LOAD_SECONDS each (default 0.4,
// at least 40 calls), alternating them in slices of 50 ms (at least 5
// calls) so that both see the same background load; the table shows the
// medians over the rounds of the rates and of the per-round ratios, the
// worst round's ratio, and then every round's ratio. It runs only with
// KILN_POOL_LOAD=1 (it takes minutes and is a measurement, not a check);
// KILN_POOL_LOAD_ONLY selects cases by name.
func TestPoolLoadTable(t *testing.T) {
	if os.Getenv("KILN_POOL_LOAD") != "1" {
		t.Skip("set KILN_POOL_LOAD=1 to measure")
	}
	rounds, secs := 5, 0.4
	if v, err := strconv.Atoi(os.Getenv("KILN_POOL_LOAD_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("KILN_POOL_LOAD_SECONDS"), 64); err == nil && v > 0 {
		secs = v
	}
	only := os.Getenv("KILN_POOL_LOAD_ONLY")
	type key struct{ c, mode string }
	one, two, ratio := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	var todo []loadCase
	for _, c := range loadCases {
		if only == "" || strings.Contains(only, c.name) {
			todo = append(todo, c)
		}
	}
	for range rounds {
		for _, c := range todo {
			bes := [2]*Backend{New(1), New(2)}
			var calls [2]func()
			var works [2]float64
			var slowest time.Duration // the slower worker count's call
			for i, be := range bes {
				calls[i], works[i] = c.setup(be)
				calls[i]() // warm: packing buffers, first-touch pages
				t0 := time.Now()
				calls[i]()
				slowest = max(slowest, time.Since(t0))
			}
			slice := max(50*time.Millisecond, 5*slowest)
			parts := max(1, int(max(secs*float64(time.Second), float64(40*slowest))/float64(slice)))
			for _, mode := range loadModes {
				comp := startLoad(t, mode)
				var work [2]float64
				var took [2]time.Duration
				for s := range parts {
					for k := range 2 {
						i := (s + k) % 2 // alternate which goes first
						w, d := measureRate(calls[i], works[i], slice)
						work[i] += w
						took[i] += d
					}
				}
				comp.stop()
				k := key{c.name, mode}
				r1, r2 := work[0]/took[0].Seconds(), work[1]/took[1].Seconds()
				one[k], two[k], ratio[k] = append(one[k], r1), append(two[k], r2), append(ratio[k], r2/r1)
			}
			for _, be := range bes {
				if err := be.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	var out strings.Builder
	fmt.Fprintf(&out, "medians of %d rounds of %.2fs (at least 40 calls) per worker count, alternating in slices of 50ms "+
		"(at least 5 calls); %d CPUs, GOMAXPROCS %d\n", rounds, secs, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(&out, "%-9s %-7s %-8s %9s %9s %7s %7s\n", "case", "load", "unit", "1 worker", "2 workers", "2w/1w", "worst")
	for _, c := range todo {
		for _, mode := range loadModes {
			k := key{c.name, mode}
			fmt.Fprintf(&out, "%-9s %-7s %-8s %9.1f %9.1f %7.2f %7.2f\n", c.name, mode, c.unit,
				median(one[k]), median(two[k]), median(ratio[k]), slices.Min(ratio[k]))
		}
	}
	fmt.Fprintf(&out, "\nper-round ratios 2w/1w, sorted:\n")
	for _, c := range todo {
		for _, mode := range loadModes {
			r := slices.Sorted(slices.Values(ratio[key{c.name, mode}]))
			fmt.Fprintf(&out, "%-9s %-7s %.2f\n", c.name, mode, r)
		}
	}
	t.Log("\n" + out.String())
}
