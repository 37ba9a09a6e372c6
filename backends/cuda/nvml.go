//go:build !kiln_nocuda

package cuda

import (
	"fmt"
	"sync"
)

// nvml reads GPU utilisation and memory through libnvidia-ml. Its calls
// need no CUDA context, so they run on the caller's goroutine.
type nvml struct {
	mu                    sync.Mutex
	nvmlInit              func() int32
	nvmlDeviceGetHandle   func(index uint32, h *uintptr) int32
	nvmlDeviceUtilization func(h uintptr, u *nvmlUtilization) int32
	nvmlDeviceMemoryInfo  func(h uintptr, m *nvmlMemory) int32
}

type nvmlUtilization struct{ GPU, Memory uint32 }

type nvmlMemory struct{ Total, Free, Used uint64 }

func newNVML(h uintptr) (*nvml, error) {
	n := &nvml{}
	err := bind(h, "libnvidia-ml", map[string]any{
		"nvmlInit_v2": &n.nvmlInit, "nvmlDeviceGetHandleByIndex_v2": &n.nvmlDeviceGetHandle,
		"nvmlDeviceGetUtilizationRates": &n.nvmlDeviceUtilization, "nvmlDeviceGetMemoryInfo": &n.nvmlDeviceMemoryInfo,
	})
	if err != nil {
		return nil, err
	}
	if r := n.nvmlInit(); r != 0 {
		return nil, fmt.Errorf("cuda: nvmlInit: NVML status %d", r)
	}
	return n, nil
}

// sample returns utilisation (percent) and memory used and total (bytes)
// of GPU index. NVML numbers GPUs as the driver does unless
// CUDA_VISIBLE_DEVICES reorders them; then the figures may belong to
// another GPU.
func (n *nvml) sample(index int) (gpuPct, memPct float64, used, total int64, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var h uintptr
	if r := n.nvmlDeviceGetHandle(uint32(index), &h); r != 0 {
		return 0, 0, 0, 0, fmt.Errorf("cuda: nvmlDeviceGetHandleByIndex: NVML status %d", r)
	}
	var u nvmlUtilization
	var m nvmlMemory
	if r := n.nvmlDeviceUtilization(h, &u); r != 0 {
		return 0, 0, 0, 0, fmt.Errorf("cuda: nvmlDeviceGetUtilizationRates: NVML status %d", r)
	}
	if r := n.nvmlDeviceMemoryInfo(h, &m); r != 0 {
		return 0, 0, 0, 0, fmt.Errorf("cuda: nvmlDeviceGetMemoryInfo: NVML status %d", r)
	}
	return float64(u.GPU), float64(u.Memory), int64(m.Used), int64(m.Total), nil
}

// DeviceMetrics reports the GPU's state for package metrics: the caching
// allocator's live and reserved MiB always, and NVML's utilisation and
// memory when libnvidia-ml is available.
func (b *Backend) DeviceMetrics() map[string]float64 {
	st := b.MemoryStats()
	out := map[string]float64{
		"gpu_alloc_live_mib":     float64(st.LiveBytes) / (1 << 20),
		"gpu_alloc_reserved_mib": float64(st.ReservedBytes) / (1 << 20),
	}
	if b.metrics == nil {
		return out
	}
	gpu, mem, used, total, err := b.metrics.sample(b.ordinal)
	if err != nil {
		return out
	}
	out["gpu_util_percent"] = gpu
	out["gpu_mem_util_percent"] = mem
	out["gpu_mem_used_mib"] = float64(used) / (1 << 20)
	out["gpu_mem_total_mib"] = float64(total) / (1 << 20)
	return out
}
