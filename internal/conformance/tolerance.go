package conformance

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Tolerance returns the absolute and relative tolerance with which a
// device's results of dtype dt are compared to the CPU's: exact for integer
// and Bool results, a few units in the last place for floats.
func Tolerance(dt backends.DType) (atol, rtol float64) {
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

// WithinTolerance is a Compare that accepts a device's result when every
// element is within Tolerance(c.DType) of the reference's: NaN matches NaN,
// infinities must match exactly. Its error names the first element that
// differs.
func WithinTolerance(c Case, dt backends.DType, wantB, gotB []byte) error {
	if len(wantB) != len(gotB) {
		return fmt.Errorf("device result has %d bytes, cpu %d", len(gotB), len(wantB))
	}
	want, got := Decode(dt, wantB), Decode(dt, gotB)
	atol, rtol := Tolerance(c.DType)
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
