package metrics_test

import (
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// gpuLike is a CPU backend that reports device metrics as a GPU backend
// would.
type gpuLike struct{ *cpu.Backend }

func (gpuLike) DeviceMetrics() map[string]float64 {
	return map[string]float64{"gpu_util_percent": 87, "device_live_mib": -1}
}

type gpuLikeDriver struct{ b backends.Backend }

func (gpuLikeDriver) Kind() string                         { return "test-metrics-gpulike" }
func (gpuLikeDriver) Priority() int                        { return -100 }
func (gpuLikeDriver) Enumerate() []backends.DeviceInfo     { return nil }
func (d gpuLikeDriver) Open(int) (backends.Backend, error) { return d.b, nil }

func TestDeviceUsage(t *testing.T) {
	backends.Register(gpuLikeDriver{gpuLike{cpu.New(1)}})
	reporting, err := tensor.Open("test-metrics-gpulike", 0)
	if err != nil {
		t.Fatal(err)
	}
	plain := tensor.CPU()
	cases := []struct {
		name string
		dev  tensor.Device
		want map[string]float64 // exact values; NaN-free
		has  []string           // keys that must be present
	}{
		{"zero device gives nil", tensor.Device{}, nil, nil},
		{"plain backend: memory only", plain, nil, []string{"device_live_mib", "device_peak_mib"}},
		{"reporting backend: its keys win", reporting, map[string]float64{"gpu_util_percent": 87, "device_live_mib": -1}, []string{"device_peak_mib"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var x *tensor.Tensor
			if c.dev != (tensor.Device{}) {
				x = tensor.Zeros(c.dev, 1024) // 4 KiB live while measuring
				defer x.Release()
			}
			got := metrics.DeviceUsage(c.dev)
			if c.want == nil && c.has == nil {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (all %v)", k, got[k], v, got)
				}
			}
			for _, k := range c.has {
				if _, ok := got[k]; !ok {
					t.Errorf("%s missing from %v", k, got)
				}
			}
			if _, reported := c.want["device_live_mib"]; !reported && got["device_live_mib"] < 4.0/1024 {
				t.Errorf("device_live_mib %v with a 4 KiB tensor live", got["device_live_mib"])
			}
		})
	}
}
