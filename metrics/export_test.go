package metrics

import "github.com/shirou/gopsutil/v4/cpu"

// SetCPUTimes replaces the CPU counter source of m, for tests.
func SetCPUTimes(m *CPUUsage, f func() (cpu.TimesStat, error)) { m.times = f }
