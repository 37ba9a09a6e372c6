package viz

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
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
	// The loss of each step; the metrics' values per epoch (the running
	// means of step events are not plotted); lr, throughput and CPU per
	// step.
	want := map[string]int{"step_loss/train": steps, "lr/lr": steps, "throughput/samples/s": steps, "system/cpu": steps,
		"loss/train": 10, "loss/valid": 10, "accuracy/train": 10, "accuracy/valid": 10}
	if !mapsEqual(streamed, want) {
		t.Fatalf("streamed points %v, want %v", streamed, want)
	}
	// The final update holds every logged point, as does Final(): the
	// step loss raw and smoothed.
	wantBoard := map[string]int{"step_loss/raw": steps, "step_loss/smoothed": steps, "lr/lr": steps,
		"throughput/samples/s": steps, "system/cpu": steps, "loss/train": 10, "loss/valid": 10, "accuracy/train": 10,
		"accuracy/valid": 10}
	final := rec.updates[n-1]
	if got := seriesPoints(final.Board()); !mapsEqual(got, wantBoard) {
		t.Fatalf("final board %v, want %v", got, wantBoard)
	}
	if got := seriesPoints(d.Final()); !mapsEqual(got, wantBoard) {
		t.Fatalf("Final() %v, want %v", got, wantBoard)
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
	// Every event at the same instant: one update at once (the start,
	// which shows the header), the rest gathered for the timer.
	for _, e := range events[:len(events)-1] {
		d.OnEvent(e)
	}
	if len(rec.updates) != 1 || len(rec.updates[0].Points) != 0 {
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
	// 1000 step values and the epoch's train and valid loss; lr was not asked for.
	if u := rec.updates[1]; len(u.Points) != 1002 || u.Final {
		t.Fatalf("coalesced update: %d points, final %v", len(u.Points), u.Final)
	}
	d.OnEvent(events[len(events)-1]) // the end
	if len(rec.updates) != 3 || !rec.updates[2].Final || len(rec.updates[2].Points) != 0 {
		t.Fatalf("end: %d updates", len(rec.updates))
	}
	// The step loss raw and smoothed; the epoch's train and valid loss,
	// one epoch: shown as values, not a chart.
	if got := seriesPoints(rec.updates[2].Board()); got["step_loss/raw"] != 1000 || len(got) != 2 {
		t.Fatalf("final board %v", got)
	}
	if sums := rec.updates[2].state.summaries; len(sums) != 1 || sums[0].key != "loss" || len(sums[0].values) != 2 {
		t.Fatalf("final values %+v, want the epoch's train and valid loss", sums)
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
	last := rec.updates[len(rec.updates)-1].Board().Chart("step_loss")
	if last == nil || !slices.Equal(last.SeriesNames(), []string{"raw", "smoothed"}) {
		t.Fatalf("final update's step loss chart: %v", last)
	}
	raw, smoothed := last.fig.series[0], last.fig.series[1]
	if len(raw.ys) != 300 || len(smoothed.ys) != 300 || !raw.faded {
		t.Fatalf("final raw and smoothed series: %d and %d points", len(raw.ys), len(smoothed.ys))
	}
	if !slices.Equal(smoothed.ys, Smooth(raw.ys, 0.9)) {
		t.Fatal("the smoothed series is not Smooth(raw, 0.9)")
	}
	if d.Board().Chart("step_loss").Points() != 600 {
		t.Fatalf("Board() after the end holds %d points", d.Board().Chart("step_loss").Points())
	}
	// Before the end, Board() thins to MaxPoints per series, and smooths
	// what it shows (as the page's slider does).
	d2, _, _ := newFakeDashboard(DashboardConfig{MaxPoints: 50, Metrics: []string{"loss"}})
	for _, e := range syntheticRun(300, 1, 1000)[:200] {
		d2.OnEvent(e)
	}
	c := d2.Board().Chart("step_loss")
	if n := c.Points(); n > 100 {
		t.Fatalf("running Board() holds %d points", n)
	}
	if !slices.Equal(c.fig.series[1].ys, Smooth(c.fig.series[0].ys, defaultSmoothing)) {
		t.Fatal("the running smoothed series is not Smooth(raw, 0.6) of the thinned raw series")
	}
	if n := d2.Final().Chart("step_loss").Points(); n != 2*199 {
		t.Fatalf("running Final() holds %d points, want 2×199", n)
	}
	if txt := d2.String(); txt == "" || d2.MIME()["text/plain"] == "" {
		t.Fatal("no text rendering")
	}
	// A negative Smoothing draws the raw values only (the smoothed series
	// equals them).
	d3, _, _ := newFakeDashboard(DashboardConfig{Smoothing: -1, Metrics: []string{"loss"}})
	for _, e := range syntheticRun(20, 1, 1000) {
		d3.OnEvent(e)
	}
	c = d3.Board().Chart("step_loss")
	if !slices.Equal(c.fig.series[0].ys, c.fig.series[1].ys) {
		t.Fatal("Smoothing -1 smoothed")
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
	if !last.Final || seriesPoints(last.Board())["step_loss/raw"] != 1000 {
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
	if got["step_loss/raw"] != res.Steps || got["loss/valid"] != 3 || got["accuracy/valid"] != 3 {
		t.Fatalf("final board %v for %d steps", got, res.Steps)
	}
	board, err := RunCharts(dir, CurveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if logged := seriesPoints(board); logged["loss/train"] != got["step_loss/raw"] || logged["loss/valid"] != 3 {
		t.Fatalf("run directory charts %v, dashboard %v", logged, got)
	}
	// Each step's loss is recovered from the running means: within an
	// epoch, their mean weighted by samples is the epoch's running mean
	// at its last step event.
	v := final[0].Board().Chart("step_loss").fig.series[0].ys
	events, err := train.ReadEvents(dir + "/" + train.EventsFile)
	if err != nil {
		t.Fatal(err)
	}
	i, sum, prev := 0, 0.0, 0
	for _, e := range events {
		if e.Kind != train.EventStep {
			continue
		}
		if e.Samples < prev {
			sum, prev = 0, 0
		}
		sum += v[i] * float64(e.Samples-prev)
		prev = e.Samples
		i++
		if want := e.Metrics["loss"]; math.Abs(sum/float64(e.Samples)-want) > 1e-9 {
			t.Fatalf("step %d: recovered losses average %v, the running mean is %v", e.Step, sum/float64(e.Samples), want)
		}
	}
	if b := final[0].Board(); b.Chart("lr") != nil {
		t.Error("a constant learning rate got a chart")
	}
}

// progressRun returns the events of a run as Fit logs them: epochs epochs
// of batches batches of 32 samples, a step event every step carrying the
// running means of loss and accuracy over the epoch, Batches, Batch and
// Samples, system values every 50 steps, a constant learning rate, and
// train and valid epoch events; 20 ms a step.
func progressRun(epochs, batches int) []train.Event {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) (time.Time, float64) { return t0.Add(time.Duration(s * float64(time.Second))), s }
	evs := []train.Event{{Version: train.EventLogVersion, Kind: train.EventStart, Time: t0,
		Config: json.RawMessage(fmt.Sprintf(`{"epochs":%d}`, epochs)), Batches: batches}}
	el, step := 0.0, 0
	for ep := 1; ep <= epochs; ep++ {
		var lossSum, accSum float64
		for b := 1; b <= batches; b++ {
			step++
			el += 0.02
			loss := 0.2 + 2*math.Exp(-float64(step)/150) + 0.15*math.Sin(float64(step)*1.7)
			acc := min(1, 1-loss/2.5)
			lossSum += 32 * loss
			accSum += 32 * acc
			tm, e := at(el)
			ev := train.Event{Kind: train.EventStep, Time: tm, Elapsed: e, Epoch: ep, Step: step, Split: "train", LR: 0.05,
				Metrics: train.Values{"loss": lossSum / float64(32*b), "accuracy": accSum / float64(32*b)},
				Batches: batches, Batch: b, Samples: 32 * b}
			if step%50 == 1 {
				ev.System = train.Values{"cpu_percent": 80 + float64(step%7), "mem_percent": 41, "process_rss_mib": 812}
			}
			evs = append(evs, ev)
		}
		tm, e := at(el)
		evs = append(evs, train.Event{Kind: train.EventEpoch, Time: tm, Elapsed: e, Epoch: ep, Step: step, Split: "train",
			LR: 0.05, Metrics: train.Values{"loss": lossSum / float64(32*batches), "accuracy": accSum / float64(32*batches)}})
		el += 0.3 // validation
		vl := 0.25 + 1.8*math.Exp(-float64(step)/150)
		tm, e = at(el)
		evs = append(evs, train.Event{Kind: train.EventEpoch, Time: tm, Elapsed: e, Epoch: ep, Step: step, Split: "valid",
			Metrics: train.Values{"loss": vl, "accuracy": min(1, 1-vl/2.6)}})
	}
	tm, e := at(el)
	evs = append(evs, train.Event{Kind: train.EventEnd, Time: tm, Elapsed: e, Epoch: epochs, Step: step,
		Reason: train.StopCompleted})
	return evs
}

// TestLiveDashboardView checks what a run's dashboard shows, mid-run and
// at the end, against the run's events: the header (progress, epoch x/N,
// ETA, samples/s, system use), the constant learning rate as a value, the
// first epoch's metrics as values until a second epoch gives a curve, and
// axes that fit (accuracy within [0, 1]).
func TestLiveDashboardView(t *testing.T) {
	evs := progressRun(5, 100) // 20 ms a step, 0.3 s of validation an epoch, 32 samples a batch
	d := NewLiveDashboard(nil, DashboardConfig{Title: "run"})
	feed := func(upTo int) {
		for _, e := range evs[:upTo] {
			d.OnEvent(e)
		}
		evs = evs[upTo:]
	}
	// The start, then half of the first epoch: no curve per epoch yet.
	feed(1 + 50)
	st := d.snapshot()
	b := st.board()
	if b.Chart("accuracy") != nil || b.Chart("lr") != nil || b.Chart("step_loss") == nil {
		t.Fatalf("charts after 50 steps: %v", b)
	}
	if len(st.summaries) != 2 || st.summaries[0].key != "lr" || st.summaries[0].note != "constant" ||
		st.summaries[1].key != "throughput" {
		t.Fatalf("values after 50 steps: %+v", st.summaries)
	}
	html := d.HTML()
	// 50 of 500 batches: 10%; 1 s for 10%, 9 s to go; 32 samples per 20 ms
	// between step events.
	for _, want := range []string{`data-fraction="0.1000"`, ">10%<", ">epoch 1/5<", ">batch 50/100<", ">step 50<",
		">elapsed 1s<", ">ETA 9s<", ">1600 samples/s<", ">50 steps/s<", "CPU 81% · memory 41% · process 812 MiB",
		">learning rate · constant<", ">0.05<", `class="kiln-dash-smoothing"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the dashboard after 50 steps does not show %q", want)
		}
	}
	// The first epoch's end and validation: its values, shown as values.
	feed(50 + 2)
	st = d.snapshot()
	if st.board().Chart("accuracy") != nil {
		t.Fatal("one epoch of accuracy got a chart")
	}
	var acc *summary
	for i := range st.summaries {
		if st.summaries[i].key == "accuracy" {
			acc = &st.summaries[i]
		}
	}
	if acc == nil || acc.note != "epoch 1" || len(acc.values) != 2 || acc.values[0].name != "train" || acc.values[1].name != "valid" {
		t.Fatalf("one epoch of accuracy: %+v", st.summaries)
	}
	// The rest of the run.
	feed(len(evs))
	st = d.snapshot()
	b = st.board()
	c := b.Chart("accuracy")
	if c == nil {
		t.Fatal("no accuracy chart after 5 epochs")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.fig.series {
		for _, y := range s.ys {
			lo, hi = min(lo, y), max(hi, y)
		}
	}
	r := c.fig.yRange
	if !r.ok || r.min < 0 || r.max > 1 || r.min > lo || r.max < hi {
		t.Errorf("accuracy axis [%v, %v] for values in [%v, %v]: want it to hold them within [0, 1]", r.min, r.max, lo, hi)
	}
	opt := optionOf(t, c)
	if y := opt["yAxis"].([]any)[0].(map[string]any); y["min"] != r.min || y["max"] != r.max {
		t.Errorf("the option's y axis is [%v, %v], not the fitted one", y["min"], y["max"])
	}
	if x := c.fig.xRange; x.min != 1 || x.max != 5 {
		t.Errorf("accuracy x axis [%v, %v], want the epochs 1 to 5", x.min, x.max)
	}
	if c := b.Chart("system"); c == nil || c.fig.yRange.min != 0 || c.fig.yRange.max != 100 {
		t.Errorf("system chart %v: want one axis in percent, 0 to 100", c)
	}
	html = d.HTML()
	for _, want := range []string{">completed<", `data-fraction="1.0000"`, ">100%<", ">epoch 5/5<", ">step 500<", ">took 11s<"} {
		if !strings.Contains(html, want) {
			t.Errorf("the final dashboard does not show %q", want)
		}
	}
	if strings.Contains(html, "kiln-dash-eta") {
		t.Error("the final dashboard shows an ETA")
	}
	if txt := d.MIME()["text/plain"]; !strings.HasPrefix(txt, "run · completed · epoch 5/5 · step 500 · 100% · took 11s") {
		t.Errorf("text/plain %q", txt)
	}
}

// snapshot returns the dashboard's state as an update would now hold it.
func (d *LiveDashboard) snapshot() *dashboardState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.snapshotLocked(d.final)
}
