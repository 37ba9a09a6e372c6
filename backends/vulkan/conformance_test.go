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
	// What has no shader yet: float remainder and floor division, and the
	// Float64 forms of the functions GLSL has no double version of (exp and
	// log have shaders/f64math.glsl). A shader for one of them removes it
	// from this list; anything else appearing here is a regression.
	want := map[string]bool{}
	for _, dt := range []string{"bfloat16", "float16", "float32", "float64"} {
		for _, kind := range []string{"binary", "binary_scalar"} {
			want[kind+" floor_divide "+dt] = true
			want[kind+" remainder "+dt] = true
		}
	}
	for _, kind := range []string{"binary", "binary_scalar"} {
		want[kind+" atan2 float64"], want[kind+" pow float64"] = true, true
	}
	for _, op := range []string{"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "erf", "gelu",
		"gelu_tanh", "mish", "pow", "sin", "sinh", "tan"} {
		want["unary "+op+" float64"], want["unary_grad "+op+" float64"] = true, true
	}
	for _, n := range names {
		if !want[n] {
			t.Errorf("%s ran on the host: it has a shader", n)
		}
		delete(want, n)
	}
	for n := range want {
		t.Errorf("%s no longer runs on the host: remove it from this test's list", n)
	}
}
