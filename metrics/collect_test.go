package metrics_test

import (
	"math"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

func TestSnapshotAndResetAll(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		loss, f1 := metrics.NewLoss(), metrics.NewF1(metrics.Binary, metrics.Micro)
		_ = loss.UpdateLoss(2, 4)
		binary2.feed(t, dev, f1, 0, binary2.n())
		s := metrics.Snapshot(loss, f1)
		want := map[string]float64{"loss": 2, "precision": 1.0 / 3, "recall": 0.5, "f1": 0.4}
		if len(s) != len(want) {
			t.Errorf("Snapshot = %v, want %v", s, want)
		}
		for k, w := range want {
			if !close(s[k], w) {
				t.Errorf("Snapshot[%q] = %v, want %v", k, s[k], w)
			}
		}
		metrics.ResetAll(loss, f1)
		if !math.IsNaN(loss.Value()) || !math.IsNaN(f1.Value()) {
			t.Errorf("after ResetAll: %v %v", loss.Value(), f1.Value())
		}
	})
}

func TestZeroValues(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		cm := &metrics.ConfusionMatrix{NumClasses: 3}
		if got := cm.Matrix(); len(got) != 3 || got[2][2] != 0 {
			t.Errorf("empty Matrix = %v", got)
		}
		multi.feed(t, dev, cm, 0, multi.n())
		if !close(cm.Value(), 0.6) {
			t.Errorf("zero-value ConfusionMatrix accuracy %v", cm.Value())
		}
	})
	var s metrics.IterationSpeed
	_ = s.Tick(1000) // starts the clock only
	time.Sleep(time.Millisecond)
	if err := s.Tick(5); err != nil {
		t.Fatal(err)
	}
	if v := s.Value(); !(v > 0 && v <= 5000) {
		t.Errorf("zero-value IterationSpeed = %v items/s, want at most 5 per ms", v)
	}
}
