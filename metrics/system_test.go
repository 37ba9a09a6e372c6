package metrics_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/shirou/gopsutil/v4/cpu"
)

func TestCPUUsage(t *testing.T) {
	m := &metrics.CPUUsage{}
	seq := []cpu.TimesStat{{User: 10, Idle: 90}, {User: 40, System: 10, Idle: 140, Iowait: 10}}
	metrics.SetCPUTimes(m, func() (cpu.TimesStat, error) {
		if len(seq) == 0 {
			return cpu.TimesStat{}, errors.New("no counters")
		}
		s := seq[0]
		seq = seq[1:]
		return s, nil
	})
	_ = m.Sample()
	if !math.IsNaN(m.Value()) {
		t.Errorf("one sample: Value = %v, want NaN", m.Value())
	}
	_ = m.Sample()
	// Busy 10 → 50, total 100 → 200: 40%.
	if got := m.Value(); !close(got, 40) {
		t.Errorf("Value = %v, want 40", got)
	}
	if err := m.Sample(); err == nil {
		t.Error("a failing counter source gave no error")
	}

	real := metrics.NewCPUUsage()
	time.Sleep(20 * time.Millisecond)
	if err := real.Sample(); err != nil {
		t.Skipf("no CPU counters here: %v", err)
	}
	if v := real.Value(); !math.IsNaN(v) && (v < 0 || v > 100) {
		t.Errorf("real cpu_percent = %v", v)
	}
}

func TestMemoryUsage(t *testing.T) {
	m := metrics.NewMemoryUsage()
	if err := m.Sample(); err != nil {
		t.Skipf("no memory counters here: %v", err)
	}
	v := m.Values()
	if !(v["mem_percent"] > 0 && v["mem_percent"] <= 100) || !(v["process_rss_mib"] > 0) {
		t.Errorf("Values = %v", v)
	}
	m.Reset()
	if !math.IsNaN(m.Value()) {
		t.Errorf("after Reset: %v", m.Value())
	}
}
