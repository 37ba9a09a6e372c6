package metrics_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

func TestRanking(t *testing.T) {
	auroc := func() metrics.Metric { return metrics.NewAUROC() }
	aucpr := func() metrics.Metric { return metrics.NewAUCPR() }
	// scikit-learn's documented example: roc_auc_score 0.75,
	// average_precision_score 0.8333.
	doc := rows{out: []float64{0.1, 0.4, 0.35, 0.8}, tgt: []float64{0, 0, 1, 1}, intTargets: true}
	// A positive and a negative tie at 0.5: ROC points (0,0) (0,.5) (.5,1)
	// (1,1) give 0.875 (the tie counts one half); AP = .5·1 + .5·2/3.
	tie := rows{out: []float64{0.5, 0.9, 0.1, 0.5}, tgt: []float64{0, 1, 0, 1}, intTargets: true}
	// All scores tied: 0.5 and the positive rate.
	flat := rows{out: []float64{0.3, 0.3, 0.3, 0.3, 0.3}, tgt: []float64{1, 0, 0, 1, 0}, intTargets: true}
	// [N, 2] class scores use column 1; float targets.
	two := rows{out: []float64{0.9, 0.1, 0.6, 0.4, 0.65, 0.35, 0.2, 0.8}, w: 2, tgt: []float64{0, 0, 1, 1}}
	perfect := rows{out: []float64{0.1, 0.2, 0.8, 0.9}, w: 1, tgt: []float64{0, 0, 1, 1}, tw: 1, intTargets: true}
	cases := []struct {
		name string
		mk   func() metrics.Metric
		data rows
		want float64
	}{
		{"auroc sklearn example", auroc, doc, 0.75},
		{"auc-pr sklearn example", aucpr, doc, 5.0 / 6},
		{"auroc tie between classes", auroc, tie, 0.875},
		{"auc-pr tie between classes", aucpr, tie, 5.0 / 6},
		{"auroc all tied", auroc, flat, 0.5},
		{"auc-pr all tied", aucpr, flat, 0.4},
		{"auroc [N,2] scores", auroc, two, 0.75},
		{"auroc perfect", auroc, perfect, 1},
		{"auc-pr perfect", aucpr, perfect, 1},
		{"auroc one class is NaN", auroc, rows{out: []float64{0.2, 0.7}, tgt: []float64{1, 1}, intTargets: true}, math.NaN()},
		{"auc-pr no positive is NaN", aucpr, rows{out: []float64{0.2, 0.7}, tgt: []float64{0, 0}, intTargets: true}, math.NaN()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkRows(t, c.mk, c.data, c.want, nil) })
	}
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, m := range []metrics.Metric{metrics.NewAUROC(), metrics.NewAUCPR()} {
			if err := m.Update(tensor.Zeros(dev, 2, 3), tensor.Zeros(dev, 2)); !errors.Is(err, metrics.ErrInput) {
				t.Errorf("%s [N,3]: err = %v", m.Name(), err)
			}
			if err := m.Update(tensor.Zeros(dev, 2), tensor.FromFloat64s(dev, []float64{0, 2}, 2)); !errors.Is(err, metrics.ErrInput) {
				t.Errorf("%s label 2: err = %v", m.Name(), err)
			}
		}
	})
}

func TestRegression(t *testing.T) {
	// scikit-learn's documented example: MSE 0.375, MAE 0.5,
	// R² = 1 − 1.5 / 29.1875.
	doc := rows{out: []float64{2.5, 0.0, 2, 8}, tgt: []float64{3, -0.5, 2, 7}}
	checkRows(t, func() metrics.Metric { return metrics.NewMSE() }, doc, 0.375, map[string]float64{"rmse": math.Sqrt(0.375)})
	checkRows(t, func() metrics.Metric { return metrics.NewMAE() }, doc, 0.5, nil)
	checkRows(t, func() metrics.Metric { return metrics.NewR2() }, doc, 1-1.5/29.1875, nil)
	// Large offset: the merged SS_tot stays exact.
	big := rows{out: []float64{1e8 + 1, 1e8 + 2, 1e8 + 2, 1e8 + 5}, w: 1, tgt: []float64{1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 4}, tw: 1}
	checkRows(t, func() metrics.Metric { return metrics.NewR2() }, big, 1-2.0/5, nil)
	constant := rows{out: []float64{2, 2, 2}, tgt: []float64{2, 2, 2}}
	checkRows(t, func() metrics.Metric { return metrics.NewR2() }, constant, 1, nil)
	constant.out = []float64{1, 2, 3}
	checkRows(t, func() metrics.Metric { return metrics.NewR2() }, constant, 0, nil)
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		if err := metrics.NewMSE().Update(tensor.Zeros(dev, 3), tensor.Zeros(dev, 4)); !errors.Is(err, metrics.ErrInput) {
			t.Errorf("size mismatch: err = %v", err)
		}
	})
}

func TestPerplexity(t *testing.T) {
	l3 := math.Log(3)
	// NLLs ln 2, ln(4/3), ln 4; the fourth token is ignored.
	r := rows{out: []float64{0, 0, l3, 0, 0, l3, 9, -9}, w: 2, tgt: []float64{0, 0, 0, -100}, intTargets: true}
	want := math.Cbrt(32.0 / 3)
	checkRows(t, func() metrics.Metric { return metrics.NewPerplexity() }, r, want, map[string]float64{"nll": math.Log(32.0/3) / 3})
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := metrics.NewPerplexity()
		logits := tensor.FromFloat64s(dev, []float64{0, 0, l3, 0, 0, l3, 9, -9}, 2, 2, 2)
		if err := m.Update(logits, tensor.FromInt64s(dev, []int64{0, 0, 0, -100}, 2, 2)); err != nil {
			t.Fatal(err)
		}
		if !close(m.Value(), want) {
			t.Errorf("[B,T,V] Value = %v, want %v", m.Value(), want)
		}
		_ = m.UpdateNLL(math.Log(32.0/3), 3)
		if !close(m.Value(), want) {
			t.Errorf("after UpdateNLL Value = %v, want %v", m.Value(), want)
		}
		bad := []struct {
			name     string
			out, tgt *tensor.Tensor
		}{
			{"target shape", tensor.Zeros(dev, 2, 3), tensor.ZerosOf(dev, tensor.Int64, 3)},
			{"token out of range", tensor.Zeros(dev, 1, 3), tensor.FromInt64s(dev, []int64{3}, 1)},
		}
		for _, c := range bad {
			if err := m.Update(c.out, c.tgt); !errors.Is(err, metrics.ErrInput) {
				t.Errorf("%s: err = %v", c.name, err)
			}
		}
	})
}
