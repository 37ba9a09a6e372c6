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
	dev := dial(t, addr)
	ref := cpu.New(0)
	cases := conformance.Cases()
	if len(cases) < 500 {
		t.Fatalf("only %d conformance cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if err := runCase(ref, dev, c); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := dev.Sync(); err != nil {
		t.Fatalf("device error after the suite: %v", err)
	}
}

// runCase runs c on the reference and the device and compares the bytes.
func runCase(ref, dev backends.Backend, c conformance.Case) error {
	rs, ds := &conformance.Session{B: ref}, &conformance.Session{B: dev}
	defer rs.Free()
	defer ds.Free()
	want := rs.Raw(c.Run(rs))
	got := ds.Raw(c.Run(ds))
	if rs.Err != nil {
		return fmt.Errorf("cpu: %w", rs.Err)
	}
	if ds.Err != nil {
		return fmt.Errorf("remote: %w", ds.Err)
	}
	if !bytes.Equal(want, got) {
		w, g := conformance.Decode(c.DType, want), conformance.Decode(c.DType, got)
		for i := range w {
			if math.Float64bits(w[i]) != math.Float64bits(g[i]) {
				return fmt.Errorf("element %d: remote %v, cpu %v", i, g[i], w[i])
			}
		}
		return fmt.Errorf("bytes differ")
	}
	return nil
}
