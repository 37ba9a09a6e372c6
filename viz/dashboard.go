package viz

import (
	"fmt"
	"maps"
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
	Chart  string  `json:"chart"`  // the chart's key: the metric ("loss"), "lr", "throughput" or "system"
	Series string  `json:"series"` // "train" (step values), "train (epoch)", "valid", "lr", "items/s", "cpu", "mem"
	X      float64 `json:"x"`      // the optimizer step
	Y      float64 `json:"y"`      // the value (NaN and ±Inf as logged)
}

// DashboardUpdate is one update of a LiveDashboard.
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
// thinned to DashboardConfig.MaxPoints points (every point when Final):
// what a notebook output shows, since a display update replaces the whole
// output. It is built on the first call.
func (u DashboardUpdate) Board() *Board {
	if u.state == nil {
		return NewBoard("")
	}
	return u.state.board()
}

// DashboardConfig configures a LiveDashboard. The zero value gives at most
// 4 updates a second, series thinned to 500 points, every metric.
type DashboardConfig struct {
	// MaxRate is the most updates per second (0 means 4). However fast
	// the run logs, updates come no faster; events in between are
	// coalesced into the next update.
	MaxRate float64 `json:"max_rate,omitempty"`
	// MaxPoints is the most points per series an update's Board holds
	// (0 means 500; negative means no limit). Final updates hold every
	// point.
	MaxPoints int `json:"max_points,omitempty"`
	// Smoothing is the weight of an exponential moving average over the
	// per-step training values (see Smooth); 0 is none.
	Smoothing float64 `json:"smoothing,omitempty"`
	// Metrics lists the metrics to chart; empty means all of them.
	Metrics []string `json:"metrics,omitempty"`
	// Title is shown above the charts.
	Title string `json:"title,omitempty"`
	// Width and Height are each chart's size in pixels (0: the default).
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
}

// LiveDashboard is a train.Observer that turns a run's events into chart
// updates for a DashboardSink, at a bounded rate: after an update, the next
// one waits for 1/MaxRate seconds, and events arriving meanwhile are
// gathered into it (a timer sends it if no event comes to trigger it). The
// run's end event triggers a final update at once. A LiveDashboard is also
// a Visual showing its current state. It is safe for concurrent use.
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
	return &LiveDashboard{cfg: cfg, sink: sink, now: time.Now, index: map[[2]string]*liveSeries{},
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
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

// place returns the chart and series a metric's value goes to ("" for
// values the dashboard does not plot).
func place(metric string, e train.Event) (chart, name string) {
	switch metric {
	case metricLR:
		return "lr", "lr"
	case metricItemsPerS:
		if e.Kind != train.EventStep {
			return "", ""
		}
		return "throughput", "items/s"
	case metricCPUPercent, metricMemPercent:
		if e.Kind != train.EventStep {
			return "", ""
		}
		return "system", strings.TrimSuffix(metric, "_percent")
	}
	if !isCurveMetric(metric) {
		return "", ""
	}
	switch {
	case e.Kind == train.EventStep:
		return metric, "train"
	case e.Split == "valid":
		return metric, "valid"
	}
	return metric, "train (epoch)"
}

// addLocked records a point; d.mu is held.
func (d *LiveDashboard) addLocked(chart, name string, x, y float64) {
	k := [2]string{chart, name}
	s := d.index[k]
	if s == nil {
		s = &liveSeries{chart: chart, name: name}
		d.index[k] = s
		d.series = append(d.series, s)
		known := false
		for _, c := range d.keys {
			known = known || c == chart
		}
		if !known {
			if chart == "loss" { // the loss first, as in TrainingCurves
				d.keys = append([]string{chart}, d.keys...)
			} else {
				d.keys = append(d.keys, chart)
			}
		}
	}
	s.xs, s.ys = append(s.xs, x), append(s.ys, y)
	d.pending = append(d.pending, Point{Chart: chart, Series: name, X: x, Y: y})
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
	x := float64(e.Step)
	d.step, d.epoch = max(d.step, e.Step), max(d.epoch, e.Epoch)
	switch e.Kind {
	case train.EventStep, train.EventEpoch:
		if e.Kind == train.EventStep {
			d.sawStep = true
		}
		for _, m := range sortedKeys(e.Metrics) {
			if !d.wanted(m) {
				continue
			}
			if chart, name := place(m, e); chart != "" {
				d.addLocked(chart, name, x, e.Metrics[m])
			}
		}
		_, hasLR := e.Metrics[metricLR]
		lrFromEpoch := e.Kind == train.EventEpoch && e.Split != "valid" && !d.sawStep
		if e.LR != 0 && !hasLR && d.wanted(metricLR) && (e.Kind == train.EventStep || lrFromEpoch) {
			d.addLocked("lr", "lr", x, e.LR)
		}
	case train.EventEnd:
		d.final = true
	}
	final := d.final
	d.mu.Unlock()
	d.emit(final)
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
	if d.finalOut || (len(d.pending) == 0 && !d.final) {
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
	d.pending = nil
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

// Bundle implements Visual: the current charts (Board).
func (d *LiveDashboard) Bundle(s *Session) map[string]string { return d.Board().Bundle(s) }

// dashboardState is a snapshot of a dashboard's series: slice headers of
// append-only slices, so taking one copies no points.
type dashboardState struct {
	cfg    DashboardConfig
	keys   []string
	series []liveSeries
	all    bool // every point (final), else thinned

	once sync.Once
	b    *Board
}

func (d *LiveDashboard) snapshotLocked(all bool) *dashboardState {
	st := &dashboardState{cfg: d.cfg, keys: append([]string(nil), d.keys...), all: all}
	for _, s := range d.series {
		st.series = append(st.series, liveSeries{chart: s.chart, name: s.name, xs: s.xs[:len(s.xs):len(s.xs)],
			ys: s.ys[:len(s.ys):len(s.ys)]})
	}
	return st
}

var liveColors = map[string]string{"train": palette[0], "train (epoch)": palette[2], "valid": palette[3]}

func (st *dashboardState) board() *Board {
	st.once.Do(func() {
		b := NewBoard(st.cfg.Title)
		maxPoints := st.cfg.MaxPoints
		if st.all {
			maxPoints = 0
		}
		for _, key := range st.keys {
			f := figure{kind: figureXY, title: key, xLabel: "step", yLabel: key, xInt: true}
			switch key {
			case "lr":
				f.title = "learning rate"
			case "system":
				f.yLabel = "%"
			case "throughput":
				f.yLabel = "items/s"
			}
			for _, s := range st.series {
				if s.chart != key {
					continue
				}
				col := liveColors[s.name]
				if col == "" {
					col = palette[len(f.series)%len(palette)]
				}
				if s.name == "train" && st.cfg.Smoothing > 0 {
					f.series = append(f.series, series{name: "train (raw)", xs: s.xs, ys: s.ys, color: col, faded: true},
						series{name: "train", xs: s.xs, ys: Smooth(s.ys, st.cfg.Smoothing), color: col})
					continue
				}
				f.series = append(f.series, series{name: s.name, xs: s.xs, ys: s.ys, color: col})
			}
			c := CurveOptions{Width: st.cfg.Width, Height: st.cfg.Height, MaxPoints: maxPoints}.apply(newChart(key, f))
			b.Add(c)
		}
		st.b = b
	})
	return st.b
}

func sortedKeys(m train.Values) []string { return slices.Sorted(maps.Keys(m)) }
