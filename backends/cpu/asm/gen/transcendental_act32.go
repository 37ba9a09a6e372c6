package main

import (
	"fmt"
	"math"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Sigmoid's forward and backward, SiLU's forward, exp's backward and
// tanh's backward computed in float32 for AVX2, eight lanes a ymm vector
// instead of the float64 kernels' four, each within 2 ulp of the exact
// value over every float32 x
// (backends/cpu/transcendental_act32_test.go has the same steps in scalar
// Go with the same constants, measures them over every float32 and checks
// the kernels against them bit for bit). The float64 kernels stay, as
// "wide" ones (sigmoidWideF32AVX2, …), for the tests and benchmarks to
// compare with. exp's backward: exp32DY below; tanh's: sigmoid's body on
// 2x and 4g (tanh32DY). The bodies are written as steps over a block of
// one or more vectors (eachLane): the template's kernels run them on one,
// act32PairKernelsAVX2's on two interleaved, sixteen lanes an iteration.
// SiLU's backward stays in float64 here: near its derivative's zero (x ≈
// -1.2785) the float32 exponential's 2^-26.5 error is not small against
// the result, and elsewhere σ'·(d - a) compounds σ''s own error (a model
// with a polynomial window around the zero measured up to 1.67 ulp at x =
// -6.58 and 2.8 just outside the window). Its AVX-512 kernel computes in
// float32 with an exponential of its own, accurate to about 2^-31 and
// exact in its cancellation at the zero (transcendental_silu32.go), which
// AVX2 lacks the table lookups for.
//
// Forward, with x clamped to [act32FwdLo, act32FwdHi]: e^(-x) = 2^-m·E, E
// = 1 + p (exp32's reduction, and its polynomial for e^(-r)), so σ(x) =
// 2^m/(2^m + E), and 2^m + E = 1 + 2^m + p is exact in two terms (1 + 2^m
// by Fast2Sum, then p, the low parts added). 1/(2^m + E) is a division
// and a correction from its remainder (exact by FMA): y + yl. σ(x) =
// (y + yl)·2^m and x·σ(x) = (x·y + (x·y - rounded + x·yl))·2^m, rounded
// once, 2^m applied as 2^(m+act32FwdBias) (exact) then 2^-act32FwdBias
// (one rounding, into the denormals too). No branch on x's sign, one
// exponential; SiLU takes x itself above act32FwdHi.
//
// Backward, with a = min(|x|, act32Clamp) (σ' is even): e^(-a) = 2^n·E as
// above, d = 1 + 2^n·E held as dh + dl (s = 2^n rounded, s·E = eh + el
// exactly as s is a power of two, 1 + eh by Fast2Sum), 1/d as q + c (q =
// 1/dh, c = q·(1 - q·dh - q·dl)), σ'(x) = 2^n·E·(q + c)² with (q + c)² =
// q² + (q²lo + 2qc), q² exact in two terms and the rest multiplied by E =
// 1 + p; g multiplies that two-term value exactly (a two-term product),
// the sum rounds once, and 2^n is applied last as two factors 2^(n>>1)
// (exact) and 2^(n - n>>1) (one rounding, into the denormals too), as
// GELU's backward does (the first product is exact unless |g| is so small
// that it falls below the normal range: then the result, a denormal,
// rounds twice). Lanes with |g| ≥ 2^64, ±Inf or NaN take the
// float64 body in the kernel template's fix-up path, so they give the
// float64 kernel's bits.

// act32Clamp: beyond |x| = 150, g·σ'(x) (|g| < 2^64) is 0 in float32;
// n ≥ -217 there gives two normal factors 2^(n>>1), 2^(n - n>>1).
const act32Clamp = 150

// The forward kernels' clamps and scale (act32FwdParts).
const (
	act32FwdLo   = -110 // x·σ(x) and σ(x) are -0 and 0 below
	act32FwdHi   = 24   // σ(x) is 1 and x·σ(x) x above
	act32FwdBias = 40
	// act32FwdUnbias is 2^-act32FwdBias.
	act32FwdUnbias = 0x1p-40
)

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

// eachLane runs step for every vector of a block, i = 0, 1, …: the bodies
// below are written as such steps, so that on a block of two vectors
// (act32PairKernelsAVX2) the two dependent chains interleave and fill each
// other's latencies, and on one vector they are the eight-lane kernel's
// instructions in order.
func eachLane(v lanes, step func(i int)) {
	for i := range v {
		step(i)
	}
}

// act32 holds the backward's parts for a block: h = 2^(n>>1), t = 2^(n -
// n>>1), p, q and c.
type act32 struct{ h, t, p, q, c lanes }

// act32Parts computes act32's parts for the x in xs.
func act32Parts(xs lanes) act32 {
	k := len(xs)
	var v act32
	a, t, n, r := newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	eachLane(xs, func(i int) {
		VANDPS(tconst.u32(0x7fffffff), xs[i], a[i])
		VMINPS(f32c(act32Clamp), a[i], a[i])
		VBROADCASTSS(f32c(exp32Magic), t[i])
		VFNMADD231PS(f32c(log2e32), a[i], t[i]) // t = magic - a·log2e: n in the low bits
	})
	eachLane(xs, func(i int) {
		VSUBPS(f32c(exp32Magic), t[i], n[i])
		VXORPS(tconst.u32(0x80000000), a[i], r[i])
		VFNMADD231PS(f32c(ln2Hi32), n[i], r[i]) // r = -a - n·ln2Hi, exact
		VFNMADD231PS(f32c(ln2Lo32), n[i], r[i])
	})
	v.p = poly32N(r, exp32P)
	r2 := newLanes(k)
	v.h = newLanes(k)
	eachLane(xs, func(i int) {
		VMULPS(r[i], r[i], r2[i])
		VFMADD213PS(r[i], r2[i], v.p[i])     // p = r²·P + r
		VPSUBD(f32c(exp32Magic), t[i], t[i]) // n as an integer
		VPSRAD(U8(1), t[i], v.h[i])
		VPSUBD(v.h[i], t[i], t[i])
		for _, s := range []VecVirtual{v.h[i], t[i]} {
			VPADDD(tconst.u32(127), s, s)
			VPSLLD(U8(23), s, s)
		}
	})
	v.t = t
	s, eh, el, dh := newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	eachLane(xs, func(i int) {
		VMULPS(t[i], v.h[i], s[i]) // 2^n rounded: 0 or a denormal where it is far below d's ulp
		VMOVAPS(s[i], eh[i])
		VFMADD231PS(v.p[i], s[i], eh[i]) // s·E rounded
		VSUBPS(eh[i], s[i], el[i])       // exact (Sterbenz: E in [0.7, 1.5])
		VFMADD231PS(v.p[i], s[i], el[i]) // s·E - eh, exact
	})
	eachLane(xs, func(i int) {
		VADDPS(f32c(1), eh[i], dh[i])
		VSUBPS(f32c(1), dh[i], s[i])
		VSUBPS(s[i], eh[i], eh[i])
		VADDPS(el[i], eh[i], eh[i]) // dl
	})
	one := newLanes(k)
	v.q, v.c = newLanes(k), newLanes(k)
	eachLane(xs, func(i int) {
		VBROADCASTSS(f32c(1), one[i])
		VDIVPS(dh[i], one[i], v.q[i])
	})
	eachLane(xs, func(i int) {
		VFNMADD231PS(dh[i], v.q[i], one[i]) // 1 - q·dh, exact
		VFNMADD231PS(eh[i], v.q[i], one[i]) // - q·dl
		VMULPS(one[i], v.q[i], v.c[i])
	})
	return v
}

// scale returns u·h·t, the first product exact, the second rounded once.
func (v act32) scale(u lanes) lanes {
	eachLane(u, func(i int) {
		VMULPS(v.h[i], u[i], u[i])
		VMULPS(v.t[i], u[i], u[i])
	})
	return u
}

// twoProd returns a·bh + (a·bh - rounded + a·bl), rounded once: a·(bh +
// bl) with a·bh exact in two terms.
func twoProd(a, bh, bl lanes) lanes {
	y, lo := prodParts(a, nil, bh, bl)
	eachLane(a, func(i int) { VADDPS(lo[i], y[i], y[i]) })
	return y
}

// prodParts returns y = a·bh rounded and lo = (a·bh - y) + a·bl (+ al·bh
// where al is not nil), added in that order: (a + al)·(bh + bl) in two
// terms, a·bh exact and al·bl left out.
func prodParts(a, al, bh, bl lanes) (y, lo lanes) {
	y, lo = newLanes(len(a)), newLanes(len(a))
	eachLane(a, func(i int) {
		VMULPS(bh[i], a[i], y[i])
		VMOVAPS(y[i], lo[i])
		fmsub231(bh[i], a[i], lo[i]) // a·bh - y, exact
		VFMADD231PS(bl[i], a[i], lo[i])
		if al != nil {
			VFMADD231PS(bh[i], al[i], lo[i])
		}
	})
	return y, lo
}

// act32FwdParts returns, for x clamped to [act32FwdLo, act32FwdHi], y, yl and
// sb with σ(x) ≈ (y + yl)·sb·2^-act32FwdBias, sb = 2^(m+act32FwdBias).
func act32FwdParts(xc lanes) (y, yl, sb lanes) {
	k := len(xc)
	t, n, r := newLanes(k), newLanes(k), newLanes(k)
	eachLane(xc, func(i int) {
		VBROADCASTSS(f32c(exp32Magic), t[i])
		VFMADD231PS(f32c(log2e32), xc[i], t[i]) // t = x·log2e + magic: m in the low bits
		VSUBPS(f32c(exp32Magic), t[i], n[i])
	})
	eachLane(xc, func(i int) {
		VMOVAPS(xc[i], r[i])
		VFNMADD231PS(f32c(ln2Hi32), n[i], r[i]) // r = x - m·ln2Hi, exact
		VFNMADD231PS(f32c(ln2Lo32), n[i], r[i])
	})
	p := poly32N(r, exp32Neg)
	r2, s, b := newLanes(k), newLanes(k), newLanes(k)
	sb = t
	eachLane(xc, func(i int) {
		VMULPS(r[i], r[i], r2[i])
		VFMSUB213PS(r[i], r2[i], p[i]) // p = r²·P - r = e^(-r) - 1
		// 2^(m+bias) from t's low bits, shifted into the exponent field
		// (m + 127 + bias is in [1, 254] for the clamped x)
		VPADDD(tconst.u32(127+act32FwdBias), sb[i], sb[i])
		VPSLLD(U8(23), sb[i], sb[i])
		VMULPS(f32c(act32FwdUnbias), sb[i], s[i]) // 2^m: 0 or a denormal where it no longer counts
	})
	eachLane(xc, func(i int) {
		VADDPS(f32c(1), s[i], b[i])
		VSUBPS(f32c(1), b[i], n[i])
		VSUBPS(n[i], s[i], s[i]) // bl: 1 + 2^m = b + bl (Fast2Sum)
	})
	dh, one := newLanes(k), newLanes(k)
	eachLane(xc, func(i int) {
		VADDPS(p[i], b[i], dh[i])
		VSUBPS(b[i], dh[i], b[i])
		VSUBPS(b[i], p[i], p[i])
		VADDPS(s[i], p[i], p[i]) // dl: 1 + 2^m + p = dh + dl
	})
	y = newLanes(k)
	eachLane(xc, func(i int) {
		VBROADCASTSS(f32c(1), one[i])
		VDIVPS(dh[i], one[i], y[i])
	})
	eachLane(xc, func(i int) {
		VFNMADD231PS(dh[i], y[i], one[i]) // 1 - y·dh, exact
		VFNMADD231PS(p[i], y[i], one[i])  // - y·dl
		VMULPS(y[i], one[i], one[i])
	})
	return y, one, sb
}

// clampFwd returns x clamped to [act32FwdLo, act32FwdHi].
func clampFwd(xs lanes) lanes {
	xc := newLanes(len(xs))
	eachLane(xs, func(i int) {
		VMAXPS(f32c(act32FwdLo), xs[i], xc[i])
		VMINPS(f32c(act32FwdHi), xc[i], xc[i])
	})
	return xc
}

// sigmoid32Y is sigmoid's float32 forward body on a block.
func sigmoid32Y(xs lanes) lanes {
	y, yl, sb := act32FwdParts(clampFwd(xs))
	eachLane(xs, func(i int) {
		VADDPS(yl[i], y[i], y[i])
		VMULPS(sb[i], y[i], y[i]) // exact
		VMULPS(f32c(act32FwdUnbias), y[i], y[i])
	})
	return y
}

// silu32Y is SiLU's float32 forward body on a block: x·(y + yl) as a
// two-term product, x itself above act32FwdHi.
func silu32Y(xs lanes) lanes {
	xc := clampFwd(xs)
	y, yl, sb := act32FwdParts(xc)
	u := twoProd(xc, y, yl)
	sx := newLanes(len(xs))
	eachLane(xs, func(i int) {
		VMULPS(sb[i], u[i], u[i]) // exact
		VMULPS(f32c(act32FwdUnbias), u[i], u[i])
		big := cmpMask(0x1e, f32c(act32FwdHi), xs[i]) // x > act32FwdHi (GT_OQ)
		blend(big, xs[i], u[i], u[i])
		VANDPS(tconst.u32(0x80000000), xs[i], sx[i])
		VORPS(sx[i], u[i], u[i]) // -0 at x = -0
	})
	return u
}

// sigmoid32DY is sigmoid's float32 backward body on a block: g·σ'(x) =
// g·2^n·E·(q + c)², (q + c)² = q² + (q²lo + 2qc) with q² exact in two
// terms.
func sigmoid32DY(xs, gs lanes) lanes {
	v := act32Parts(xs)
	k := len(xs)
	q2, zl, rest := newLanes(k), newLanes(k), newLanes(k)
	eachLane(xs, func(i int) {
		VMULPS(v.q[i], v.q[i], q2[i])
		VMOVAPS(q2[i], zl[i])
		fmsub231(v.q[i], v.q[i], zl[i]) // q·q - q2, exact
		VADDPS(v.q[i], v.q[i], v.q[i])
		VFMADD231PS(v.c[i], v.q[i], zl[i]) // + 2qc
	})
	eachLane(xs, func(i int) {
		VMOVAPS(zl[i], rest[i])
		VFMADD231PS(v.p[i], zl[i], rest[i]) // zl + zl·p
		VFMADD231PS(v.p[i], q2[i], rest[i]) // + q2·p
	})
	u := v.scale(twoProd(gs, q2, rest))
	sg := newLanes(k)
	eachLane(xs, func(i int) {
		VANDPS(tconst.u32(0x80000000), gs[i], sg[i])
		VORPS(sg[i], u[i], u[i]) // g's sign where the sum is 0: g = -0
	})
	return u
}

// tanh32DY is tanh's float32 backward body on a block: g·tanh'(x) =
// (4g)·σ'(2x), sigmoid32DY's body on 2x and 4g, both exact (tanh'(x) =
// 4/(e^x + e^-x)² and σ'(y) = 1/(e^(y/2) + e^(-y/2))²), so the same
// bounds. 2x is +Inf for |x| > MaxFloat32/2, which act32Parts's clamp takes
// as it takes any |2x| > act32Clamp; |4g| < 2^66 for the |g| < 2^64 the
// body gets (the template sends larger ones, by the original g, to the
// float64 body), and 2^66·σ'(act32Clamp) < 2^-150 rounds to 0 as the clamp
// requires.
func tanh32DY(xs, gs lanes) lanes {
	x2, g4 := newLanes(len(xs)), newLanes(len(xs))
	eachLane(xs, func(i int) {
		VADDPS(xs[i], xs[i], x2[i])
		VMULPS(f32c(4), gs[i], g4[i])
	})
	return sigmoid32DY(x2, g4)
}

// exp32DY is exp's float32 backward body on a block: g·e^x = g·2^n·(1 +
// p) with exp32's reduction and polynomial, g·(1 + p) = fma(g, p, g)
// rounded once, 2^n applied as 2^(n>>1) (exact) and 2^(n - n>>1) (one
// rounding, into the denormals too, or to ±Inf), and where n > 0
// g·2^min(n - 1, 127) first (exact), so that a tiny g keeps its digits. x
// is clamped to [exp32DLo, exp32DHi], beyond which g·e^x is 0 or ±Inf for
// every |g| < 2^64; where x > exp32DBig, g is scaled by 2^64 first (exact,
// denormal g included) and n lowered by 64, so both factors stay in range.
func exp32DY(xs, gs lanes) lanes {
	k := len(xs)
	xc, t, n, r := newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	eachLane(xs, func(i int) {
		VMAXPS(f32c(exp32DLo), xs[i], xc[i])
		VMINPS(f32c(exp32DHi), xc[i], xc[i])
		VBROADCASTSS(f32c(exp32Magic), t[i])
		VFMADD231PS(f32c(log2e32), xc[i], t[i]) // t = x·log2e + magic: n in the low bits
	})
	eachLane(xs, func(i int) {
		VSUBPS(f32c(exp32Magic), t[i], n[i])
		VMOVAPS(xc[i], r[i])
		VFNMADD231PS(f32c(ln2Hi32), n[i], r[i]) // r = x - n·ln2Hi, exact
		VFNMADD231PS(f32c(ln2Lo32), n[i], r[i])
	})
	p := poly32N(r, exp32P)
	big, sc := make([]Op, k), newLanes(k)
	eachLane(xs, func(i int) {
		VMULPS(r[i], r[i], n[i])
		VFMADD213PS(r[i], n[i], p[i]) // p = r²·P + r
	})
	eachLane(xs, func(i int) {
		big[i] = cmpMask(0x1e, f32c(exp32DBig), xc[i]) // x > exp32DBig (GT_OQ)
		VBROADCASTSS(f32c(1), sc[i])
		blend(big[i], f32c(0x1p64), sc[i], sc[i])
		VMULPS(gs[i], sc[i], sc[i])          // g, or g·2^64
		VPSUBD(f32c(exp32Magic), t[i], t[i]) // n as an integer
		subWhere(big[i], tconst.u32(64), t[i])
	})
	// where n > 0, g takes 2^min(n - 1, 127) before the product (exact: a
	// denormal g keeps its digits), the rest (at least 2) after
	zero, pre := newLanes(k), newLanes(k)
	eachLane(xs, func(i int) {
		zeroVec(zero[i])
		VPSUBD(tconst.u32(1), t[i], pre[i])
		VPMAXSD(zero[i], pre[i], pre[i])
		VPMINSD(tconst.u32(127), pre[i], pre[i])
		VPSUBD(pre[i], t[i], t[i])
		VPADDD(tconst.u32(127), pre[i], pre[i])
		VPSLLD(U8(23), pre[i], pre[i])
		VMULPS(pre[i], sc[i], sc[i])
	})
	// an overflow there is one of the result too (2^n ≥ 2 with it), but
	// fma(Inf, p, Inf) is NaN for p < 0: ±MaxFloat32 instead
	u, h := newLanes(k), newLanes(k)
	eachLane(xs, func(i int) {
		VMINPS(f32c(math.MaxFloat32), sc[i], sc[i])
		VMAXPS(f32c(-math.MaxFloat32), sc[i], sc[i])
		VMOVAPS(sc[i], u[i])
		VFMADD231PS(p[i], sc[i], u[i]) // g·p + g
	})
	eachLane(xs, func(i int) {
		VPSRAD(U8(1), t[i], h[i])
		VPSUBD(h[i], t[i], t[i])
		for _, f := range []VecVirtual{h[i], t[i]} {
			VPADDD(tconst.u32(127), f, f)
			VPSLLD(U8(23), f, f)
			VMULPS(f, u[i], u[i])
		}
	})
	eachLane(xs, func(i int) {
		VANDPS(tconst.u32(0x80000000), gs[i], sc[i])
		VORPS(sc[i], u[i], u[i]) // g's sign where the product is 0 (g = ±0, or -0 underflowing)
		// g·(+Inf) from where e^x overflows in float64, as the float64
		// kernel gives (NaN for g = 0)
		big[i] = cmpMask(0x1d, f32c(math.Float32frombits(exp32DOverflow)), xs[i]) // GE_OQ
		VBROADCASTSS(f32c(float32(math.Inf(1))), sc[i])
		VMULPS(gs[i], sc[i], sc[i])
		blend(big[i], sc[i], u[i], u[i])
	})
	return u
}

// exp32DY's clamps: below exp32DLo g·e^x is 0 for |g| < 2^64, above
// exp32DHi ±Inf for |g| ≥ 2^-149 (and 0 for g = 0).
const (
	exp32DLo  = -150
	exp32DHi  = 194
	exp32DBig = 88
	// exp32DOverflow is the bits of the least float32 x with e^x beyond
	// float64's range (709.7827)
	exp32DOverflow = 0x44317218
)

// act32Fwd and act32Bwd are the float32 bodies by op.
var (
	act32Fwd = map[string]func(lanes) lanes{"sigmoid": sigmoid32Y, "silu": silu32Y}
	act32Bwd = map[string]func(x, g lanes) lanes{"sigmoid": sigmoid32DY, "exp": exp32DY, "tanh": tanh32DY}
)

// act32Grad reports whether the backward kernel name is one of act32Bwd's
// or SiLU's AVX-512 one (transcendental_silu32.go): lanes with g ±Inf or
// NaN keep the float64 body's values there (GELU's kernels patch them).
func act32Grad(name string) bool {
	op := strings.TrimSuffix(strings.TrimSuffix(name, "GradF32AVX2"), "GradF32AVX512")
	return act32Bwd[op] != nil || name == "siluGradF32AVX512"
}

// act32WideKernels generates the float64 AVX2 kernels of op o that
// act32's float32 ones replaced, to compare with (tests and benchmarks):
// sigmoidWideF32AVX2, sigmoidWideGradF32AVX2, siluWideF32AVX2,
// expWideGradF32AVX2, tanhWideGradF32AVX2, and expWideF32AVX2 and
// tanhWideF32AVX2 (exp's and tanh's forward were in float32 already; the
// wide set is in float64 throughout).
func act32WideKernels(o top) {
	if act32Fwd[o.name] != nil || o.name == "exp" || o.name == "tanh" {
		fn := o.name + "WideF32AVX2"
		transcendentalKernelY(tfunc{
			name: fn, abs: o.abs, body: o.fwd,
			doc: fmt.Sprintf("%s sets dst[i] = %s(x[i]) for i < n in float64 (AVX2+FMA), and sp[0], sp[1] where x[i] is +Inf, -Inf: the kernel before the float32 one, kept to compare with in the tests and benchmarks.", fn, o.name),
		})
	}
	if act32Bwd[o.name] != nil {
		gn := o.name + "WideGradF32AVX2"
		transcendentalKernelY(tfunc{
			name: gn, bwd: true, body: o.bwd,
			doc: fmt.Sprintf("%s sets dst[i] = grad[i]·%s'(x[i]) for i < n in float64 (AVX2+FMA), and grad[i]·sp[0], grad[i]·sp[1] where x[i] is +Inf, -Inf: the kernel before the float32 one, kept to compare with in the tests and benchmarks.", gn, o.name),
		})
	}
}

// act32PairKernelsAVX2 generates the sixteen-lane forms of the float32
// kernels: sigmoidF32AVX2Pairs, siluF32AVX2Pairs, sigmoidGradF32AVX2Pairs
// and expGradF32AVX2Pairs, the bodies on two blocks of eight an iteration,
// interleaved step by step (eachLane). One block is a latency-bound chain
// (a division, then multiply-adds each waiting on the last); two fill the
// FMA units: on a Zen 3 1.12–1.27 times the eight-lane kernels'
// throughput in cache, 1.08–1.23 at 16M. Like geluPairKernelsAVX2's, they
// stop before the first sixteen with a lane the bodies do not cover (x
// ±Inf or NaN, |g| ≥ 2^64) and before the last n mod 16, and the
// eight-lane kernels do the rest (transcendental_act32_amd64.go), so the
// results are theirs bit for bit.
func act32PairKernelsAVX2() {
	for _, name := range []string{"sigmoid", "silu"} {
		f, fn := act32Fwd[name], name+"F32AVX2Pairs"
		doc := fmt.Sprintf("%s sets dst[i] = %s(x[i]) (AVX2+FMA, in float32) for i < k, sixteen at a time, and returns k: a multiple of 16, at most n, that stops before the first sixteen with x ±Inf or NaN.", fn, name)
		pairKernel(fn, "func(dst, x *float32, n int) int", doc, false, func(xs, _ lanes, _ Register) lanes { return f(xs) })
	}
	for _, name := range []string{"sigmoid", "exp", "tanh"} {
		f, fn := act32Bwd[name], name+"GradF32AVX2Pairs"
		doc := fmt.Sprintf("%s sets dst[i] = grad[i]·%s'(x[i]) (AVX2+FMA, in float32) for i < k, sixteen at a time, and returns k: a multiple of 16, at most n, that stops before the first sixteen with x ±Inf or NaN or |grad| ≥ 2^64.", fn, name)
		pairKernel(fn, "func(dst, x, grad *float32, n int) int", doc, true, func(xs, gs lanes, _ Register) lanes { return f(xs, gs) })
	}
}
