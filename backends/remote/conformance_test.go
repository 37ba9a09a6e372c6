package remote_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/internal/conformance"
)

// The conformance suite (the one backends/cuda runs on a GPU) runs every
// Backend primitive, over every dtype it applies to, on a remote device
// served over loopback and on a local CPU backend, and requires the bytes to
// be identical: the server runs the same CPU kernels.

// TestConformanceRemoteCPU runs the suite on remote://127.0.0.1:PORT/cpu:0.
func TestConformanceRemoteCPU(t *testing.T) {
	_, addr := startServer(t, nil)
	conformance.Run(t, cpu.New(0), dial(t, addr), sameBytes)
}

// sameBytes requires the remote result's bytes to be the reference's.
func sameBytes(_ conformance.Case, dt backends.DType, want, got []byte) error {
	if bytes.Equal(want, got) {
		return nil
	}
	w, g := conformance.Decode(dt, want), conformance.Decode(dt, got)
	for i := range w {
		if math.Float64bits(w[i]) != math.Float64bits(g[i]) {
			return fmt.Errorf("element %d: remote %v, cpu %v", i, g[i], w[i])
		}
	}
	return fmt.Errorf("bytes differ")
}
