package cpu

import (
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// SiLU's backward in float32 (asm/gen/transcendental_silu32.go, the
// AVX-512 kernel): the same steps and constants in scalar Go
// (siluGradF32Model), which the kernel equals bit for bit
// (TestSiluGradF32KernelMatchesModel) and whose error is measured over
// every float32 input (TestSiluGradF32ModelExhaustive). For x ≥ silu32Lo,
// with z = min(x, silu32Hi) and e = e^z, g·silu'(x) = g·e·f/d², f = 1 + z
// + e, d = 1 + e:
//
//   - e = 2^k·T_j·e^r on a grid of step ln2/32 through silu32X0, the
//     float32 nearest the derivative's zero x0 (1 + x0 + e^x0 = 0): m =
//     round(z·32/ln2) = 32k + j, r = z - silu32X0 - (m + 59)·ln2/32, exact
//     at m = -59 (x near x0); T_j = 4·e^silu32X0·2^((j-5)/32) from a table
//     in two float32 parts, e^r = 1 + r + r²·(c2 + c3·r); 2^k·T_j and
//     2^k·(T_j·(e^r - 1) + Tl) are e's two terms, eh and el (el about 1% of
//     e).
//   - d = 1 + eh + el as dh + dl (Fast2Sum on the larger and the smaller
//     of 1 and eh, then el added and renormalised), D = d² = Dh + Dl.
//   - f = ((1 + z) + eh) + (el + (1 + z)'s rounding error), renormalised:
//     near x0, 1 + x and eh are within a factor 2, so their sum is exact
//     and carries the whole cancellation; el and the rounding errors of
//     e^r's steps are relative to r = x - silu32X0 there, so f keeps its
//     relative accuracy through the zero. Elsewhere that sum rounds once,
//     the largest error left.
//   - N = e·f = Nh + Nl, N/D = yh + yl (yh = Nh·(1/Dh), the remainder Nh -
//     yh·Dh exact), and g·silu'(x) = fma(g, yh, g·yl), rounded once, with
//     the sign of g·yh where it is 0 (g = ±0).
//
// The kernels give the float64 kernel's bits for x < silu32Lo (where e^x
// would leave float32's normal range), x or g ±Inf or NaN.

// The kernel's constants (asm/gen/transcendental_silu32.go).
const (
	silu32Lo = -84.5
	silu32Hi = 21.5
	// silu32Magic rounds z·32/ln2 to an integer m, with bits 5-13 of the
	// sum holding k + 127 for k = m>>5
	silu32Magic = 0x1.8p23 + 127*32
)

var (
	silu32K  = float32(0x1.715476p+05)
	silu32C  = float32(0x1.62e43p-06)
	silu32CL = float32(-0x1.05c61p-34)
	silu32X0 = float32(-0x1.474974p+00)
	silu32D  = float32(-0x1.f17cp-12)
	silu32C2 = float32(0x1.00005cp-01)
	silu32C3 = float32(0x1.556cdep-03)

	silu32THi = [32]float32{
		0x1.ffc1d4p-01, 0x1.057b4ap+00, 0x1.0b351p+00, 0x1.110efp+00, 0x1.17099ep+00, 0x1.1d25cep+00, 0x1.23644p+00, 0x1.29c5b2p+00,
		0x1.304aeap+00, 0x1.36f4acp+00, 0x1.3dc3cap+00, 0x1.44b914p+00, 0x1.4bd55ep+00, 0x1.531984p+00, 0x1.5a8664p+00, 0x1.621ce6p+00,
		0x1.69ddfp+00, 0x1.71ca72p+00, 0x1.79e35ep+00, 0x1.8229bp+00, 0x1.8a9e64p+00, 0x1.93427ep+00, 0x1.9c1708p+00, 0x1.a51d12p+00,
		0x1.ae55b2p+00, 0x1.b7c202p+00, 0x1.c16326p+00, 0x1.cb3a44p+00, 0x1.d5488ap+00, 0x1.df8f3p+00, 0x1.ea0f72p+00, 0x1.f4ca8ep+00,
	}
	silu32TLo = [32]float32{
		0x1.43a742p-28, -0x1.f7cfd8p-25, 0x1.201722p-25, 0x1.922c6cp-25, -0x1.933926p-26, 0x1.c5d992p-25, 0x1.0701e4p-25, 0x1.f5906cp-26,
		-0x1.f54eb8p-25, 0x1.37fd92p-25, 0x1.2f50ecp-27, -0x1.f783ecp-25, -0x1.a45778p-25, -0x1.6e1f86p-25, 0x1.8b0552p-25, -0x1.fff1eap-30,
		0x1.a6764ep-27, -0x1.3b3a5cp-28, 0x1.8ee61ep-25, -0x1.d71198p-27, -0x1.501e36p-25, -0x1.ec567ap-26, 0x1.4ed8ap-31, 0x1.64798p-26,
		0x1.4edf0cp-31, 0x1.197eb4p-25, -0x1.155eb6p-26, -0x1.60c9ap-26, 0x1.d70a88p-25, 0x1.7abeb4p-25, -0x1.cb6b84p-25, 0x1.d50ed8p-25,
	}
)

// siluGradF32Parts returns yh and yl with silu'(x) ≈ yh + yl as the
// float32 kernel computes them (finite x ≥ silu32Lo).
func siluGradF32Parts(x float32) (yh, yl float32) {
	z := x
	if int32(math.Float32bits(x)) > int32(math.Float32bits(silu32Hi)) { // VPMINSD
		z = silu32Hi
	}
	tt := fma32(z, silu32K, silu32Magic)
	mf := tt - silu32Magic
	r := fma32(-mf, silu32C, z) - silu32D
	r = fma32(-(mf + 59), silu32CL, r)
	s := math.Float32frombits(math.Float32bits(tt) << 18 & 0xff800000) // 2^k
	th, tl := silu32THi[math.Float32bits(tt)&31], silu32TLo[math.Float32bits(tt)&31]
	p := fma32(r, silu32C3, silu32C2)
	p = fma32(r*r, p, r) // e^r - 1
	eh, el := s*th, s*fma32(th, p, tl)
	// d = 1 + eh + el = dh + dl
	big, small := max(1, eh), min(1, eh)
	dh := big + small
	dl := small - (dh - big)
	d1 := dh + el
	dl = (el - (d1 - dh)) + dl
	dh = d1
	Dh := dh * dh
	Dl := fma32(dh, dl+dl, fma32(dh, dh, -Dh))
	q := 1 / Dh
	// f = 1 + z + eh + el = fh + fl
	b := 1 + z
	fl := el + (z - (b - 1))
	sum := b + eh
	fh := sum + fl
	fl -= fh - sum
	nh := eh * fh
	nl := fma32(el, fh, fma32(eh, fl, fma32(eh, fh, -nh)))
	yh = q * nh
	yl = q * (fma32(-yh, Dh, nh) + fma32(-yh, Dl, nl))
	return yh, yl
}

// siluGradF32Model is g·silu'(x) as the float32 kernel computes it (finite
// x ≥ silu32Lo, finite g).
func siluGradF32Model(x, g float32) float32 {
	yh, yl := siluGradF32Parts(x)
	res := fma32(g, yh, g*yl)
	sign := (math.Float32bits(g) ^ math.Float32bits(yh)) & 0x80000000 // g·yh's, also where res is 0
	return math.Float32frombits(math.Float32bits(res)&0x7fffffff | sign)
}

// siluRefDF is silu'(x) in float64 for the model's tests, within a few
// float64 ulps: e·(1 + x + e)/(1 + e)² from e = e^x for x < 0, with 1 + x
// + e as t + e^x0·expm1(t), t = x - x0, within 1/4 of the zero x0 (no
// cancellation: both terms have t's sign), and (1 + e(1 + x))/(1 + e)²
// from e = e^-x for x ≥ 0.
func siluRefDF(x float64) float64 {
	if x >= 0 {
		e := math.Exp(-x)
		return (1 + e*(1+x)) / ((1 + e) * (1 + e))
	}
	e := math.Exp(x)
	f := 1 + x + e
	if math.Abs(x-siluRoot.hi) < 0.25 {
		t := (x - siluRoot.hi) - siluRoot.lo
		f = t - (1+siluRoot.hi+siluRoot.lo)*math.Expm1(t)
	}
	return e * f / ((1 + e) * (1 + e))
}

// silu32GradULP bounds the float32 SiLU backward kernel: the larger
// maximum over every float32 x ≥ silu32Lo of its model
// (TestSiluGradF32ModelExhaustive, 5.5 minutes on two busy cores), rounded
// up: 1.4787 ulp at x = -0.52999043 for g = 1, and for every g (the final
// rounding, the relative error before it and g·yl's rounding) 1.5835 ulp,
// largest at x = -2.133869. Both come from the one rounding of (1 + z) +
// eh away from x0; on [-1.3, -1.25], around x0, the error stays below
// 1.02 ulp (1.11 for every g).
const silu32GradULP = 1.59

func init() { float32BackwardULP[backends.Silu] = silu32GradULP }

// silu32HardInputs returns inputs where the float32 SiLU backward kernel
// is hardest or switches behaviour: ulpSweep's, every float32 within 2^-12
// of the derivative's zero, the edges of the grid's cells around it, x
// near ±0, the clamp silu32Hi and the bound silu32Lo, and random ones.
func silu32HardInputs() []float32 {
	xs := ulpSweep(8191, 2000, 1<<16)
	for x := silu32X0 - 0x1p-12; x < silu32X0+0x1p-12; x = math.Nextafter32(x, 0) {
		xs = append(xs, x)
	}
	// the grid points m·ln2/32 + silu32X0 + 59·ln2/32 and the cells' edges
	// halfway between, 8 cells either side of x0
	c := math.Ln2 / 32
	for m := -67; m <= -51; m++ {
		for _, off := range []float64{-0.5, 0, 0.5} {
			x := float32(float64(silu32X0) + (float64(m)+59+off)*c)
			for range 200 {
				xs = append(xs, x)
				x = math.Nextafter32(x, float32(math.Inf(1)))
			}
		}
	}
	for _, c := range []float32{silu32Hi, silu32Lo, 1e-7, 0x1p-40, 20, 16.636} { // 16.636: 1 + e^x reaches 2^24
		x, y := c, -c
		for range 2000 {
			xs = append(xs, x, y)
			x, y = math.Nextafter32(x, 0), math.Nextafter32(y, 0)
		}
	}
	r := rand.New(rand.NewPCG(71, 72))
	for range 1 << 15 {
		xs = append(xs, float32(-20+40*r.Float64()), float32(silu32Lo+106*r.Float64()),
			float32(siluRoot.hi+(r.Float64()-0.5)/8), float32(math.Ldexp(r.Float64()*2-1, -r.IntN(150))))
	}
	return xs
}

// TestSiluGradF32Model measures the float32 SiLU backward model against
// siluRefDF on silu32HardInputs (x ≥ silu32Lo, where the kernel uses it),
// with g = 1 and with g sweeping significands and magnitudes (float32(g·f')
// against float64(g)·f', huge g included: no power of two follows g), and
// fails above silu32GradULP. TestSiluGradF32ModelExhaustive takes every
// float32 input.
func TestSiluGradF32Model(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	var w1, wg float64
	var x1, xg, gw float32
	for _, x := range silu32HardInputs() {
		if !(x >= silu32Lo) || math.IsInf(float64(x), 0) {
			continue
		}
		want := siluRefDF(float64(x))
		if e := ulpError(siluGradF32Model(x, 1), want); e > w1 {
			w1, x1 = e, x
		}
		g := float32((1 + r.Float64()) * math.Ldexp(1, r.IntN(140)-70))
		if r.IntN(8) == 0 {
			g = float32((1 + r.Float64()) * math.Ldexp(1, 126-r.IntN(4))) // huge: some products overflow
		}
		if r.IntN(2) == 0 {
			g = -g
		}
		if e := ulpError(siluGradF32Model(x, g), float64(g)*want); e > wg {
			wg, xg, gw = e, x, g
		}
	}
	t.Logf("max %.4f ulp at x = %g; with g %.4f at x = %g, g = %g", w1, x1, wg, xg, gw)
	if !(w1 <= silu32GradULP && wg <= silu32GradULP) {
		t.Errorf("%.4f ulp at x = %g, %.4f with g = %g at x = %g (bound %g)", w1, x1, wg, gw, xg, silu32GradULP)
	}
}

// TestSiluGradF32ModelExhaustive runs the float32 SiLU backward model over
// every finite float32 x ≥ silu32Lo (below, the kernel gives the float64
// kernel's values) where KILN_SILU32_EXHAUSTIVE is set:
//
//	KILN_SILU32_EXHAUSTIVE=1 go test -run SiluGradF32ModelExhaustive -v -timeout 1h ./backends/cpu/
//
// with g = 1, and bounds the error for every g: the final rounding (half
// an ulp), the relative error of yh + yl (the same for every g) and the
// rounding of g·yl. The larger of the two maxima sets silu32GradULP.
func TestSiluGradF32ModelExhaustive(t *testing.T) {
	if os.Getenv("KILN_SILU32_EXHAUSTIVE") == "" {
		t.Skip("set KILN_SILU32_EXHAUSTIVE=1 to run over every float32")
	}
	m, at := worstsOverFloat32(2, func(x float32, e []float64) {
		if !(x >= silu32Lo) {
			return
		}
		want := siluRefDF(float64(x))
		e[0] = ulpError(siluGradF32Model(x, 1), want)
		yh, yl := siluGradF32Parts(x)
		v := float64(yh) + float64(yl)
		e[1] = 0.5 + 0x1p24*math.Abs(v-want)/math.Abs(want) + math.Abs(float64(yl)/v)
	})
	t.Logf("every float32 x ≥ %g: silu' max %.4f ulp at x = %g (%#x)", float32(silu32Lo), m[0], at[0], math.Float32bits(at[0]))
	t.Logf("every float32 x ≥ %g, every g: g·silu' within %.4f ulp (largest at x = %g, %#x)", float32(silu32Lo), m[1], at[1], math.Float32bits(at[1]))
	if m[0] > silu32GradULP || m[1] > silu32GradULP {
		t.Errorf("silu': %.4f ulp, g·silu' %.4f (bound %g)", m[0], m[1], silu32GradULP)
	}
}

// TestSiluRefDF checks siluRefDF against bigDeriv (256-bit) near the
// derivative's zero, where the float64 formulas cancel, and at a few
// points elsewhere.
func TestSiluRefDF(t *testing.T) {
	xs := []float32{-1, -1.5, -0.75, -2.5, -0.3, 0.4, 1.2, 2}
	for x := silu32X0 - 3*0x1p-23; x <= silu32X0+3*0x1p-23; x = math.Nextafter32(x, 0) {
		xs = append(xs, x)
	}
	r := rand.New(rand.NewPCG(75, 76))
	for range 200 {
		xs = append(xs, float32(siluRoot.hi+(r.Float64()-0.5)/2))
	}
	for _, x := range xs {
		got, want := siluRefDF(float64(x)), bigDeriv(backends.Silu, float64(x))
		if e := math.Abs(got-want) / math.Abs(want); e > 0x1p-48 {
			t.Errorf("x = %g: %g, 256-bit %g (relative error %g)", x, got, want, e)
		}
	}
}

// TestSilu32Constants checks the kernel's constants against their
// definitions, computed with 200-bit floats: 32/ln2 and ln2/32 = silu32C +
// silu32CL rounded to float32, silu32X0 the float32 nearest x0, silu32D =
// silu32X0 + 59·silu32C exactly, and the table, T_j = 4·e^silu32X0·
// e^((j-5)·(silu32C + silu32CL)), as silu32THi[j] + silu32TLo[j] (each part
// rounded to nearest), so that e = 2^k·T_j·e^r is exact but for e^r at m =
// -59 (j = 5, k = -2). It also checks that e^r's polynomial is within
// 2^-31.5 of e^r, relative, on [-0.0106, 0.0116], which holds r for every
// x (|r| ≤ ln2/64 + |silu32D| + rounding); c2 and c3 are the pair of
// float32 values near 1/2 and 1/6 that minimise that error (a search over
// neighbouring values).
func TestSilu32Constants(t *testing.T) {
	const prec = 200
	nf := func(v float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(v) }
	exp := func(y *big.Float) *big.Float { // Σ yⁿ/n! for |y| < 2
		sum, term := nf(1), nf(1)
		for n := 1; n < 90; n++ {
			term = new(big.Float).SetPrec(prec).Mul(term, y)
			term.Quo(term, nf(float64(n)))
			sum.Add(sum, term)
		}
		return sum
	}
	ln2 := nf(0) // Σ 1/(n·2ⁿ)
	for n, p := 1, nf(0.5); n < 220; n++ {
		ln2.Add(ln2, new(big.Float).SetPrec(prec).Quo(p, nf(float64(n))))
		p.Quo(p, nf(2))
	}
	x0 := nf(siluRoot.hi) // Newton on 1 + x + e^x
	for range 5 {
		e := exp(x0)
		f := new(big.Float).SetPrec(prec).Add(nf(1), x0)
		f.Add(f, e)
		f.Quo(f, e.Add(e, nf(1)))
		x0.Sub(x0, f)
	}
	f32 := func(v *big.Float) float32 { r, _ := v.Float32(); return r }
	c := new(big.Float).SetPrec(prec).Quo(ln2, nf(32))
	check := func(name string, got, want float32) {
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("%s = %x, want %x", name, got, want)
		}
	}
	check("silu32K", silu32K, f32(new(big.Float).SetPrec(prec).Quo(nf(32), ln2)))
	check("silu32C", silu32C, f32(c))
	check("silu32CL", silu32CL, f32(new(big.Float).Sub(c, nf(float64(silu32C)))))
	check("silu32X0", silu32X0, f32(x0))
	d := new(big.Float).SetPrec(prec).Mul(nf(59), nf(float64(silu32C)))
	d.Add(d, nf(float64(silu32X0)))
	if got := nf(float64(silu32D)); got.Cmp(d) != 0 {
		t.Errorf("silu32D = %x, want %v exactly", silu32D, d)
	}
	ceff := new(big.Float).SetPrec(prec).Add(nf(float64(silu32C)), nf(float64(silu32CL)))
	e0 := exp(nf(float64(silu32X0)))
	for j := range 32 {
		tj := new(big.Float).SetPrec(prec).Mul(nf(float64(j-5)), ceff)
		tj = exp(tj)
		tj.Mul(tj, e0)
		tj.Mul(tj, nf(4))
		check("silu32THi", silu32THi[j], f32(tj))
		check("silu32TLo", silu32TLo[j], f32(tj.Sub(tj, nf(float64(silu32THi[j])))))
	}
	worst := 0.0
	for i := 0; i <= 1<<16; i++ {
		r := -0.0106 + 0.0222*float64(i)/(1<<16)
		p := r + r*r*(float64(silu32C2)+float64(silu32C3)*r)
		worst = max(worst, math.Abs((1+p)/math.Exp(r)-1))
	}
	if math.Log2(worst) > -31.5 {
		t.Errorf("e^r's polynomial: relative error %g (2^%.2f), want below 2^-31.5", worst, math.Log2(worst))
	}
}
