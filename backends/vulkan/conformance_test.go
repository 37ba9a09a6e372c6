//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"sort"
	"testing"

	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/internal/conformance"
)

// TestConformanceVulkan runs the backend conformance suite (the one the
// CPU, strict and CUDA backends share) on vulkan:0 against the CPU backend:
// every primitive's values within conformance.Tolerance. On a machine
// without a GPU vulkan:0 is lavapipe; without any Vulkan device it skips,
// saying why.
func TestConformanceVulkan(t *testing.T) {
	if raceEnabled {
		t.Skip("long; the plain run checks it (the race detector cannot see into the driver)")
	}
	dev, err := Open(0)
	if err != nil {
		t.Skipf("no Vulkan device: %v", err)
	}
	t.Logf("device: %s (%s)", dev.Info().Name, dev.Info().Detail)
	before := dev.HostOps()
	conformance.Run(t, cpu.New(0), dev, conformance.WithinTolerance)
	after := dev.HostOps()
	var names []string
	for k, v := range after {
		if v > before[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	t.Logf("ops that ran on the host: %d %v", len(names), names)
	if !dev.pd.features.float64 {
		return // every Float64 op, and more, runs on the host: TestHostFallbackWithoutFloat64
	}
	// Every op has a shader where the device has shaderFloat64: whatever
	// runs on the host is a regression.
	for _, n := range names {
		t.Errorf("%s ran on the host: it has a shader", n)
	}
}
