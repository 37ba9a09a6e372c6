package train

import (
	"math"
	"time"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// systemEvery is the least time between two step events that carry system
// usage; every train epoch event carries it.
const systemEvery = 5 * time.Second

// systemSampler reads host and device usage for events: CPU and memory
// through package metrics (gopsutil, a few /proc reads), device memory and
// a backend's metrics.DeviceReporter through metrics.DeviceUsage. It
// samples at most once per epoch and once per systemEvery, never per step.
type systemSampler struct {
	cpu  *metrics.CPUUsage
	mem  *metrics.MemoryUsage
	dev  tensor.Device
	last time.Time
}

// newSystemSampler takes the first CPU sample, so that the first epoch
// event reports the CPU use since the run began.
func newSystemSampler(dev tensor.Device) *systemSampler {
	return &systemSampler{cpu: metrics.NewCPUUsage(), mem: &metrics.MemoryUsage{}, dev: dev, last: time.Now()}
}

// sample returns the usage now, or nil when the last sample is less than
// systemEvery old and force is false. Values that cannot be read (a
// platform without the counters) are left out.
func (s *systemSampler) sample(force bool) Values {
	now := time.Now()
	if !force && now.Sub(s.last) < systemEvery {
		return nil
	}
	s.last = now
	v := Values{}
	add := func(k string, x float64) {
		if !math.IsNaN(x) {
			v[k] = x
		}
	}
	if s.cpu.Sample() == nil {
		add("cpu_percent", s.cpu.Value())
	}
	if s.mem.Sample() == nil {
		for k, x := range s.mem.Values() {
			add(k, x)
		}
	}
	for k, x := range metrics.DeviceUsage(s.dev) {
		add(k, x)
	}
	return v
}
