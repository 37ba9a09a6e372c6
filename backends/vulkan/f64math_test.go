//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// ulps returns the distance between a and b in units in the last place.
func ulps(a, b float64) float64 {
	if a == b || math.IsNaN(a) && math.IsNaN(b) {
		return 0
	}
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return math.Inf(1)
	}
	ia, ib := int64(math.Float64bits(a)), int64(math.Float64bits(b))
	if (ia < 0) != (ib < 0) {
		return math.Abs(a-b) / math.SmallestNonzeroFloat64
	}
	return math.Abs(float64(ia - ib))
}

// TestF64Math checks shaders/f64math.glsl's double exp and log against Go's
// math over their whole range, special values included, to 4 ulps.
func TestF64Math(t *testing.T) {
	dev := openDevice(t)
	if !dev.pd.features.float64 {
		t.Skip("the device has no shaderFloat64")
	}
	var xs []float64
	for x := -745.0; x <= 710; x += 0.37 {
		xs = append(xs, x)
	}
	for e := -1074; e <= 1023; e += 3 {
		xs = append(xs, math.Ldexp(1.2345, e))
	}
	xs = append(xs, 0, math.Copysign(0, -1), 1, -1, 1e-300, math.Inf(1), math.Inf(-1), math.NaN(), 709.78, -745.13, 1e-17, -1e-17)
	n := len(xs)
	in, _ := dev.Alloc(backends.Float64, n)
	out, _ := dev.Alloc(backends.Float64, n)
	defer dev.Free(in)
	defer dev.Free(out)
	raw := make([]byte, 8*n)
	for i, x := range xs {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(x))
	}
	dev.Write(in, 0, raw)
	for _, c := range []struct {
		op backends.UnaryOp
		f  func(float64) float64
	}{{backends.Exp, math.Exp}, {backends.Log, math.Log}} {
		dev.Unary(c.op, backends.Contiguous(out, backends.Float64, n), backends.Contiguous(in, backends.Float64, n), 0, 0)
		if err := dev.Read(out, 0, raw); err != nil {
			t.Fatal(err)
		}
		worst, at := 0.0, 0.0
		for i, x := range xs {
			got, want := math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:])), c.f(x)
			if c.op == backends.Exp && math.IsInf(want, 1) && x < 709.782712893384 {
				continue // Go's assembly exp on amd64 overflows from about 709.44; the true value is finite
			}
			if u := ulps(got, want); u > worst {
				worst, at = u, x
			}
		}
		t.Logf("%s: worst %g ulps (at %g) over %d values", c.op, worst, at, n)
		if worst > 4 {
			t.Errorf("%s is %g ulps from Go's at x = %g", c.op, worst, at)
		}
	}
	if hs := dev.HostOps(); hs["unary exp float64"] != 0 {
		t.Errorf("float64 exp ran on the host")
	}
}
