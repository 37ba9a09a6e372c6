package vulkan_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/vulkan"
)

// TestF64RoundingOnBits checks Float64 floor, ceil, round (ties to even)
// and pow's test for a fractional exponent against Go's math, bit for
// bit, on ties, signed zeros and values past 2^24, where llvmpipe (Mesa
// 22.3) on CPUs without AVX-512 got GLSL's double roundEven and trunc
// wrong (roundEven(3.5) = 3, trunc(20711473.152) unchanged, so that
// (-0.75)^20711473.152 gave -0 instead of NaN): the shaders compute them
// on the bits.
func TestF64RoundingOnBits(t *testing.T) {
	dev, err := vulkan.Open(0)
	if err != nil {
		t.Skip(err)
	}
	xs := []float64{0, math.Copysign(0, -1), 0.3, -0.3, 0.5, -0.5, 0.7, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5,
		20711473.152, -20711473.152, 1.6e7 + 0.5, 1.7e7 + 0.5, 1.7e7 + 1.5, 1.7e7 + 0.75, 3e9 + 0.5,
		-3e9 - 0.25, 1e15 + 0.5, 1e15 + 1.5, 4503599627370495.5, -4503599627370494.5, 1 << 53, 1e300,
		math.Inf(1), math.Inf(-1), math.NaN(), 5e-324}
	n := len(xs)
	in, _ := dev.Alloc(backends.Float64, n)
	out, _ := dev.Alloc(backends.Float64, n)
	defer dev.Free(in)
	defer dev.Free(out)
	raw := make([]byte, 8*n)
	for i, v := range xs {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(v))
	}
	dev.Write(in, 0, raw)
	iv, ov := backends.Contiguous(in, backends.Float64, n), backends.Contiguous(out, backends.Float64, n)
	check := func(name string, want func(float64) float64) {
		t.Helper()
		if err := dev.Read(out, 0, raw); err != nil {
			t.Fatal(err)
		}
		for i, x := range xs {
			got, w := math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:])), want(x)
			if math.Float64bits(got) != math.Float64bits(w) && !(got != got && w != w) {
				t.Errorf("%s(%v) = %v on the device, %v in Go", name, x, got, w)
			}
		}
	}
	dev.Unary(backends.Floor, ov, iv, 0, 0)
	check("floor", math.Floor)
	dev.Unary(backends.Ceil, ov, iv, 0, 0)
	check("ceil", math.Ceil)
	dev.Unary(backends.Round, ov, iv, 0, 0)
	check("round", math.RoundToEven)
	dev.BinaryScalar(backends.Pow, ov, iv, -0.75, true)
	check("(-0.75)^x", func(x float64) float64 { return math.Pow(-0.75, x) })
	dev.BinaryScalar(backends.Pow, ov, iv, 3, false)
	check("x^3", func(x float64) float64 { return math.Pow(x, 3) })
}
