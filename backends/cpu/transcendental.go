package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Float32 transcendental kernels: exp, log, tanh, erf, sigmoid, SiLU and
// GELU (erf and tanh forms), forward (out = f(x)) and backward (out =
// g·f'(x), one fused pass), for Float32 tensors, and for Float16 and
// BFloat16 through float32 rows. Float64 tensors keep the exact
// definitions (ew_kernels.go).
//
// # Accuracy
//
// Every kernel is within 2 ulp of the exact value (the documented bound,
// which the tests enforce). Most compute in float64 and round once to
// float32; the vector forward kernels of exp and tanh (AVX-512 and AVX2),
// and on AVX2 GELU's, GELU-tanh's forward, sigmoid's, SiLU's and log's
// forward and exp's and tanh's backward (below), compute in float32
// instead, sixteen lanes a vector (eight with AVX2), at about half the
// cost or less
// (in cache, 0.14 against 0.34 ns an element for exp, 0.27 against 0.48
// for tanh): they are what fused element-wise chains (package fusion) run
// between their own float32 steps, where a float64 tanh cost about as much
// as the whole hand-written GELU. Their error is at most 0.988 ulp for exp
// (at x ≈ 59.28) and 1.331 ulp for tanh (just above 0.625, where it
// switches from its odd polynomial to 1 - 2/(e^(2|x|)+1)), measured over
// every float32 input; TestTranscendentalULP holds them to 0.99 and 1.34.
// The AVX2 ones take the same steps in the same order, so they give the
// same results.
// They keep exp's overflow to +Inf and its denormal results (rounded
// once), tanh(x) = x for tiny x, ±0, and the saturation to ±1 from 9.01.
// Their backward kernels (but exp's and tanh's on AVX2, below), and the
// portable loops of both, stay in float64.
//
// On AVX-512, sigmoid's forward and backward, SiLU's forward, tanh's
// backward and GELU's forward and backward compute in float32 too, with
// the AVX2 float32 kernels' bodies below made generic over the vector
// (asm/gen/transcendental_avx512f32.go): the same steps and constants, so
// the same bits and bounds, sixteen lanes a zmm vector, thirty-two an
// iteration (two vectors interleaved). On one Zen 4 core in cache they
// are 1.11 (σ', tanh') to 1.48 (σ) times as fast as the AVX-512 float64
// kernels, which stay as f32Kernel.wideF and wideDF there; exp's backward
// and GELU-tanh's forward measured no faster in float32 and stay in
// float64. SiLU's backward computes in float32 on AVX-512 alone, with a
// body of its own (below).
//
// SiLU's AVX-512 backward kernel (asm/gen/transcendental_silu32.go)
// computes g·e·f/d² with e = e^z, f = 1 + z + e, d = 1 + e and z = min(x,
// 21.5), one formula for both signs, in float32 with two-term values
// (f, d², e·f and the quotient) and one final rounding. Its exponential
// is made for the derivative's zero x0 ≈ -1.2785 (1 + x0 + e^x0 = 0): a
// table of 32 two-part entries on a grid of step ln2/32 through the
// float32 nearest x0, so that near x0 the reduced argument is x minus that
// float32, exact, (1 + x) + e's leading part is exact (the two are within
// a factor 2) and carries the cancellation, and what is left is relative
// to x - x0: f keeps its relative accuracy through the zero with no
// window and no polynomial in x - x0. Over every float32 input it
// computes (x ≥ -84.5) its model measures at most 1.4787 ulp (x ≈
// -0.5300, g = 1; the largest error left is the one rounding of (1 + x) +
// e away from x0), and g·silu'(x) is within 1.5835 ulp of
// float64(g)·silu'(x) for every g (TestSiluGradF32ModelExhaustive;
// TestTranscendentalULP holds it to 1.59). On one Zen 4 core it is 1.36 times as fast as the float64 kernel
// in cache (1.49 against 1.10 Gelem/s) and 1.5 times at 16M elements (1.26
// against 0.84). Every finite g stays in float32 (no power of two follows
// g: the product overflows only where the result does); lanes with x <
// -84.5 (e^x leaving float32's normal range), x or g ±Inf or NaN take the
// float64 body (the float64 kernel's bits). Its AVX2 kernel stays in
// float64: the 32-entry lookups (VPERMT2PS) would take sixteen
// instructions there for the two tables, against two.
//
// GELU's AVX2 backward kernel (erf form) computes in float32 too, eight
// lanes a vector (asm/gen/transcendental_gelu32.go), sixteen lanes an
// iteration (two blocks of eight interleaved, which fills the latency of
// one block's dependent chain; blocks with special lanes go to the
// eight-lane kernel): on one Zen 3
// core 1.65 times as fast as the float64 kernel it replaced (in cache 0.72
// against 0.43 Gelem/cpu-s; with eight lanes an iteration 0.60). A float32
// rational function alone is off by two or three roundings, so it enters
// as a correction damped against terms kept exact in two float32 parts,
// and the result is rounded once: over every float32 input (g = 1) the
// error is at most 1.818 ulp (TestGeluF32ModelExhaustive;
// TestTranscendentalULP holds it to 1.82), and g·GELU'(x) keeps that
// bound against float64(g)·GELU'(x). The error is relative to the exact
// value everywhere, through the derivative's zero at x ≈ -0.7518 as well:
// the kernel computes GELU' as e^(-x²/2)·(a0 - |x|)·G(|x|) with the zero
// a0 held in two parts, with no cancellation there. The tail keeps its
// relative accuracy down to the denormals (x ≈ -14), ±0 keep their sign,
// and g = ±Inf or NaN give g times the derivative's sign (NaN for NaN).
// Lanes with |g| ≥ 2^64, beyond the float32 body's range (its clamp of
// |x| at 17.5 and its unscaled products), take the float64 body in the
// block's rare fix-up path and so give the float64 kernel's bits
// (TestGeluF32KernelHugeGradients).
//
// GELU's AVX2 forward kernel computes in float32 as well
// (asm/gen/transcendental_gelu32.go, gelu32FN), sixteen lanes an
// iteration as the backward, 1.55 times as fast as the float64 kernel it
// replaced (in cache 0.78 against 0.50 Gelem/cpu-s, at 16M elements 0.77
// against 0.49): x·Φ(x) = x·e^(-x²/2)·R(|x|) for x < 0
// and x minus that for x ≥ 0, with R(a) = G(a)/(a + 0.8) and G = c + H,
// H a rational function at most 0.092 of G, so that its float32 roundings
// are damped to a tenth; G, a + 0.8, their quotient and x·R are held in
// two float32 parts and the result is rounded once. Over every float32
// input the error is at most 1.3426 ulp (at x ≈ -2.2022;
// TestGeluF32ForwardModelExhaustive; TestTranscendentalULP holds it to
// 1.35). It keeps ±0's sign, GELU(x) = x from x ≈ 5.4 on and the tail's
// denormals down to x ≈ -14.5, with no fix-up path. With AVX-512, GELU's
// forward pass takes its |x| ≤ 3 lanes from a table of polynomials
// instead (gelu_table.go: within 1.3915 ulp there, 1.4 times as fast on
// normal values), and this kernel's for the others.
//
// GELU-tanh's AVX2 forward kernel computes in float32 too
// (asm/gen/transcendental_gelutanh32.go), sixteen lanes an iteration,
// 1.19 times as fast as the float64 kernel on one Zen 3 core (in cache
// 0.72 against 0.61 Gelem/cpu-s, at 16M elements 0.71 against 0.60
// Gelem/s; with eight lanes an iteration it was no faster, 0.54):
// x·sigmoid(2u) is -|x|·q for x < 0 and x - |x|·q for x ≥ 0 with q =
// e^v/(1 + e^v), v = -2u(|x|) ≤ 0: v is held in two float32 parts (one
// rounding of v would cost 64 ulps of e^v where |v| nears 127), e^v's
// reduction is made from both, q and |x|·q are corrected by their exact
// remainders and the result is rounded once. Over every float32 input
// the error is at most 1.1216 ulp (at x ≈ -2.7475;
// TestGeluTanhF32ForwardModelExhaustive; TestTranscendentalULP holds it
// to 1.13).
// It keeps ±0's sign, GELU-tanh(x) = x from x ≈ 5 on and the tail's
// denormals (x from -10.1 to -10.77, rounded once), and gives the float64
// kernel's results at ±Inf, NaN and ±0; its backward kernel stays in
// float64.
//
// Sigmoid's AVX2 forward and backward kernels and SiLU's AVX2 forward
// kernel compute in float32 too, eight lanes a vector
// (asm/gen/transcendental_act32.go):
// σ(x) = 2^m/(2^m + E) from e^(-x) = 2^-m·E, the denominator exact in two
// float32 terms, its reciprocal corrected by its exact remainder, x or g
// multiplying the two-term result exactly, one rounding, and 2^m applied
// last (into the denormals with one rounding). Over every float32 input
// their models measure at most 0.944 ulp (sigmoid), 1.096 ulp (SiLU) and
// 1.211 ulp (σ'), and g·σ'(x) is within 1.922 ulp of float64(g)·σ'(x) for
// every g (TestAct32ModelsExhaustive; TestTranscendentalULP holds them to
// 0.95, 1.10 and 1.93); on one Zen 3 core in cache they are 1.38, 1.16
// and 1.17 times as fast as the float64 kernels, which stay as
// f32Kernel.wideF and wideDF. Lanes with |g| ≥ 2^64, ±Inf or NaN take
// the float64 body (the float64 kernel's bits). SiLU's AVX2 backward stays
// in float64: near its derivative's zero (x ≈ -1.2785) this float32
// exponential's 2^-26.5 error is not small against the result (the AVX-512
// kernel has an exponential of its own, above).
//
// These AVX2 kernels, exp's and tanh's backward (below) run sixteen lanes
// an iteration as GELU's do (two blocks of eight interleaved step by step;
// blocks with ±Inf, NaN or |g| ≥ 2^64 go to the eight-lane kernel, whose
// bits they give): on one Zen 3 core, in cache, 1.15 (sigmoid), 1.27
// (SiLU), 1.12 (σ'), 1.14 (exp') and 1.19 (tanh') times the eight-lane
// kernels' throughput, 1.10, 1.23, 1.08, 1.18 and 1.17 at 16M elements
// (BenchmarkAct32Paired).
//
// tanh's AVX2 backward kernel computes in float32 too, as sigmoid's
// backward body on exact arguments: g·tanh'(x) = (4g)·σ'(2x) (tanh'(x) =
// 4/(e^x + e^-x)², σ'(y) = 1/(e^(y/2) + e^(-y/2))²), so within sigmoid's
// bounds: over every float32 x at most 1.2113 ulp (x = 2.9430575), and
// g·tanh'(x) within 1.9216 ulp of float64(g)·tanh'(x) for every g
// (TestTanhGradF32ModelExhaustive; TestTranscendentalULP holds it to
// 1.93). Lanes with |g| ≥ 2^64, ±Inf or NaN take the float64 body, as
// sigmoid's do. On one Zen 3 core it is 1.25 times as fast as the float64
// kernel in cache and 1.14 at 16M (Gelem/cpu-s).
//
// exp's AVX2 backward kernel computes in float32 as well: g·e^x =
// g·2^n·(1 + p) with exp's float32 reduction, fma(g, p, g) rounded once
// and 2^n applied as exact factors but the last (g scaled up first where n
// > 0, so a tiny g keeps its digits): at most 0.988 ulp over every
// float32 x with g = 1, 1.183 for every g but the tiniest (1.24 with
// those: TestAct32ModelsExhaustive, exp32GradULP), 1.42 times as fast as
// the float64 kernel in cache. From x = 709.7827, where e^x leaves
// float64's range, it gives g·(+Inf), NaN for g = 0, as the float64
// kernel does.
//
// log's AVX2 forward kernel computes in float32 too, eight lanes a vector,
// sixteen an iteration where no lane is special, and no table
// (asm/gen/transcendental_log32.go): x = 2^k·m with m in [√½, √2)
// (denormals scaled by 2^23 first), f = m - 1 exact, log(1+f) = f +
// f²·P(f) with P of degree 8, and k·ln2 + f exact in two terms, so that
// one rounding is the large error and x near 1 keeps its relative
// accuracy. Over every positive float32 its model measures at most 0.7757
// ulp (at x ≈ 1.27991; TestLog32ModelExhaustive; TestTranscendentalULP
// holds it to 0.78); on one Zen 3 core it is 2.9 times as fast as the
// float64 kernel in cache (1.63 against 0.56 Gelem/s) and 2.6 times at
// 16M elements (1.42 against 0.54), which stays as f32Kernel.wideF.
// Zeros, negatives, ±Inf and NaN give the float64 kernel's results. The
// backward, g/x, stays in float64 (in cache faster than the forward's
// float32 kernel: 2.0 Gelem/s).
//
// In the float64 kernels every value is computed in float64 and rounded
// once to float32, with approximations whose error is far below a float32
// ulp (2^-33 relative or better): the result is within about 0.52 ulp of
// the exact value (the tests hold them to 0.52). The dense ulp sweep
// (KILN_ULP_STRIDE=1021, 6.4 million inputs) measures 0.5000 to 0.5004 for
// most functions (0.5023 for the portable tanh), 0.5015 for GELU and
// 0.5148 for GELU's derivative, the worst (at x ≈ -0.784, just outside the
// window of its root polynomial); for the AVX2 kernels, whose exp is a
// little less accurate (2^-34 relative), 0.5000 to 0.5009 for most, 0.5022
// for GELU, 0.5037 for SiLU's derivative and the same 0.5148 for GELU's.
// So the result is the correctly rounded float32 except where the exact value lies within about 0.015 ulp of a
// rounding boundary, and within 1 ulp of the op's float64 definition
// rounded to float32 (almost always equal to it). The backward kernels
// compute float64(g)·f'(x) and round that once, with the same bound.
//
// Float64 is what keeps the error that small without special cases:
// e^(-x²/2) takes x² exactly, GELU's tail x·Φ(x) down to x ≈ -14 (a float32
// denormal) needs erfc with relative accuracy, and the derivatives cancel
// near their zeros (GELU' at x ≈ -0.752, SiLU' at x ≈ -1.278, the tanh
// form's at x ≈ -0.753), where a polynomial in x - x0 takes over
// (derivRoot). Where the float64 definitions in package backends lose
// accuracy themselves (0.5·x·(1+erf(x/√2)) once erf rounds to -1,
// 1 - tanh² once tanh rounds to 1), the kernels keep it, so there they are
// closer to the exact value than the definition is.
//
// At ±Inf and NaN inputs the kernels return exactly what the definitions
// return (some are NaN: GELU(-Inf) is -Inf·0 in the definition, as in
// PyTorch), and the backward kernels g times that.
//
// # Implementations
//
// On CPUs with AVX-512 (F, DQ) and BMI2 the kernels are assembly generated
// by asm/gen/transcendental.go: sixteen floats an iteration, widened to two
// vectors of eight float64; exp from a 16-entry table of 2^(j/16) and a
// polynomial, log from glibc's 16-interval reduction, erfc as e^(-z²)
// times a rational function fitted to the scaled complementary error
// function, a division for sigmoid and tanh (exp and tanh forward in
// float32: asm/gen/transcendental32.go, the ops above with AVX2 float32
// bodies: asm/gen/transcendental_avx512f32.go, and SiLU's backward:
// asm/gen/transcendental_silu32.go).
// transcendental_model_test.go has the same algorithms in scalar Go and
// explains them; the tests check it for accuracy on every platform.
//
// On CPUs with AVX2 and FMA but not AVX-512 the kernels are the same
// algorithms generated for ymm registers by asm/gen/transcendental_avx2.go:
// eight floats an iteration, widened to two vectors of four float64. What
// AVX2 lacks is replaced there: exp reduces by ln2 without the table, with
// a polynomial of degree 7, and builds its power of two in the exponent
// field (in two factors where the argument can exceed ±700, so that it
// still overflows and underflows as VSCALEFPD does); log reads its tables
// with gathers (the float64 forward kernel, kept to compare with);
// masks are ymm compares and blends; a partial last
// iteration uses masked loads and stores (VMASKMOVPS). On one core of a
// Zen 3, in cache, they are 4 to 35 times as fast as the Go loops (GELU
// forward, in float64, 0.4 against 0.04 Gelem/s). On AVX-512 machines the
// tests run them too (f32Kernel.altF).
//
// Elsewhere (other CPUs and -tags purego) the Go loops below compute each
// value with Go's math package (math.Exp, math.Log, math.Tanh, math.Erf,
// math.Erfc) in forms that keep their relative accuracy, at about the
// speed of the exact loops they replace (exp forward through mathExpF32,
// exp.go: float32(math.Exp) bit for bit, about twice as fast; tanh forward
// through tanhRow, within 0.502 ulp and cheaper than math.Tanh).

// f32Kernel is an op's float32 kernel: the float64 functions f and df that
// the portable loops apply element by element, and vector kernels that
// replace those loops where the CPU has them.
type f32Kernel struct {
	op    backends.UnaryOp
	f, df func(x float64) float64
	// rowF, when set, is the portable forward loop: faster than applying
	// f element by element, and bit for bit the same.
	rowF func(o, x []float32)
	// vecF and vecDF, when set, compute whole rows (kernels_amd64.go via
	// transcendental_amd64.go); they handle ±Inf and NaN themselves.
	vecF  func(o, x []float32)
	vecDF func(o, x, g []float32)
	// vecF32 and vecDF32 mark vector kernels (vecF, vecDF) that compute in
	// float32: their error bound is larger.
	vecF32, vecDF32 bool
	// altF and altDF, when set, are vector kernels of another instruction
	// set that this CPU also runs (AVX2 where vecF and vecDF are AVX-512),
	// for the tests alone; altF32 and altDF32 mark those in float32.
	altF            func(o, x []float32)
	altDF           func(o, x, g []float32)
	altF32, altDF32 bool
	// wideF and wideDF, when set, are kernels in float64 of vecF's
	// instruction set where float32 ones replaced some (with AVX2 GELU's,
	// GELU-tanh's forward, sigmoid's, SiLU's and log's forward, exp's and
	// tanh's backward; with AVX-512 sigmoid's, SiLU's, tanh's backward and
	// GELU's), for the tests and benchmarks to compare with; altWideF and
	// altWideDF the same for altF's (the AVX2 ones on an AVX-512 machine).
	wideF     func(o, x []float32)
	wideDF    func(o, x, g []float32)
	altWideF  func(o, x []float32)
	altWideDF func(o, x, g []float32)
}

// f32Kernels holds the ops with float32 kernels.
var f32Kernels = map[backends.UnaryOp]*f32Kernel{
	backends.Exp:      {op: backends.Exp, f: math.Exp, df: math.Exp, rowF: mathExpF32},
	backends.Log:      {op: backends.Log, f: math.Log, df: func(x float64) float64 { return 1 / x }},
	backends.Tanh:     {op: backends.Tanh, f: math.Tanh, df: tanhGrad, rowF: tanhRow},
	backends.Erf:      {op: backends.Erf, f: math.Erf, df: erfGrad},
	backends.Sigmoid:  {op: backends.Sigmoid, f: sigmoidF, df: sigmoidGrad},
	backends.Silu:     {op: backends.Silu, f: siluF, df: siluGrad},
	backends.Gelu:     {op: backends.Gelu, f: geluF, df: geluGrad},
	backends.GeluTanh: {op: backends.GeluTanh, f: geluTanhF, df: geluTanhGrad},
}

// forward sets o[i] = f(x[i]) (x as long as o).
func (k *f32Kernel) forward(o, x []float32) {
	if k.vecF != nil {
		k.vecF(o, x)
		return
	}
	k.forwardGo(o, x)
}

// backward sets o[i] = g[i]·f'(x[i]) (x and g as long as o).
func (k *f32Kernel) backward(o, x, g []float32) {
	if k.vecDF != nil {
		k.vecDF(o, x, g)
		return
	}
	k.backwardGo(o, x, g)
}

// forwardGo is the portable forward loop. Infinities and NaN take the
// op's definition, so that they give exactly its results.
func (k *f32Kernel) forwardGo(o, x []float32) {
	x = x[:len(o)]
	if k.rowF != nil {
		k.rowF(o, x)
		return
	}
	f, def := k.f, backends.UnaryOps[k.op].F
	for i, v := range x {
		d := float64(v)
		if d-d == 0 { // finite
			o[i] = float32(f(d))
		} else {
			o[i] = float32(def(d, 0, 0))
		}
	}
}

// backwardGo is the portable backward loop, g·f'(x) rounded once.
func (k *f32Kernel) backwardGo(o, x, g []float32) {
	x, g = x[:len(o)], g[:len(o)]
	df, def := k.df, backends.UnaryOps[k.op].DF
	for i, v := range x {
		d := float64(v)
		if d-d == 0 {
			o[i] = float32(float64(g[i]) * df(d))
		} else {
			o[i] = float32(float64(g[i]) * def(d, 0, 0))
		}
	}
}

// tanhSmall is where tanhRow switches from its odd polynomial to
// 1 - 2/(e^(2|x|)+1); tanhQ is (tanh x - x)/x³ as a polynomial in x² on
// |x| < tanhSmall (relative error 2^-32.5).
const tanhSmall = 0.625

var tanhQ = [6]float64{
	-0x1.555553a28e8e5p-2, 0x1.1110662b12821p-3, -0x1.b9ee8fa13ef95p-5,
	0x1.638b562748ab3p-6, -0x1.0bf4f1abb2b75p-7, 0x1.18e1b7ae5f5c7p-9,
}

// tanhRow is the portable tanh forward, in float64 and rounded once: x +
// x³·Q(x²) below tanhSmall, and 1 - 2/(e^(2|x|)+1) with expCore up to 9.5
// (tanh is 1 in float32 from 9.01), within about 0.5 ulp of the exact
// value and about 1.7 times as fast as math.Tanh.
func tanhRow(o, x []float32) {
	x = x[:len(o)]
	q := &tanhQ
	for i, v := range x {
		d := float64(v)
		a := math.Abs(d)
		switch {
		case a < tanhSmall:
			w := d * d
			p := q[0] + w*(q[1]+w*(q[2]+w*(q[3]+w*(q[4]+w*q[5]))))
			o[i] = float32(d * (1 + w*p)) // not d + d·w·p: -0 stays -0
		case a < 9.5:
			o[i] = float32(math.Copysign(1-2/(expCore(2*a)+1), d))
		default: // and ±Inf, NaN
			o[i] = float32(math.Tanh(d))
		}
	}
}

// The portable functions, for finite x.

// tanhGrad is sech²(x) = 4e/(1+e)² with e = e^(-2|x|), which keeps its
// relative accuracy where 1 - tanh² would round to 0.
func tanhGrad(x float64) float64 {
	e := math.Exp(-2 * math.Abs(x))
	return 4 * e / ((1 + e) * (1 + e))
}

func erfGrad(x float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) }

// sigmoids returns sigmoid(x) and sigmoid(-x) = 1 - sigmoid(x), both with
// relative accuracy.
func sigmoids(x float64) (s, sNeg float64) {
	e := math.Exp(-math.Abs(x))
	a, b := 1/(1+e), e/(1+e)
	if x >= 0 {
		return a, b
	}
	return b, a
}

func sigmoidF(x float64) float64 { s, _ := sigmoids(x); return s }

func sigmoidGrad(x float64) float64 { s, sn := sigmoids(x); return s * sn }

func siluF(x float64) float64 { s, _ := sigmoids(x); return x * s }

// siluGrad is s·(1 + x·(1-s)).
func siluGrad(x float64) float64 {
	if d, ok := siluRoot.near(x); ok {
		return d
	}
	s, sn := sigmoids(x)
	return s * (1 + x*sn)
}

// geluPhi is Φ(x) = erfc(-x/√2)/2, through erfc for negative x (relative
// accuracy in the tail) and erf elsewhere (faster in Go's math package).
func geluPhi(x float64) float64 {
	if x < 0 {
		return 0.5 * math.Erfc(-x/math.Sqrt2)
	}
	return 0.5 + 0.5*math.Erf(x/math.Sqrt2)
}

func geluF(x float64) float64 { return x * geluPhi(x) }

// geluGrad is Φ(x) + x·φ(x).
func geluGrad(x float64) float64 {
	if d, ok := geluRoot.near(x); ok {
		return d
	}
	return geluPhi(x) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
}

// GELU's tanh form: 0.5·x·(1 + tanh u) = x·sigmoid(2u) with
// 2u = x·(geluK1 + geluK2·x²), and (2u)' = geluK1 + geluK3·x².
const (
	geluC  = 0.7978845608028654 // √(2/π), as backends' definition writes it
	geluK1 = 2 * geluC
	geluK2 = 2 * geluC * 0.044715
	geluK3 = 6 * geluC * 0.044715
)

func geluTanhF(x float64) float64 {
	s, _ := sigmoids(x * (geluK1 + geluK2*x*x))
	return x * s
}

// geluTanhGrad is S + x·(2u)'·S·(1-S) with S = sigmoid(2u).
func geluTanhGrad(x float64) float64 {
	if d, ok := geluTanhRoot.near(x); ok {
		return d
	}
	s, sn := sigmoids(x * (geluK1 + geluK2*x*x))
	return s + x*(geluK1+geluK3*x*x)*(s*sn)
}

// derivRoot is a polynomial for a derivative near its zero x0 = hi + lo:
// f'(x) ≈ t·(c[0] + c[1]·t + … + c[5]·t⁵) with t = x - x0 (x - hi is
// exact, so t keeps its relative accuracy), fitted on |t| ≤ rootWindow
// (relative error below 2^-41). The general formulas subtract terms of
// about 0.2 there, and their errors, small against those terms (2^-37 in
// the assembly kernels' approximations, 2^-53 in Go's math functions),
// would be large against a result near 0.
type derivRoot struct {
	hi, lo float64
	c      [6]float64
}

const rootWindow = 1.0 / 32

// near returns f'(x) when x is within rootWindow of the zero.
func (r *derivRoot) near(x float64) (float64, bool) {
	t := x - r.hi
	if !(math.Abs(t) < rootWindow) {
		return 0, false
	}
	t -= r.lo
	c := &r.c
	return t * (c[0] + t*(c[1]+t*(c[2]+t*(c[3]+t*(c[4]+t*c[5]))))), true
}

var (
	geluRoot = derivRoot{-0x1.80ead197f00b4p-1, 0x1.13e74c58cada8p-56, [6]float64{
		0x1.b9d98fa5a3b5fp-2, 0x1.8d9a941ddf61ap-2, -0x1.2a2efc588f630p-6,
		-0x1.d2fa4ac53b847p-4, -0x1.e3d0becedc4cep-7, 0x1.3e19df5b577d9p-6}}
	siluRoot = derivRoot{-0x1.474973c84120bp+0, -0x1.f8d74bc9ac154p-54, [6]float64{
		0x1.be141046055c3p-3, 0x1.2c563458cba1cp-3, 0x1.353eb4fe11684p-6,
		-0x1.f2d0e2edfc1e8p-7, -0x1.b0e48cf3d4692p-8, 0x1.09c33e91274f8p-13}}
	geluTanhRoot = derivRoot{-0x1.81429f9e97e4cp-1, -0x1.406439d087aa4p-55, [6]float64{
		0x1.b8bacd2c97656p-2, 0x1.8cd1a2b2fb18dp-2, -0x1.029618f5332b0p-6,
		-0x1.d2b771ca8099cp-4, -0x1.102a32c446f4bp-6, 0x1.425c340df544fp-6}}
)

// transcendentalF32 returns op's float32 kernel, or nil.
func transcendentalF32(op backends.UnaryOp) *f32Kernel { return f32Kernels[op] }

// unaryTranscendental runs op's float32 kernel for out = op(x) when out
// and x are both Float32, Float16 or BFloat16 (the halves through float32
// rows), reporting false when op has no kernel or the dtypes differ.
func (b *Backend) unaryTranscendental(op backends.UnaryOp, out, x backends.View) bool {
	k := transcendentalF32(op)
	if k == nil || out.DType != x.DType || !isF32Like(out.DType) {
		return false
	}
	views := []backends.View{out, x}
	ob, xb := buf(out), buf(x)
	cost := unaryCost(op)
	if out.DType == backends.Float32 {
		os, xs := ob.f32(), xb.f32()
		l := newLoop(out.Shape, views...)
		if flatRun(l, false, false) {
			o0, x0 := l.base[0], l.base[1]
			b.parallel(l.n, b.ewGrain(l.n), func(lo, hi int) {
				k.forward(os[o0+lo:o0+hi], xs[x0+lo:x0+hi])
			})
			return true
		}
		b.elementwise(out.Shape, cost, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
			ov := outRow(os, o[0], st[0], n, sc.f32[0][:])
			k.forward(ov, gatherRow(xs, o[1], st[1], n, sc.f32[1][:]))
			scatterRow(os, o[0], st[0], ov)
		})
		return true
	}
	b.elementwise(out.Shape, cost+2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		t := sc.f32[0][:n]
		loadF32(xb, o[1], st[1], t)
		k.forward(t, t)
		storeF32(ob, o[0], st[0], t)
	})
	return true
}

// unaryGradTranscendental runs op's float32 kernel for out = g·op'(x) when
// out, x and g share a dtype of Float32, Float16 or BFloat16, reporting
// false otherwise.
func (b *Backend) unaryGradTranscendental(op backends.UnaryOp, out, x, g backends.View) bool {
	k := transcendentalF32(op)
	if k == nil || out.DType != x.DType || out.DType != g.DType || !isF32Like(out.DType) {
		return false
	}
	views := []backends.View{out, x, g}
	ob, xb, gb := buf(out), buf(x), buf(g)
	cost := unaryCost(op) + 1
	if out.DType == backends.Float32 {
		os, xs, gs := ob.f32(), xb.f32(), gb.f32()
		l := newLoop(out.Shape, views...)
		if flatRun(l, false, false, false) {
			o0, x0, g0 := l.base[0], l.base[1], l.base[2]
			b.parallel(l.n, b.ewGrain(l.n), func(lo, hi int) {
				k.backward(os[o0+lo:o0+hi], xs[x0+lo:x0+hi], gs[g0+lo:g0+hi])
			})
			return true
		}
		b.elementwise(out.Shape, cost, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
			ov := outRow(os, o[0], st[0], n, sc.f32[0][:])
			xv := gatherRow(xs, o[1], st[1], n, sc.f32[1][:])
			k.backward(ov, xv, gatherRow(gs, o[2], st[2], n, sc.f32[2][:]))
			scatterRow(os, o[0], st[0], ov)
		})
		return true
	}
	b.elementwise(out.Shape, cost+3, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		t, xv, gv := sc.f32[0][:n], sc.f32[1][:n], sc.f32[2][:n]
		loadF32(xb, o[1], st[1], xv)
		loadF32(gb, o[2], st[2], gv)
		k.backward(t, xv, gv)
		storeF32(ob, o[0], st[0], t)
	})
	return true
}

// unaryRow computes op over a row as Unary computes it for T: through the
// float32 kernel where op has one, else with unaryFloat. The fused kernels
// use it to give the same bits as the ops they fuse.
func unaryRow[T float](op backends.UnaryOp, o, x []T) {
	if o32, ok := any(o).([]float32); ok {
		if k := transcendentalF32(op); k != nil {
			k.forward(o32, any(x).([]float32))
			return
		}
	}
	unaryFloat(op, o, x, 0, 0)
}

// isF32Like reports whether d is computed through float32 rows.
func isF32Like(d backends.DType) bool {
	return d == backends.Float32 || d == backends.Float16 || d == backends.BFloat16
}
