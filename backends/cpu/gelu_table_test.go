package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// geluTableULP bounds the error of GELU's table kernel over [-3, 3] (ulp
// of float32): over every float32 there its model is within 1.3915 ulp
// (at x = -2.812295, TestGeluTableF32ModelExhaustive), rounded up.
const geluTableULP = 1.4

// geluTableF32Model is GELU(x) for |x| ≤ 3 as the table kernel
// (geluTableF32AVX512Pairs) computes it, step by step (gelu_table.go).
func geluTableF32Model(x float32) float32 {
	i := min(int32(fma32(x, 1/geluTabStep, geluTabN/2)), geluTabN-1)
	c := float32(i)*geluTabStep - (geluTabMax - geluTabStep/2) // i·0.1875 - 2.90625, exact
	t := x - c
	coef := func(k int) float32 { return geluTab[k*geluTabN+int(i)] }
	p := coef(8)
	for k := 7; k >= 2; k-- {
		p = fma32(p, t, coef(k))
	}
	rest := fma32(p, t, coef(1)) // Φ - c0hi
	y := fma32(x, coef(0), x*rest)
	return math.Float32frombits(math.Float32bits(y) | math.Float32bits(x)&0x80000000) // -0 for -0
}

// geluTableInputs returns inputs in [-3, 3] where the table kernel is
// hardest or switches behaviour: both ends, the interval boundaries and
// their neighbours, tiny and denormal values, and a dense random sample.
func geluTableInputs() []float32 {
	xs := []float32{0, float32(math.Copysign(0, -1)), 0x1p-149, -0x1p-149, 0x1p-126, -0x1p-126, 1e-20, -1e-20, 3, -3}
	for i := range geluTabN + 1 {
		b := float32(i)*geluTabStep - 3
		for _, d := range []float32{-2, -1, 0, 1, 2} {
			if v := math.Nextafter32(b, b+d); math.Abs(float64(v)) <= geluTabMax {
				xs = append(xs, v)
			}
			v := b
			for range int(math.Abs(float64(d))) {
				v = math.Nextafter32(v, b+d)
			}
			if math.Abs(float64(v)) <= geluTabMax {
				xs = append(xs, v)
			}
		}
	}
	r := rand.New(rand.NewPCG(61, 62))
	for range 1 << 20 {
		xs = append(xs, float32(6*r.Float64()-3))
	}
	return xs
}

// TestGeluTableF32Model measures the table kernel's model against float64
// x·Φ(x) on geluTableInputs and fails above geluTableULP; the model keeps
// the sign of zero (GELU(-0) = -0).
func TestGeluTableF32Model(t *testing.T) {
	var w float64
	var wx float32
	for _, x := range geluTableInputs() {
		if e := ulpError(geluTableF32Model(x), geluRef(float64(x))); e > w {
			w, wx = e, x
		}
	}
	t.Logf("table model: max %.4f ulp at x = %g", w, wx)
	if w > geluTableULP {
		t.Errorf("table model: %.4f ulp at x = %g (bound %g)", w, wx, geluTableULP)
	}
	if y := geluTableF32Model(float32(math.Copysign(0, -1))); y != 0 || !math.Signbit(float64(y)) {
		t.Errorf("GELU(-0) = %g, want -0", y)
	}
}

// TestGeluTableF32ModelExhaustive runs the table kernel's model over every
// float32 in [-3, 3] where KILN_GELU32_EXHAUSTIVE is set:
//
//	KILN_GELU32_EXHAUSTIVE=1 go test -run GeluTableF32ModelExhaustive -v -timeout 1h ./backends/cpu/
func TestGeluTableF32ModelExhaustive(t *testing.T) {
	if os.Getenv("KILN_GELU32_EXHAUSTIVE") == "" {
		t.Skip("set KILN_GELU32_EXHAUSTIVE=1 to run over every float32 in [-3, 3]")
	}
	d, x := worstOverFloat32(func(x float32) float64 {
		if !(math.Abs(float64(x)) <= geluTabMax) {
			return 0
		}
		return ulpError(geluTableF32Model(x), geluRef(float64(x)))
	})
	t.Logf("every float32 in [-3, 3]: table model within %.4f ulp (largest at x = %g, %#x)", d, x, math.Float32bits(x))
	if d > geluTableULP {
		t.Errorf("table model: %.4f ulp at x = %g (bound %g)", d, x, geluTableULP)
	}
}
