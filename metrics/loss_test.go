package metrics_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

func TestLoss(t *testing.T) {
	m := metrics.NewLoss()
	if !math.IsNaN(m.Value()) {
		t.Errorf("empty Value = %v, want NaN", m.Value())
	}
	// Batches of 3 (mean 2) and 1 (mean 6): (6 + 6) / 4 = 3, not (2+6)/2.
	_ = m.UpdateLoss(2, 3)
	_ = m.UpdateLoss(6, 1)
	if got := m.Value(); !close(got, 3) {
		t.Errorf("Value = %v, want 3", got)
	}
	if err := m.UpdateLoss(1, -1); !errors.Is(err, metrics.ErrInput) {
		t.Errorf("negative n: err = %v", err)
	}
	m.Reset()
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := metrics.NewNamedLoss("val_loss")
		if err := m.Update(tensor.Scalar(dev, 2), tensor.Zeros(dev, 3, 5)); err != nil {
			t.Fatal(err)
		}
		if err := m.Update(tensor.Scalar(dev, 6), tensor.Zeros(dev, 1, 5)); err != nil {
			t.Fatal(err)
		}
		if got := m.Value(); !close(got, 3) || m.Name() != "val_loss" {
			t.Errorf("%s = %v, want 3", m.Name(), got)
		}
		if err := m.Update(tensor.Zeros(dev, 2), nil); !errors.Is(err, metrics.ErrInput) {
			t.Errorf("vector loss: err = %v", err)
		}
	})
}

func TestLearningRate(t *testing.T) {
	m := metrics.NewLearningRate()
	if !math.IsNaN(m.Value()) {
		t.Errorf("unset Value = %v", m.Value())
	}
	m.Set(0.1)
	m.Set(0.05)
	if m.Value() != 0.05 {
		t.Errorf("Value = %v, want 0.05", m.Value())
	}
	if err := m.Update(nil, nil); !errors.Is(err, metrics.ErrNotTensor) {
		t.Errorf("Update err = %v", err)
	}
}

func TestIterationSpeed(t *testing.T) {
	m := metrics.NewIterationSpeed()
	// 100 items in 1 s and 300 in 3 s: 400 / 4 = 100 items/s.
	_ = m.Add(100, time.Second)
	_ = m.Add(300, 3*time.Second)
	if got := m.Value(); !close(got, 100) {
		t.Errorf("Value = %v, want 100", got)
	}
	if err := m.Add(-1, time.Second); !errors.Is(err, metrics.ErrInput) {
		t.Errorf("negative items: err = %v", err)
	}
	m.Reset()
	time.Sleep(2 * time.Millisecond)
	if err := m.Tick(10); err != nil || !(m.Value() > 0) {
		t.Errorf("Tick: err %v, Value %v", err, m.Value())
	}
}
