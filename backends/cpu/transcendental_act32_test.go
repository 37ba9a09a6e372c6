package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// Sigmoid (forward and backward), SiLU (forward), exp (backward:
// expGradF32Model) and tanh (backward: tanhGradF32Model) in float32
// (asm/gen/transcendental_act32.go, the AVX2 kernels): the same steps and
// constants in scalar Go, which the kernels equal bit for bit
// (TestAct32KernelsMatchModel) and whose error is measured over every
// float32 (TestAct32ModelsExhaustive). The forward kernels: act32FwdParts
// (below). The backward one, with a = min(|x|, act32Clamp):
//
//   - e^(-a) = 2^n·E, E = 1 + p, with exp32's reduction and polynomial; p
//     rounded once and E never formed, so E keeps p's accuracy.
//   - d = 1 + e^(-a) as dh + dl: e = s·E with s = 2^n rounded (0 or a
//     denormal where e is far below d's ulp) is eh + el exactly, and 1 +
//     eh by Fast2Sum (1 ≥ eh).
//   - 1/d = q + c: q = 1/dh rounded, c = q·(1 - q·dh - q·dl), the
//     remainder 1 - q·dh exact (FMA).
//   - σ'(x) = 2^n·E/d² with 1/d² = q² + (q²lo + 2qc), q² exact in two
//     terms.
//   - g multiplies the last two-term value exactly (a two-term product),
//     the sum is rounded once, and 2^n is applied last as two factors
//     2^(n>>1) (exact) and 2^(n - n>>1) (one rounding, into the denormals
//     too), as GELU's backward does.

// act32Parts returns for x the backward's parts: h = 2^(n>>1), t = 2^(n -
// n>>1), p, q and c.
func act32Parts(x float32) (h, t, p, q, c float32) {
	a := min(float32(math.Abs(float64(x))), act32Clamp)
	nf := fma32(-a, log2e32, exp32Magic) - exp32Magic
	r := fma32(-nf, ln2Hi32, -a)
	r = fma32(-nf, ln2Lo32, r)
	p = fma32(r*r, horner32(r, exp32P[:]), r)
	n := int(nf)
	n1 := n >> 1
	h, t = pow2F32(n1), pow2F32(n-n1)
	s := h * t
	eh := fma32(s, p, s)
	el := fma32(s, p, s-eh)
	dh := 1 + eh
	dl := (eh - (dh - 1)) + el
	q = 1 / dh
	rem := fma32(-q, dl, fma32(-q, dh, 1))
	c = q * rem
	return
}

// sigmoidGradF32Parts returns h, t, q2 and rest with σ'(x) ≈ (q2 +
// rest)·h·t, before g multiplies.
func sigmoidGradF32Parts(x float32) (h, t, q2, rest float32) {
	h, t, p, q, c := act32Parts(x)
	q2 = q * q
	zl := fma32(q+q, c, fma32(q, q, -q2))
	return h, t, q2, fma32(q2, p, fma32(zl, p, zl))
}

// sigmoidGradF32Model is g·σ'(x) as the float32 kernel computes it (finite
// x, |g| < 2^64).
func sigmoidGradF32Model(x, g float32) float32 {
	h, t, q2, rest := sigmoidGradF32Parts(x)
	y := g * q2
	yl := fma32(g, rest, fma32(g, q2, -y))
	return orSign((y+yl)*h*t, g) // g's sign where the sum is 0: g = -0
}

// tanhGradF32Model is g·tanh'(x) as the float32 tanh backward kernel
// (asm/gen/transcendental_act32.go's tanh32DY) computes it (finite x, |g| <
// 2^64): (4g)·σ'(2x), sigmoid's model on exact arguments (2x is +Inf for
// |x| > MaxFloat32/2, which act32Parts's clamp takes as any |2x| >
// act32Clamp).
func tanhGradF32Model(x, g float32) float32 { return sigmoidGradF32Model(x+x, 4*g) }

// expGradF32Parts returns n and p with e^x ≈ 2^n·(1 + p) as the float32
// exp backward kernel computes them (before g's scaling by 2^64 above
// exp32DBig).
func expGradF32Parts(x float32) (n int, p float32) {
	xc := min(max(x, exp32DLo), exp32DHi)
	nf := fma32(xc, log2e32, exp32Magic) - exp32Magic
	r := fma32(-nf, ln2Hi32, xc)
	r = fma32(-nf, ln2Lo32, r)
	return int(nf), fma32(r*r, horner32(r, exp32P[:]), r)
}

// expGradF32Model is g·e^x as the float32 exp backward kernel
// (asm/gen/transcendental_act32.go's exp32DY) computes it (finite x, |g| <
// 2^64): g·(1 + p) rounded once, then 2^n as two factors, g scaled by 2^64
// first (and n lowered by 64) where x > exp32DBig so that both stay in
// range.
func expGradF32Model(x, g float32) float32 {
	if math.Float32bits(x) >= exp32DOverflow && x > 0 { // e^x beyond float64's range, as the float64 kernel
		return g * float32(math.Inf(1))
	}
	n, p := expGradF32Parts(x)
	gg := g
	if min(x, exp32DHi) > exp32DBig {
		gg, n = g*0x1p64, n-64
	}
	a := min(max(n-1, 0), 127)                                      // g·2^a first where n > 0 (exact)
	gg = min(max(gg*pow2F32(a), -math.MaxFloat32), math.MaxFloat32) // an overflow: ±MaxFloat32
	n -= a
	u := fma32(gg, p, gg)
	n1 := n >> 1
	return orSign(u*pow2F32(n1)*pow2F32(n-n1), g)
}

// exp32DY's clamps (asm/gen/transcendental_act32.go): below exp32DLo g·e^x
// is 0 for |g| < 2^64, above exp32DHi ±Inf for |g| ≥ 2^-149.
const (
	exp32DLo  = -150
	exp32DHi  = 194
	exp32DBig = 88
	// exp32DOverflow is the bits of the least float32 x with e^x beyond
	// float64's range (709.7827)
	exp32DOverflow = 0x44317218
)

// orSign returns v with the sign bit of s or'ed in.
func orSign(v, s float32) float32 {
	return math.Float32frombits(math.Float32bits(v) | math.Float32bits(s)&0x80000000)
}

// act32Models are the float32 models by op and direction ("f", "f'"), and
// the float64 references they are measured against.
var act32Models = []struct {
	op  backends.UnaryOp
	dir string
	f   func(x, g float32) float32
}{
	{backends.Sigmoid, "f", func(x, _ float32) float32 { return sigmoidF32FwdModel(x) }},
	{backends.Sigmoid, "f'", sigmoidGradF32Model},
	{backends.Silu, "f", func(x, _ float32) float32 { return siluF32FwdModel(x) }},
	{backends.Exp, "f'", expGradF32Model},
	{backends.Tanh, "f'", tanhGradF32Model},
}

// act32Ref is the float64 reference of op in direction dir at x.
func act32Ref(op backends.UnaryOp, dir string, x float64) float64 {
	r := transcendentalRefs[op]
	if dir == "f" {
		return r.f(x)
	}
	return r.df(x)
}

// act32HardInputs returns inputs where the float32 sigmoid and SiLU
// kernels are hardest or switch behaviour: ulpSweep's, plus tiny and
// denormal |x|, SiLU”s zero, the saturation ranges, |x| from 9 to 100,
// the clamp and the underflows.
func act32HardInputs() []float32 {
	xs := ulpSweep(8191, 2000, 1<<16)
	r := rand.New(rand.NewPCG(41, 42))
	for range 1 << 15 {
		xs = append(xs,
			float32(-20+40*r.Float64()), float32(9+91*r.Float64()), float32(-9-91*r.Float64()),
			float32(siluRoot.hi+(r.Float64()-0.5)/16),
			float32(math.Ldexp(r.Float64()*2-1, -r.IntN(150))),
			math.Float32frombits(r.Uint32()&0x807fffff)) // denormals
	}
	for _, c := range []float32{act32Clamp, act32FwdLo, act32FwdHi, 17, 16.6, 88.7, 103.9, 87.3, exp32DLo, exp32DHi, exp32DBig, 192,
		act32Clamp / 2, 44, 1e-19, math.MaxFloat32 / 2, math.MaxFloat32} { // tanh's: 2x at the clamp, tanh' denormal, x² underflowing, 2x overflowing

		x := c
		for range 2000 {
			xs = append(xs, x, -x)
			x = math.Nextafter32(x, 0)
		}
	}
	return xs
}

// act32Gradients returns gradients for the kernel tests: significands near
// 1 and near 2, ±0, huge and tiny magnitudes and random ones (±Inf and
// NaN, and |g| ≥ 2^64, take the float64 body: TestAct32KernelSpecials).
func act32Gradients(n int) []float32 {
	r := rand.New(rand.NewPCG(43, 44))
	gs := make([]float32, n)
	fixed := []float32{1, -1, math.Nextafter32(1, 2), math.Nextafter32(2, 0), -math.Nextafter32(2, 0),
		0, float32(math.Copysign(0, -1)), 0x1.fffffep63, -0x1p63, 1e-30, -1e-38, 1e-44}
	for i := range gs {
		if i%16 < len(fixed) && i%3 == 0 {
			gs[i] = fixed[i%16]
			continue
		}
		gs[i] = float32((1 + r.Float64()) * math.Ldexp(1, r.IntN(41)-20))
		if r.IntN(2) == 0 {
			gs[i] = -gs[i]
		}
	}
	return gs
}

// TestAct32Models measures the float32 sigmoid and SiLU models on
// act32HardInputs against float64 references, with g = 1 and with g
// sweeping significands and magnitudes (the backward's error is that of
// float32(g·f'(x)) against float64(g)·f'(x)), and fails above their bounds
// (float32ForwardULP, float32BackwardULP). TestAct32ModelsExhaustive takes
// every float32 input.
func TestAct32Models(t *testing.T) {
	xs := act32HardInputs()
	gs := act32Gradients(len(xs))
	for _, m := range act32Models {
		bound := float32ForwardULP[m.op]
		if m.dir != "f" {
			bound = float32BackwardULP[m.op]
		}
		var w, wg float64
		var xw, xwg float32
		for i, x := range xs {
			if x != x || math.IsInf(float64(x), 0) {
				continue
			}
			want := act32Ref(m.op, m.dir, float64(x))
			if e := ulpError(m.f(x, 1), want); e > w {
				w, xw = e, x
			}
			if m.dir != "f'" {
				continue
			}
			g := gs[i]
			if e := ulpError(m.f(x, g), float64(g)*want); e > wg {
				wg, xwg = e, x
			}
		}
		name := backends.UnaryOps[m.op].Name + " " + m.dir
		t.Logf("%s: max %.4f ulp at x = %g, with g %.4f at %g", name, w, xw, wg, xwg)
		if !(w <= bound && wg <= bound) {
			t.Errorf("%s: %.4f ulp at x = %g, %.4f with g at %g (bound %g)", name, w, xw, wg, xwg, bound)
		}
	}
}

// TestAct32ModelsExhaustive runs the float32 sigmoid and SiLU models over
// every finite float32 input (g = 1) where KILN_ACT32_EXHAUSTIVE is set:
//
//	KILN_ACT32_EXHAUSTIVE=1 go test -run Act32ModelsExhaustive -v -timeout 2h ./backends/cpu/
//
// (23 minutes on two busy cores). The references are transcendentalRefs'
// forms from one exponential, e = e^(-|x|). For the backward it also
// bounds the error for every g: sigmoid32GradULP's comment.
func TestAct32ModelsExhaustive(t *testing.T) {
	if os.Getenv("KILN_ACT32_EXHAUSTIVE") == "" {
		t.Skip("set KILN_ACT32_EXHAUSTIVE=1 to run over every float32")
	}
	models := act32Models[:4] // sigmoid, SiLU, exp (tanh's: TestTanhGradF32ModelExhaustive)
	// e: each model's error, then sigmoid's and exp's bounds for every g
	worst, at := worstsOverFloat32(len(models)+2, func(x float32, e []float64) {
		// the references (transcendentalRefs' forms) from one exponential:
		// e = e^(-|x|), σ(|x|) = 1/(1+e), σ(-|x|) = e/(1+e), σ' = e/(1+e)²
		xd := float64(x)
		ex := math.Exp(-math.Abs(xd))
		sp, sn := 1/(1+ex), ex/(1+ex)
		sig := sp
		if xd < 0 {
			sig = sn
		}
		want := [4]float64{sig, sp * sn, xd * sig, math.Exp(xd)}
		for i, md := range models {
			e[i] = ulpError(md.f(x, 1), want[i])
		}
		// for every g (|g| < 2^64, a normal result): the final rounding,
		// the relative error before it (the same for every g) and yl's
		// rounding (at most 2^-24·|yl|); beyond the clamp g·σ'(x) is 0 for
		// such g
		if math.Abs(xd) <= act32Clamp {
			h, t, q2, rest := sigmoidGradF32Parts(x)
			v := (float64(q2) + float64(rest)) * float64(h) * float64(t)
			e[len(models)] = 0.5 + 0x1p24*math.Abs(v-want[1])/want[1] + math.Abs(float64(rest)/(float64(q2)+float64(rest)))
		}
		// exp's: g·(1 + p) rounds once, the scaling is exact
		if xd >= exp32DLo && xd <= exp32DHi {
			n, p := expGradF32Parts(x)
			v := math.Ldexp(1+float64(p), n)
			e[len(models)+1] = 0.5 + 0x1p24*math.Abs(v-want[3])/want[3]
		}
	})
	for i, md := range models {
		bound := float32ForwardULP[md.op]
		if md.dir != "f" {
			bound = float32BackwardULP[md.op]
		}
		name := backends.UnaryOps[md.op].Name + " " + md.dir
		t.Logf("every float32: %s max %.4f ulp at x = %g (%#x)", name, worst[i], at[i], math.Float32bits(at[i]))
		if worst[i] > bound {
			t.Errorf("%s: %.4f ulp (bound %g)", name, worst[i], bound)
		}
	}
	for i, op := range []backends.UnaryOp{backends.Sigmoid, backends.Exp} {
		w, x := worst[len(models)+i], at[len(models)+i]
		name := backends.UnaryOps[op].Name
		t.Logf("every float32, every g: %s g·f' within %.4f ulp (largest at x = %g)", name, w, x)
		if w > float32BackwardULP[op] {
			t.Errorf("%s g·f': %.4f ulp for some g (bound %g)", name, w, float32BackwardULP[op])
		}
	}
}

// TestTanhGradF32ModelExhaustive runs the float32 tanh backward model
// over every finite float32 x where KILN_ACT32_EXHAUSTIVE is set:
//
//	KILN_ACT32_EXHAUSTIVE=1 go test -run TanhGradF32ModelExhaustive -v -timeout 1h ./backends/cpu/
//
// with g = 1, and bounds the error for every g (|g| < 2^64, the result
// normal) as TestAct32ModelsExhaustive does sigmoid's: the final rounding,
// the relative error before it (the same for every g) and the rounding of
// the low part g multiplies. The reference is 4e/(1 + e)², e = e^(-2|x|).
func TestTanhGradF32ModelExhaustive(t *testing.T) {
	if os.Getenv("KILN_ACT32_EXHAUSTIVE") == "" {
		t.Skip("set KILN_ACT32_EXHAUSTIVE=1 to run over every float32")
	}
	ref := func(x float32) float64 {
		e := math.Exp(-2 * math.Abs(float64(x)))
		return 4 * e / ((1 + e) * (1 + e))
	}
	m, at := worstsOverFloat32(2, func(x float32, e []float64) {
		want := ref(x)
		e[0] = ulpError(tanhGradF32Model(x, 1), want)
		if math.Abs(float64(x)) > act32Clamp/2 {
			return // g·tanh'(x) is 0 for |g| < 2^64
		}
		h, t, q2, rest := sigmoidGradF32Parts(x + x)
		v := 4 * (float64(q2) + float64(rest)) * float64(h) * float64(t)
		e[1] = 0.5 + 0x1p24*math.Abs(v-want)/want + math.Abs(float64(rest)/(float64(q2)+float64(rest)))
	})
	w, wg := m[0], m[1]
	t.Logf("every float32: tanh f' max %.4f ulp at x = %g (%#x)", w, at[0], math.Float32bits(at[0]))
	t.Logf("every float32, every g: tanh g·f' within %.4f ulp (largest at x = %g)", wg, at[1])
	if b := float32BackwardULP[backends.Tanh]; w > b || wg > b {
		t.Errorf("tanh f': %.4f ulp, g·f' %.4f (bound %g)", w, wg, b)
	}
}

// The bounds of the float32 sigmoid, SiLU, exp and tanh kernels (AVX2),
// entered in float32ForwardULP and float32BackwardULP, from
// TestAct32ModelsExhaustive and TestTanhGradF32ModelExhaustive (every
// float32 input, g = 1), rounded up:
//
//   - σ: at most 0.9437 ulp (x = -15.600485);
//   - x·σ(x): at most 1.0962 ulp (x = -91.16953);
//   - σ': at most 1.2113 ulp (x = 5.886115); for g·σ'(x) and every g
//     (|g| < 2^64, the result normal) the final rounding plus the relative
//     error before it (the same for every g) plus the rounding of the low
//     part that g multiplies is at most 1.9216 ulp (x = 5.8894434), the
//     bound here;
//   - e^x: at most 0.9876 ulp (x = 59.275005); g·e^x within 1.1821 ulp
//     for every g where g·2^min(n-1, 127) is normal (one rounding of a
//     value within 0.68 ulp); where it is a denormal (|g| below about
//     2^-126/e^x·2) it rounds on the denormals' grid before the last
//     factor 2^(n - that): 1.2311 ulp measured with g = 1e-44 (TestAct32Models),
//     the bound here.
//   - tanh' = 4σ'(2x), sigmoid's steps on exact arguments: at most 1.2113
//     ulp (x = 2.9430575, 2x = sigmoid's worst), and for every g within
//     1.9216 ulp (x = 2.9447217), TestTanhGradF32ModelExhaustive (13
//     minutes on two busy cores).
const (
	sigmoid32ULP     = 0.95
	silu32ULP        = 1.10
	sigmoid32GradULP = 1.93
	exp32GradULP     = 1.24
	tanh32GradULP    = 1.93
)

func init() {
	float32ForwardULP[backends.Sigmoid] = sigmoid32ULP
	float32ForwardULP[backends.Silu] = silu32ULP
	float32BackwardULP[backends.Sigmoid] = sigmoid32GradULP
	float32BackwardULP[backends.Exp] = exp32GradULP
	float32BackwardULP[backends.Tanh] = tanh32GradULP
}

// act32Clamp: beyond |x| = 150, g·σ'(x) (|g| < 2^64) is 0 in float32;
// n ≥ -217 there gives two normal factors 2^(n>>1), 2^(n - n>>1).
const act32Clamp = 150

// vecImpl is one instruction set's vector kernels of an op (f32KernelImpls).
type vecImpl struct {
	fwd      func(o, x []float32)
	bwd      func(o, x, g []float32)
	f32, d32 bool // fwd, bwd compute in float32
	// wideF and wideDF are the same instruction set's float64 kernels that
	// float32 ones replaced (nil where there are none)
	wideF  func(o, x []float32)
	wideDF func(o, x, g []float32)
}

// f32KernelImpls returns the vector kernels of op that run here ("vec";
// "alt", the AVX2 ones, on an AVX-512 machine) with whether each
// direction computes in float32 and the float64 kernels of the same
// instruction set to compare their special lanes with.
func f32KernelImpls(op backends.UnaryOp) map[string]vecImpl {
	k := f32Kernels[op]
	m := map[string]vecImpl{}
	if k.vecF != nil {
		m["vec"] = vecImpl{k.vecF, k.vecDF, k.vecF32, k.vecDF32, k.wideF, k.wideDF}
	}
	if k.altF != nil {
		m["alt"] = vecImpl{k.altF, k.altDF, k.altF32, k.altDF32, k.altWideF, k.altWideDF}
	}
	return m
}

// TestAct32KernelsMatchModel checks the float32 sigmoid and SiLU kernels
// against their models on act32HardInputs (g from act32Gradients, for the
// backward) bit for bit, the sign of zero included: the model rounds its
// multiply-adds twice (through float64), which could differ from the
// hardware's single rounding in a halfway case, so a difference of 1 ulp
// is allowed in at most one input in 10^5, and none larger.
func TestAct32KernelsMatchModel(t *testing.T) {
	xs := act32HardInputs()
	n := len(xs)
	gs := act32Gradients(n)
	got := make([]float32, n)
	ran := false
	for _, m := range act32Models {
		for name, im := range f32KernelImpls(m.op) {
			if m.dir == "f" && !im.f32 || m.dir != "f" && !im.d32 {
				continue
			}
			ran = true
			if m.dir == "f" {
				im.fwd(got, xs)
			} else {
				im.bwd(got, xs, gs)
			}
			off := 0
			for i, x := range xs {
				if x != x || math.IsInf(float64(x), 0) {
					continue
				}
				want := m.f(x, gs[i])
				if math.Float32bits(got[i]) == math.Float32bits(want) {
					continue
				}
				if d := math.Float32bits(got[i]) - math.Float32bits(want); (d == 1 || d == math.MaxUint32) && off < n/100000 {
					off++
					continue
				}
				t.Fatalf("%s %s %s at x = %g (%#x), g = %g: kernel %g (%#x), model %g (%#x)", name, backends.UnaryOps[m.op].Name, m.dir,
					x, math.Float32bits(x), gs[i], got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			}
			t.Logf("%s %s %s: %d inputs, %d within 1 ulp of the model, the rest equal", name, backends.UnaryOps[m.op].Name, m.dir, n, off)
		}
	}
	if !ran {
		t.Skip("no float32 sigmoid or SiLU kernels on this machine")
	}
}

// TestAct32KernelSpecialGradients: where |g| ≥ 2^64, ±Inf or NaN (beyond
// the float32 body's range) the float32 sigmoid, exp and tanh backward
// kernels give the float64 kernel's bits, in whole blocks and in tails, x
// = ±Inf and NaN included, and the other lanes of the same blocks the bits
// they have without such a g beside them.
func TestAct32KernelSpecialGradients(t *testing.T) {
	inf := float32(math.Inf(1))
	special := []float32{0x1p64, -0x1p64, 1e20, -3e25, 1.5e37, -3.4028235e38, inf, -inf, float32(math.NaN())}
	xsSpecial := []float32{inf, -inf, float32(math.NaN()), 0, float32(math.Copysign(0, -1)), 1e-40, 200, -200}
	r := rand.New(rand.NewPCG(45, 46))
	ran := false
	for _, op := range []backends.UnaryOp{backends.Sigmoid, backends.Exp, backends.Tanh} {
		for name, im := range f32KernelImpls(op) {
			if !im.d32 || im.wideDF == nil {
				continue
			}
			ran = true
			for _, n := range []int{1, 5, 8, 13, 64, 1001} {
				xs, gs, plain := make([]float32, n), make([]float32, n), make([]float32, n)
				for i := range xs {
					xs[i] = float32(r.NormFloat64() * 8)
					if r.IntN(5) == 0 {
						xs[i] = xsSpecial[r.IntN(len(xsSpecial))]
					}
					gs[i], plain[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
					if r.IntN(3) == 0 {
						gs[i] = special[r.IntN(len(special))]
					} else {
						plain[i] = gs[i]
					}
				}
				got, wide, base := make([]float32, n), make([]float32, n), make([]float32, n)
				im.bwd(got, xs, gs)
				im.wideDF(wide, xs, gs)
				im.bwd(base, xs, plain)
				for i := range got {
					want := base[i]
					if a := math.Abs(float64(gs[i])); a >= 0x1p64 || a != a {
						want = wide[i]
					}
					if math.Float32bits(got[i]) != math.Float32bits(want) && !(got[i] != got[i] && want != want) {
						t.Fatalf("%s %s, n = %d: x = %g, g = %g: %g, want %g", name, backends.UnaryOps[op].Name, n, xs[i], gs[i], got[i], want)
					}
				}
			}
		}
	}
	if !ran {
		t.Skip("no float32 sigmoid or SiLU backward kernels on this machine")
	}
}

// The forward kernels (sigmoid, SiLU) take a shorter path than the
// backward one: with x clamped to [act32FwdLo, act32FwdHi], e^(-x) =
// 2^-m·E and σ(x) = 2^m/(2^m + E), where 2^m + E = 1 + 2^m + p is exact in
// two terms (1 + 2^m by Fast2Sum, then p), 1/(that) by one division and a
// correction from its exact remainder, and 2^m applied last as
// 2^(m+act32FwdBias) (exact) and 2^-act32FwdBias (one rounding, into the
// denormals too).
const (
	act32FwdLo   = -110 // x·σ(x) and σ(x) are -0 and 0 below
	act32FwdHi   = 24   // σ(x) is 1 and x·σ(x) x above
	act32FwdBias = 40
	// act32FwdUnbias is 2^-act32FwdBias.
	act32FwdUnbias = 0x1p-40
)

// pow2F32 is 2^e for e in [-126, 127].
func pow2F32(e int) float32 { return math.Float32frombits(uint32(e+127) << 23) }

// exp32Neg are exp32P for e^(-r): (e^(-r) - 1 + r)/r² ≈ Σ exp32Neg[i]·r^i.
var exp32Neg = func() []float32 {
	c := make([]float32, len(exp32P))
	for i, v := range exp32P {
		c[i] = v
		if i%2 == 1 {
			c[i] = -v
		}
	}
	return c
}()

// act32FwdParts returns, for x clamped to [act32FwdLo, act32FwdHi], y and
// yl with σ(x) ≈ (y + yl)·sb·2^-act32FwdBias, sb = 2^(m+act32FwdBias).
func act32FwdParts(xc float32) (y, yl, sb float32) {
	nf := fma32(xc, log2e32, exp32Magic) - exp32Magic // m
	r := fma32(-nf, ln2Hi32, xc)
	r = fma32(-nf, ln2Lo32, r)
	p := fma32(r*r, horner32(r, exp32Neg), -r) // e^(-r) - 1
	m := int(nf)
	sb = pow2F32(m + act32FwdBias)
	s := sb * act32FwdUnbias
	b := 1 + s
	bl := s - (b - 1)
	dh := b + p
	dl := (p - (dh - b)) + bl
	y = 1 / dh
	yl = y * fma32(-y, dl, fma32(-y, dh, 1))
	return
}

// sigmoidF32FwdModel is σ(x) as the float32 forward kernel computes it
// (finite x).
func sigmoidF32FwdModel(x float32) float32 {
	y, yl, sb := act32FwdParts(min(max(x, act32FwdLo), act32FwdHi))
	return (y + yl) * sb * act32FwdUnbias
}

// siluF32FwdModel is x·σ(x) as the float32 forward kernel computes it
// (finite x).
func siluF32FwdModel(x float32) float32 {
	xc := min(max(x, act32FwdLo), act32FwdHi)
	y, yl, sb := act32FwdParts(xc)
	xh := xc * y
	u := (xh + fma32(xc, yl, fma32(xc, y, -xh))) * sb * act32FwdUnbias
	if x > act32FwdHi {
		u = x
	}
	return orSign(u, x)
}
