package viz

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/train"
)

// CurveOptions configures charts made from a run's events. The zero value
// plots every point against the optimizer step, unsmoothed.
type CurveOptions struct {
	// X is the x axis: "step" (the default: step events and epoch values
	// at the step where each epoch ended) or "epoch" (epoch values only).
	X string `json:"x,omitempty"`
	// Smoothing is the weight of an exponential moving average over the
	// per-step training values, in [0, 1): 0 is none, 0.6 TensorBoard's
	// default. The raw values stay visible, faded, under the smoothed
	// line.
	Smoothing float64 `json:"smoothing,omitempty"`
	// MaxPoints thins each series to at most this many points (Thin); 0
	// keeps every point.
	MaxPoints int `json:"max_points,omitempty"`
	// Split picks the values Compare plots: "train" or "valid"; "" means
	// valid where any run logged validation values, else train.
	Split string `json:"split,omitempty"`
	// LogY makes metric charts' y axes logarithmic.
	LogY bool `json:"log_y,omitempty"`
	// Width and Height are each chart's size in pixels; 0 means
	// DefaultWidth × DefaultHeight.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
}

func (o CurveOptions) byEpoch() bool { return strings.EqualFold(o.X, "epoch") }

func (o CurveOptions) xLabel() string {
	if o.byEpoch() {
		return "epoch"
	}
	return "step"
}

// apply gives c the options' size and thinning.
func (o CurveOptions) apply(c *Chart) *Chart {
	if o.Width > 0 || o.Height > 0 {
		w, h := o.Width, o.Height
		if w <= 0 {
			w = DefaultWidth
		}
		if h <= 0 {
			h = DefaultHeight
		}
		c.SetSize(w, h)
	}
	return c.thinned(o.MaxPoints)
}

// Names of the metrics that get charts of their own instead of a curve.
const (
	metricLR         = "lr"
	metricItemsPerS  = "items_per_sec"
	metricCPUPercent = "cpu_percent"
	metricMemPercent = "mem_percent"
	confusionPrefix  = "cm_"
)

func isCurveMetric(name string) bool {
	switch name {
	case metricLR, metricItemsPerS, metricCPUPercent, metricMemPercent, "confusion_matrix":
		return false
	}
	return !strings.HasPrefix(name, confusionPrefix)
}

// MetricNames returns the names of the metrics a run's events carry that
// Curve plots: "loss" first, then the others sorted. Learning rate,
// throughput, system usage and confusion-matrix cells are left out (they
// have charts of their own).
func MetricNames(events []train.Event) []string {
	seen := map[string]bool{}
	for _, e := range events {
		for k := range e.Metrics {
			if isCurveMetric(k) {
				seen[k] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for k := range seen {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "loss":
			return -1
		case b == "loss":
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

// points collects one series' values from events.
type points struct{ xs, ys []float64 }

func (p *points) add(x, y float64) { p.xs, p.ys = append(p.xs, x), append(p.ys, y) }

// curveSeries returns the series of one metric: per-step training values
// (smoothed, with the raw values faded under them, when asked), and the
// epoch values of each split.
func curveSeries(events []train.Event, metric string, opt CurveOptions) []series {
	var step, trainEpoch, validEpoch points
	for _, e := range events {
		v, ok := e.Metrics[metric]
		if !ok {
			continue
		}
		x := float64(e.Step)
		if opt.byEpoch() {
			x = float64(e.Epoch)
		}
		switch {
		case e.Kind == train.EventStep && !opt.byEpoch():
			step.add(x, v)
		case e.Kind == train.EventEpoch && e.Split == "valid":
			validEpoch.add(x, v)
		case e.Kind == train.EventEpoch:
			trainEpoch.add(x, v)
		}
	}
	var out []series
	if len(step.ys) > 0 {
		if opt.Smoothing > 0 {
			out = append(out, series{name: "train (raw)", xs: step.xs, ys: step.ys, color: palette[0], faded: true},
				series{name: "train", xs: step.xs, ys: Smooth(step.ys, opt.Smoothing), color: palette[0]})
		} else {
			out = append(out, series{name: "train", xs: step.xs, ys: step.ys, color: palette[0]})
		}
	}
	if len(trainEpoch.ys) > 0 {
		name := "train (epoch)"
		if opt.byEpoch() {
			name = "train"
		}
		out = append(out, series{name: name, xs: trainEpoch.xs, ys: trainEpoch.ys, color: palette[2]})
	}
	if len(validEpoch.ys) > 0 {
		out = append(out, series{name: "valid", xs: validEpoch.xs, ys: validEpoch.ys, color: palette[3]})
	}
	return out
}

// Curve returns the chart of one metric over a run: the per-step training
// values (from step events), and the training and validation values of
// each epoch. With opt.X "epoch" only the epoch values are plotted, against
// the epoch. A metric the events do not carry gives an empty chart that
// says so.
func Curve(events []train.Event, metric string, opt CurveOptions) *Chart {
	f := figure{kind: figureXY, title: metric, xLabel: opt.xLabel(), yLabel: metric, logY: opt.LogY, xInt: true,
		series: curveSeries(events, metric, opt)}
	if len(f.series) == 0 {
		f.note = fmt.Sprintf("The run logged no values of %q.", metric)
	}
	return opt.apply(newChart(metric, f))
}

// LearningRate returns the chart of the learning rate over a run (the lr
// of step events, else of training epoch events).
func LearningRate(events []train.Event, opt CurveOptions) *Chart {
	var step, epoch points
	for _, e := range events {
		lr := e.LR
		if v, ok := e.Metrics[metricLR]; ok && lr == 0 {
			lr = v
		}
		if lr == 0 {
			continue
		}
		switch {
		case e.Kind == train.EventStep && !opt.byEpoch():
			step.add(float64(e.Step), lr)
		case e.Kind == train.EventEpoch && e.Split != "valid":
			x := float64(e.Step)
			if opt.byEpoch() {
				x = float64(e.Epoch)
			}
			epoch.add(x, lr)
		}
	}
	p := step
	if len(p.ys) == 0 {
		p = epoch
	}
	f := figure{kind: figureXY, title: "learning rate", xLabel: opt.xLabel(), yLabel: "lr", xInt: true}
	if len(p.ys) > 0 {
		f.series = []series{{name: "lr", xs: p.xs, ys: p.ys}}
	} else {
		f.note = "The run logged no learning rate."
	}
	return opt.apply(newChart("lr", f))
}

// Throughput returns the chart of a run's training speed: the
// items_per_sec metric where the run logged it (metrics.IterationSpeed),
// else optimizer steps per second between consecutive step events.
func Throughput(events []train.Event, opt CurveOptions) *Chart {
	var items, steps points
	var prev *train.Event
	for i := range events {
		e := &events[i]
		if e.Kind != train.EventStep {
			continue
		}
		if v, ok := e.Metrics[metricItemsPerS]; ok {
			items.add(float64(e.Step), v)
		}
		if prev != nil {
			dt := e.Elapsed - prev.Elapsed
			if dt <= 0 {
				dt = e.Time.Sub(prev.Time).Seconds()
			}
			if dt > 0 && e.Step > prev.Step {
				steps.add(float64(e.Step), float64(e.Step-prev.Step)/dt)
			}
		}
		prev = e
	}
	f := figure{kind: figureXY, title: "throughput", xLabel: "step", xInt: true}
	switch {
	case len(items.ys) > 0:
		f.yLabel = "items/s"
		f.series = []series{{name: "items/s", xs: items.xs, ys: items.ys}}
	case len(steps.ys) > 0:
		f.yLabel = "steps/s"
		f.series = []series{{name: "steps/s", xs: steps.xs, ys: steps.ys}}
	default:
		f.note = "The run logged too few steps to measure its speed."
	}
	if opt.Smoothing > 0 && len(f.series) == 1 {
		s := f.series[0]
		f.series = []series{{name: s.name + " (raw)", xs: s.xs, ys: s.ys, color: palette[0], faded: true},
			{name: s.name, xs: s.xs, ys: Smooth(s.ys, opt.Smoothing), color: palette[0]}}
	}
	opt.LogY = false
	return opt.apply(newChart("throughput", f))
}

// SystemUsage returns the chart of the CPU and memory use a run logged
// (the cpu_percent and mem_percent metrics of metrics.NewCPUUsage and
// metrics.NewMemoryUsage), in percent, from step and training epoch
// events.
func SystemUsage(events []train.Event, opt CurveOptions) *Chart {
	f := figure{kind: figureXY, title: "system usage", xLabel: opt.xLabel(), yLabel: "%", xInt: true}
	for _, name := range []string{metricCPUPercent, metricMemPercent} {
		var p points
		for _, e := range events {
			v, ok := e.Metrics[name]
			if !ok || e.Split == "valid" {
				continue
			}
			if opt.byEpoch() {
				if e.Kind == train.EventEpoch {
					p.add(float64(e.Epoch), v)
				}
			} else if e.Kind == train.EventStep {
				p.add(float64(e.Step), v)
			}
		}
		if len(p.ys) > 0 {
			f.series = append(f.series, series{name: strings.TrimSuffix(name, "_percent"), xs: p.xs, ys: p.ys})
		}
	}
	if len(f.series) == 0 {
		f.note = "The run logged no system metrics (add metrics.NewCPUUsage() and metrics.NewMemoryUsage() to its Metrics)."
	}
	return opt.apply(newChart("system", f))
}

// ConfusionFromEvent returns the confusion matrix an epoch event carries
// (the cm_<true>_<predicted> values of metrics.ConfusionMatrix), or nil
// when it carries none.
func ConfusionFromEvent(e train.Event, classNames ...string) *Chart {
	k := 0
	type cell struct {
		i, j int
		v    float64
	}
	var cells []cell
	for name, v := range e.Metrics {
		rest, ok := strings.CutPrefix(name, confusionPrefix)
		if !ok {
			continue
		}
		a, b, ok := strings.Cut(rest, "_")
		i, err1 := strconv.Atoi(a)
		j, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || i < 0 || j < 0 {
			continue
		}
		cells = append(cells, cell{i, j, v})
		k = max(k, i+1, j+1)
	}
	if k == 0 {
		return nil
	}
	rows := make([][]float64, k)
	for i := range rows {
		rows[i] = make([]float64, k)
	}
	for _, c := range cells {
		rows[c.i][c.j] = c.v
	}
	c := Confusion(rows, classNames...)
	split := e.Split
	if split == "" {
		split = "train"
	}
	c.fig.title = fmt.Sprintf("%s (%s, epoch %d)", c.fig.title, split, e.Epoch)
	return c
}

// TrainingCurves returns the charts of a run: one Curve per metric
// (MetricNames), then the learning rate, throughput and system usage where
// the run logged them, and the confusion matrix of the last epoch that
// carried one (validation preferred).
func TrainingCurves(events []train.Event, opt CurveOptions) *Board {
	b := NewBoard("")
	for _, m := range MetricNames(events) {
		b.Add(Curve(events, m, opt))
	}
	if lr := LearningRate(events, opt); len(lr.fig.series) > 0 {
		b.Add(lr)
	}
	if tp := Throughput(events, opt); len(tp.fig.series) > 0 {
		b.Add(tp)
	}
	if sys := SystemUsage(events, opt); len(sys.fig.series) > 0 {
		b.Add(sys)
	}
	var last *Chart
	for _, split := range []string{"train", "valid"} {
		for i := len(events) - 1; i >= 0; i-- {
			e := events[i]
			if e.Kind != train.EventEpoch || (e.Split == "valid") != (split == "valid") {
				continue
			}
			if c := ConfusionFromEvent(e); c != nil {
				last = c
				break
			}
		}
	}
	if last != nil {
		b.Add(opt.apply(last))
	}
	return b
}

// RunCharts reads a run directory's events.jsonl (train.EventsFile) and
// returns its TrainingCurves, titled with the directory's name. It returns
// the error of train.ReadEvents when the log cannot be read.
func RunCharts(dir string, opt CurveOptions) (*Board, error) {
	events, err := train.ReadEvents(filepath.Join(dir, train.EventsFile))
	if err != nil {
		return nil, fmt.Errorf("viz: run %s: %w", dir, err)
	}
	b := TrainingCurves(events, opt)
	b.title = runName(dir)
	return b, nil
}

func runName(dir string) string {
	name := filepath.Base(filepath.Clean(dir))
	if name == "." || name == string(filepath.Separator) {
		if abs, err := filepath.Abs(dir); err == nil {
			name = filepath.Base(abs)
		}
	}
	return name
}

// ErrNoValues is returned by Compare when no run logged the metric.
var ErrNoValues = errors.New("viz: no values")

// Compare returns one chart of a metric across several runs, one series
// per run directory (named after it): the per-step training values (with
// opt.Smoothing) or, for opt.Split "valid", the validation value of each
// epoch. It returns an error when a directory has no readable event log,
// or one wrapping ErrNoValues when no run logged the metric.
func Compare(dirs []string, metric string, opt CurveOptions) (*Chart, error) {
	runs := make([][]train.Event, len(dirs))
	for i, dir := range dirs {
		evs, err := train.ReadEvents(filepath.Join(dir, train.EventsFile))
		if err != nil {
			return nil, fmt.Errorf("viz: compare %s: %w", dir, err)
		}
		runs[i] = evs
	}
	split := opt.Split
	if split == "" {
		split = "train"
		for _, evs := range runs {
			for _, e := range evs {
				if _, ok := e.Metrics[metric]; ok && e.Split == "valid" {
					split = "valid"
				}
			}
		}
	}
	f := figure{kind: figureXY, title: fmt.Sprintf("%s (%s)", metric, split), xLabel: opt.xLabel(), yLabel: metric,
		logY: opt.LogY, xInt: true}
	names := map[string]int{}
	for i, evs := range runs {
		name := runName(dirs[i])
		if names[name]++; names[name] > 1 {
			name = fmt.Sprintf("%s (%d)", name, names[name])
		}
		// The series to take, in order of preference.
		wanted := []string{"valid"}
		if split == "train" {
			wanted = []string{"train", "train (epoch)"}
		}
		var want series
		found := false
		all := curveSeries(evs, metric, opt)
		for _, w := range wanted {
			for _, s := range all {
				if !found && s.name == w {
					want, found = s, true
				}
			}
		}
		if !found {
			continue
		}
		want.name, want.color, want.faded = name, palette[len(f.series)%len(palette)], false
		f.series = append(f.series, want)
	}
	if len(f.series) == 0 {
		return nil, fmt.Errorf("%w: no run logged %s values of %q", ErrNoValues, split, metric)
	}
	return opt.apply(newChart(metric, f)), nil
}

// ResultCurves returns the per-epoch charts of a finished Fit's result: one
// chart per metric, training and validation values against the epoch.
func ResultCurves(r train.Result, opt CurveOptions) *Board {
	var events []train.Event
	for i, v := range r.Train {
		events = append(events, train.Event{Kind: train.EventEpoch, Epoch: i + 1, Split: "train", Metrics: v})
	}
	for i, v := range r.Valid {
		events = append(events, train.Event{Kind: train.EventEpoch, Epoch: i + 1, Split: "valid", Metrics: v})
	}
	opt.X = "epoch"
	b := NewBoard(fmt.Sprintf("%d epochs, %d steps: %s", r.Epochs, r.Steps, r.Reason))
	for _, m := range MetricNames(events) {
		b.Add(Curve(events, m, opt))
	}
	return b
}
