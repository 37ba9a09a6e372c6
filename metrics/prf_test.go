package metrics_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// multi with a fourth class that is never predicted nor a target: macro
// averages ignore it, as scikit-learn does for labels absent from both.
var multi4 = rows{
	out: []float64{
		2, 1, 0, -9,
		0.1, 0.3, 0.6, -9,
		0, 5, 1, -9,
		0.2, 0.5, 0.3, -9,
		-1, -2, 3, -9,
	},
	w:          4,
	tgt:        []float64{0, 1, 1, 2, 2},
	intTargets: true,
}

// Predictions 1, 1, 1, 0, 0 against 1, 0, 0, 1, 0: tp 1, fp 2, fn 1.
var binary2 = rows{out: []float64{0.9, 0.8, 0.7, 0.2, 0.1}, tgt: []float64{1, 0, 0, 1, 0}, intTargets: true}

// Predictions [1 0 1] [0 1 1] [1 0 0] against [1 0 0] [0 1 1] [0 1 0]:
// per label (tp, fp, fn) = (1, 1, 0), (1, 0, 1), (1, 1, 0).
var labels3 = rows{
	out: []float64{0.9, 0.1, 0.8, 0.2, 0.7, 0.6, 0.6, 0.4, 0.3},
	w:   3,
	tgt: []float64{1, 0, 0, 0, 1, 1, 0, 1, 0},
	tw:  3,
}

func TestPrecisionRecallFBeta(t *testing.T) {
	cases := []struct {
		name string
		mk   func() metrics.Metric
		data rows
		want float64
		vals map[string]float64
	}{
		{"binary precision", func() metrics.Metric { return metrics.NewPrecision(metrics.Binary, metrics.Micro) }, binary2, 1.0 / 3, nil},
		{"binary recall", func() metrics.Metric { return metrics.NewRecall(metrics.Binary, metrics.Micro) }, binary2, 0.5, nil},
		{"binary f1", func() metrics.Metric { return metrics.NewF1(metrics.Binary, metrics.Micro) }, binary2, 0.4,
			map[string]float64{"precision": 1.0 / 3, "recall": 0.5, "f1": 0.4}},
		{"binary f2", func() metrics.Metric { return metrics.NewFBeta(metrics.Binary, metrics.Micro, 2) }, binary2, 5.0 / 11, nil},
		{"binary f0.5", func() metrics.Metric { return metrics.NewFBeta(metrics.Binary, metrics.Micro, 0.5) }, binary2, 1.25 / 3.5, nil},
		// Per class (tp, fp, fn): 0 (1,0,0), 1 (1,1,1), 2 (1,1,1).
		{"multiclass macro ignores absent class", func() metrics.Metric { return metrics.NewPrecision(metrics.Multiclass, metrics.Macro) }, multi4, 2.0 / 3,
			map[string]float64{"precision_macro": 2.0 / 3, "recall_macro": 2.0 / 3, "f1_macro": 2.0 / 3}},
		{"multiclass micro equals accuracy", func() metrics.Metric { return metrics.NewF1(metrics.Multiclass, metrics.Micro) }, multi4, 0.6,
			map[string]float64{"precision_micro": 0.6, "recall_micro": 0.6}},
		{"multilabel macro", func() metrics.Metric { return metrics.NewRecall(metrics.Multilabel, metrics.Macro) }, labels3, 5.0 / 6,
			map[string]float64{"precision_macro": 2.0 / 3, "f1_macro": 2.0 / 3}},
		{"multilabel micro", func() metrics.Metric { return metrics.NewRecall(metrics.Multilabel, metrics.Micro) }, labels3, 0.75,
			map[string]float64{"precision_micro": 0.6, "f1_micro": 2.0 / 3}},
		{"hamming score", func() metrics.Metric { return metrics.NewHammingScore() }, labels3, 6.0 / 9,
			map[string]float64{"hamming_loss": 3.0 / 9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkRows(t, c.mk, c.data, c.want, c.vals) })
	}
}

func TestPRFZeroDivision(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		// Nothing predicted positive: precision 0 (zero_division=0), recall 0.
		m := metrics.NewPrecision(metrics.Binary, metrics.Micro)
		r := rows{out: []float64{0.1, 0.2}, tgt: []float64{1, 0}, intTargets: true}
		r.feed(t, dev, m, 0, 2)
		if v := m.Values(); v["precision"] != 0 || v["recall"] != 0 || v["f1"] != 0 {
			t.Errorf("Values = %v, want zeros", v)
		}
	})
}

func TestPRFBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		cases := []struct {
			name     string
			m        metrics.Metric
			out, tgt *tensor.Tensor
		}{
			{"binary with class scores", metrics.NewF1(metrics.Binary, metrics.Micro), tensor.Zeros(dev, 2, 3), tensor.ZerosOf(dev, tensor.Int64, 2)},
			{"multilabel shape mismatch", metrics.NewF1(metrics.Multilabel, metrics.Macro), tensor.Zeros(dev, 2, 3), tensor.Zeros(dev, 2, 4)},
			{"multilabel target 2", metrics.NewF1(metrics.Multilabel, metrics.Macro), tensor.Zeros(dev, 1, 2), tensor.FromFloat64s(dev, []float64{0, 2}, 1, 2)},
			{"hamming 1-D", metrics.NewHammingScore(), tensor.Zeros(dev, 2), tensor.Zeros(dev, 2)},
		}
		for _, c := range cases {
			if err := c.m.Update(c.out, c.tgt); !errors.Is(err, metrics.ErrInput) {
				t.Errorf("%s: err = %v, want ErrInput", c.name, err)
			}
		}
	})
}
