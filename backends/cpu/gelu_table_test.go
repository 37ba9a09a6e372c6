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

// geluGradTableULP bounds the error of GELU's backward table kernel over
// [-3, 3] (ulp of float32, g·GELU'(x) against float64(g)·GELU'(x)): its
// model is within 0.9371 ulp over every float32 there with g = 1 (at x =
// -0.37491906, TestGeluGradTableF32ModelExhaustive, 168 s) and 0.9966 on
// TestGeluGradTableF32Model's inputs with random g, rounded up.
const geluGradTableULP = 1.05

// geluGradTableF32Model is g·GELU'(x) for |x| ≤ 3 and |g| < 2^64 as the
// backward table kernel (geluGradTableF32AVX512Pairs) computes it, step by
// step (gelu_table.go).
func geluGradTableF32Model(x, g float32) float32 {
	i := min(int32(fma32(x, 1/geluTabStep, geluTabN/2)), geluTabN-1)
	c := float32(i)*geluTabStep - (geluTabMax - geluTabStep/2)
	t := x - c
	coef := func(k int) float32 { return geluGradTab[k*geluTabN+int(i)] }
	p := coef(8)
	for k := 7; k >= 2; k-- {
		p = fma32(p, t, coef(k))
	}
	rest := fma32(p, t, coef(1))
	d1, d2 := float32(1), float32(0)
	if i >= geluRootFirst && i <= geluRootLast {
		d := x - geluRootHi
		d1 = d - geluRootLo
		d2 = (d - d1) - geluRootLo
	}
	uh := g * d1
	ul := fma32(g, d2, float32(math.FMA(float64(g), float64(d1), -float64(uh)))) // grad·d1 - uh is exact
	y := fma32(uh, coef(0), fma32(ul, coef(0), uh*rest))
	if y == 0 {
		y = uh * coef(0)
	}
	return y
}

// geluGradTableInputs returns geluTableInputs and the float32 values
// around GELU'(x)'s zero, where the table's error would be largest
// without its factor x - r.
func geluGradTableInputs() []float32 {
	xs := geluTableInputs()
	r := float32(geluRootHi)
	for _, dir := range []float32{-1, 1} {
		v := r
		for range 3000 {
			xs = append(xs, v)
			v = math.Nextafter32(v, dir)
		}
	}
	return xs
}

// TestGeluGradTableF32Model measures the backward table kernel's model
// against float64 g·GELU'(x) on geluGradTableInputs, with g = 1 and random
// g (and g = ±0, whose results must be zeros of g·GELU'(x)'s sign), and
// fails above geluGradTableULP.
func TestGeluGradTableF32Model(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	var w1, wg float64
	var x1, xg float32
	for _, x := range geluGradTableInputs() {
		want := geluRefDF(float64(x))
		if e := ulpError(geluGradTableF32Model(x, 1), want); e > w1 {
			w1, x1 = e, x
		}
		g := float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
		if e := ulpError(geluGradTableF32Model(x, g), float64(g)*want); e > wg {
			wg, xg = e, x
		}
		for _, g := range []float32{0, float32(math.Copysign(0, -1))} {
			y := geluGradTableF32Model(x, g)
			if y != 0 || want != 0 && math.Signbit(float64(y)) != math.Signbit(float64(g)*want) {
				t.Fatalf("x = %g, g = %g: %g, want a zero of the sign of %g", x, g, y, float64(g)*want)
			}
		}
	}
	t.Logf("backward table model: max %.4f ulp at x = %g (g = 1), %.4f at %g (random g)", w1, x1, wg, xg)
	if w1 > geluGradTableULP || wg > geluGradTableULP {
		t.Errorf("backward table model: %.4f ulp at x = %g, %.4f at %g with g (bound %g)", w1, x1, wg, xg, geluGradTableULP)
	}
}

// TestGeluGradTableF32ModelExhaustive runs the backward table kernel's
// model over every float32 in [-3, 3] (g = 1) where KILN_GELU32_EXHAUSTIVE
// is set:
//
//	KILN_GELU32_EXHAUSTIVE=1 go test -run GeluGradTableF32ModelExhaustive -v -timeout 1h ./backends/cpu/
func TestGeluGradTableF32ModelExhaustive(t *testing.T) {
	if os.Getenv("KILN_GELU32_EXHAUSTIVE") == "" {
		t.Skip("set KILN_GELU32_EXHAUSTIVE=1 to run over every float32 in [-3, 3]")
	}
	d, x := worstOverFloat32(func(x float32) float64 {
		if !(math.Abs(float64(x)) <= geluTabMax) {
			return 0
		}
		return ulpError(geluGradTableF32Model(x, 1), geluRefDF(float64(x)))
	})
	t.Logf("every float32 in [-3, 3]: backward table model within %.4f ulp (largest at x = %g, %#x)", d, x, math.Float32bits(x))
	if d > geluGradTableULP {
		t.Errorf("backward table model: %.4f ulp at x = %g (bound %g)", d, x, geluGradTableULP)
	}
}

// geluGradF32Models returns g·GELU'(x) as a float32 backward kernel
// computes it: the erfc-based kernel's model (geluGradF32Model), and
// where table is set (the AVX-512 kernels) the table's model
// (geluGradTableF32Model) for |x| ≤ 3 and |g| < 2^64.
func geluGradF32Models(x, g float32, table bool) float32 {
	if table && math.Abs(float64(x)) <= geluTabMax && math.Abs(float64(g)) < 0x1p64 {
		return geluGradTableF32Model(x, g)
	}
	return geluGradF32Model(x, g)
}
