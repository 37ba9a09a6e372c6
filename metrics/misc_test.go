package metrics_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

func TestConstructorsPanicOnBadArguments(t *testing.T) {
	cases := []struct {
		name string
		f    func()
	}{
		{"top-k k=0", func() { metrics.NewTopKAccuracy(0) }},
		{"confusion matrix 1 class", func() { metrics.NewConfusionMatrix(1) }},
		{"f-beta beta=0", func() { metrics.NewFBeta(metrics.Binary, metrics.Micro, 0) }},
	}
	for _, c := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			c.f()
		}()
	}
}

func TestNonTensorMetricsRefuseUpdate(t *testing.T) {
	for _, m := range []metrics.Metric{
		metrics.NewLearningRate(), metrics.NewIterationSpeed(), metrics.NewCER(), metrics.NewWER(),
		metrics.NewBLEU(), metrics.NewRougeL(), &metrics.CPUUsage{}, &metrics.MemoryUsage{},
	} {
		if err := m.Update(nil, nil); !errors.Is(err, metrics.ErrNotTensor) {
			t.Errorf("%s.Update: err = %v, want ErrNotTensor", m.Name(), err)
		}
		m.Reset()
		if v := m.Value(); !math.IsNaN(v) {
			t.Errorf("%s after Reset: Value = %v, want NaN", m.Name(), v)
		}
	}
}

func TestConfusionMatrixReset(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := metrics.NewConfusionMatrix(3)
		multi.feed(t, dev, m, 0, multi.n())
		m.Reset()
		if !math.IsNaN(m.Value()) || m.Matrix()[0][0] != 0 {
			t.Errorf("after Reset: %v %v", m.Value(), m.Matrix())
		}
		multi.feed(t, dev, m, 0, 2)
		if got := m.Matrix(); got[0][0] != 1 || got[1][2] != 1 {
			t.Errorf("refed Matrix = %v", got)
		}
	})
}
