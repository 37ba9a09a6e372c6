package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// GELU's forward (erf form) in float32 (asm/gen/transcendental_gelu32.go,
// the AVX2 forward kernel): the same steps and constants. With a = |x|,
// x·Φ(x) = x·e^(-a²/2)·R(a) for x < 0 and x - that for x ≥ 0, R(a) =
// e^(a²/2)·Φ(-a), which falls from 1/2 at 0 like 1/(a√(2π)):
//
//   - R = G/(a + b) with b = 0.8: G = R·(a + b) stays within [0.399,
//     0.474] on [0, ∞), so G = c + H with c = 0.4367 (the middle) and H =
//     P/Q a rational function of degree 5/5 with |H| ≤ 0.092·G: the two or
//     three roundings of H's Horner evaluation and of P·(1/Q) are damped
//     to a tenth. c + H is kept in two terms (Fast2Sum: c > |H|), a + b too
//     (Fast2Sum on the larger and the smaller), and G/(a + b) is corrected
//     by its remainder fma(-q, s, G) (exact) into two terms q + ql; x·R
//     (x clamped to ±17.5) is the exact product x·q plus the rest, y +
//     ylo.
//   - e^(-a²/2) and the assembly are the backward's (gelu32Exp): 2^n·(y +
//     (y·r + (y·r²·P + ylo·(1 + r)))) for x < 0, x minus that for x ≥ 0,
//     rounded once, 2^n applied as two exact factors, the second rounding
//     into the denormals where the tail ends (x ≈ -14.5). ylo·r is kept
//     (the backward drops it): ylo is up to two ulps of y here (q comes
//     from a multiplication by 1/(a + b), not a division), and without it
//     the error reached 2.12 ulp.
//
// The fit (linearised least squares on [0, 17.5] against math.Erfc,
// Lawson-reweighted, the coefficients rounded to float32 one at a time and
// the others refitted) has error 2^-27.6 relative to G. Over every float32
// input the model is within 1.3426 ulp of x·Φ(x)
// (TestGeluF32ForwardModelExhaustive); the previous float32 attempt, R as
// one rational function, measured 2.14.
const gelu32B = float32(0.8)

var (
	gelu32FC = float32(0.4367)
	gelu32FP = [6]float32{-0x1.2ca57p-05, 0x1.e36c8cp-04, 0x1.0784acp-04, 0x1.9a46b2p-07, -0x1.5f0d9ep-12, -0x1.f14cc2p-12}
	gelu32FQ = [6]float32{0x1p+00, 0x1.b63828p+00, 0x1.42e8ap+00, 0x1.0475fep-01, 0x1.d71248p-04, 0x1.9b9b6cp-07}
)

// geluF32Model is GELU(x) as the float32 forward kernel computes it (for
// finite x).
func geluF32Model(x float32) float32 {
	ac := min(float32(math.Abs(float64(x))), gelu32Clamp)
	hq := horner32(ac, gelu32FQ[:])
	inv := 1 / hq
	hp := horner32(ac, gelu32FP[:])
	h := float32(hp * inv)
	gh := gelu32FC + h // G = gh + gl (Fast2Sum: c > |h|)
	gl := (gelu32FC - gh) + h
	big, small := max(ac, gelu32B), min(ac, gelu32B)
	s := big + small // a + b = s + sl (Fast2Sum)
	sl := small - (s - big)
	inv2 := 1 / s
	q := float32(gh * inv2) // R = G/(a + b) = q + ql
	rem := fma32(-q, s, gh) + gl
	ql := float32(fma32(-q, sl, rem) * inv2)
	xc := float32(math.Copysign(float64(ac), float64(x))) // x clamped
	y := float32(xc * q)                                  // x·R = y + ylo
	ylo := fma32(xc, ql, fma32(xc, q, -y))
	n, r, e := gelu32Exp(ac)
	u := y + fma32(y, r, fma32(float32(y*float32(r*r)), e, fma32(ylo, r, ylo)))
	n1 := n >> 1
	v := float32(u * float32(math.Ldexp(1, n1))) // exact
	s2 := math.Ldexp(1, n-n1)
	if math.Signbit(float64(x)) { // one rounding, into the denormals too
		return float32(math.Copysign(math.Abs(float64(v)*s2), float64(y)))
	}
	return float32(math.FMA(-float64(v), s2, float64(x)))
}

// geluRef is x·Φ(x) in float64, accurate to far below a float32 ulp.
func geluRef(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

// TestGeluF32ForwardModel measures the float32 GELU forward model
// (geluF32Model: the AVX2 kernel's algorithm) against float64 x·Φ(x) on
// gelu32HardInputs and a dense random sample of [-15, 15], and fails above
// gelu32ULP. TestGeluF32ForwardModelExhaustive takes every float32 input.
func TestGeluF32ForwardModel(t *testing.T) {
	xs := gelu32HardInputs()
	r := rand.New(rand.NewPCG(31, 32))
	for range 1 << 20 {
		xs = append(xs, float32(30*r.Float64()-15))
	}
	var w float64
	var wx float32
	for _, x := range xs {
		if x != x || math.IsInf(float64(x), 0) {
			continue
		}
		if e := ulpError(geluF32Model(x), geluRef(float64(x))); e > w {
			w, wx = e, x
		}
	}
	t.Logf("forward max %.4f ulp at x = %g", w, wx)
	if w > gelu32ULP {
		t.Errorf("forward %.4f ulp at x = %g (bound %g)", w, wx, gelu32ULP)
	}
}

// TestGeluF32ForwardModelExhaustive runs the float32 GELU forward model
// over every finite float32 input where KILN_GELU32_EXHAUSTIVE is set:
//
//	KILN_GELU32_EXHAUSTIVE=1 go test -run GeluF32ForwardModelExhaustive -v -timeout 2h ./backends/cpu/
//
// (a quarter of an hour on two busy cores). gelu32ULP comes from it:
// 1.3426 ulp at x = -2.2022111 (0xc00cf107), where e^(-x²/2)'s reduction
// is near its widest (|r| ≈ ln2/2).
func TestGeluF32ForwardModelExhaustive(t *testing.T) {
	if os.Getenv("KILN_GELU32_EXHAUSTIVE") == "" {
		t.Skip("set KILN_GELU32_EXHAUSTIVE=1 to run over every float32")
	}
	d, x := worstOverFloat32(func(x float32) float64 { return ulpError(geluF32Model(x), geluRef(float64(x))) })
	t.Logf("every float32: forward max %.4f ulp at x = %g (%#x)", d, x, math.Float32bits(x))
	if d > gelu32ULP {
		t.Errorf("forward %.4f ulp (bound %g)", d, gelu32ULP)
	}
}

// gelu32ULP bounds the float32 GELU forward kernel (AVX2): the maximum
// over every float32 input of its model, geluF32Model (1.3426 ulp at x =
// -2.2022111, TestGeluF32ForwardModelExhaustive), rounded up.
const gelu32ULP = 1.35

// geluF32Models returns GELU of each x in xs as a float32 forward kernel
// computes it: the erfc-based kernel's model (geluF32Model), and where
// table is set (the AVX-512 kernels) the table's model
// (geluTableF32Model) for |x| ≤ 3.
func geluF32Models(xs []float32, table bool) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = geluF32Model(x)
		if table && math.Abs(float64(x)) <= geluTabMax {
			out[i] = geluTableF32Model(x)
		}
	}
	return out
}

// TestGeluF32ForwardKernelMatchesModel checks the float32 GELU forward
// kernels (AVX2: "vec" here, "alt" on an AVX-512 machine, where "vec" is
// the AVX-512 one with its table) against their models (geluF32Models)
// on gelu32HardInputs and a dense sample of [-15, 15], bit for bit (the
// sign of zero included; as in TestGeluF32KernelsMatchModel, 1 ulp is
// allowed in at most one input in 10^5, for the model's double rounding),
// and at ±Inf, NaN and ±0 against the float64 kernel it replaced.
func TestGeluF32ForwardKernelMatchesModel(t *testing.T) {
	xs := gelu32HardInputs()
	r := rand.New(rand.NewPCG(33, 34))
	for range 1 << 18 {
		xs = append(xs, float32(30*r.Float64()-15))
	}
	specials := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0, float32(math.Copysign(0, -1))}
	xs = append(xs, specials...)
	n := len(xs)
	ran := false
	for name, im := range f32KernelImpls(backends.Gelu) {
		if !im.f32 {
			continue
		}
		ran = true
		got := make([]float32, n)
		im.fwd(got, xs)
		models := geluF32Models(xs, name == "vec" && geluTableInUse)
		off := 0
		for i, x := range xs {
			if x != x || math.IsInf(float64(x), 0) {
				continue
			}
			want := models[i]
			if math.Float32bits(got[i]) == math.Float32bits(want) {
				continue
			}
			if d := math.Float32bits(got[i]) - math.Float32bits(want); (d == 1 || d == math.MaxUint32) && off < n/100000 {
				off++
				continue
			}
			t.Fatalf("%s gelu at x = %g (%#x): kernel %g, model %g", name, x, math.Float32bits(x), got[i], want)
		}
		t.Logf("%s gelu: %d inputs, %d within 1 ulp of the model, the rest equal", name, n, off)
		if im.wideF != nil {
			wide := make([]float32, len(specials))
			im.wideF(wide, specials)
			for i, x := range specials {
				g := got[n-len(specials)+i]
				if math.Float32bits(g) != math.Float32bits(wide[i]) && !(g != g && wide[i] != wide[i]) {
					t.Errorf("%s gelu(%g) = %g, the float64 kernel %g", name, x, g, wide[i])
				}
			}
		}
		// tails: every length below two blocks, at an offset
		for m := range 17 {
			o := make([]float32, m+1)
			im.fwd(o[:m], xs[5:5+m])
			for i := range m {
				if w := models[5+i]; math.Float32bits(o[i]) != math.Float32bits(w) && xs[5+i] == xs[5+i] {
					t.Fatalf("%s gelu, n = %d: lane %d: %g, model %g", name, m, i, o[i], w)
				}
			}
			if o[m] != 0 {
				t.Fatalf("%s gelu, n = %d: wrote past the end", name, m)
			}
		}
	}
	if !ran {
		t.Skip("no float32 GELU forward kernel on this machine")
	}
}
