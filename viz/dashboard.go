package viz

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kiln-ml/kiln/train"
)

// DashboardSink receives a LiveDashboard's updates, one at a time and in
// order (Seq 1, 2, …), never concurrently, on the goroutine that delivers
// the run's events or on the dashboard's timer. A slow sink delays later
// updates, which then carry more points: updates coalesce, they are never
// queued. The kernel implements it with a Jupyter display_id (display the
// first update, update_display_data with the later ones, each the
// Session.RenderDisplay of Update.Board()); the workbench with
// Update.Points, sending only new points to a chart that already holds the
// earlier ones.
type DashboardSink interface {
	Update(u DashboardUpdate)
}

// SinkFunc adapts a function to DashboardSink. (In yaegi notebooks prefer
// a type with an Update method: closures created in a loop share
// variables.)
type SinkFunc func(u DashboardUpdate)

// Update calls f(u).
func (f SinkFunc) Update(u DashboardUpdate) { f(u) }

// Point is one value a run logged, as a LiveDashboard plots it.
type Point struct {
	// Chart is the chart's key: "step_loss" (the training loss of each
	// logging interval), a metric's name ("loss", "accuracy": its values
	// per epoch), "lr", "throughput" or "system".
	Chart string `json:"chart"`
	// Series is "train" (step_loss; and a metric's training value of an
	// epoch), "valid", "lr", "samples/s", "cpu" or "mem".
	Series string  `json:"series"`
	X      float64 `json:"x"` // the optimizer step; the epoch on the charts of metrics
	Y      float64 `json:"y"` // the value (NaN and ±Inf as logged)
}

// DashboardUpdate is one update of a LiveDashboard. It is a Visual: the
// whole dashboard as of the update (Bundle).
type DashboardUpdate struct {
	Seq   int  // 1 for the first update, then 2, 3, …
	Final bool // the run ended (or Close was called): no update follows, and Board holds every point
	Step  int  // the last optimizer step seen
	Epoch int  // the last epoch seen
	// Points are the points logged since the previous update, every one
	// of them, in the order they were logged: the incremental stream.
	Points []Point

	state *dashboardState
}

// Board returns the dashboard's charts as of this update, each series
// thinned to DashboardConfig.MaxPoints points (every point when Final),
// leaving out the charts whose series are all constant (Bundle shows
// those as values). It is built on the first call.
func (u DashboardUpdate) Board() *Board {
	if u.state == nil {
		return NewBoard("")
	}
	return u.state.board()
}

// Bundle implements Visual: the dashboard as of this update (its header
// with the run's progress, its values and its charts), what a notebook
// output shows, since a display update replaces the whole output.
func (u DashboardUpdate) Bundle(s *Session) map[string]string {
	if u.state == nil {
		return NewBoard("").Bundle(s)
	}
	return u.state.bundle(s)
}

// DashboardConfig configures a LiveDashboard. The zero value gives at most
// 4 updates a second, series thinned to 500 points, the per-step loss
// smoothed with weight 0.6 and every metric.
type DashboardConfig struct {
	// MaxRate is the most updates per second (0 means 4). However fast
	// the run logs, updates come no faster; events in between are
	// coalesced into the next update.
	MaxRate float64 `json:"max_rate,omitempty"`
	// MaxPoints is the most points per series an update's Board holds
	// (0 means 500; negative means no limit). Final updates hold every
	// point.
	MaxPoints int `json:"max_points,omitempty"`
	// Smoothing is the weight of the exponential moving average drawn over
	// the per-step training loss (see Smooth), the raw values faint
	// behind it: 0 means 0.6 (TensorBoard's default), a negative value
	// none. The dashboard's slider changes it in the page.
	Smoothing float64 `json:"smoothing,omitempty"`
	// Metrics lists the metrics to chart; empty means all of them.
	Metrics []string `json:"metrics,omitempty"`
	// Title is shown above the charts.
	Title string `json:"title,omitempty"`
	// Width and Height are each chart's size in pixels (0: 460 × 260, two
	// charts to a notebook's width).
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
}

// Dashboard chart sizes: two to the width of a notebook's output.
const (
	dashboardWidth  = 460
	dashboardHeight = 260
)

// defaultSmoothing is DashboardConfig.Smoothing's default.
const defaultSmoothing = 0.6

// LiveDashboard is a train.Observer that turns a run's events into a live
// view for a DashboardSink, at a bounded rate: after an update, the next
// one waits for 1/MaxRate seconds, and events arriving meanwhile are
// gathered into it (a timer sends it if no event comes to trigger it). The
// run's end event triggers a final update at once. A LiveDashboard is also
// a Visual showing its current state. It is safe for concurrent use.
//
// The view has a header (a progress bar, epoch x/N, batch and step, the
// time elapsed, an ETA, samples and steps per second, CPU and memory use),
// then the charts: the training loss of each logging interval (recovered
// from the running means that step events carry, so that it does not
// jump at epoch boundaries) smoothed, with the raw values faint behind
// and a slider for the smoothing; each metric's training and validation
// value per epoch; the learning rate; the throughput; CPU and memory in
// percent. Each y axis fits its data (fractions such as accuracy stay in
// [0, 1]), and a chart whose series are all constant (a fixed learning
// rate, a metric with one epoch so far) is shown as its value instead.
type LiveDashboard struct {
	cfg  DashboardConfig
	sink DashboardSink

	now   func() time.Time
	after func(d time.Duration, f func()) (stop func() bool)

	emitMu sync.Mutex // held while an update is built and delivered: one at a time, in order

	mu       sync.Mutex
	keys     []string // chart keys, in first-seen order
	series   []*liveSeries
	index    map[[2]string]*liveSeries
	pending  []Point
	seq      int
	step     int
	epoch    int
	sawStep  bool
	last     time.Time // when the last update was made
	stop     func() bool
	final    bool
	finalOut bool // the final update went out
	changed  bool // an event since the last update moved the header (the start, a checkpoint)

	prog    progress
	loss    lossRecovery
	running train.Values // the latest step event's metrics: running means over its epoch
	trainAt int          // the epoch of trainVals
	train   train.Values // the latest training epoch's values
	validAt int
	valid   train.Values // the latest validation's values
}

type liveSeries struct {
	chart, name string
	xs, ys      []float64 // append-only: snapshots share them
}

// NewLiveDashboard returns a dashboard that sends its updates to sink (nil
// for none: read Final or display the dashboard itself).
func NewLiveDashboard(sink DashboardSink, cfg DashboardConfig) *LiveDashboard {
	if cfg.MaxRate <= 0 {
		cfg.MaxRate = 4
	}
	if cfg.MaxPoints == 0 {
		cfg.MaxPoints = 500
	}
	switch {
	case cfg.Smoothing == 0:
		cfg.Smoothing = defaultSmoothing
	case cfg.Smoothing < 0:
		cfg.Smoothing = 0
	}
	cfg.Smoothing = min(cfg.Smoothing, 0.99)
	if cfg.Width <= 0 {
		cfg.Width = dashboardWidth
	}
	if cfg.Height <= 0 {
		cfg.Height = dashboardHeight
	}
	return &LiveDashboard{cfg: cfg, sink: sink, now: time.Now, index: map[[2]string]*liveSeries{},
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
		prog:  newProgress()}
}

func (d *LiveDashboard) interval() time.Duration {
	return time.Duration(float64(time.Second) / d.cfg.MaxRate)
}

func (d *LiveDashboard) wanted(metric string) bool {
	if len(d.cfg.Metrics) == 0 {
		return true
	}
	for _, m := range d.cfg.Metrics {
		if m == metric {
			return true
		}
	}
	return false
}

// Chart keys of a LiveDashboard besides the metrics'.
const (
	chartStepLoss   = "step_loss"
	chartLR         = "lr"
	chartThroughput = "throughput"
	chartSystem     = "system"
)

// addLocked records a point; d.mu is held.
func (d *LiveDashboard) addLocked(chart, name string, x, y float64) {
	k := [2]string{chart, name}
	s := d.index[k]
	if s == nil {
		s = &liveSeries{chart: chart, name: name}
		d.index[k] = s
		d.series = append(d.series, s)
		if !slices.Contains(d.keys, chart) {
			d.keys = append(d.keys, chart)
			slices.SortStableFunc(d.keys, func(a, b string) int { return chartRank(a) - chartRank(b) })
		}
	}
	s.xs, s.ys = append(s.xs, x), append(s.ys, y)
	d.pending = append(d.pending, Point{Chart: chart, Series: name, X: x, Y: y})
}

// chartRank orders the charts: the loss per step, the loss per epoch, the
// other metrics (as first seen), then learning rate, throughput and
// system use.
func chartRank(key string) int {
	switch key {
	case chartStepLoss:
		return 0
	case "loss":
		return 1
	case chartLR:
		return 3
	case chartThroughput:
		return 4
	case chartSystem:
		return 5
	}
	return 2
}

// lossRecovery turns the running means of step events into the mean of
// each logging interval: a step event's loss is the mean over its epoch
// so far, weighted by samples, so the interval's mean is recovered from
// two consecutive running means and their samples. That is what a chart
// should follow: the running mean itself starts afresh each epoch, and
// jumps there.
type lossRecovery struct {
	epoch   int     // the epoch of the previous step event (0: none)
	samples int     // its samples
	loss    float64 // its running mean
	noDiff  int     // an epoch resumed part way: its loss covers batches its Samples do not
}

// next returns the loss of the interval ending at step event e, whose
// running mean is loss: the mean over the samples since the previous step
// event of the same epoch, or the running mean itself for an epoch's first
// event (or when the samples are unknown).
func (r *lossRecovery) next(e train.Event, loss float64) float64 {
	v := loss
	if r.epoch == e.Epoch && e.Epoch != r.noDiff && r.samples > 0 && e.Samples > r.samples && finite(r.loss) {
		if d := (loss*float64(e.Samples) - r.loss*float64(r.samples)) / float64(e.Samples-r.samples); finite(d) {
			v = d
		}
	}
	r.epoch, r.samples, r.loss = e.Epoch, e.Samples, loss
	return v
}

// OnEvent implements train.Observer: it records the event's values and
// sends an update if the last one is at least 1/MaxRate seconds old (else
// the next update will carry them). The end event sends the final update.
// Events after the end (or after Close) are ignored.
func (d *LiveDashboard) OnEvent(e train.Event) {
	d.mu.Lock()
	if d.final {
		d.mu.Unlock()
		return
	}
	d.step, d.epoch = max(d.step, e.Step), max(d.epoch, e.Epoch)
	d.prog.observe(e)
	d.changed = true
	switch e.Kind {
	case train.EventResume:
		if p := e.Position; p != nil && p.Batch > 0 {
			d.loss.noDiff = p.Epoch + 1
		}
		d.loss.epoch = 0
	case train.EventStep:
		d.sawStep = true
		d.running = e.Metrics
		x := float64(e.Step)
		if loss, ok := e.Metrics["loss"]; ok && d.wanted("loss") {
			d.addLocked(chartStepLoss, "train", x, d.loss.next(e, loss))
		}
		if d.wanted(metricLR) {
			if lr, ok := e.Metrics[metricLR]; ok {
				d.addLocked(chartLR, "lr", x, lr)
			} else if e.LR != 0 {
				d.addLocked(chartLR, "lr", x, e.LR)
			}
		}
		switch v, ok := e.Metrics[metricItemsPerS]; {
		case !d.wanted(metricItemsPerS):
		case e.Samples > 0 && d.prog.measured:
			d.addLocked(chartThroughput, "samples/s", x, d.prog.rate)
		case ok:
			d.addLocked(chartThroughput, "samples/s", x, v)
		}
		d.addSystemLocked(x, e)
	case train.EventEpoch:
		split := "train"
		if e.Split == "valid" {
			split = "valid"
			d.valid, d.validAt = e.Metrics, e.Epoch
		} else {
			d.train, d.trainAt = e.Metrics, e.Epoch
			if !d.sawStep && e.LR != 0 && d.wanted(metricLR) {
				d.addLocked(chartLR, "lr", float64(e.Step), e.LR)
			}
			d.addSystemLocked(float64(e.Step), e) // every train epoch event carries it
		}
		for _, m := range sortedKeys(e.Metrics) {
			if isCurveMetric(m) && d.wanted(m) {
				d.addLocked(m, split, float64(e.Epoch), e.Metrics[m])
			}
		}
	case train.EventEnd:
		d.final = true
	}
	final := d.final
	d.mu.Unlock()
	d.emit(final)
}

// addSystemLocked records the CPU and memory use of a step or train epoch
// event, in percent: the system values Fit samples (on train epoch events
// and at most every 5 s on step events), else the cpu_percent and
// mem_percent metrics a run may log itself.
func (d *LiveDashboard) addSystemLocked(x float64, e train.Event) {
	for _, m := range []string{metricCPUPercent, metricMemPercent} {
		v, ok := e.System[m]
		if !ok {
			v, ok = e.Metrics[m]
		}
		if ok && d.wanted(m) {
			d.addLocked(chartSystem, strings.TrimSuffix(m, "_percent"), x, v)
		}
	}
}

// flush is the timer's: it sends the gathered points.
func (d *LiveDashboard) flush() {
	d.mu.Lock()
	d.stop = nil
	d.mu.Unlock()
	d.emit(true)
}

// emit sends an update if there is anything to send and the last update is
// at least 1/MaxRate old (the final update goes at once); otherwise it
// makes sure a timer will send the gathered points when the interval is up,
// even if no further event comes (a long validation pass, a paused run).
// Updates are built and delivered one at a time: with block false, a call
// that finds another update in progress leaves its points to the timer
// instead of waiting for a slow sink.
func (d *LiveDashboard) emit(block bool) {
	if block {
		d.emitMu.Lock()
	} else if !d.emitMu.TryLock() {
		d.mu.Lock()
		if d.stop == nil && !d.finalOut {
			d.stop = d.after(d.interval(), d.flush)
		}
		d.mu.Unlock()
		return
	}
	defer d.emitMu.Unlock()
	d.mu.Lock()
	if d.finalOut || (len(d.pending) == 0 && !d.changed && !d.final) {
		d.mu.Unlock()
		return
	}
	if !d.final && !d.last.IsZero() {
		if wait := d.interval() - d.now().Sub(d.last); wait > 0 {
			if d.stop == nil {
				d.stop = d.after(wait, d.flush)
			}
			d.mu.Unlock()
			return
		}
	}
	if d.stop != nil {
		d.stop()
		d.stop = nil
	}
	d.seq++
	u := DashboardUpdate{Seq: d.seq, Final: d.final, Step: d.step, Epoch: d.epoch, Points: d.pending,
		state: d.snapshotLocked(d.final)}
	d.pending, d.changed = nil, false
	d.last = d.now()
	d.finalOut = d.final
	d.mu.Unlock()
	if d.sink != nil {
		d.sink.Update(u)
	}
}

// Close ends the dashboard as the run's end event would: it sends the
// final update (if none was sent), after which events are ignored, and
// returns once the sink has received it. Use it when the run's events stop
// without an end event. A sink's Update must not call Close (it would wait
// for itself).
func (d *LiveDashboard) Close() {
	d.mu.Lock()
	d.final = true
	d.mu.Unlock()
	d.emit(true)
}

// Updates returns the number of updates sent so far.
func (d *LiveDashboard) Updates() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seq
}

// Final returns the dashboard's charts holding every point logged so far
// (not thinned), whether or not the run has ended.
func (d *LiveDashboard) Final() *Board {
	d.mu.Lock()
	st := d.snapshotLocked(true)
	d.mu.Unlock()
	return st.board()
}

// Board returns the dashboard's charts as an update would now: thinned to
// MaxPoints per series until the run has ended.
func (d *LiveDashboard) Board() *Board {
	d.mu.Lock()
	st := d.snapshotLocked(d.final)
	d.mu.Unlock()
	return st.board()
}

// String describes the dashboard's state in one line.
func (d *LiveDashboard) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, s := range d.series {
		n += len(s.ys)
	}
	state := "running"
	if d.final {
		state = "ended"
	}
	return fmt.Sprintf("live dashboard (%s): %d charts, %d points, step %d, epoch %d, %d updates",
		state, len(d.keys), n, d.step, d.epoch, d.seq)
}

// HTML returns the current charts as a self-contained HTML fragment.
func (d *LiveDashboard) HTML() string { return NewSession().Fragment(d) }

// MIME returns the current charts' display bundle.
func (d *LiveDashboard) MIME() map[string]string { return NewSession().Render(d) }

// Bundle implements Visual: the dashboard as an update would now show it.
func (d *LiveDashboard) Bundle(s *Session) map[string]string {
	d.mu.Lock()
	st := d.snapshotLocked(d.final)
	d.mu.Unlock()
	return st.bundle(s)
}

// dashboardState is a snapshot of a dashboard: slice headers of its
// append-only series, so taking one copies no points.
type dashboardState struct {
	cfg    DashboardConfig
	keys   []string
	series []liveSeries
	all    bool // every point (final), else thinned

	prog    progress
	running train.Values
	trainAt int
	train   train.Values
	validAt int
	valid   train.Values

	once      sync.Once
	b         *Board
	summaries []summary
}

// summary is a chart shown as its value: every series constant.
type summary struct {
	key, title string
	values     []namedValue
	note       string // "constant", "epoch 1", "1 step"
}

type namedValue struct {
	name  string
	value float64
}

func (d *LiveDashboard) snapshotLocked(all bool) *dashboardState {
	st := &dashboardState{cfg: d.cfg, keys: append([]string(nil), d.keys...), all: all, prog: d.prog,
		running: d.running, trainAt: d.trainAt, train: d.train, validAt: d.validAt, valid: d.valid}
	st.prog.window = nil // not read by the render; the dashboard appends to it
	for _, s := range d.series {
		st.series = append(st.series, liveSeries{chart: s.chart, name: s.name, xs: s.xs[:len(s.xs):len(s.xs)],
			ys: s.ys[:len(s.ys):len(s.ys)]})
	}
	return st
}

var liveColors = map[string]string{"train": palette[0], "valid": palette[3], "raw": palette[0], "smoothed": palette[0],
	"lr": palette[4], "samples/s": palette[5], "cpu": palette[6], "mem": palette[7]}

// chartTitle returns a dashboard chart's title.
func chartTitle(key string) string {
	switch key {
	case chartStepLoss:
		return "loss per step"
	case chartLR:
		return "learning rate"
	case chartThroughput:
		return "throughput (samples/s)"
	case chartSystem:
		return "CPU and memory (%)"
	}
	return key + " per epoch"
}

// board builds the charts of the snapshot, and the summaries of those
// whose series are all constant.
func (st *dashboardState) board() *Board {
	st.once.Do(func() {
		b := NewBoard(st.cfg.Title)
		maxPoints := st.cfg.MaxPoints
		if st.all {
			maxPoints = 0
		}
		for _, key := range st.keys {
			var ss []liveSeries
			for _, s := range st.series {
				if s.chart == key {
					ss = append(ss, s)
				}
			}
			if sum, ok := summarise(key, ss); ok {
				if key != chartSystem { // the header shows the latest system use
					st.summaries = append(st.summaries, sum)
				}
				continue
			}
			b.Add(st.chart(key, ss, maxPoints))
		}
		st.b = b
	})
	return st.b
}

// summarise returns the summary of a chart whose series are all constant
// (one value each, or the same value throughout).
func summarise(key string, ss []liveSeries) (summary, bool) {
	sum := summary{key: key, title: chartTitle(key)}
	n := 0
	for _, s := range ss {
		v, ok := constantValue(s.ys)
		if !ok {
			return summary{}, false
		}
		sum.values = append(sum.values, namedValue{s.name, v})
		n = max(n, len(s.ys))
	}
	if len(ss) == 0 {
		return summary{}, false
	}
	perStep := key == chartStepLoss || key == chartLR || key == chartThroughput || key == chartSystem
	switch {
	case n > 1:
		sum.note = "constant"
	case perStep:
		sum.note = "at step " + formatNumber(ss[0].xs[0])
	default:
		sum.note = "epoch " + formatNumber(ss[0].xs[0])
	}
	if !perStep {
		sum.title = key // a metric's values per epoch
	}
	return sum, true
}

// chart builds one drawn chart of the snapshot, its series thinned to
// maxPoints (0: all) and its axes fitted to the data.
func (st *dashboardState) chart(key string, ss []liveSeries, maxPoints int) *Chart {
	f := figure{kind: figureXY, title: chartTitle(key), xLabel: "step", yLabel: key, xInt: true}
	thin := func(s liveSeries) ([]float64, []float64) {
		if maxPoints > 0 && len(s.ys) > maxPoints {
			return Thin(s.xs, s.ys, maxPoints)
		}
		return s.xs, s.ys
	}
	var xs [][]float64
	var ys [][]float64
	bounded := false
	switch key {
	case chartStepLoss:
		f.yLabel = "loss"
	case chartLR:
		f.yLabel = "lr"
	case chartThroughput:
		f.yLabel = "samples/s"
	case chartSystem:
		f.yLabel = "%"
	default:
		f.xLabel = "epoch"
		bounded = boundedMetric(key)
	}
	for _, s := range ss {
		sx, sy := thin(s)
		xs, ys = append(xs, sx), append(ys, sy)
		if key == chartStepLoss {
			// The raw values faint, the smoothed ones over them; the
			// page's slider recomputes the smoothed ones from the raw
			// ones it holds, as here.
			f.series = append(f.series,
				series{name: "raw", xs: sx, ys: sy, color: liveColors["raw"], faded: true},
				series{name: "smoothed", xs: sx, ys: Smooth(sy, st.cfg.Smoothing), color: liveColors["smoothed"]})
			continue
		}
		col := liveColors[s.name]
		if col == "" {
			col = palette[len(f.series)%len(palette)]
		}
		f.series = append(f.series, series{name: s.name, xs: sx, ys: sy, color: col})
	}
	f.xRange = fitX(xs...)
	if key == chartSystem {
		f.yRange = axisRange{min: 0, max: 100, step: 20, ok: true}
	} else {
		f.yRange = fitAxis(bounded, ys...)
	}
	c := newChart(key, f)
	c.SetSize(st.cfg.Width, st.cfg.Height)
	return c
}

// fitX returns the x axis of a dashboard chart: from the first x to the
// last, no margin, ticks at a nice step (at least 1: steps and epochs are
// integers).
func fitX(xs ...[]float64) axisRange {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range xs {
		for _, x := range s {
			if finite(x) {
				lo, hi = min(lo, x), max(hi, x)
			}
		}
	}
	if !(lo < hi) {
		return axisRange{}
	}
	return axisRange{min: lo, max: hi, step: max(1, niceStep(hi-lo, 5)), ok: true}
}

func sortedKeys(m train.Values) []string { return slices.Sorted(maps.Keys(m)) }
