package viz

import (
	"math"
	"testing"
)

func TestNiceStep(t *testing.T) {
	for _, c := range []struct {
		name string
		span float64
		want float64
	}{
		{"ten in five", 10, 2},
		{"one in five", 1, 0.2},
		{"rounds up to 2", 0.62, 0.2},
		{"rounds up to 5", 2.18, 0.5},
		{"rounds up to 10", 4.3, 1},
		{"no span", 0, 0},
	} {
		if got := niceStep(c.span, 5); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: niceStep(%v, 5) = %v, want %v", c.name, c.span, got, c.want)
		}
	}
}

func TestFitAxis(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name     string
		bounded  bool
		ys       []float64
		min, max float64
		ok       bool
	}{
		// span 0.62, step 0.2: 0.33 → 0.2, 0.95 → 1.
		{"accuracy rounds out to its ticks", true, []float64{0.33, 0.7, 0.95}, 0.2, 1, true},
		// step 0.05 around 1: [0.95, 1.05], cut at 1.
		{"one accuracy of 1 stays within [0, 1]", true, []float64{1}, 0.95, 1, true},
		{"an accuracy of 0 stays within [0, 1]", true, []float64{0, 0}, 0, 0.2, true},
		// span 2.18, step 0.5.
		{"loss rounds out to half units", false, []float64{2.3, 0.9, 0.12}, 0, 2.5, true},
		// span 4.3, step 1.
		{"negative values", false, []float64{-3.2, 1.1}, -4, 2, true},
		// not fractions after all: span 50, step 10.
		{"accuracy in percent is not cut", true, []float64{40, 90}, 40, 90, true},
		// one value 0.693: span 0.1386, step 0.05, [0.65, 0.7].
		{"one value: its own magnitude, no more", false, []float64{0.693}, 0.65, 0.7, true},
		{"missing values left out", false, []float64{nan, 1, math.Inf(1), 3}, 1, 3, true},
		{"no value", false, []float64{nan}, 0, 0, false},
	} {
		got := fitAxis(c.bounded, c.ys)
		if got.ok != c.ok || math.Abs(got.min-c.min) > 1e-12 || math.Abs(got.max-c.max) > 1e-12 {
			t.Errorf("%s: fitAxis(%v, %v) = %+v, want [%v, %v] ok %v", c.name, c.bounded, c.ys, got, c.min, c.max, c.ok)
		}
	}
	// Several series share the axis: span 2.6, step 1.
	if got := fitAxis(false, []float64{1, 2}, []float64{3.6}); got.min != 1 || got.max != 4 {
		t.Errorf("two series: %+v, want [1, 4]", got)
	}
}

func TestConstantValue(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name string
		ys   []float64
		v    float64
		ok   bool
	}{
		{"a fixed learning rate", []float64{0.05, 0.05, 0.05}, 0.05, true},
		{"one point", []float64{0.87}, 0.87, true},
		{"equal but for rounding", []float64{0.1, 0.1 * (1 + 1e-12)}, 0.1, true},
		{"missing values are left out", []float64{nan, 3, 3}, 3, true},
		{"a schedule", []float64{0.1, 0.1, 0.05}, 0, false},
		{"nothing", nil, 0, false},
	} {
		v, ok := constantValue(c.ys)
		if ok != c.ok || (ok && math.Abs(v-c.v) > 1e-15) {
			t.Errorf("%s: constantValue(%v) = %v, %v; want %v, %v", c.name, c.ys, v, ok, c.v, c.ok)
		}
	}
	if v, ok := constantValue([]float64{nan, nan}); !ok || !math.IsNaN(v) {
		t.Errorf("only missing values: %v, %v; want NaN, true", v, ok)
	}
}

func TestBoundedMetric(t *testing.T) {
	for name, want := range map[string]bool{
		"accuracy": true, "top5_accuracy": true, "acc": true, "macro_f1": true, "auc_pr": true, "auroc": true,
		"hamming_score": true, "rouge_l": true, "valid.accuracy": true, "precision": true,
		"loss": false, "mae": false, "perplexity": false, "wer": false, "accumulated_loss": false,
	} {
		if got := boundedMetric(name); got != want {
			t.Errorf("boundedMetric(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSmoothByHand(t *testing.T) {
	// w 0.5: averages 0.5, 1.25, 2.125 over weights 0.5, 0.75, 0.875.
	got := Smooth([]float64{1, 2, 3}, 0.5)
	want := []float64{1, 1.25 / 0.75, 2.125 / 0.875}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("Smooth = %v, want %v", got, want)
		}
	}
	// TensorBoard's default 0.6 over a step: 0.4·1/0.4 = 1, then
	// (0.6·0.4 + 0.4·3)/(0.6·0.4 + 0.4) = 1.44/0.64.
	got = Smooth([]float64{1, 3}, 0.6)
	if math.Abs(got[0]-1) > 1e-12 || math.Abs(got[1]-1.44/0.64) > 1e-12 {
		t.Fatalf("Smooth 0.6 = %v", got)
	}
}
