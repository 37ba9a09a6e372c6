package viz

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// fakeClock drives a LiveDashboard's time: now is set by the test, and
// timers fire when advance passes them.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) after(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ft := &fakeTimer{at: c.t.Add(d), f: f}
	c.timers = append(c.timers, ft)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !ft.stopped
		ft.stopped = true
		return was
	}
}

// advance moves time on by d, firing the timers that come due in order.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, ft := range c.timers {
		switch {
		case ft.stopped:
		case !ft.at.After(c.t):
			due = append(due, ft)
		default:
			keep = append(keep, ft)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, ft := range due {
		ft.f()
	}
}

// recorder is a DashboardSink keeping every update and its time.
type recorder struct {
	mu      sync.Mutex
	clock   func() time.Time
	updates []DashboardUpdate
	times   []time.Time
}

func (r *recorder) Update(u DashboardUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u)
	r.times = append(r.times, r.clock())
}

func newFakeDashboard(cfg DashboardConfig) (*LiveDashboard, *fakeClock, *recorder) {
	clk := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	rec := &recorder{clock: clk.now}
	d := NewLiveDashboard(rec, cfg)
	d.now, d.after = clk.now, clk.after
	return d, clk, rec
}

// seriesPoints returns the number of points of each "chart/series" in a
// board.
func seriesPoints(b *Board) map[string]int {
	out := map[string]int{}
	for _, c := range b.Charts() {
		for _, s := range c.fig.series {
			out[c.key+"/"+s.name] += len(s.ys)
		}
	}
	return out
}

func TestLiveDashboardRateBound(t *testing.T) {
	const steps = 1000
	events := syntheticRun(steps, 1, 100) // a step event every step, 10 epochs
	d, clk, rec := newFakeDashboard(DashboardConfig{})
	start := clk.now()
	for _, e := range events {
		// 10 ms a step: 10 s of training, 1,000 step events.
		if e.Kind == train.EventStep {
			clk.advance(10 * time.Millisecond)
		}
		d.OnEvent(e)
	}
	elapsed := clk.now().Sub(start)
	// At most 4 a second, plus the first and the final one.
	bound := int(elapsed.Seconds()*4) + 2
	n := len(rec.updates)
	if n > bound || n < 10 {
		t.Fatalf("%d updates over %v, want at most %d (and some)", n, elapsed, bound)
	}
	t.Logf("%d updates over %v of training (bound %d)", n, elapsed, bound)
	for i, u := range rec.updates {
		if u.Seq != i+1 {
			t.Fatalf("update %d has Seq %d", i, u.Seq)
		}
		if i > 0 && !u.Final && rec.times[i].Sub(rec.times[i-1]) < 250*time.Millisecond {
			t.Fatalf("updates %d and %d only %v apart", i, i+1, rec.times[i].Sub(rec.times[i-1]))
		}
		if u.Final != (i == n-1) {
			t.Fatalf("update %d Final = %v", i+1, u.Final)
		}
		if !u.Final {
			for k, p := range seriesPoints(u.Board()) {
				if p > 500 {
					t.Fatalf("update %d: %s holds %d points, more than MaxPoints", i+1, k, p)
				}
			}
		}
	}
	// The incremental stream carries every point exactly once.
	streamed := map[string]int{}
	for _, u := range rec.updates {
		for _, p := range u.Points {
			streamed[p.Chart+"/"+p.Series]++
		}
	}
	want := map[string]int{"loss/train": steps, "accuracy/train": steps, "lr/lr": steps, "throughput/items/s": steps,
		"system/cpu": steps, "loss/train (epoch)": 10, "loss/valid": 10, "accuracy/train (epoch)": 10, "accuracy/valid": 10}
	if !mapsEqual(streamed, want) {
		t.Fatalf("streamed points %v, want %v", streamed, want)
	}
	// The final update holds every logged point, as does Final().
	final := rec.updates[n-1]
	if got := seriesPoints(final.Board()); !mapsEqual(got, want) {
		t.Fatalf("final board %v, want %v", got, want)
	}
	if got := seriesPoints(d.Final()); !mapsEqual(got, want) {
		t.Fatalf("Final() %v, want %v", got, want)
	}
	if final.Step != steps || final.Epoch != 10 {
		t.Fatalf("final step %d epoch %d", final.Step, final.Epoch)
	}
	// Events after the end are ignored.
	d.OnEvent(events[1])
	d.Close()
	if len(rec.updates) != n || d.Updates() != n {
		t.Fatalf("updates after the end: %d", len(rec.updates))
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestLiveDashboardCoalesces(t *testing.T) {
	d, clk, rec := newFakeDashboard(DashboardConfig{MaxRate: 2, Metrics: []string{"loss"}})
	events := syntheticRun(1000, 1, 1000)
	// Every step event at the same instant: one update at once, the rest
	// gathered for the timer.
	for _, e := range events[:len(events)-1] {
		d.OnEvent(e)
	}
	if len(rec.updates) != 1 || len(rec.updates[0].Points) != 1 {
		t.Fatalf("a burst gave %d updates", len(rec.updates))
	}
	clk.advance(499 * time.Millisecond)
	if len(rec.updates) != 1 {
		t.Fatal("the timer fired before the interval (0.5 s at MaxRate 2)")
	}
	clk.advance(time.Millisecond)
	if len(rec.updates) != 2 {
		t.Fatalf("the timer did not send the gathered points: %d updates", len(rec.updates))
	}
	// 999 step values and the epoch's train and valid loss; lr was not asked for.
	if u := rec.updates[1]; len(u.Points) != 1001 || u.Final {
		t.Fatalf("coalesced update: %d points, final %v", len(u.Points), u.Final)
	}
	d.OnEvent(events[len(events)-1]) // the end
	if len(rec.updates) != 3 || !rec.updates[2].Final || len(rec.updates[2].Points) != 0 {
		t.Fatalf("end: %d updates", len(rec.updates))
	}
	if got := seriesPoints(rec.updates[2].Board()); got["loss/train"] != 1000 || len(got) != 3 {
		t.Fatalf("final board %v", got)
	}
	clk.advance(time.Hour) // no timer is left to fire
	if len(rec.updates) != 3 {
		t.Fatal("an update after the final one")
	}
}

func TestLiveDashboardSmoothingAndThinning(t *testing.T) {
	d, _, rec := newFakeDashboard(DashboardConfig{MaxPoints: 50, Smoothing: 0.9, Metrics: []string{"loss"}})
	for _, e := range syntheticRun(300, 1, 1000) {
		d.OnEvent(e)
	}
	first := rec.updates[0].Board().Chart("loss")
	if first == nil || !slices.Equal(first.SeriesNames(), []string{"train (raw)", "train"}) {
		t.Fatalf("first update's loss chart: %v", first)
	}
	last := rec.updates[len(rec.updates)-1].Board().Chart("loss")
	if len(last.fig.series[0].ys) != 300 || len(last.fig.series[1].ys) != 300 {
		t.Fatalf("final raw and smoothed series: %d and %d points", len(last.fig.series[0].ys), len(last.fig.series[1].ys))
	}
	if d.Board().Chart("loss").Points() != 600 {
		t.Fatalf("Board() after the end holds %d points", d.Board().Chart("loss").Points())
	}
	// Before the end, Board() thins to MaxPoints per series.
	d2, _, _ := newFakeDashboard(DashboardConfig{MaxPoints: 50, Metrics: []string{"loss"}})
	for _, e := range syntheticRun(300, 1, 1000)[:200] {
		d2.OnEvent(e)
	}
	if n := d2.Board().Chart("loss").Points(); n > 50 {
		t.Fatalf("running Board() holds %d points", n)
	}
	if n := d2.Final().Chart("loss").Points(); n != 199 {
		t.Fatalf("running Final() holds %d points, want 199", n)
	}
	if txt := d2.String(); txt == "" || d2.MIME()["text/plain"] == "" {
		t.Fatal("no text rendering")
	}
}

func TestLiveDashboardRealClock(t *testing.T) {
	var mu sync.Mutex
	var updates []DashboardUpdate
	d := NewLiveDashboard(SinkFunc(func(u DashboardUpdate) {
		mu.Lock()
		defer mu.Unlock()
		updates = append(updates, u)
		time.Sleep(2 * time.Millisecond) // a sink with some cost
	}), DashboardConfig{})
	start := time.Now()
	events := syntheticRun(1000, 1, 100)
	for _, e := range events {
		d.OnEvent(e)
	}
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if bound := int(elapsed.Seconds()*4) + 2; len(updates) > bound {
		t.Fatalf("%d updates in %v, bound %d", len(updates), elapsed, bound)
	}
	last := updates[len(updates)-1]
	if !last.Final || seriesPoints(last.Board())["loss/train"] != 1000 {
		t.Fatalf("final update: %+v", last)
	}
}

// TestLiveDashboardObservesFit runs a real (small) training run with the
// dashboard as its observer, and checks it against the run's own log.
func TestLiveDashboardObservesFit(t *testing.T) {
	dev := tensor.CPU().Autodiff()
	dev.Seed(1)
	var items []data.Item
	for i := range 64 {
		c := i % 2
		items = append(items, data.Item{X: []float32{float32(c*2 - 1), float32(i%5) / 5}, Label: int64(c)})
	}
	var model *nn.Linear
	tensor.NoScope(func() { model = nn.NewLinear(dev, 2, 2) })
	load := func() *data.DataLoader {
		l, err := data.NewLoader(data.NewInMemory(items), data.LoaderConfig{Device: dev, BatchSize: 8})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	var mu sync.Mutex
	var final []DashboardUpdate
	dash := NewLiveDashboard(SinkFunc(func(u DashboardUpdate) {
		mu.Lock()
		defer mu.Unlock()
		if u.Final {
			final = append(final, u)
		}
	}), DashboardConfig{})
	dir := t.TempDir()
	s := &train.Supervised{
		Config:       train.Config{Epochs: 3, LogEvery: 1, RunDir: dir},
		Train:        load(),
		Valid:        load(),
		Metrics:      []metrics.Metric{metrics.NewAccuracy()},
		ValidMetrics: []metrics.Metric{metrics.NewAccuracy()},
		Observers:    []train.Observer{dash},
	}
	res, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(final) != 1 {
		t.Fatalf("%d final updates", len(final))
	}
	got := seriesPoints(final[0].Board())
	if got["loss/train"] != res.Steps || got["loss/valid"] != 3 || got["accuracy/valid"] != 3 {
		t.Fatalf("final board %v for %d steps", got, res.Steps)
	}
	board, err := RunCharts(dir, CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if logged := seriesPoints(board); logged["loss/train"] != got["loss/train"] || logged["loss/valid"] != 3 {
		t.Fatalf("run directory charts %v, dashboard %v", logged, got)
	}
	v := final[0].Board().Chart("loss").fig.series[0].ys
	if math.IsNaN(v[0]) {
		t.Fatal("NaN loss")
	}
}
