//go:build !kiln_nocuda

package cuda

import (
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

func runConformance(t *testing.T, dev backends.Backend) {
	conformance.Run(t, cpu.New(0), dev, conformance.WithinTolerance)
}

// runCase runs c on the reference and the device and compares the results.
func runCase(ref, dev backends.Backend, c conformance.Case) error {
	return conformance.RunCase(ref, dev, c, conformance.WithinTolerance)
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
