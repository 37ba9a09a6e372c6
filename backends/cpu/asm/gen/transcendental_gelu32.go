package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// GELU's (erf form) backward kernel computed in float32 for AVX2, eight
// lanes a ymm vector instead of the float64 kernel's four: g·GELU'(x)
// within 1.82 ulp of the exact value over every float32 x (the float64
// kernel: 0.52), 1.35 times as fast on a Zen 3, not two: one block is a
// chain of a division and several multiply-add sequences, latency-bound
// (eight lanes an iteration, where the float64 kernels interleave two
// independent halves), and interleaving two blocks would need more than
// the sixteen ymm registers. (A float32 forward kernel built the same way
// reached 2.14 ulp over every float32, above the 2 ulp bound, so GELU's
// forward stays in float64.)
// backends/cpu/transcendental_model_test.go has the same steps in scalar Go
// (geluGradF32Model) with the same constants, the error measured over
// every float32 input, and explains the choices; in short:
//
// With a = min(|x|, gelu32Clamp), GELU' = Φ(x) + x·φ(x) = e^(-a²/2)·D(a)
// for x < 0 and 1 - e^(-a²/2)·D(a) for x ≥ 0. The kernel computes
// e^(-a²/2) = 2^n·(1 + r + r²·P(r)) as exp32 does but from a² as the exact
// sum hi + lo (FMA), the reduction r = (-hi/2 - n·ln2Hi) - (n·ln2Lo +
// lo/2) exact but for its last rounding. A float32 rational function
// evaluated by Horner's rule is off by two or three roundings (2^-22.5
// relative), too much for 2 ulp, so it enters as a small correction to
// terms computed exactly: D = (a0 - a)·G(a), a0 ≈ 0.7518 the derivative's
// zero as the float32 sum a0Hi + a0Lo, so there is no cancellation near
// the zero and no special case; a0 - a is exact in two terms (2Sum), G =
// c + H(a) with c = 1/√(2π) and H a rational function of degree 4/5 (at
// most 0.4·G, so damped), H = P·(1/Q) corrected by the remainder
// fma(-h, Q, P) (exact), c + H in two terms and (a0 - a)·G too. g
// multiplies that two-term D exactly before e^(-a²/2): the result is
// 2^n·(y + (y·r + (y·r²·P + ylo))), or g minus that for x ≥ 0, rounded
// once.
//
// 2^n is applied as two factors (2^(n>>1), then 2^(n - n>>1)): the second
// product rounds once into the denormals, where the derivative's tail ends
// (x ≈ -14), and it is applied after g has multiplied, so a tiny
// derivative keeps its digits until the last rounding.
//
// That holds for |g| < 2^64; the kernel template sends blocks with a
// larger |g| to its fix-up path, where those lanes take the float64 body
// (transcendental_avx2.go).

// Constants shared with backends/cpu/transcendental_model_test.go.
const (
	// |x| is clamped to gelu32Clamp: beyond it g·GELU'(x) is 0 in float32
	// (x < 0) or g (x > 0) for |g| < 2^64, and n ≥ -221 gives two normal
	// factors 2^(n>>1), 2^(n - n>>1). (H is fitted on [0, 15]; from 15 to
	// 17.5 its extrapolation, damped like its error, keeps the bound.)
	gelu32Clamp = 17.5
)

var (
	invSqrt2Pi32 = float32(1 / math.Sqrt(2*math.Pi))
	// a0Hi + a0Lo is the zero of GELU' at -a0 (within 2^-50)
	a0Hi32 = float32(0x1.80ead2p-1)
	a0Lo32 = float32(-0x1.a03fd4p-27)
	// H(a) ≈ (R(a) - a/√(2π))/(a0 - a) - invSqrt2Pi32 as P/Q, relative
	// error 2^-26.5
	gelu32HP = []float32{0x1.ea7050p-2, 0x1.d2458ep-2, 0x1.8f26fap-3, 0x1.6105d2p-5, 0x1.153970p-8}
	gelu32HQ = []float32{0x1.ccb420p+0, 0x1.73e6ecp+1, 0x1.0026c2p+1, 0x1.7cc906p-1, 0x1.36f93ap-3, 0x1.ce293cp-7}
)

// fmsub231: d = a·b - d; fnmadd231: d = d - a·b (one rounding each).
func fmsub231(b Op, a, d VecVirtual)  { VFMSUB231PS(b, a, d) }
func fnmadd231(b Op, a, d VecVirtual) { VFNMADD231PS(b, a, d) }

// copyY returns a copy of v in a new register.
func copyY(v VecVirtual) VecVirtual {
	c := YMM()
	VMOVAPS(v, c)
	return c
}

// gelu32Exp returns, for ac = min(|x|, gelu32Clamp), the integer n (in
// t's 32-bit lanes), r and P(r) with e^(-ac²/2) ≈ 2^n·(1 + r + r²·P(r)).
func gelu32Exp(ac VecVirtual) (t, r, q VecVirtual) {
	hi := YMM()
	VMULPS(ac, ac, hi)
	lo := copyY(hi)
	fmsub231(ac, ac, lo) // ac² - hi, exact
	w := YMM()
	VMULPS(f32c(-0.5), hi, w)
	t = YMM()
	VBROADCASTSS(f32c(exp32Magic), t)
	VFMADD231PS(f32c(log2e32), w, t) // w·log2e + magic: n in the low bits
	n := YMM()
	VSUBPS(f32c(exp32Magic), t, n)
	fnmadd231(f32c(ln2Hi32), n, w) // w - n·ln2Hi, exact
	VMULPS(f32c(0.5), lo, lo)
	VFMADD231PS(f32c(ln2Lo32), n, lo) // n·ln2Lo + lo/2, small
	r = YMM()
	VSUBPS(lo, w, r)
	q = poly32Y(r, exp32P)
	VPSUBD(f32c(exp32Magic), t, t) // n as an integer
	return t, r, q
}

// gelu32Finish returns the kernel's result from y + ylo = g·(a0 - a)·G(a)
// and the exponential's parts: 2^n·(y·(1 + r + r²·q) + ylo) with y's sign
// where x's sign bit is set (-0 included), base - that elsewhere (base is
// g).
func gelu32Finish(xs, base, y, ylo, t, r, q VecVirtual) VecVirtual {
	sy := YMM()
	VANDPS(tconst.u32(0x80000000), y, sy)
	r2 := YMM()
	VMULPS(r, r, r2)
	VMULPS(y, r2, r2)
	VFMADD231PS(q, r2, ylo) // ylo + y·r²·q
	VFMADD231PS(r, y, ylo)  // + y·r
	VADDPS(ylo, y, y)       // u, rounded once
	h := YMM()
	VPSRAD(U8(1), t, h)
	VPSUBD(h, t, t)
	for _, s := range []VecVirtual{h, t} {
		VPADDD(tconst.u32(127), s, s)
		VPSLLD(U8(23), s, s)
	}
	VMULPS(h, y, y) // u·2^(n>>1), exact
	neg := YMM()
	VMULPS(t, y, neg)     // u·2^n, rounded once (into the denormals too)
	VORPS(sy, neg, neg)   // y's sign where that is 0: x·Φ(x) at x = -0 or underflowing, g = ±0
	fnmadd231(t, y, base) // base - u·2^n
	VBLENDVPS(xs, neg, base, base)
	return base
}

// gelu32DF is GELU's backward body: g·GELU'(x) for the eight x in xs and
// g in gs.
func gelu32DF(xs, gs VecVirtual) VecVirtual {
	ac := YMM()
	VANDPS(tconst.u32(0x7fffffff), xs, ac)
	VMINPS(f32c(gelu32Clamp), ac, ac)
	// H = hp/hq as h + hlo
	hq := poly32Y(ac, gelu32HQ)
	inv := YMM()
	VBROADCASTSS(f32c(1), inv)
	VDIVPS(hq, inv, inv)
	hp := poly32Y(ac, gelu32HP)
	h := YMM()
	VMULPS(inv, hp, h)
	fnmadd231(hq, h, hp) // hp - h·hq
	VMULPS(inv, hp, hp)  // hlo
	// a0 - a = thi + tlo (2Sum)
	a0 := YMM()
	VBROADCASTSS(f32c(a0Hi32), a0)
	thi := YMM()
	VSUBPS(ac, a0, thi)
	bb := YMM()
	VSUBPS(a0, thi, bb)
	tmp := YMM()
	VSUBPS(bb, thi, tmp)
	VSUBPS(tmp, a0, tmp) // a0Hi - (thi - bb)
	VADDPS(bb, ac, bb)
	VSUBPS(bb, tmp, tmp)           // - (ac + bb)
	VADDPS(f32c(a0Lo32), tmp, tmp) // tlo
	// G = c + h + hlo as gh + gl (Fast2Sum: c > h), then D = (thi +
	// tlo)·G as ph + pl, thi·gh exact in two terms and the rest small, and
	// renormalised to yh + yl (Fast2Sum: pl is small against ph but where
	// thi is 0 or about a0Lo, near the zero, and then yh takes it whole)
	gh, gl := YMM(), YMM()
	VADDPS(f32c(invSqrt2Pi32), h, gh)
	VBROADCASTSS(f32c(invSqrt2Pi32), gl)
	VSUBPS(gh, gl, gl)
	VADDPS(h, gl, gl)
	VADDPS(hp, gl, gl)
	ph := YMM()
	VMULPS(gh, thi, ph)
	pl := copyY(ph)
	fmsub231(gh, thi, pl) // thi·gh - ph, exact
	VFMADD231PS(gl, thi, pl)
	VFMADD231PS(gh, tmp, pl)
	yh := YMM()
	VADDPS(pl, ph, yh)
	VSUBPS(ph, yh, ph)
	s := pl
	VSUBPS(ph, s, s) // yl
	// g·(yh + yl) as y + ylo
	y := YMM()
	VMULPS(gs, yh, y)
	ylo := copyY(y)
	fmsub231(gs, yh, ylo) // g·yh - y, exact
	VFMADD231PS(gs, s, ylo)
	t, r, q := gelu32Exp(ac)
	return gelu32Finish(xs, copyY(gs), y, ylo, t, r, q)
}
