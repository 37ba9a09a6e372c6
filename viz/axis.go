package viz

import (
	"math"
	"strings"
)

// Axes that fit the data, for the live dashboard: echarts' own "scale"
// axes pad a lone value to a range around it (0.4–1.6 for an accuracy of
// 1) and let an accuracy axis run past 1, so the dashboard sets each y
// axis's bounds itself.

// axisRange is a fitted axis: its bounds, or ok false when there is no
// finite value to fit.
type axisRange struct {
	min, max float64
	step     float64 // the tick step (0: echarts picks)
	ok       bool
}

// boundedNames are parts of the names of metrics that are fractions in
// [0, 1]: accuracy, precision, recall, F1, areas under curves, overlap
// scores.
var boundedNames = []string{"accuracy", "acc", "precision", "recall", "f1", "auroc", "auc", "hamming_score",
	"bleu", "rouge", "iou", "dice", "jaccard"}

// boundedMetric reports whether a metric's name says it is a fraction in
// [0, 1] (accuracy, top5_accuracy, macro_f1, auc_pr, …).
func boundedMetric(name string) bool {
	n := strings.ToLower(name)
	for _, part := range strings.FieldsFunc(n, func(r rune) bool { return r == '_' || r == '.' || r == '-' || r == ' ' }) {
		for _, b := range boundedNames {
			if part == b || (len(b) > 3 && strings.HasPrefix(part, b)) {
				return true
			}
		}
	}
	for _, b := range boundedNames {
		if strings.Contains(b, "_") && strings.Contains(n, b) {
			return true
		}
	}
	return false
}

// niceStep returns the tick step for a span divided into about n
// intervals: 1, 2 or 5 times a power of ten.
func niceStep(span float64, n int) float64 {
	if !(span > 0) || n < 1 {
		return 0
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// fitAxis returns the y axis for values ys (the missing ones, NaN and
// ±Inf, left out): from the lowest to the highest rounded out to a nice
// tick step (about 5 ticks), so that the data fills the chart without
// padding beyond the next tick. A range that is a single value gets that
// value rounded out to the next ticks of its own magnitude (for 0, [0, 1]);
// a metric that is a fraction (bounded, with every value in [0, 1]) never
// leaves [0, 1].
func fitAxis(bounded bool, ys ...[]float64) axisRange {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ys {
		for _, y := range s {
			if finite(y) {
				lo, hi = min(lo, y), max(hi, y)
			}
		}
	}
	if lo > hi {
		return axisRange{}
	}
	bounded = bounded && lo >= 0 && hi <= 1
	span := hi - lo
	if span == 0 {
		// One value: a range of its own magnitude around it, no more.
		span = math.Abs(lo) / 5
		if span == 0 {
			span = 1
		}
	}
	step := niceStep(span, 5)
	r := axisRange{min: math.Floor(lo/step+1e-9) * step, max: math.Ceil(hi/step-1e-9) * step, ok: true}
	if r.min == r.max {
		r.min, r.max = r.min-step, r.max+step
	}
	if lo >= 0 && r.min < 0 {
		r.min = 0 // values that are never negative get no negative axis
	}
	if bounded {
		r.min, r.max = max(r.min, 0), min(r.max, 1)
	}
	r.min, r.max, r.step = roundTick(r.min, step), roundTick(r.max, step), step
	return r
}

// roundTick removes floating-point noise from a multiple of step (0.30000000000000004).
func roundTick(v, step float64) float64 {
	if step <= 0 {
		return v
	}
	digits := max(0, -int(math.Floor(math.Log10(step)))+1)
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// constantValue reports whether the finite values of ys are all the same
// (within a relative 1e-9, so that a value read back from JSON still
// counts), and that value; a series with no finite value is constant with
// the value NaN. An empty series is not constant.
func constantValue(ys []float64) (v float64, ok bool) {
	if len(ys) == 0 {
		return 0, false
	}
	v = math.NaN()
	for _, y := range ys {
		if !finite(y) {
			continue
		}
		if math.IsNaN(v) {
			v = y
			continue
		}
		if math.Abs(y-v) > 1e-9*max(math.Abs(v), math.Abs(y)) {
			return 0, false
		}
	}
	return v, true
}
