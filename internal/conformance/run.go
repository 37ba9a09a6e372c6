package conformance

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// Compare reports how the result of case c on a device (got) differs from
// the reference's (want), both the bytes of the result's buffer of dtype
// dt, or nil when the device conforms.
type Compare func(c Case, dt backends.DType, want, got []byte) error

// RunCase runs c on ref and on dev, each on fresh buffers freed after, and
// compares the results with cmp; a failed read on either side is the
// error, naming the side.
func RunCase(ref, dev backends.Backend, c Case, cmp Compare) error {
	rs, ds := &Session{B: ref}, &Session{B: dev}
	defer rs.Free()
	defer ds.Free()
	out := c.Run(rs)
	want := rs.Raw(out)
	got := ds.Raw(c.Run(ds))
	if rs.Err != nil {
		return fmt.Errorf("reference: %w", rs.Err)
	}
	if ds.Err != nil {
		return fmt.Errorf("device: %w", ds.Err)
	}
	return cmp(c, out.DType, want, got)
}

// Run runs every case of the suite as a subtest of t on dev against ref
// (RunCase with cmp), then fails t when dev holds a sticky error.
func Run(t *testing.T, ref, dev backends.Backend, cmp Compare) {
	t.Helper()
	cases := Cases()
	if len(cases) < 500 {
		t.Fatalf("only %d conformance cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if err := RunCase(ref, dev, c, cmp); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := dev.Sync(); err != nil {
		t.Fatalf("device error after the suite: %v", err)
	}
}
