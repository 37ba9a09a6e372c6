package cpu

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// The algorithms of the AVX-512 kernels (asm/gen/transcendental.go) in
// scalar Go, with the same constants: a model that the ulp tests check for
// accuracy on every platform, the purego build included, and whose
// derivatives they check against its functions by finite differences. The
// assembly evaluates the same expressions with fused multiply-adds, eight
// float64 lanes at a time.
//
//   - exp(x) = 2^(k/16)·e^r with k = round(16x/ln2), r = x - k·ln2/16
//     (Cody–Waite, |r| ≤ ln2/32), e^r = 1 + r + r²·q(r) with q of degree 2
//     (minimax, relative error 2^-37.5) and 2^(j/16) from a table of 16;
//     the argument is clamped to ±1000 (the result then overflows to +Inf
//     or underflows to 0 as it should).
//   - expm1(y) = s·(e^r - 1) + (s - 1) with s = 2^(k/16) and e^r - 1 from
//     a q of degree 3 (minimax for e^r - 1, relative error 2^-41), so
//     accurate near 0.
//   - log(x) = k·ln2 + log(c) + log1p(r) with x = 2^k·z, z in [0.699,
//     1.398) split into 16 intervals by its top mantissa bits (glibc's logf
//     reduction), c near the middle of z's interval (1 for the one holding
//     1), r = z/c - 1 (|r| < 0.03) and log1p(r) = r + r²·P(r), P of degree
//     4 (relative error 2^-38).
//   - erfc(z) = e^(-z²)·P(z)/Q(z) for z in [0, 11], P/Q of degree 6/7
//     fitted to the scaled complementary error function e^(z²)·erfc(z)
//     (relative error 2^-39.4); erf(x) = 1 - erfc(|x|) with x's sign, and
//     2/√π·x·(1 - x²/3 + x⁴/10 - x⁶/42) below |x| = 1/16.
//   - tanh' = 4(m+1)/(m+2)² with m = expm1(2|x|) (tanhApprox, m/(m+2), is
//     the float64 form of tanh, which the derivative test differentiates).
//   - sigmoid(x) = 1/(1+E), E = e^(-x), and sigmoid' = E/(1+E)²; SiLU and
//     the tanh form of GELU (x·sigmoid(2u)) are built on it.
//   - GELU: Φ(x) = h or 1-h by x's sign with h = erfc(|x|/√2)/2 (a
//     rational function of degree 5/6, relative error 2^-33.3, rescaled to
//     take |x|), and GELU' = Φ(x) + x·e^(-x²/2)/√(2π).
//   - near the zeros of GELU', SiLU' and the tanh form's derivative, the
//     polynomials of derivRoot.
//
// The coefficients were fitted with mpmath and numpy (Lawson-weighted least
// squares on Chebyshev nodes, close to minimax).

// Constants of the approximations (asm/gen/transcendental.go has the same;
// geluK1, geluK2 and geluK3 are transcendental.go's).
const (
	expMagic  = 0x1.8p52 // adding and subtracting it rounds to an integer
	expClamp  = 1000     // e^±1000 is beyond float64's range
	log2eBy16 = 16 / math.Ln2
	// ln2/16 in two parts: ln2by16Hi has 37 significant bits, so k·Hi is
	// exact for |k| < 2^16
	ln2by16Hi = 0x1.62e42fefap-05
	ln2by16Lo = math.Ln2/16 - ln2by16Hi
	// e^r ≈ 1 + r + r²·(expE2 + r·expE3 + r²·expE4) on |r| ≤ ln2/32,
	// relative error 2^-37.5 (exp itself)
	expE2 = 0x1.00000006d99e1p-1
	expE3 = 0x1.55571d829453bp-3
	expE4 = 0x1.5552102101450p-5
	// e^r - 1 ≈ r + r²·(expC2 + r·expC3 + r²·expC4 + r³·expC5) on |r| ≤
	// ln2/32, relative error 2^-41 (so 2^-46.6 for e^r)
	expC2 = 0x1.fffffffe5bdaep-2
	expC3 = 0x1.55555555d30e4p-3
	expC4 = 0x1.55570aaa97b24p-5
	expC5 = 0x1.111171bbf8920p-7

	// log: x = 2^k·z with z in [logOff, 2·logOff) (as float64 bits)
	logOff = 0x3FE6600000000000
	// log1p(r) ≈ r + r²·(logP0 + r·logP1 + … + r⁴·logP4) on |r| ≤ 0.0297
	logP0 = -0x1.000000000b875p-1
	logP1 = 0x1.555552225c7d5p-2
	logP2 = -0x1.fffff6d4ccdddp-3
	logP3 = 0x1.99f567725f7bap-3
	logP4 = -0x1.55b2eabd36199p-3

	// e^(z²)·erfc(z) ≈ P(z)/Q(z) on [0, 11]; erf clamps z to erfMaxZ
	// (erfc(6) ≈ 2e-17: erf is 1 in float64 from there)
	erfMaxZ = 6
	// erf(x)/x on |x| < erfSmall: its Taylor series to x⁶
	erfSmall = 1.0 / 16
	erfS0    = 2 / math.SqrtPi
	erfS1    = -2 / (3 * math.SqrtPi)
	erfS2    = 2 / (10 * math.SqrtPi)
	erfS3    = -2 / (42 * math.SqrtPi)

	// clamps beyond which the results no longer change in float32 and the
	// intermediate values stay finite
	tanhClamp     = 60  // tanh(60) = 1, sech²(60) ≈ 3e-52
	sigmoidClamp  = 300 // E = e^300 and E² stay finite
	geluTanhClamp = 600 // for 2u

	invSqrt2   = 1 / math.Sqrt2
	invSqrt2Pi = 1 / (math.Sqrt2 * math.SqrtPi)
)

var (
	// exp2By16[j] = 2^(j/16), within 1 float64 ulp
	exp2By16 = func() (t [16]float64) {
		for j := range t {
			t[j] = math.Exp2(float64(j) / 16)
		}
		return t
	}()
	// logInvC[i] is 1/c for the centre c of z's interval i (1 for the
	// interval holding 1); logLogC[i] = -log(logInvC[i])
	logInvC = [16]float64{
		0x1.661ec6a5122f9p+0, 0x1.571ed3c506b3ap+0, 0x1.49539e3b2d067p+0, 0x1.3c995a47babe7p+0,
		0x1.30d190130d190p+0, 0x1.25e22708092f1p+0, 0x1.1bb4a4046ed29p+0, 0x1.12358e75d3033p+0,
		0x1.0953f39010954p+0, 0x1p+0, 0x1.e573ac901e574p-1, 0x1.ca4b3055ee191p-1,
		0x1.b2036406c80d9p-1, 0x1.9c2d14ee4a102p-1, 0x1.886e5f0abb04ap-1, 0x1.767dce434a9b1p-1,
	}
	logLogC = [16]float64{
		-0x1.57bf753c8d1fbp-2, -0x1.2bef07cdc9355p-2, -0x1.01eae5626c691p-2, -0x1.b31d8575bce3bp-3,
		-0x1.6574ebe8c1339p-3, -0x1.1aa2b7e23f729p-3, -0x1.a4e7640b1bc38p-4, -0x1.1973bd1465561p-4,
		-0x1.252f32f8d1840p-5, 0, 0x1.b42dd711971b9p-5, 0x1.c5e548f5bc743p-4,
		0x1.526e5e3a1b438p-3, 0x1.bc286742d8cd4p-3, 0x1.1058bf9ae4ad4p-2, 0x1.404308686a7e4p-2,
	}
	erfcP = [7]float64{
		0x1.000000000176ap+0, 0x1.9f557fb44e51bp+0, 0x1.4ae3953b4753ep+0, 0x1.3d5c025266e79p-1,
		0x1.7e99afd95f731p-3, 0x1.138ac55b61065p-5, 0x1.7913eedfa259dp-9,
	}
	erfcQ = [8]float64{
		1, 0x1.60197a5cbaa5bp+1, 0x1.b2bf0b282e60bp+1, 0x1.3a165aac153fdp+1,
		0x1.20e324cc88254p+0, 0x1.55ae37d27c49ep-2, 0x1.e862c9adb3a69p-5, 0x1.4e2d304755848p-8,
	}
)

// expReduce splits x (|x| ≤ expClamp) into k and r with x = k·ln2/16 + r.
func expReduce(x float64) (k int64, r float64) {
	t := x*log2eBy16 + expMagic
	kf := t - expMagic
	return int64(math.Float64bits(t) - math.Float64bits(expMagic)), (x - kf*ln2by16Hi) - kf*ln2by16Lo
}

// expPoly is e^r - 1 for |r| ≤ ln2/32, accurate relative to e^r.
func expPoly(r float64) float64 {
	return r + r*r*(expE2+r*(expE3+r*expE4))
}

// expm1Poly is e^r - 1 for |r| ≤ ln2/32, accurate relative to e^r - 1.
func expm1Poly(r float64) float64 {
	return r + r*r*(expC2+r*(expC3+r*(expC4+r*expC5)))
}

// The AVX2 kernels' exp (asm/gen/transcendental_avx2.go), which has no
// table: e^x = 2^n·(1 + r + r²·q(r)) with n = round(x/ln2), r = x - n·ln2
// (ln2 as expAVX2Ln2Hi, 32 significant bits, and the rest), q of degree 5
// fitted on |r| ≤ ln2/2. The kernels build 2^n in the exponent field, in
// two factors where |x| may pass 700 (as scale2 does here).
const (
	expAVX2Ln2Hi = 0x1.62e42feep-1
	expAVX2Ln2Lo = math.Ln2 - expAVX2Ln2Hi
)

var expAVX2Q = [6]float64{
	0x1.0000003a86997p-1, 0x1.555554415b861p-3, 0x1.55548ce016e7cp-5,
	0x1.1112724e2b2fep-7, 0x1.6d8dddd61d924p-10, 0x1.9f07f4b083f78p-13,
}

// expAVX2Model is e^x as the AVX2 kernels compute it (up to the rounding
// of FMA steps), for |x| ≤ expClamp.
func expAVX2Model(x float64) float64 {
	t := x*math.Log2E + expMagic
	n := t - expMagic
	r := (x - n*expAVX2Ln2Hi) - n*expAVX2Ln2Lo
	q := &expAVX2Q
	p := q[0] + r*(q[1]+r*(q[2]+r*(q[3]+r*(q[4]+r*q[5]))))
	return scale2(1+(r+r*r*p), int64(n))
}

// TestExpAVX2Model checks the AVX2 kernels' exp (its model) against
// math.Exp over [-708, 709] (float64's normal results) and densely around
// 0: within 2^-33.5
// relative (the fit's 2^-34.1 and the rounding of its steps), as accurate
// as the kernels' other approximations, far below a float32 ulp.
func TestExpAVX2Model(t *testing.T) {
	worst, at := 0.0, 0.0
	check := func(x float64) {
		want := math.Exp(x)
		if e := math.Abs(expAVX2Model(x)-want) / want; e > worst {
			worst, at = e, x
		}
	}
	for i := 0; i <= 1_000_000; i++ {
		check(-708 + 1417*float64(i)/1e6)
		check(-1 + 2*float64(i)/1e6)
	}
	t.Logf("max relative error 2^%.2f at x = %g", math.Log2(worst), at)
	if worst > math.Exp2(-33.5) {
		t.Errorf("relative error 2^%.2f at x = %g, want at most 2^-33.5", math.Log2(worst), at)
	}
}

// scale2 returns s·2^e.
func scale2(s float64, e int64) float64 {
	if e < -1000 || e > 1000 { // a result near or past float64's range
		return math.Ldexp(s, int(e))
	}
	return math.Float64frombits(math.Float64bits(s) + uint64(e)<<52)
}

// expApprox is e^x (relative error about 2^-37); +Inf and 0 past float64's
// range.
func expApprox(x float64) float64 {
	k, r := expReduce(min(max(x, -expClamp), expClamp))
	return scale2(exp2By16[k&15]*(1+expPoly(r)), k>>4)
}

// expm1Approx is e^y - 1 for y in [0, 2·tanhClamp], with relative accuracy
// near 0.
func expm1Approx(y float64) float64 {
	k, r := expReduce(y)
	s := scale2(exp2By16[k&15], k>>4)
	return s*expm1Poly(r) + (s - 1)
}

// logApprox is log(x) for finite x > 0.
func logApprox(x float64) float64 {
	ix := math.Float64bits(x)
	tmp := ix - logOff
	i := tmp >> 48 & 15
	k := int64(tmp) >> 52
	z := math.Float64frombits(ix - tmp&(0xfff<<52))
	r := z*logInvC[i] - 1
	p := logP0 + r*(logP1+r*(logP2+r*(logP3+r*logP4)))
	return (float64(k)*math.Ln2 + logLogC[i]) + (r + r*r*p)
}

// erfcScaled is e^(z²)·erfc(z) for z in [0, 11].
func erfcScaled(z float64) float64 {
	p := erfcP[6]
	for i := 5; i >= 0; i-- {
		p = p*z + erfcP[i]
	}
	q := erfcQ[7]
	for i := 6; i >= 0; i-- {
		q = q*z + erfcQ[i]
	}
	return p / q
}

func tanhApprox(x float64) float64 {
	m := expm1Approx(2 * min(math.Abs(x), tanhClamp))
	return math.Copysign(m/(m+2), x)
}

func tanhGradApprox(x float64) float64 {
	m := expm1Approx(2 * min(math.Abs(x), tanhClamp))
	d := m + 2
	return 4 * (m + 1) / (d * d)
}

func erfApprox(x float64) float64 {
	a := math.Abs(x)
	if a < erfSmall {
		a2 := a * a
		return math.Copysign(a*(erfS0+a2*(erfS1+a2*(erfS2+a2*erfS3))), x)
	}
	z := min(a, erfMaxZ)
	return math.Copysign(1-expApprox(-z*z)*erfcScaled(z), x)
}

func erfGradApprox(x float64) float64 { return erfS0 * expApprox(-x*x) }

// sigmoidParts returns E = e^-x and sigmoid(x) = 1/(1+E) (x clamped).
func sigmoidParts(x float64) (e, s float64) {
	e = expApprox(-min(max(x, -sigmoidClamp), sigmoidClamp))
	return e, 1 / (1 + e)
}

func sigmoidApprox(x float64) float64 { _, s := sigmoidParts(x); return s }

func sigmoidGradApprox(x float64) float64 { e, s := sigmoidParts(x); return e * s * s }

func siluApprox(x float64) float64 { _, s := sigmoidParts(x); return x * s }

// siluGradApprox is s·(1 + x·(1-s)), with 1-s = E·s.
func siluGradApprox(x float64) float64 {
	if d, ok := siluRoot.near(x); ok {
		return d
	}
	e, s := sigmoidParts(x)
	return s * (1 + x*(e*s))
}

// erfcP5 and erfcQ6 are a cheaper e^(z²)·erfc(z) ≈ P5(z)/Q6(z) on [0, 11],
// of degree 5/6 (relative error 2^-33.3), for GELU, where erfc's error
// is not amplified as it is in erf = 1 - erfc near 0.
var (
	erfcP5 = [6]float64{
		0x1.ffffffff2a146p-1, 0x1.70f39fbc02033p+0, 0x1.026c5f2e9a2a2p+0, 0x1.a17ada2207196p-2,
		0x1.832de90357e66p-4, 0x1.507871d871937p-7,
	}
	erfcQ6 = [7]float64{
		1, 0x1.48e88a4408f2fp+1, 0x1.74585497df941p+1, 0x1.df6c10bcb4692p+0,
		0x1.76a6c8d5c2e61p-1, 0x1.57207903e62bbp-3, 0x1.2a30841d77f66p-6,
	}
)

// geluP and geluQ are erfcP5 and erfcQ6 rescaled to take |x| rather than
// z = |x|/√2, and P halved: geluP(|x|)/geluQ(|x|) = e^(x²/2)·erfc(|x|/√2)/2
// (asm/gen computes them the same way).
var geluP, geluQ = func() (p [6]float64, q [7]float64) {
	scale := 1.0
	for i := range q {
		if i < len(p) {
			p[i] = 0.5 * erfcP5[i] * scale
		}
		q[i] = erfcQ6[i] * scale
		scale *= invSqrt2
	}
	return p, q
}()

// geluMaxA is where GELU clamps |x| for the rational function: just below
// 11·√2.
const geluMaxA = 15.5

// geluParts returns Φ(x) and E = e^(-x²/2).
func geluParts(x float64) (phi, e float64) {
	e = expApprox(-0.5 * x * x) // x² is exact for a float32 x
	a := min(math.Abs(x), geluMaxA)
	p := geluP[5]
	for i := 4; i >= 0; i-- {
		p = p*a + geluP[i]
	}
	q := geluQ[6]
	for i := 5; i >= 0; i-- {
		q = q*a + geluQ[i]
	}
	h := e * (p / q)
	if x < 0 {
		return h, e
	}
	return 1 - h, e
}

func geluApprox(x float64) float64 { phi, _ := geluParts(x); return x * phi }

func geluGradApprox(x float64) float64 {
	if d, ok := geluRoot.near(x); ok {
		return d
	}
	phi, e := geluParts(x)
	return phi + x*e*invSqrt2Pi
}

// geluTanhParts returns E = e^(-2u) and S = sigmoid(2u) = (1 + tanh u)/2.
func geluTanhParts(x float64) (e, s float64) {
	u2 := x * (geluK1 + geluK2*x*x)
	e = expApprox(-min(max(u2, -geluTanhClamp), geluTanhClamp))
	return e, 1 / (1 + e)
}

func geluTanhApprox(x float64) float64 { _, s := geluTanhParts(x); return x * s }

// geluTanhGradApprox is S + x·2u'·S·(1-S), with 1-S = E·S.
func geluTanhGradApprox(x float64) float64 {
	if d, ok := geluTanhRoot.near(x); ok {
		return d
	}
	e, s := geluTanhParts(x)
	return s * (1 + x*(geluK1+geluK3*x*x)*(e*s))
}

// The float32 kernels (asm/gen/transcendental32.go): exp and tanh forward
// computed in float32, sixteen lanes a vector, with the same constants.
// Here float32 multiply-adds go through float64's (fma32), which rounds
// twice and so can differ from the hardware's single rounding in rare
// halfway cases: the model is for the accuracy tests, which check the
// assembly kernels themselves where the machine runs them.
//
//   - exp(x) = 2^n·(1 + r + r²·P(r)), n = round(x/ln2), r = x - n·ln2 in
//     two multiply-adds (ln2 as the float32 ln2Hi32 and the rest), P of
//     degree 5 fitted to (e^r - 1 - r)/r² on |r| ≤ ln2/2 (relative error
//     2^-26.5 with float32 coefficients); x clamped to [-120, 100].
//   - tanh(x) = x + x³·Q(x²) below |x| = 0.625, Q of degree 4 (error
//     2^-26.8 relative to tanh), and ±(1 - 2/(e^(2|x|)+1)) from there, |x|
//     clamped to 10.
const (
	exp32Magic  = 0x1.8p23
	exp32Lo     = -120
	exp32Hi     = 100
	tanh32Small = 0.625
	tanh32Clamp = 10
)

var (
	log2e32 = float32(math.Log2E)
	ln2Hi32 = float32(math.Ln2)
	ln2Lo32 = float32(math.Ln2 - float64(ln2Hi32))
	exp32P  = [6]float32{0x1p-1, 0x1.555556p-3, 0x1.5554eap-5, 0x1.11114cp-7, 0x1.6d42d6p-10, 0x1.a072bep-13}
	tanh32Q = [5]float32{-0x1.555532p-2, 0x1.110726p-3, -0x1.b83c58p-5, 0x1.52268ep-6, -0x1.75e198p-8}
)

// fma32 is a·b + c rounded to float32 (twice: see above).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// exp32e is e^x for x within [exp32Lo, exp32Hi], as the kernel computes
// it; the last step, VSCALEFPS, rounds (1 + r + r²·P)·2^n once, as
// float32(math.Ldexp) does.
func exp32e(x float32) float32 {
	n := fma32(x, log2e32, exp32Magic) - exp32Magic
	r := fma32(-n, ln2Hi32, x)
	r = fma32(-n, ln2Lo32, r)
	p := exp32P[5]
	for i := 4; i >= 0; i-- {
		p = fma32(p, r, exp32P[i])
	}
	e := fma32(r*r, p, r) + 1
	return float32(math.Ldexp(float64(e), int(n)))
}

func expF32Model(x float32) float32 { return exp32e(min(max(x, exp32Lo), exp32Hi)) }

func tanhF32Model(x float32) float32 {
	a := float32(math.Abs(float64(x)))
	var t float32
	if a < tanh32Small {
		w := a * a
		q := tanh32Q[4]
		for i := 3; i >= 0; i-- {
			q = fma32(q, w, tanh32Q[i])
		}
		t = fma32(a*w, q, a)
	} else {
		t = 1 - 2/(exp32e(2*min(a, tanh32Clamp))+1)
	}
	return float32(math.Copysign(float64(t), float64(x)))
}

// rowF32 applies a float32 model to a row (for ±Inf and NaN too: the
// kernels' special lanes are the definition's values, which the models
// give as well).
func rowF32(f func(float32) float32) func(o, x []float32) {
	return func(o, x []float32) {
		for i, v := range x[:len(o)] {
			o[i] = f(v)
		}
	}
}

// modelKernels are the model's functions per op, as f32Kernels (log's
// model takes only x > 0; math.Log answers elsewhere, as the kernel's
// special-case lanes do).
var modelKernels = map[backends.UnaryOp]*f32Kernel{
	backends.Exp: {op: backends.Exp, f: expApprox, df: expApprox, rowF: rowF32(expF32Model)},
	backends.Log: {op: backends.Log, f: func(x float64) float64 {
		if x > 0 {
			return logApprox(x)
		}
		return math.Log(x)
	}, df: func(x float64) float64 { return 1 / x }},
	backends.Tanh:     {op: backends.Tanh, f: tanhApprox, df: tanhGradApprox, rowF: rowF32(tanhF32Model)},
	backends.Erf:      {op: backends.Erf, f: erfApprox, df: erfGradApprox},
	backends.Sigmoid:  {op: backends.Sigmoid, f: sigmoidApprox, df: sigmoidGradApprox},
	backends.Silu:     {op: backends.Silu, f: siluApprox, df: siluGradApprox},
	backends.Gelu:     {op: backends.Gelu, f: geluApprox, df: geluGradApprox},
	backends.GeluTanh: {op: backends.GeluTanh, f: geluTanhApprox, df: geluTanhGradApprox},
}

// GELU's derivative (erf form) in float32 (asm/gen/transcendental_gelu32.go,
// the AVX2 backward kernel): the same steps and constants. With a = |x|,
// GELU' = Φ(x) + x·φ(x) = e^(-a²/2)·D(a) for x < 0 and 1 - e^(-a²/2)·D(a)
// for x ≥ 0, D(a) = R(a) - a/√(2π), R(a) = e^(a²/2)·Φ(-a):
//
//   - e^(-a²/2) = 2^n·(1 + r + r²·P(r)) with exp32's n, ln2 split and P,
//     from a² = hi + lo exactly (an FMA gives lo): r = (-hi/2 - n·ln2Hi) -
//     (n·ln2Lo + lo/2), the first difference exact; a is clamped to 17.5,
//     beyond which g·GELU'(x) is 0 (x < 0) or g (x > 0) for |g| < 2^64.
//   - D = (a0 - a)·G(a) with a0 = 0.7518… (GELU'(-a0) = 0) held as a0Hi +
//     a0Lo, so D keeps its relative accuracy through the zero without a
//     polynomial there or a second branch: a0 - a is exact in two terms
//     (2Sum), G = c + H(a) with c = 1/√(2π) in float32 and H a rational
//     function of degree 4/5 (fitted on [0, 15], extrapolated to 17.5,
//     where only a large g gives results above 0). Evaluated by Horner's rule in
//     float32 a rational function is off by two to three roundings
//     (2^-22.5 measured), too much for 2 ulp on its own; here H ≤ 0.4·G
//     damps it, H = P·(1/Q) is corrected by the remainder fma(-h, Q, P)
//     (exact), c + H is kept in two terms (Fast2Sum), (a0 - a)·G too.
//   - g multiplies the two-term D exactly (a two-term product), and the
//     result is assembled as 2^n·(y + (y·r + (y·r²·P + ylo))) (or g minus
//     that), rounded once, 2^n applied as two exact factors after g, the
//     second rounding into the denormals where the tail ends.
//
// The fit (Lawson-weighted least squares on [0, 15] with mpmath
// references; the constant terms chosen so that P(0) and Q(0) sit just
// below a power of two, where a rounding costs least; then the coefficients
// rounded to float32 one at a time, the others refitted) has relative error
// 2^-26.5.
const gelu32Clamp = 17.5

var (
	invSqrt2Pi32 = float32(1 / math.Sqrt(2*math.Pi))
	a0Hi32       = float32(0x1.80ead2p-1)
	a0Lo32       = float32(-0x1.a03fd4p-27)
	gelu32HP     = [5]float32{0x1.ea7050p-2, 0x1.d2458ep-2, 0x1.8f26fap-3, 0x1.6105d2p-5, 0x1.153970p-8}
	gelu32HQ     = [6]float32{0x1.ccb420p+0, 0x1.73e6ecp+1, 0x1.0026c2p+1, 0x1.7cc906p-1, 0x1.36f93ap-3, 0x1.ce293cp-7}
)

// horner32 is c[0] + z·(c[1] + z·(…)) with float32 multiply-adds.
func horner32(z float32, c []float32) float32 {
	acc := c[len(c)-1]
	for i := len(c) - 2; i >= 0; i-- {
		acc = fma32(acc, z, c[i])
	}
	return acc
}

// gelu32Exp returns n, r and P(r) with e^(-ac²/2) ≈ 2^n·(1 + r + r²·P(r)).
func gelu32Exp(ac float32) (n int, r, q float32) {
	hi := float32(ac * ac)
	lo := fma32(ac, ac, -hi)
	w := -0.5 * hi
	nf := fma32(w, log2e32, exp32Magic) - exp32Magic
	w = fma32(-nf, ln2Hi32, w)
	r = w - fma32(nf, ln2Lo32, 0.5*lo)
	return int(nf), r, horner32(r, exp32P[:])
}

// geluGradF32Model is g·GELU'(x) as the float32 kernel computes it (for
// finite x and g).
func geluGradF32Model(x, g float32) float32 {
	ac := min(float32(math.Abs(float64(x))), gelu32Clamp)
	hq := horner32(ac, gelu32HQ[:])
	inv := 1 / hq
	hp := horner32(ac, gelu32HP[:])
	h := float32(hp * inv)
	hlo := float32(fma32(-h, hq, hp) * inv)
	thi := a0Hi32 - ac // a0 - a = thi + tlo (2Sum)
	bb := thi - a0Hi32
	tlo := ((a0Hi32 - (thi - bb)) - (ac + bb)) + a0Lo32
	gh := invSqrt2Pi32 + h // G = c + h + hlo = gh + gl (Fast2Sum: c > h)
	gl := ((invSqrt2Pi32 - gh) + h) + hlo
	ph := float32(thi * gh)
	pl := fma32(tlo, gh, fma32(thi, gl, fma32(thi, gh, -ph)))
	yh := ph + pl // D = yh + yl (Fast2Sum: pl is small but where thi is about a0Lo or 0)
	yl := pl - (yh - ph)
	y := float32(g * yh)
	ylo := fma32(g, yl, fma32(g, yh, -y))
	n, r, q := gelu32Exp(ac)
	// 2^n·(y + (y·r + (y·r²·q + ylo))) for x with its sign bit set (y's
	// sign where that is 0), g minus that otherwise
	u := y + fma32(y, r, fma32(float32(y*float32(r*r)), q, ylo))
	n1 := n >> 1
	v := float32(u * float32(math.Ldexp(1, n1))) // exact
	s2 := math.Ldexp(1, n-n1)
	if math.Signbit(float64(x)) { // one rounding, into the denormals too
		return float32(math.Copysign(math.Abs(float64(v)*s2), float64(y)))
	}
	return float32(math.FMA(-float64(v), s2, float64(g)))
}
