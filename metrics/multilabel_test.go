package metrics_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

func TestMultilabelTopKFixtures(t *testing.T) {
	fx := testutil.LoadFixtures(t, "metrics2.json")
	for _, tc := range []struct {
		name string
		k    int
	}{{"topk_1", 1}, {"topk_3", 3}, {"topk_ties", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			c := fx[tc.name]
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				out, tgt := c["outputs"].Tensor(dev), c["target"].Tensor(dev)
				p, r := metrics.NewPrecisionAtK(tc.k), metrics.NewRecallAtK(tc.k)
				feedHalves(t, p, out, tgt)
				feedHalves(t, r, out, tgt)
				wp, wr := fixtureValue(t, c, "precision"), fixtureValue(t, c, "recall")
				if !near(p.Value(), wp) || !near(r.Value(), wr) {
					t.Errorf("%s %v, %s %v; want %v, %v", p.Name(), p.Value(), r.Name(), r.Value(), wp, wr)
				}
				if v := p.Values(); !near(v[r.Name()], wr) {
					t.Errorf("Values %v lacks %s = %v", v, r.Name(), wr)
				}
			})
		})
	}
}

func TestMultilabelTopKEdgeCases(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		// k above the label count predicts every label: precision is the
		// fraction of positive targets, recall 1.
		m := metrics.NewPrecisionAtK(5)
		out := tensor.FromFloat32s(dev, []float32{0.1, 0.9, 0.3, 0.2, 0.8, 0.4}, 3, 2).Transpose(0, 1) // [2, 3] view
		tgt := tensor.FromInt64s(dev, []int64{1, 0, 0, 1, 1, 0}, 2, 3)
		if err := m.Update(out, tgt); err != nil {
			t.Fatal(err)
		}
		if !near(m.Value(), 0.5) || !near(m.Values()["recall_at_5"], 1) {
			t.Errorf("k > L: %v", m.Values())
		}
		r := metrics.NewRecallAtK(1)
		if !math.IsNaN(r.Value()) {
			t.Errorf("fresh recall %v, want NaN", r.Value())
		}
		_ = r.Update(tensor.Zeros(dev, 2, 3), tensor.Zeros(dev, 2, 3))
		if r.Value() != 0 {
			t.Errorf("recall with no positive target = %v, want 0", r.Value())
		}
		for _, bad := range []struct {
			o, t *tensor.Tensor
			text string
		}{
			{tensor.Zeros(dev, 2, 3), tensor.Zeros(dev, 2, 4), "both be [N, L]"},
			{tensor.Zeros(dev, 6), tensor.Zeros(dev, 6), "both be [N, L]"},
			{tensor.Zeros(dev, 1, 2), tensor.Full(dev, 2, 1, 2), "not 0 or 1"},
		} {
			if err := metrics.NewRecallAtK(1).Update(bad.o, bad.t); !errors.Is(err, metrics.ErrInput) ||
				!strings.Contains(err.Error(), bad.text) {
				t.Errorf("%v and %v: %v, want ErrInput mentioning %q", bad.o.Shape(), bad.t.Shape(), err, bad.text)
			}
		}
	})
	defer func() {
		if recover() == nil {
			t.Error("NewPrecisionAtK(0) did not panic")
		}
	}()
	metrics.NewPrecisionAtK(0)
}
