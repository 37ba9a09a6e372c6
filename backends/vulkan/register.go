//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import "github.com/kiln-ml/kiln/backends"

func init() { backends.Register(vulkanKind{}) }

// vulkanKind is the backends.Driver for "vulkan" devices.
type vulkanKind struct{}

func (vulkanKind) Kind() string { return "vulkan" }

// Priority places Vulkan after CUDA (100) and before the CPU (0): on an
// NVIDIA machine CUDA is preferred, elsewhere a hardware Vulkan GPU is.
// Software devices are never chosen by default (package tensor skips them).
func (vulkanKind) Priority() int { return 50 }

// Enumerate lists every Vulkan device, lavapipe included (Software set).
func (vulkanKind) Enumerate() []backends.DeviceInfo { return Devices() }

// Open returns the backend of device index.
func (vulkanKind) Open(index int) (backends.Backend, error) {
	b, err := Open(index)
	if err != nil {
		return nil, err
	}
	return b, nil
}
