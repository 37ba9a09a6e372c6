//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/internal/conformance"
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

// sweep returns n evenly spaced values over [lo, hi], the magnitudes
// 1.2345·2^e of the whole double range (both signs, e every 3, |x| up to
// hi·limit when limit > 0, all when 0), and the special values.
func sweep(lo, hi float64, n int, limit float64) []float64 {
	xs := make([]float64, 0, n+1500)
	for i := range n {
		xs = append(xs, lo+(hi-lo)*float64(i)/float64(n-1))
	}
	for e := -1074; e <= 1023; e += 3 {
		if x := math.Ldexp(1.2345, e); limit == 0 || x <= limit {
			xs = append(xs, x, -x)
		}
	}
	return append(xs, 0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), math.NaN(),
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 0x1p-1022, math.MaxFloat64, -math.MaxFloat64)
}

// ulpMeter is a conformance.Compare of Float64 results that records the
// worst distance from the CPU's in ulps and the input there; NaN = NaN and
// −0 = +0 count 0 ulps. It also records the worst distance in ulps of
// max(|cpu|, 1) ("scaled"): where a formula cancels (1 − tanh², 1 + erf
// for x ≪ 0, a derivative crossing zero) the result is far smaller than
// the terms it came from, and a 1-ulp difference in a term is many ulps of
// the result but not of the terms.
type ulpMeter struct {
	xs             []float64
	worst, at      float64
	scaled, scalAt float64
}

func (m *ulpMeter) compare(_ conformance.Case, _ backends.DType, want, got []byte) error {
	w, g := conformance.Decode(backends.Float64, want), conformance.Decode(backends.Float64, got)
	for i := range m.xs {
		u := ulps(g[i], w[i])
		if u > m.worst {
			m.worst, m.at = u, m.xs[i]
		}
		if math.Abs(w[i]) < 1 && !math.IsNaN(g[i]) && !math.IsInf(g[i], 0) {
			u = math.Abs(g[i]-w[i]) / 0x1p-52 // ulps of 1
		}
		if u > m.scaled {
			m.scaled, m.scalAt = u, m.xs[i]
		}
	}
	return nil
}

// f64Funcs lists the Float64 functions math_f64.comp computes, with their
// inputs and the most ulps each may be from the CPU's (Go's math), forward
// and for the derivative (and at most 8 ulps of max(|f|, 1)):
// TestF64Functions measures them on lavapipe (the worst there, doubled,
// as other devices may contract a·b + c differently) and doc.go records
// the result. The large bounds are the cancelling formulas (ulpMeter).
var f64Funcs = []struct {
	op              backends.UnaryOp
	p0              float64
	lo, hi, limit   float64
	maxFwd, maxGrad float64
}{
	{op: backends.Sin, lo: -20, hi: 20, maxFwd: 2, maxGrad: 4},
	{op: backends.Cos, lo: -20, hi: 20, maxFwd: 4, maxGrad: 2},
	{op: backends.Tan, lo: -20, hi: 20, maxFwd: 4, maxGrad: 10},
	{op: backends.Asin, lo: -1.05, hi: 1.05, maxFwd: 2, maxGrad: 2},
	{op: backends.Acos, lo: -1.05, hi: 1.05, maxFwd: 2, maxGrad: 2},
	{op: backends.Atan, lo: -30, hi: 30, maxFwd: 2, maxGrad: 2},
	{op: backends.Sinh, lo: -30, hi: 30, limit: 700, maxFwd: 6, maxGrad: 4},
	{op: backends.Cosh, lo: -30, hi: 30, limit: 700, maxFwd: 4, maxGrad: 6},
	{op: backends.Asinh, lo: -30, hi: 30, maxFwd: 4, maxGrad: 2},
	{op: backends.Acosh, lo: 0.9, hi: 30, maxFwd: 4, maxGrad: 2},
	{op: backends.Atanh, lo: -1.05, hi: 1.05, maxFwd: 4, maxGrad: 2},
	{op: backends.Tanh, lo: -30, hi: 30, maxFwd: 2, maxGrad: 128},
	{op: backends.Erf, lo: -7, hi: 7, maxFwd: 2, maxGrad: 4},
	{op: backends.Gelu, lo: -10, hi: 10, maxFwd: 360, maxGrad: 8192},
	{op: backends.GeluTanh, lo: -10, hi: 10, maxFwd: 176, maxGrad: 2048},
	{op: backends.Mish, lo: -30, hi: 30, maxFwd: 8, maxGrad: 2048},
	{op: backends.PowConst, p0: 1.5, lo: -3, hi: 30, maxFwd: 4, maxGrad: 2},
	{op: backends.PowConst, p0: -2.25, lo: -3, hi: 30, maxFwd: 6, maxGrad: 8},
	{op: backends.PowConst, p0: 7, lo: -30, hi: 30, maxFwd: 2, maxGrad: 2},
	{op: backends.PowConst, p0: 0.3, lo: 0, hi: 1000, maxFwd: 4, maxGrad: 8},
}

// TestF64Functions measures each Float64 function of math_f64.comp, and its
// derivative (UnaryGrad), against the CPU backend's (Go's math) over dense
// sweeps, the whole exponent range and the special values, in ulps.
func TestF64Functions(t *testing.T) {
	dev := openDevice(t)
	if !dev.pd.features.float64 {
		t.Skip("the device has no shaderFloat64")
	}
	ref := cpu.New(0)
	for _, f := range f64Funcs {
		xs := sweep(f.lo, f.hi, 20001, f.limit)
		n := len(xs)
		for _, grad := range []bool{false, true} {
			m := &ulpMeter{xs: xs}
			c := conformance.Case{Name: f.op.String(), DType: backends.Float64, Run: func(s *conformance.Session) backends.View {
				x := s.Tensor(backends.Float64, xs, n)
				out := s.Empty(backends.Float64, n)
				if grad {
					s.B.UnaryGrad(f.op, out, x, s.Tensor(backends.Float64, slices.Repeat([]float64{1}, n), n), f.p0, 0)
				} else {
					s.B.Unary(f.op, out, x, f.p0, 0)
				}
				return out
			}}
			if err := conformance.RunCase(ref, dev, c, m.compare); err != nil {
				t.Fatal(err)
			}
			name, limit := f.op.String(), f.maxFwd
			if grad {
				name, limit = name+"'", f.maxGrad
			}
			if f.op == backends.PowConst {
				name = fmt.Sprintf("%s(x, %g)", name, f.p0)
			}
			t.Logf("%-14s worst %4g ulps (at x = %g), %g ulps of max(|f|, 1) (at x = %g), over %d values",
				name, m.worst, m.at, m.scaled, m.scalAt, n)
			if m.worst > limit {
				t.Errorf("%s is %g ulps from the CPU's at x = %g (at most %g)", name, m.worst, m.at, limit)
			}
			if bound := min(limit, 8); m.scaled > bound {
				t.Errorf("%s is %g ulps of max(|f|, 1) from the CPU's at x = %g (at most %g)", name, m.scaled, m.scalAt, bound)
			}
		}
	}
	for k := range dev.HostOps() {
		t.Errorf("%s ran on the host", k)
	}
}

// sameBits compares results bit for bit, but that any NaN matches any NaN
// (Go's math returns NaN with payload 1, the shaders payload 0).
func sameBits(_ conformance.Case, dt backends.DType, want, got []byte) error {
	w, g := conformance.Decode(dt, want), conformance.Decode(dt, got)
	for i := range w {
		if math.Float64bits(w[i]) != math.Float64bits(g[i]) && !(math.IsNaN(w[i]) && math.IsNaN(g[i])) {
			return fmt.Errorf("element %d of %d: device %v, cpu %v", i, len(w), g[i], w[i])
		}
	}
	return nil
}

// pairs returns every pair of as and bs, then n pseudo-random pairs with a
// in [alo, ahi) and b in [blo, bhi).
func pairs(as, bs []float64, n int, alo, ahi, blo, bhi float64) (x, y []float64) {
	for _, a := range as {
		for _, b := range bs {
			x, y = append(x, a), append(y, b)
		}
	}
	for i := range n {
		u := backends.RandomValue(backends.Uniform, 7, uint64(i), 0, 1)
		v := backends.RandomValue(backends.Uniform, 8, uint64(i), 0, 1)
		x, y = append(x, alo+(ahi-alo)*u), append(y, blo+(bhi-blo)*v)
	}
	return x, y
}

// specials are the operands every binary sweep includes.
var specials = []float64{0, math.Copysign(0, -1), 1, -1, 2, -2, 0.5, -0.5, 3, -3, 1.5, -1.5, 0.3, 7.25, -100,
	100.5, 1e20, 0x1p63, 0x1p53 - 1, 1e-10, 1e-300, 1e300, -1e300, math.SmallestNonzeroFloat64, 0x1p-1022,
	math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()}

// TestF64Binary measures Float64 pow and atan2 (math_f64.comp) against the
// CPU backend in ulps, as Binary and as BinaryScalar in both orders, and
// checks that float remainder and floor division (binary.comp with the
// exact fmod) equal the CPU's bit for bit on every float dtype, signed
// zeros, infinities and NaN included, and integer pow (exact in int64).
func TestF64Binary(t *testing.T) {
	dev := openDevice(t)
	if !dev.pd.features.float64 {
		t.Skip("the device has no shaderFloat64")
	}
	ref := cpu.New(0)
	binaryCase := func(op backends.BinaryOp, dt backends.DType, xs, ys []float64) conformance.Case {
		return conformance.Case{Name: op.String(), DType: dt, Run: func(s *conformance.Session) backends.View {
			out := s.Empty(dt, len(xs))
			s.B.Binary(op, out, s.Tensor(dt, xs, len(xs)), s.Tensor(dt, ys, len(ys)))
			return out
		}}
	}
	scalarCase := func(op backends.BinaryOp, dt backends.DType, xs []float64, sc float64, reverse bool) conformance.Case {
		return conformance.Case{Name: op.String(), DType: dt, Run: func(s *conformance.Session) backends.View {
			out := s.Empty(dt, len(xs))
			s.B.BinaryScalar(op, out, s.Tensor(dt, xs, len(xs)), sc, reverse)
			return out
		}}
	}
	dense := sweep(-20, 20, 2001, 0)
	for _, c := range []struct {
		op       backends.BinaryOp
		xs, ys   []float64
		maxULPs  float64
		scalars  []float64
		describe string
	}{
		{op: backends.Pow, maxULPs: 8, scalars: []float64{2.5, -0.75, 3, 0.5},
			describe: "x in (0, 30), y in [-40, 40)"},
		{op: backends.Atan2, maxULPs: 2, scalars: []float64{0, math.Copysign(0, -1), -2.5, math.Inf(-1)},
			describe: "x, y in [-20, 20)"},
	} {
		xs, ys := pairs(append(specials, dense[:200]...), specials, 40000, 0, 30, -40, 40)
		if c.op == backends.Atan2 {
			xs, ys = pairs(append(specials, dense[:200]...), specials, 40000, -20, 20, -20, 20)
		}
		m := &ulpMeter{xs: xs}
		if err := conformance.RunCase(ref, dev, binaryCase(c.op, backends.Float64, xs, ys), m.compare); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: worst %g ulps (at x = %g) over %d pairs (the special values crossed, %s)", c.op, m.worst, m.at, len(xs), c.describe)
		if m.worst > c.maxULPs {
			t.Errorf("%s is %g ulps from the CPU's at x = %g (at most %g)", c.op, m.worst, m.at, c.maxULPs)
		}
		for _, sc := range c.scalars {
			for _, reverse := range []bool{false, true} {
				m := &ulpMeter{xs: dense}
				if err := conformance.RunCase(ref, dev, scalarCase(c.op, backends.Float64, dense, sc, reverse), m.compare); err != nil {
					t.Fatal(err)
				}
				if m.worst > c.maxULPs {
					t.Errorf("%s with scalar %g (reverse %v) is %g ulps from the CPU's at x = %g", c.op, sc, reverse, m.worst, m.at)
				}
			}
		}
	}
	huge := []float64{1e300, -1e300, 1e-300, 0x1p-1060, -0x1p-1070, 123456789.125, -0.1, 0.1, 0.7, 1e15 + 0.5}
	xs, ys := pairs(append(append(specials, huge...), dense[:300]...), append(specials, huge...), 20000, -50, 50, -7, 7)
	for _, op := range []backends.BinaryOp{backends.Rem, backends.FloorDiv} {
		for _, dt := range []backends.DType{backends.Float64, backends.Float32, backends.Float16, backends.BFloat16} {
			if err := conformance.RunCase(ref, dev, binaryCase(op, dt, xs, ys), sameBits); err != nil {
				t.Errorf("%s %s over %d pairs: %v", op, dt, len(xs), err)
			}
			for _, sc := range []float64{2.5, -0.1, 0, math.Inf(1), 1e-300, 7} {
				for _, reverse := range []bool{false, true} {
					if err := conformance.RunCase(ref, dev, scalarCase(op, dt, dense, sc, reverse), sameBits); err != nil {
						t.Errorf("%s %s with scalar %g (reverse %v): %v", op, dt, sc, reverse, err)
					}
				}
			}
		}
	}
	ints := []float64{0, 1, -1, 2, -2, 3, 7, -7, 10, 31, 62, 63, 64, 100, -100}
	xs, ys = pairs(ints, ints, 0, 0, 0, 0, 0)
	for _, dt := range []backends.DType{backends.Int64, backends.Int32, backends.Int8} {
		if err := conformance.RunCase(ref, dev, binaryCase(backends.Pow, dt, xs, ys), sameBits); err != nil {
			t.Errorf("pow %s: %v", dt, err)
		}
		for _, sc := range []float64{3, -1, 0, 2.5} {
			if err := conformance.RunCase(ref, dev, scalarCase(backends.Pow, dt, ints, sc, false), sameBits); err != nil {
				t.Errorf("pow %s with scalar %g: %v", dt, sc, err)
			}
		}
	}
	for k := range dev.HostOps() {
		t.Errorf("%s ran on the host", k)
	}
}
