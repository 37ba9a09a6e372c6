//go:build !kiln_nocuda

package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/strict"
	"github.com/kiln-ml/kiln/internal/conformance"
)

// The conformance suite runs every Backend primitive on a device and on the
// CPU backend with the same inputs and compares the results within a
// tolerance per dtype. On a machine without a GPU it skips for cuda:0 and
// runs with the strict backend standing in, so the suite itself is tested.

// TestConformanceCUDA runs the suite on cuda:0.
func TestConformanceCUDA(t *testing.T) {
	dev, err := Open(0)
	if err != nil {
		t.Skip(err.Error()) // "no CUDA driver: cannot load the CUDA driver (libcuda.so.1) (tried …)"
	}
	runConformance(t, dev)
}

// TestConformanceSuiteRunsWithoutGPU runs the suite with the strict
// backend (a GPU-like asynchronous decorator over the CPU) as the device.
func TestConformanceSuiteRunsWithoutGPU(t *testing.T) {
	runConformance(t, strict.New(cpu.New(0)))
}

// tolerance returns the absolute and relative tolerance for dt.
func tolerance(dt backends.DType) (atol, rtol float64) {
	switch dt {
	case backends.Float64:
		return 1e-12, 1e-9
	case backends.Float32:
		return 1e-5, 2e-5
	case backends.Float16:
		return 2e-3, 2e-3
	case backends.BFloat16:
		return 1.6e-2, 1.6e-2
	}
	return 0, 0
}

func runConformance(t *testing.T, dev backends.Backend) {
	conformance.Run(t, cpu.New(0), dev, withinTolerance)
}

// runCase runs c on the reference and the device and compares the results.
func runCase(ref, dev backends.Backend, c conformance.Case) error {
	return conformance.RunCase(ref, dev, c, withinTolerance)
}

// withinTolerance compares the results within c's dtype's tolerance (NaN
// matches NaN, infinities must match exactly).
func withinTolerance(c conformance.Case, dt backends.DType, wantB, gotB []byte) error {
	want, got := conformance.Decode(dt, wantB), conformance.Decode(dt, gotB)
	atol, rtol := tolerance(c.DType)
	for i := range want {
		w, g := want[i], got[i]
		if math.IsNaN(w) && math.IsNaN(g) || w == g {
			continue
		}
		if math.IsInf(w, 0) || math.IsNaN(w) || math.IsNaN(g) || math.Abs(w-g) > atol+rtol*math.Abs(w) {
			return fmt.Errorf("element %d: device %v, cpu %v (atol %g, rtol %g)", i, g, w, atol, rtol)
		}
	}
	return nil
}

// offByOne is a deliberately wrong device: its exp is 1% too large.
type offByOne struct{ backends.Backend }

func (o offByOne) Unary(op backends.UnaryOp, out, x backends.View, p0, p1 float64) {
	o.Backend.Unary(op, out, x, p0, p1)
	if op == backends.Exp {
		o.Backend.BinaryScalar(backends.Mul, out, out, 1.01, false)
	}
}

func TestConformanceSuiteCatchesWrongKernels(t *testing.T) {
	bad := offByOne{strict.New(cpu.New(0))}
	failed := map[string]bool{}
	for _, c := range conformance.Cases() {
		if runCase(cpu.New(0), bad, c) != nil {
			failed[c.Name] = true
		}
	}
	for _, want := range []string{"unary/exp/float32", "unary/exp/float64", "unary/exp/float16"} {
		if !failed[want] {
			t.Errorf("a 1%% error in %s went unnoticed", want)
		}
	}
	if failed["unary/exp/bfloat16"] || failed["unary/log/float32"] || len(failed) != 3 {
		t.Errorf("failures %v, want exactly the three exp cases (bfloat16 tolerates 1%%)", failed)
	}
}
