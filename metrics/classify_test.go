package metrics_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// Five items, three classes. Arg max predictions: 0, 2, 1, 1, 2; targets
// 0, 1, 1, 2, 2: correct rows 0, 2, 4.
var multi = rows{
	out: []float64{
		2, 1, 0,
		0.1, 0.3, 0.6,
		0, 5, 1,
		0.2, 0.5, 0.3,
		-1, -2, 3,
	},
	w:          3,
	tgt:        []float64{0, 1, 1, 2, 2},
	intTargets: true,
}

// Binary probabilities; predicted positive above 0.5: 1, 0, 1, 0, 0, 1.
var binary = rows{
	out:        []float64{0.9, 0.2, 0.6, 0.5, 0.1, 0.7},
	tgt:        []float64{1, 0, 0, 1, 0, 1},
	intTargets: true,
}

func TestAccuracy(t *testing.T) {
	t.Run("multiclass arg max", func(t *testing.T) {
		checkRows(t, func() metrics.Metric { return metrics.NewAccuracy() }, multi, 3.0/5, nil)
	})
	t.Run("binary threshold 0.5, 0.5 itself negative", func(t *testing.T) {
		checkRows(t, func() metrics.Metric { return metrics.NewAccuracy() }, binary, 4.0/6, nil)
	})
	t.Run("binary logits threshold 0", func(t *testing.T) {
		r := rows{out: []float64{2, -1, 0.5, -0.5}, w: 1, tgt: []float64{1, 0, 0, 0}, intTargets: true}
		checkRows(t, func() metrics.Metric { return &metrics.Accuracy{Threshold: 0} }, r, 3.0/4, nil)
	})
	t.Run("float targets with whole values", func(t *testing.T) {
		r := multi
		r.intTargets = false
		checkRows(t, func() metrics.Metric { return metrics.NewAccuracy() }, r, 3.0/5, nil)
	})
}

func TestTopKAccuracy(t *testing.T) {
	// Ranks of the target: row0 class0 rank 0; row1 class1 rank 1; row2
	// class1 rank 0; row3 class2 rank 1; row4 class2 rank 0.
	checkRows(t, func() metrics.Metric { return metrics.NewTopKAccuracy(1) }, multi, 3.0/5, nil)
	checkRows(t, func() metrics.Metric { return metrics.NewTopKAccuracy(2) }, multi, 5.0/5, nil)
	t.Run("ties rank lower class first", func(t *testing.T) {
		r := rows{out: []float64{1, 1, 1, 1, 1, 1}, w: 3, tgt: []float64{0, 2}, intTargets: true}
		checkRows(t, func() metrics.Metric { return metrics.NewTopKAccuracy(2) }, r, 0.5, nil)
	})
	if got := metrics.NewTopKAccuracy(5).Name(); got != "top5_accuracy" {
		t.Errorf("Name = %q", got)
	}
}

func TestConfusionMatrix(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, sp := range splits(multi.n()) {
			m := metrics.NewConfusionMatrix(3)
			lo := 0
			for _, k := range sp {
				multi.feed(t, dev, m, lo, lo+k)
				lo += k
			}
			want := [][]int64{{1, 0, 0}, {0, 1, 1}, {0, 1, 1}}
			if got := m.Matrix(); !reflect.DeepEqual(got, want) {
				t.Errorf("batches %v: Matrix = %v, want %v", sp, got, want)
			}
			if got := m.Value(); !close(got, 3.0/5) {
				t.Errorf("Value = %v", got)
			}
			if got := m.Values()["cm_1_2"]; got != 1 {
				t.Errorf("cm_1_2 = %v", got)
			}
		}
	})
	// Binary: preds 1,0,1,0,0,1 vs targets 1,0,0,1,0,1.
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := metrics.NewConfusionMatrix(2)
		binary.feed(t, dev, m, 0, binary.n())
		if got, want := m.Matrix(), [][]int64{{2, 1}, {1, 2}}; !reflect.DeepEqual(got, want) {
			t.Errorf("binary Matrix = %v, want %v", got, want)
		}
	})
}

func TestClassificationBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		cases := []struct {
			name string
			m    metrics.Metric
			out  *tensor.Tensor
			tgt  *tensor.Tensor
		}{
			{"rows differ", metrics.NewAccuracy(), tensor.Zeros(dev, 4, 3), tensor.ZerosOf(dev, tensor.Int64, 5)},
			{"class out of range", metrics.NewAccuracy(), tensor.Zeros(dev, 2, 3), tensor.FromInt64s(dev, []int64{0, 3}, 2)},
			{"negative class", metrics.NewAccuracy(), tensor.Zeros(dev, 2, 3), tensor.FromInt64s(dev, []int64{0, -1}, 2)},
			{"fractional target", metrics.NewAccuracy(), tensor.Zeros(dev, 2, 3), tensor.FromFloat64s(dev, []float64{0, 0.5}, 2)},
			{"rank 3 outputs", metrics.NewAccuracy(), tensor.Zeros(dev, 2, 3, 4), tensor.ZerosOf(dev, tensor.Int64, 2)},
			{"nil targets", metrics.NewAccuracy(), tensor.Zeros(dev, 2, 3), nil},
			{"top-k 1-D outputs", metrics.NewTopKAccuracy(1), tensor.Zeros(dev, 3), tensor.ZerosOf(dev, tensor.Int64, 3)},
			{"matrix class count", metrics.NewConfusionMatrix(4), tensor.Zeros(dev, 2, 3), tensor.ZerosOf(dev, tensor.Int64, 2)},
		}
		for _, c := range cases {
			err := c.m.Update(c.out, c.tgt)
			if !errors.Is(err, metrics.ErrInput) {
				t.Errorf("%s: err = %v, want ErrInput", c.name, err)
			}
			if !isNaNOrCM(c.m) {
				t.Errorf("%s: a failed Update changed the value to %v", c.name, c.m.Value())
			}
		}
	})
}

func isNaNOrCM(m metrics.Metric) bool {
	if _, ok := m.(*metrics.ConfusionMatrix); ok {
		return true
	}
	v := m.Value()
	return v != v
}
