package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// GELU's tanh form forward in float32 (asm/gen/transcendental_gelutanh32.go,
// the AVX2 forward kernel): the same steps and constants. With a = |x| and
// v = 2u(-a) = -a·(K1 + K2·a²) ≤ 0 (K1 = 2√(2/π), K2 = 0.044715·K1),
// q = e^v/(1 + e^v) ∈ (0, 1/2] and GELU-tanh(x) = -a·q for x < 0, x - a·q
// for x ≥ 0: the first needs q to a relative accuracy near float32's (the
// result is tiny), the second is then well conditioned (a·q ≤ x/2).
//
//   - v to an absolute error far below 2^-24 (|v| reaches 127 before the
//     result underflows, where one float32 rounding of v would be 2^-18 of
//     e^v, 64 ulps): a² = s + sl exact (FMA), K2·a² = m + ml likewise,
//     K1 and K2 as float32 pairs, P = K1 + K2·a² as the 2Sum Ph + Pl, and
//     v = -a·(Ph + Pl) = vh + vl with -a·Ph exact in two terms.
//   - e^v = 2^n·(1 + p) with exp32's polynomial (by Estrin's scheme,
//     for a shorter dependent chain) and its reduction from the two
//     parts: r = (vh - n·ln2Hi) - (n·ln2Lo - vl), the first exact. n
//     comes from v's one-rounding estimate a·(C1 + C2·a²), off the chain
//     that computes vh (n may then differ from round(v·log2e) by one
//     where v·log2e is within 2^-15 of a half-integer: |r| stays within
//     ln2/2 + 2^-15).
//   - 1 + p as the exact pair eh + el (Fast2Sum); d + dl = 1 + 2^n·(eh +
//     el) with d = fma(2^n, eh, 1), whose rounding error is exact.
//   - q = 2^n·(eh + el)/(d + dl) as 2^n·(qh + rem/d), qh = eh·(1/d) and
//     rem = fma(-qh, d, eh) (exact) + fma(-qh, dl, el).
//   - a·q with as = a·2^(24 + n>>1) (exact; no product is denormal where
//     x is) as the exact product as·qh plus rem·(as/d), rounded once to
//     u; then ·2^(n - n>>1 - 24), which rounds once: into the denormals
//     for x < 0 where the tail ends, and in x - u·2^(n - n>>1 - 24) (one
//     FMA) for x ≥ 0. (The kernel computes -a·q, the same values
//     negated.)
//
// a is clamped to geluTanh32Clamp = 11.5: there e^v < 2^-183, so x·S
// underflows to -0 below -11.5 and is x above 11.5, as in float64.
const geluTanh32Clamp = float32(11.5)

var (
	geluTanh32K1h = float32(geluK1)
	geluTanh32K1l = float32(geluK1 - float64(geluTanh32K1h))
	geluTanh32K2h = float32(geluK2)
	geluTanh32K2l = float32(geluK2 - float64(geluTanh32K2h))
	// -K1·log2e, -K2·log2e: n's estimate
	geluTanh32C1 = float32(-geluK1 * math.Log2E)
	geluTanh32C2 = float32(-geluK2 * math.Log2E)
)

// geluTanhF32Model is GELU-tanh(x) as the float32 forward kernel computes
// it (for finite x). The float32() conversions keep Go from fusing a
// product into a later addition.
func geluTanhF32Model(x float32) float32 {
	a := min(float32(math.Abs(float64(x))), geluTanh32Clamp)
	xn := -a
	s := float32(a * a)
	sl := fma32(a, a, -s)
	// n ≈ round(v·log2e) from v's one-rounding estimate, off the chain
	// that computes v exactly
	nf := fma32(a, fma32(s, geluTanh32C2, geluTanh32C1), exp32Magic) - exp32Magic
	n := int(nf)
	// P = K1 + K2·a² = ph + pl
	m := float32(geluTanh32K2h * s)
	ml := fma32(geluTanh32K2h, s, -m)
	ml = fma32(geluTanh32K2h, sl, fma32(geluTanh32K2l, s, ml))
	ph := geluTanh32K1h + m // 2Sum
	bb := ph - geluTanh32K1h
	pl := (geluTanh32K1h - (ph - bb)) + (m - bb)
	pl += ml + geluTanh32K1l
	// v = xn·(ph + pl) = vh + vl
	vh := float32(xn * ph)
	vl := fma32(xn, pl, fma32(xn, ph, -vh))
	// e^v = 2^n·(eh + el), the polynomial by Estrin's scheme
	r := fma32(-nf, ln2Hi32, vh) - fma32(nf, ln2Lo32, -vl)
	r2 := float32(r * r)
	c := &exp32P
	pp := fma32(fma32(fma32(c[5], r, c[4]), r2, fma32(c[3], r, c[2])), r2, fma32(c[1], r, c[0]))
	p := fma32(r2, pp, r)
	eh := 1 + p
	el := (1 - eh) + p
	// d + dl = 1 + 2^n·(eh + el): 1 + 2^n·eh is a sum of two floats, so
	// its rounding error is exact
	sn := float32(0) // 2^n, 0 below -126 (the kernel's exponent field)
	if n >= -126 {
		sn = float32(math.Ldexp(1, n))
	}
	d := fma32(sn, eh, 1)
	dl := fma32(sn, el, fma32(sn, eh, 1-d))
	inv := 1 / d
	// q = (eh + el)/(d + dl) = qh + rem/d, and u = as·q rounded once with
	// as = a·2^(24 + n>>1) (exact; a·2^24 is normal where x is denormal)
	n1 := n >> 1
	as := float32(a * float32(math.Ldexp(1, 24+n1)))
	qh := float32(eh * inv)
	ia := float32(inv * as)
	rem := fma32(-qh, d, eh) + fma32(-qh, dl, el)
	y := float32(as * qh)
	u := y + fma32(rem, ia, fma32(as, qh, -y))
	s2 := math.Ldexp(1, n-n1-24)
	if math.Signbit(float64(x)) { // one rounding, into the denormals too
		return float32(-(float64(u) * s2))
	}
	return float32(math.FMA(-float64(u), s2, float64(x)))
}

// geluTanhRef is x·sigmoid(2u) in float64, to far below a float32 ulp.
func geluTanhRef(x float64) float64 { return transcendentalRefs[backends.GeluTanh].f(x) }

// geluTanh32HardInputs returns inputs that probe the float32 GELU-tanh
// kernel: an ulp sweep of the float32 range, random values where the tail
// falls ([-12, -3]) and where x·S approaches x ([3, 13]), tiny and
// denormal inputs, and runs of consecutive floats at the clamp.
func geluTanh32HardInputs() []float32 {
	xs := ulpSweep(8191, 2000, 1<<16)
	r := rand.New(rand.NewPCG(41, 42))
	for range 1 << 15 {
		xs = append(xs,
			float32(-12+9*r.Float64()), float32(3+10*r.Float64()),
			float32(math.Ldexp(r.Float64()*2-1, -r.IntN(150))),
			math.Float32frombits(r.Uint32()&0x807fffff)) // denormals
	}
	for _, c := range []float32{geluTanh32Clamp, -geluTanh32Clamp, 10, -10} {
		x := c
		for range 2000 {
			xs = append(xs, x, -x)
			x = math.Nextafter32(x, 0)
		}
	}
	return xs
}

// TestGeluTanhF32ForwardModel measures the float32 GELU-tanh forward
// model against float64 on geluTanh32HardInputs and a dense random sample
// of [-12, 12], and fails above geluTanh32ULP.
// TestGeluTanhF32ForwardModelExhaustive takes every float32 input.
func TestGeluTanhF32ForwardModel(t *testing.T) {
	xs := geluTanh32HardInputs()
	r := rand.New(rand.NewPCG(43, 44))
	for range 1 << 20 {
		xs = append(xs, float32(24*r.Float64()-12))
	}
	var w float64
	var wx float32
	for _, x := range xs {
		if x != x || math.IsInf(float64(x), 0) {
			continue
		}
		if e := ulpError(geluTanhF32Model(x), geluTanhRef(float64(x))); e > w {
			w, wx = e, x
		}
	}
	t.Logf("forward max %.4f ulp at x = %g", w, wx)
	if w > geluTanh32ULP {
		t.Errorf("forward %.4f ulp at x = %g (bound %g)", w, wx, geluTanh32ULP)
	}
}

// TestGeluTanhF32ForwardModelExhaustive runs the float32 GELU-tanh forward
// model over every finite float32 input where KILN_GELUTANH32_EXHAUSTIVE
// is set:
//
//	KILN_GELUTANH32_EXHAUSTIVE=1 go test -run GeluTanhF32ForwardModelExhaustive -v -timeout 2h ./backends/cpu/
//
// (ten minutes on two cores): 1.1216 ulp at x = -2.7475474 (0xc02fd7d1).
func TestGeluTanhF32ForwardModelExhaustive(t *testing.T) {
	if os.Getenv("KILN_GELUTANH32_EXHAUSTIVE") == "" {
		t.Skip("set KILN_GELUTANH32_EXHAUSTIVE=1 to run over every float32")
	}
	d, x := worstOverFloat32(func(x float32) float64 { return ulpError(geluTanhF32Model(x), geluTanhRef(float64(x))) })
	t.Logf("every float32: forward max %.4f ulp at x = %g (%#x)", d, x, math.Float32bits(x))
	if d > geluTanh32ULP {
		t.Errorf("forward %.4f ulp (bound %g)", d, geluTanh32ULP)
	}
}

// geluTanh32ULP bounds the float32 GELU-tanh forward kernel (AVX2): the
// maximum over every float32 input of its model, geluTanhF32Model (1.1216
// ulp at x = -2.7475474, 0xc02fd7d1, TestGeluTanhF32ForwardModelExhaustive),
// rounded up.
const geluTanh32ULP = 1.13

// TestGeluTanhF32ForwardKernelMatchesModel checks the float32 GELU-tanh
// forward kernel (AVX2: "vec" here, "alt" on an AVX-512 machine) against
// its model on geluTanh32HardInputs and a dense sample of [-12, 12], bit
// for bit (the sign of zero included), at ±Inf, NaN and ±0 against the
// float64 kernel it replaced, and on every length below two blocks.
func TestGeluTanhF32ForwardKernelMatchesModel(t *testing.T) {
	xs := geluTanh32HardInputs()
	r := rand.New(rand.NewPCG(45, 46))
	for range 1 << 18 {
		xs = append(xs, float32(24*r.Float64()-12))
	}
	specials := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0, float32(math.Copysign(0, -1)),
		math.MaxFloat32, -math.MaxFloat32, 1e-45, -1e-45}
	xs = append(append(append([]float32{}, specials...), xs...), specials...) // a block with them first too
	n := len(xs)
	ran := false
	for name, im := range f32KernelImpls(backends.GeluTanh) {
		if !im.f32 {
			continue
		}
		ran = true
		got := make([]float32, n)
		im.fwd(got, xs)
		for i, x := range xs {
			if x != x || math.IsInf(float64(x), 0) {
				continue
			}
			if want := geluTanhF32Model(x); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("%s gelu_tanh at x = %g (%#x): kernel %g, model %g", name, x, math.Float32bits(x), got[i], want)
			}
		}
		t.Logf("%s gelu_tanh: %d inputs equal to the model", name, n)
		if im.wideF != nil {
			wide := make([]float32, len(specials))
			im.wideF(wide, specials)
			for i, x := range specials {
				g := got[n-len(specials)+i]
				if math.Float32bits(g) != math.Float32bits(wide[i]) && !(g != g && wide[i] != wide[i]) {
					t.Errorf("%s gelu_tanh(%g) = %g, the float64 kernel %g", name, x, g, wide[i])
				}
			}
		}
		for m := range 17 {
			o := make([]float32, m+1)
			im.fwd(o[:m], xs[5:5+m])
			for i := range m {
				if w := geluTanhF32Model(xs[5+i]); math.Float32bits(o[i]) != math.Float32bits(w) {
					t.Fatalf("%s gelu_tanh, n = %d: lane %d: %g, model %g", name, m, i, o[i], w)
				}
			}
			if o[m] != 0 {
				t.Fatalf("%s gelu_tanh, n = %d: wrote past the end", name, m)
			}
		}
	}
	if !ran {
		t.Skip("no float32 GELU-tanh forward kernel on this machine")
	}
}
