package metrics

import (
	"fmt"
	"os"

	"github.com/kiln-ml/kiln/tensor"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/process"
)

// CPUUsage reports the machine's CPU use, in percent of all cores, between
// the last two calls of Sample (the loop calls it once per logging
// interval). It reads operating-system counters through gopsutil; Value is
// NaN until two samples were taken.
type CPUUsage struct {
	prev, last *cpu.TimesStat
	times      func() (cpu.TimesStat, error)
}

// NewCPUUsage returns a CPUUsage metric named "cpu_percent" and takes its
// first sample.
func NewCPUUsage() *CPUUsage {
	m := &CPUUsage{}
	_ = m.Sample()
	return m
}

// Name implements Metric.
func (m *CPUUsage) Name() string { return "cpu_percent" }

func readCPUTimes() (cpu.TimesStat, error) {
	ts, err := cpu.Times(false)
	if err != nil {
		return cpu.TimesStat{}, err
	}
	if len(ts) == 0 {
		return cpu.TimesStat{}, fmt.Errorf("metrics: cpu_percent: no CPU counters")
	}
	return ts[0], nil
}

// Sample reads the CPU counters; it returns the operating system's error
// where they cannot be read.
func (m *CPUUsage) Sample() error {
	if m.times == nil {
		m.times = readCPUTimes
	}
	t, err := m.times()
	if err != nil {
		return fmt.Errorf("metrics: cpu_percent: %w", err)
	}
	m.prev, m.last = m.last, &t
	return nil
}

func busyTotal(t *cpu.TimesStat) (busy, total float64) {
	// Guest time is already counted in User and Nice on Linux.
	total = t.User + t.System + t.Idle + t.Nice + t.Iowait + t.Irq + t.Softirq + t.Steal
	return total - t.Idle - t.Iowait, total
}

// Update returns ErrNotTensor: use Sample.
func (m *CPUUsage) Update(outputs, targets *tensor.Tensor) error { return ErrNotTensor }

// Value is the busy percentage between the last two samples.
func (m *CPUUsage) Value() float64 {
	if m.prev == nil || m.last == nil {
		return nanValue
	}
	b0, t0 := busyTotal(m.prev)
	b1, t1 := busyTotal(m.last)
	if t1 <= t0 {
		return nanValue
	}
	return 100 * max(0, min(1, (b1-b0)/(t1-t0)))
}

// Reset forgets the samples.
func (m *CPUUsage) Reset() { m.prev, m.last = nil, nil }

// MemoryUsage reports host memory at the last Sample: "mem_percent" (the
// machine's used memory, in percent; its Value) and "process_rss_mib" (this
// process's resident set). Device memory is reported by tensor devices'
// MemoryStats, not here.
type MemoryUsage struct {
	percent, rss float64
	sampled      bool
}

// NewMemoryUsage returns a MemoryUsage metric and takes a first sample.
func NewMemoryUsage() *MemoryUsage {
	m := &MemoryUsage{}
	_ = m.Sample()
	return m
}

// Name implements Metric.
func (m *MemoryUsage) Name() string { return "mem_percent" }

// Sample reads host memory; it returns the operating system's error where
// it cannot be read.
func (m *MemoryUsage) Sample() error {
	vm, err := mem.VirtualMemory()
	if err != nil {
		return fmt.Errorf("metrics: mem_percent: %w", err)
	}
	p, err := process.NewProcess(int32(os.Getpid()))
	if err != nil {
		return fmt.Errorf("metrics: mem_percent: %w", err)
	}
	mi, err := p.MemoryInfo()
	if err != nil {
		return fmt.Errorf("metrics: mem_percent: %w", err)
	}
	m.percent, m.rss, m.sampled = vm.UsedPercent, float64(mi.RSS)/(1<<20), true
	return nil
}

// Update returns ErrNotTensor: use Sample.
func (m *MemoryUsage) Update(outputs, targets *tensor.Tensor) error { return ErrNotTensor }

// Value is the machine's used memory in percent at the last sample.
func (m *MemoryUsage) Value() float64 {
	if !m.sampled {
		return nanValue
	}
	return m.percent
}

// Values returns "mem_percent" and "process_rss_mib".
func (m *MemoryUsage) Values() map[string]float64 {
	rss := nanValue
	if m.sampled {
		rss = m.rss
	}
	return map[string]float64{"mem_percent": m.Value(), "process_rss_mib": rss}
}

// Reset forgets the sample.
func (m *MemoryUsage) Reset() { *m = MemoryUsage{} }

// DeviceReporter is implemented by backends that can report their device's
// state as its driver sees it: a GPU backend's utilisation and memory
// ("gpu_util_percent", "gpu_mem_used_mib", …; names are lower case with
// the unit last). DeviceUsage looks it up on a device's backend; package
// train adds the values to its epoch events. DeviceMetrics is called at
// most every few seconds and should return quickly (a counter read or one
// driver query, not a sampling window); it returns nil or an empty map
// when it has nothing to say.
type DeviceReporter interface {
	DeviceMetrics() map[string]float64
}

// DeviceUsage returns dev's memory use as tensors see it, in MiB:
// "device_live_mib" (storage held now) and "device_peak_mib" (the most held
// so far), plus what dev's backend reports when it implements
// DeviceReporter (its keys win on a clash). It reads counters only, unless
// the backend's DeviceMetrics does more; an invalid (zero) Device gives nil.
func DeviceUsage(dev tensor.Device) map[string]float64 {
	if dev == (tensor.Device{}) {
		return nil
	}
	ms := dev.MemoryStats()
	out := map[string]float64{
		"device_live_mib": float64(ms.LiveBytes) / (1 << 20),
		"device_peak_mib": float64(ms.PeakBytes) / (1 << 20),
	}
	if r, ok := dev.Backend().(DeviceReporter); ok {
		for k, v := range r.DeviceMetrics() {
			out[k] = v
		}
	}
	return out
}
