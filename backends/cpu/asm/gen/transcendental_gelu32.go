package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// GELU's (erf form) backward kernel computed in float32 for AVX2, eight
// lanes a ymm vector instead of the float64 kernel's four: g·GELU'(x)
// within 1.82 ulp of the exact value over every float32 x (the float64
// kernel: 0.52), 1.35 times as fast on a Zen 3 with the template's eight
// lanes an iteration, not two: one block is a chain of a division and
// several multiply-add sequences, latency-bound. geluGradF32AVX2Pairs
// (geluPairKernelsAVX2 below) interleaves two blocks step by step, the
// bodies written for one or more vectors (lanes), and so runs 1.2 times
// as fast again; the sixteen ymm registers suffice. (The forward kernel,
// gelu32FN below, is built differently: a float32 one built the same way
// reached 2.14 ulp.)
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

// lanes is a block of one or more vectors (ymm, or zmm with zmm32) that
// the float32 bodies compute step by step, each step for every vector
// before the next: two independent vectors fill the latency of each
// other's dependent chains.
type lanes []VecVirtual

// newLanes returns n new virtual registers (vreg).
func newLanes(n int) lanes {
	v := make(lanes, n)
	for i := range v {
		v[i] = vreg()
	}
	return v
}

// copyLanes returns a copy of v in new registers.
func copyLanes(v lanes) lanes {
	c := newLanes(len(v))
	for i := range v {
		VMOVAPS(v[i], c[i])
	}
	return c
}

// poly32N is poly32Y for every vector of z.
func poly32N(z lanes, c []float32) lanes {
	acc := newLanes(len(z))
	n := len(c) - 1
	for i := range acc {
		VBROADCASTSS(f32c(c[n]), acc[i])
	}
	for j := n - 1; j >= 0; j-- {
		for i := range acc {
			VFMADD213PS(f32c(c[j]), z[i], acc[i]) // acc = z·acc + c[j]
		}
	}
	return acc
}

// gelu32Exp returns, for ac = min(|x|, gelu32Clamp), the integer n (in
// t's 32-bit lanes), r and P(r) with e^(-ac²/2) ≈ 2^n·(1 + r + r²·P(r)).
func gelu32Exp(ac lanes) (t, r, q lanes) {
	k := len(ac)
	hi, lo, w, n := newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	t, r = newLanes(k), newLanes(k)
	for i := range ac {
		VMULPS(ac[i], ac[i], hi[i])
		VMOVAPS(hi[i], lo[i])
		fmsub231(ac[i], ac[i], lo[i]) // ac² - hi, exact
		VMULPS(f32c(-0.5), hi[i], w[i])
		VBROADCASTSS(f32c(exp32Magic), t[i])
		VFMADD231PS(f32c(log2e32), w[i], t[i]) // w·log2e + magic: n in the low bits
		VSUBPS(f32c(exp32Magic), t[i], n[i])
		fnmadd231(f32c(ln2Hi32), n[i], w[i]) // w - n·ln2Hi, exact
		VMULPS(f32c(0.5), lo[i], lo[i])
		VFMADD231PS(f32c(ln2Lo32), n[i], lo[i]) // n·ln2Lo + lo/2, small
		VSUBPS(lo[i], w[i], r[i])
	}
	q = poly32N(r, exp32P)
	for i := range t {
		VPSUBD(f32c(exp32Magic), t[i], t[i]) // n as an integer
	}
	return t, r, q
}

// gelu32Finish returns the kernel's result from y + ylo = g·(a0 - a)·G(a)
// and the exponential's parts: 2^n·(y·(1 + r + r²·q) + ylo) with y's sign
// where x's sign bit is set (-0 included), base - that elsewhere (base is
// g).
func gelu32Finish(xs, base, y, ylo, t, r, q lanes) lanes {
	k := len(xs)
	sy, r2, h, neg := newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	for i := range xs {
		VANDPS(tconst.u32(0x80000000), y[i], sy[i])
		VMULPS(r[i], r[i], r2[i])
		VMULPS(y[i], r2[i], r2[i])
		VFMADD231PS(q[i], r2[i], ylo[i]) // ylo + y·r²·q
		VFMADD231PS(r[i], y[i], ylo[i])  // + y·r
		VADDPS(ylo[i], y[i], y[i])       // u, rounded once
	}
	for i := range xs {
		VPSRAD(U8(1), t[i], h[i])
		VPSUBD(h[i], t[i], t[i])
		for _, s := range []VecVirtual{h[i], t[i]} {
			VPADDD(tconst.u32(127), s, s)
			VPSLLD(U8(23), s, s)
		}
	}
	for i := range xs {
		VMULPS(h[i], y[i], y[i])     // u·2^(n>>1), exact
		VMULPS(t[i], y[i], neg[i])   // u·2^n, rounded once (into the denormals too)
		VORPS(sy[i], neg[i], neg[i]) // y's sign where that is 0: x·Φ(x) at x = -0 or underflowing, g = ±0
		fnmadd231(t[i], y[i], base[i])
		blend(signMask(xs[i]), neg[i], base[i], base[i])
	}
	return base
}

// gelu32DF is GELU's backward body for the kernel template: g·GELU'(x)
// for the eight x in xs and g in gs.
func gelu32DF(xs, gs VecVirtual) VecVirtual { return gelu32DFN(lanes{xs}, lanes{gs})[0] }

// gelu32DFN is GELU's backward body: g·GELU'(x) for the x in xs and g in
// gs, eight a vector; with zmm32 (AVX-512, sixteen a vector) the table's
// result (geluGradTableBody) where |x| ≤ 3 and |g| < 2^64, so that every
// AVX-512 kernel gives each element the same bits.
func gelu32DFN(xs, gs lanes) lanes {
	res := gelu32DFNErfc(xs, gs)
	if zmm32 {
		tb := geluGradTableBody(xs, gs)
		for i := range xs {
			m, a, mg := absAtMost3(xs[i]), ZMM(), K()
			VANDPS(tconst.u32(0x7fffffff), gs[i], a)
			VPCMPUD(U8(2), tconst.u32(belowHugeGrad), a, mg) // |g| < 2^64 (as integers: not Inf or NaN)
			KANDW(mg, m, m)
			VMOVAPS(tb[i], m, res[i])
		}
	}
	return res
}

// gelu32DFNErfc is gelu32DFN from e^(-a²/2) and rational functions (the
// erfc-based body) for every lane.
func gelu32DFNErfc(xs, gs lanes) lanes {
	k := len(xs)
	ac := newLanes(k)
	for i := range xs {
		VANDPS(tconst.u32(0x7fffffff), xs[i], ac[i])
		VMINPS(f32c(gelu32Clamp), ac[i], ac[i])
	}
	// H = hp/hq as h + hlo
	hq := poly32N(ac, gelu32HQ)
	inv := newLanes(k)
	for i := range inv {
		VBROADCASTSS(f32c(1), inv[i])
		VDIVPS(hq[i], inv[i], inv[i])
	}
	hp := poly32N(ac, gelu32HP)
	h := newLanes(k)
	for i := range h {
		VMULPS(inv[i], hp[i], h[i])
		fnmadd231(hq[i], h[i], hp[i]) // hp - h·hq
		VMULPS(inv[i], hp[i], hp[i])  // hlo
	}
	// a0 - a = thi + tlo (2Sum)
	a0, thi, bb, tmp := newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	for i := range a0 {
		VBROADCASTSS(f32c(a0Hi32), a0[i])
		VSUBPS(ac[i], a0[i], thi[i])
		VSUBPS(a0[i], thi[i], bb[i])
		VSUBPS(bb[i], thi[i], tmp[i])
		VSUBPS(tmp[i], a0[i], tmp[i]) // a0Hi - (thi - bb)
		VADDPS(bb[i], ac[i], bb[i])
		VSUBPS(bb[i], tmp[i], tmp[i])        // - (ac + bb)
		VADDPS(f32c(a0Lo32), tmp[i], tmp[i]) // tlo
	}
	// G = c + h + hlo as gh + gl (Fast2Sum: c > h), then D = (thi +
	// tlo)·G as ph + pl, thi·gh exact in two terms and the rest small, and
	// renormalised to yh + yl (Fast2Sum: pl is small against ph but where
	// thi is 0 or about a0Lo, near the zero, and then yh takes it whole)
	gh, gl, ph, yh := newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	for i := range gh {
		VADDPS(f32c(invSqrt2Pi32), h[i], gh[i])
		VBROADCASTSS(f32c(invSqrt2Pi32), gl[i])
		VSUBPS(gh[i], gl[i], gl[i])
		VADDPS(h[i], gl[i], gl[i])
		VADDPS(hp[i], gl[i], gl[i])
	}
	pl := newLanes(k)
	for i := range ph {
		VMULPS(gh[i], thi[i], ph[i])
		VMOVAPS(ph[i], pl[i])
		fmsub231(gh[i], thi[i], pl[i]) // thi·gh - ph, exact
		VFMADD231PS(gl[i], thi[i], pl[i])
		VFMADD231PS(gh[i], tmp[i], pl[i])
		VADDPS(pl[i], ph[i], yh[i])
		VSUBPS(ph[i], yh[i], ph[i])
		VSUBPS(ph[i], pl[i], pl[i]) // yl
	}
	// g·(yh + yl) as y + ylo
	y, ylo := newLanes(k), newLanes(k)
	for i := range y {
		VMULPS(gs[i], yh[i], y[i])
		VMOVAPS(y[i], ylo[i])
		fmsub231(gs[i], yh[i], ylo[i]) // g·yh - y, exact
		VFMADD231PS(gs[i], pl[i], ylo[i])
	}
	t, r, q := gelu32Exp(ac)
	return gelu32Finish(xs, copyLanes(gs), y, ylo, t, r, q)
}

// GELU's forward kernel (erf form) in float32 for AVX2, eight lanes a ymm
// vector: x·Φ(x) within 2 ulp of the exact value over every float32 x
// (backends/cpu/transcendental_gelu32fwd_test.go has the same steps in
// scalar Go, geluF32Model, the error measured over every float32 input,
// and the fit). With a = min(|x|, gelu32Clamp) and R(a) = e^(a²/2)·Φ(-a),
// x·Φ(x) = x·e^(-a²/2)·R(a) for x < 0 and x minus that for x ≥ 0. Where a
// float32 rational function for R itself is off by two or three roundings
// (too much for 2 ulp: the previous attempt measured 2.14), here R =
// G/(a + b) with G = R·(a + b) within [0.399, 0.474] for b = 0.8: G = c +
// H, c a constant and H = P/Q of degree 5/5, |H| ≤ 0.092·G, so H's
// roundings are damped to a tenth. c + H and a + b are held as two terms
// (Fast2Sum each), G/(a + b) is corrected by its remainder (exact) into
// two terms, and x·R (x clamped too) is an exact product plus the rest;
// then e^(-a²/2) and the single final rounding are the backward's
// (gelu32Exp, gelu32Finish with x as the base), with ylo·(1 + r) kept:
// ylo is up to two ulps of y here, not half of one. Over every float32
// input its model is within 1.3426 ulp (at x = -2.2022111); on a Zen 3
// the kernel is 1.3 times as fast as the float64 one with eight lanes an
// iteration, 1.55 times with sixteen (geluF32AVX2Pairs).
const gelu32B = 0.8

var (
	gelu32FC = float32(0.4367)
	gelu32FP = []float32{-0x1.2ca57p-05, 0x1.e36c8cp-04, 0x1.0784acp-04, 0x1.9a46b2p-07, -0x1.5f0d9ep-12, -0x1.f14cc2p-12}
	gelu32FQ = []float32{0x1p+00, 0x1.b63828p+00, 0x1.42e8ap+00, 0x1.0475fep-01, 0x1.d71248p-04, 0x1.9b9b6cp-07}
)

// gelu32F is GELU's forward body for the kernel template: x·Φ(x) for the
// eight x in xs.
func gelu32F(xs VecVirtual) VecVirtual { return gelu32FN(lanes{xs})[0] }

// gelu32FN is GELU's forward body: x·Φ(x) for the x in xs, eight a
// vector; with zmm32 (AVX-512, sixteen a vector) the table's result
// (geluTableBody) where |x| ≤ 3, so that every AVX-512 kernel gives each
// element the same bits.
func gelu32FN(xs lanes) lanes {
	res := geluErfcBody(xs)
	if zmm32 {
		tb := geluTableBody(xs)
		for i := range xs {
			m := absAtMost3(xs[i])
			VMOVAPS(tb[i], m, res[i])
		}
	}
	return res
}

// absAtMost3 returns the mask of the lanes of x with |x| ≤ geluTabMax (3;
// not NaN).
func absAtMost3(x VecVirtual) Op {
	a, m := ZMM(), K()
	VANDPS(tconst.u32(0x7fffffff), x, a)
	VPCMPUD(U8(2), tconst.u32(math.Float32bits(geluTabMax)), a, m) // as integers: NaN is above
	return m
}

// geluErfcBody is GELU's forward body from e^(-a²/2) and a rational
// function (the comment above gelu32B), for every x in xs.
func geluErfcBody(xs lanes) lanes {
	k := len(xs)
	ac := newLanes(k)
	for i := range xs {
		VANDPS(tconst.u32(0x7fffffff), xs[i], ac[i])
		VMINPS(f32c(gelu32Clamp), ac[i], ac[i])
	}
	// h = P/Q (rounded twice: damped in G)
	hq := poly32N(ac, gelu32FQ)
	inv := newLanes(k)
	for i := range inv {
		VBROADCASTSS(f32c(1), inv[i])
		VDIVPS(hq[i], inv[i], inv[i])
	}
	h := poly32N(ac, gelu32FP)
	// G = c + h as gh + gl (Fast2Sum: c > |h|); a + b as s + sl
	// (Fast2Sum on the larger and the smaller)
	gh, gl, big, small, s, sl := newLanes(k), newLanes(k), newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	for i := range h {
		VMULPS(inv[i], h[i], h[i])
		VADDPS(f32c(gelu32FC), h[i], gh[i])
		VBROADCASTSS(f32c(gelu32FC), gl[i])
		VSUBPS(gh[i], gl[i], gl[i])
		VADDPS(h[i], gl[i], gl[i])
		VMAXPS(f32c(gelu32B), ac[i], big[i])
		VMINPS(f32c(gelu32B), ac[i], small[i])
		VADDPS(small[i], big[i], s[i])
		VSUBPS(big[i], s[i], sl[i])
		VSUBPS(sl[i], small[i], sl[i])
	}
	// R = G/(a + b) as q + ql: the remainder gh - q·s is exact
	inv2, q := newLanes(k), newLanes(k)
	for i := range s {
		VBROADCASTSS(f32c(1), inv2[i])
		VDIVPS(s[i], inv2[i], inv2[i])
	}
	for i := range s {
		VMULPS(inv2[i], gh[i], q[i])
		fnmadd231(s[i], q[i], gh[i])
		VADDPS(gl[i], gh[i], gh[i])
		fnmadd231(sl[i], q[i], gh[i])
		VMULPS(inv2[i], gh[i], gh[i]) // ql
	}
	// x·R as y + ylo, x clamped (its sign onto a)
	xc, y, ylo := newLanes(k), newLanes(k), newLanes(k)
	for i := range xs {
		VANDPS(tconst.u32(0x80000000), xs[i], xc[i])
		VORPS(ac[i], xc[i], xc[i])
		VMULPS(q[i], xc[i], y[i])
		VMOVAPS(y[i], ylo[i])
		fmsub231(q[i], xc[i], ylo[i]) // xc·q - y, exact
		VFMADD231PS(gh[i], xc[i], ylo[i])
	}
	t, r, e := gelu32Exp(ac)
	for i := range ylo {
		VFMADD213PS(ylo[i], r[i], ylo[i]) // ylo·(1 + r)
	}
	return gelu32Finish(xs, copyLanes(xs), y, ylo, t, r, e)
}

// geluPairKernelsAVX2 generates geluF32AVX2Pairs and geluGradF32AVX2Pairs:
// GELU's float32 bodies on two blocks of eight an iteration, interleaved
// step by step (1.2 times the throughput of one block an iteration on a
// Zen 3: one block's dependent chain leaves the FMA units idle). They
// stop before the first block of sixteen with a lane the bodies do not
// cover (x ±Inf or NaN, or for the backward |g| ≥ 2^64, ±Inf or NaN), and
// before the last n mod 16, and return how many they did: the template's
// kernels, geluF32AVX2 and geluGradF32AVX2, do the rest
// (transcendental_gelu32_amd64.go), so the results are theirs bit for bit.
func geluPairKernelsAVX2() {
	for _, bwd := range []bool{false, true} {
		name, sig, what := "geluF32AVX2Pairs", "func(dst, x *float32, n int) int", "gelu(x[i])"
		if bwd {
			name, sig, what = "geluGradF32AVX2Pairs", "func(dst, x, grad *float32, n int) int", "grad[i]·gelu'(x[i])"
		}
		doc := fmt.Sprintf("%s sets dst[i] = %s (AVX2+FMA, in float32) for i < k, sixteen at a time, and returns k: a multiple of 16, at most n, that stops before the first sixteen with a lane it does not cover (x ±Inf or NaN%s).", name, what, map[bool]string{false: "", true: ", |grad| ≥ 2^64"}[bwd])
		pairKernel(name, sig, doc, bwd, func(xs, gs lanes, _ Register) lanes {
			if bwd {
				return gelu32DFN(xs, gs)
			}
			return gelu32FN(xs)
		})
	}
}

// pairKernel generates a kernel name (Go signature sig, doc comment doc),
// AVX2 or, with zmm32, AVX-512, that runs body on two blocks of eight
// lanes at a time (of sixteen with zmm32), sixteen elements an iteration
// (thirty-two), and stops
// before the first iteration with x ±Inf or NaN or, with bwd, |grad| ≥
// 2^64 (or ±Inf, NaN), and before the last n mod 16 (32), returning how
// many elements it did. body gets the blocks of x (and of grad with bwd)
// and the register pointing at this iteration's x, for bodies that reload
// x rather than hold it.
func pairKernel(name, sig, doc string, bwd bool, body func(xs, gs lanes, x Register) lanes) {
	pairKernelSpecial(name, sig, doc, bwd, func(x VecVirtual) Op {
		a := vreg()
		VANDPS(tconst.u32(0x7fffffff), x, a)
		return gtMask(tconst.u32(0x7f7fffff), a) // |x| beyond the finite
	}, body)
}

// gtMask returns the mask of the lanes where the 32-bit integer in a is
// greater than b's (signed): a itself, overwritten, or a K register with
// zmm32.
func gtMask(b Op, a VecVirtual) Op {
	if !zmm32 {
		VPCMPGTD(b, a, a)
		return a
	}
	k := K()
	VPCMPGTD(b, a, k)
	return k
}

// pairKernelSpecial is pairKernel with the lanes of x that it
// leaves to the one-block kernel told by special (the mask of those lanes:
// all ones in them, or a K register with zmm32) instead of ±Inf and NaN.
func pairKernelSpecial(name, sig, doc string, bwd bool, special func(x VecVirtual) Op, body func(xs, gs lanes, x Register) lanes) {
	pairKernelSpecialG(name, sig, doc, bwd, special, nil, body)
}

// pairKernelSpecialG is pairKernelSpecial with, for a backward kernel, the
// lanes of g that it leaves to the one-block kernel told by specialG (nil:
// |g| ≥ 2^64, ±Inf and NaN).
func pairKernelSpecialG(name, sig, doc string, bwd bool, special, specialG func(x VecVirtual) Op, body func(xs, gs lanes, x Register) lanes) {
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(doc)
	dst, x, n := Load(Param("dst"), GP64()), Load(Param("x"), GP64()), Load(Param("n"), GP64())
	var g Register
	if bwd {
		g = Load(Param("grad"), GP64())
	}
	width, step := 32, 16 // bytes a vector, elements an iteration
	if zmm32 {
		width, step = 64, 32
	}
	k := GP64()
	XORQ(k, k)
	Label(name + "_loop")
	CMPQ(n, U32(step))
	JB(LabelRef(name + "_done"))
	xs, gs := newLanes(2), newLanes(2)
	var spc Op
	if zmm32 {
		spc = K()
		KXORW(spc, spc, spc)
	} else {
		v := YMM()
		VPXOR(v, v, v)
		spc = v
	}
	or := func(m Op) {
		if zmm32 {
			KORW(m, spc, spc)
		} else {
			VPOR(m, spc, spc)
		}
	}
	for i := range xs {
		VMOVUPS(Mem{Base: x, Disp: width * i}, xs[i])
		or(special(xs[i]))
		if bwd {
			VMOVUPS(Mem{Base: g, Disp: width * i}, gs[i])
			if specialG != nil {
				or(specialG(gs[i]))
				continue
			}
			a := vreg()
			VANDPS(tconst.u32(0x7fffffff), gs[i], a)
			or(gtMask(tconst.u32(belowHugeGrad), a)) // |g| ≥ 2^64, ±Inf, NaN
		}
	}
	if zmm32 {
		KORTESTW(spc, spc)
	} else {
		VPTEST(spc, spc)
	}
	JNZ(LabelRef(name + "_done"))
	res := body(xs, gs, x)
	for i := range res {
		VMOVUPS(res[i], Mem{Base: dst, Disp: width * i})
	}
	ADDQ(U32(2*width), x)
	ADDQ(U32(2*width), dst)
	if bwd {
		ADDQ(U32(2*width), g)
	}
	ADDQ(U32(step), k)
	SUBQ(U32(step), n)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_done")
	Store(k, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
