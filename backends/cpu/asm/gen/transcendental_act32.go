package main

import (
	"fmt"
	"math"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Sigmoid's forward and backward, SiLU's forward and exp's backward
// computed in float32 for AVX2, eight lanes a ymm vector instead of the
// float64 kernels' four, each within 2 ulp of the exact value over every
// float32 x
// (backends/cpu/transcendental_act32_test.go has the same steps in scalar
// Go with the same constants, measures them over every float32 and checks
// the kernels against them bit for bit). The float64 kernels stay, as
// "wide" ones (sigmoidWideF32AVX2, …), for the tests and benchmarks to
// compare with. exp's backward: exp32DY below. SiLU's backward stays in float64: near its derivative's
// zero (x ≈ -1.2785) the float32 exponential's 2^-26.5 error is not small
// against the result.
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

// act32 holds the backward's parts for eight lanes: h = 2^(n>>1), t =
// 2^(n - n>>1), p, q and c.
type act32 struct{ h, t, p, q, c VecVirtual }

// act32Parts computes act32's parts for the eight x in xs.
func act32Parts(xs VecVirtual) act32 {
	var v act32
	a := YMM()
	VANDPS(tconst.u32(0x7fffffff), xs, a)
	VMINPS(f32c(act32Clamp), a, a)
	t := YMM()
	VBROADCASTSS(f32c(exp32Magic), t)
	VFNMADD231PS(f32c(log2e32), a, t) // t = magic - a·log2e: n in the low bits
	n := YMM()
	VSUBPS(f32c(exp32Magic), t, n)
	r := YMM()
	VXORPS(tconst.u32(0x80000000), a, r)
	VFNMADD231PS(f32c(ln2Hi32), n, r) // r = -a - n·ln2Hi, exact
	VFNMADD231PS(f32c(ln2Lo32), n, r)
	v.p = poly32Y(r, exp32P)
	r2 := YMM()
	VMULPS(r, r, r2)
	VFMADD213PS(r, r2, v.p)        // p = r²·P + r
	VPSUBD(f32c(exp32Magic), t, t) // n as an integer
	v.h = YMM()
	VPSRAD(U8(1), t, v.h)
	VPSUBD(v.h, t, t)
	for _, s := range []VecVirtual{v.h, t} {
		VPADDD(tconst.u32(127), s, s)
		VPSLLD(U8(23), s, s)
	}
	v.t = t
	s := YMM()
	VMULPS(t, v.h, s) // 2^n rounded: 0 or a denormal where it is far below d's ulp
	eh := copyY(s)
	VFMADD231PS(v.p, s, eh) // s·E rounded
	el := YMM()
	VSUBPS(eh, s, el)       // exact (Sterbenz: E in [0.7, 1.5])
	VFMADD231PS(v.p, s, el) // s·E - eh, exact
	dh := YMM()
	VADDPS(f32c(1), eh, dh)
	VSUBPS(f32c(1), dh, s)
	VSUBPS(s, eh, eh)
	VADDPS(el, eh, eh) // dl
	one := YMM()
	VBROADCASTSS(f32c(1), one)
	v.q = YMM()
	VDIVPS(dh, one, v.q)
	VFNMADD231PS(dh, v.q, one) // 1 - q·dh, exact
	VFNMADD231PS(eh, v.q, one) // - q·dl
	v.c = YMM()
	VMULPS(one, v.q, v.c)
	return v
}

// scale returns u·h·t, the first product exact, the second rounded once.
func (v act32) scale(u VecVirtual) VecVirtual {
	VMULPS(v.h, u, u)
	VMULPS(v.t, u, u)
	return u
}

// twoProd returns a·bh + (a·bh - rounded + a·bl), rounded once: a·(bh +
// bl) with a·bh exact in two terms.
func twoProd(a, bh, bl VecVirtual) VecVirtual {
	y := YMM()
	VMULPS(bh, a, y)
	lo := copyY(y)
	fmsub231(bh, a, lo) // a·bh - y, exact
	VFMADD231PS(bl, a, lo)
	VADDPS(lo, y, y)
	return y
}

// act32FwdParts returns, for x clamped to [act32FwdLo, act32FwdHi], y, yl and
// sb with σ(x) ≈ (y + yl)·sb·2^-act32FwdBias, sb = 2^(m+act32FwdBias).
func act32FwdParts(xc VecVirtual) (y, yl, sb VecVirtual) {
	t := YMM()
	VBROADCASTSS(f32c(exp32Magic), t)
	VFMADD231PS(f32c(log2e32), xc, t) // t = x·log2e + magic: m in the low bits
	n := YMM()
	VSUBPS(f32c(exp32Magic), t, n)
	r := copyY(xc)
	VFNMADD231PS(f32c(ln2Hi32), n, r) // r = x - m·ln2Hi, exact
	VFNMADD231PS(f32c(ln2Lo32), n, r)
	p := poly32Y(r, exp32Neg)
	r2 := YMM()
	VMULPS(r, r, r2)
	VFMSUB213PS(r, r2, p) // p = r²·P - r = e^(-r) - 1
	// 2^(m+bias) from t's low bits, shifted into the exponent field (m +
	// 127 + bias is in [1, 254] for the clamped x)
	sb = t
	VPADDD(tconst.u32(127+act32FwdBias), sb, sb)
	VPSLLD(U8(23), sb, sb)
	s := YMM()
	VMULPS(f32c(act32FwdUnbias), sb, s) // 2^m: 0 or a denormal where it no longer counts
	b := YMM()
	VADDPS(f32c(1), s, b)
	VSUBPS(f32c(1), b, n)
	VSUBPS(n, s, s) // bl: 1 + 2^m = b + bl (Fast2Sum)
	dh := YMM()
	VADDPS(p, b, dh)
	VSUBPS(b, dh, b)
	VSUBPS(b, p, p)
	VADDPS(s, p, p) // dl: 1 + 2^m + p = dh + dl
	one := YMM()
	VBROADCASTSS(f32c(1), one)
	y = YMM()
	VDIVPS(dh, one, y)
	VFNMADD231PS(dh, y, one) // 1 - y·dh, exact
	VFNMADD231PS(p, y, one)  // - y·dl
	yl = one
	VMULPS(y, yl, yl)
	return y, yl, sb
}

// clampFwd returns x clamped to [act32FwdLo, act32FwdHi].
func clampFwd(xs VecVirtual) VecVirtual {
	xc := YMM()
	VMAXPS(f32c(act32FwdLo), xs, xc)
	VMINPS(f32c(act32FwdHi), xc, xc)
	return xc
}

// sigmoid32Y is sigmoid's float32 forward body.
func sigmoid32Y(xs VecVirtual) VecVirtual {
	y, yl, sb := act32FwdParts(clampFwd(xs))
	VADDPS(yl, y, y)
	VMULPS(sb, y, y) // exact
	VMULPS(f32c(act32FwdUnbias), y, y)
	return y
}

// silu32Y is SiLU's float32 forward body: x·(y + yl) as a two-term
// product, x itself above act32FwdHi.
func silu32Y(xs VecVirtual) VecVirtual {
	xc := clampFwd(xs)
	y, yl, sb := act32FwdParts(xc)
	u := twoProd(xc, y, yl)
	VMULPS(sb, u, u) // exact
	VMULPS(f32c(act32FwdUnbias), u, u)
	big := YMM()
	VCMPPS(U8(0x1e), f32c(act32FwdHi), xs, big) // x > act32FwdHi (GT_OQ)
	VBLENDVPS(big, xs, u, u)
	VANDPS(tconst.u32(0x80000000), xs, big)
	VORPS(big, u, u) // -0 at x = -0
	return u
}

// sigmoid32DY is sigmoid's float32 backward body: g·σ'(x) = g·2^n·E·(q +
// c)², (q + c)² = q² + (q²lo + 2qc) with q² exact in two terms.
func sigmoid32DY(xs, gs VecVirtual) VecVirtual {
	v := act32Parts(xs)
	q2 := YMM()
	VMULPS(v.q, v.q, q2)
	zl := copyY(q2)
	fmsub231(v.q, v.q, zl) // q·q - q2, exact
	VADDPS(v.q, v.q, v.q)
	VFMADD231PS(v.c, v.q, zl) // + 2qc
	rest := copyY(zl)
	VFMADD231PS(v.p, zl, rest) // zl + zl·p
	VFMADD231PS(v.p, q2, rest) // + q2·p
	u := v.scale(twoProd(gs, q2, rest))
	sg := YMM()
	VANDPS(tconst.u32(0x80000000), gs, sg)
	VORPS(sg, u, u) // g's sign where the sum is 0: g = -0
	return u
}

// exp32DY is exp's float32 backward body: g·e^x = g·2^n·(1 + p) with
// exp32's reduction and polynomial, g·(1 + p) = fma(g, p, g) rounded once,
// 2^n applied as 2^(n>>1) (exact) and 2^(n - n>>1) (one rounding, into the
// denormals too, or to ±Inf), and where n > 0 g·2^min(n - 1, 127) first
// (exact), so that a tiny g keeps its digits. x is clamped to [exp32DLo,
// exp32DHi], beyond which g·e^x is 0 or ±Inf for every |g| < 2^64; where
// x > exp32DBig, g is scaled by 2^64 first (exact, denormal g included)
// and n lowered by 64, so both factors stay in range.
func exp32DY(xs, gs VecVirtual) VecVirtual {
	xc := YMM()
	VMAXPS(f32c(exp32DLo), xs, xc)
	VMINPS(f32c(exp32DHi), xc, xc)
	t := YMM()
	VBROADCASTSS(f32c(exp32Magic), t)
	VFMADD231PS(f32c(log2e32), xc, t) // t = x·log2e + magic: n in the low bits
	n := YMM()
	VSUBPS(f32c(exp32Magic), t, n)
	r := copyY(xc)
	VFNMADD231PS(f32c(ln2Hi32), n, r) // r = x - n·ln2Hi, exact
	VFNMADD231PS(f32c(ln2Lo32), n, r)
	p := poly32Y(r, exp32P)
	VMULPS(r, r, n)
	VFMADD213PS(r, n, p) // p = r²·P + r
	big := YMM()
	VCMPPS(U8(0x1e), f32c(exp32DBig), xc, big) // x > exp32DBig (GT_OQ)
	sc := YMM()
	VBROADCASTSS(f32c(1), sc)
	VBLENDVPS(big, f32c(0x1p64), sc, sc)
	VMULPS(gs, sc, sc)             // g, or g·2^64
	VPSUBD(f32c(exp32Magic), t, t) // n as an integer
	VANDPS(tconst.u32(64), big, big)
	VPSUBD(big, t, t)
	// where n > 0, g takes 2^min(n - 1, 127) before the product (exact: a
	// denormal g keeps its digits), the rest (at least 2) after
	zero, pre := YMM(), YMM()
	VPXOR(zero, zero, zero)
	VPSUBD(tconst.u32(1), t, pre)
	VPMAXSD(zero, pre, pre)
	VPMINSD(tconst.u32(127), pre, pre)
	VPSUBD(pre, t, t)
	VPADDD(tconst.u32(127), pre, pre)
	VPSLLD(U8(23), pre, pre)
	VMULPS(pre, sc, sc)
	// an overflow there is one of the result too (2^n ≥ 2 with it), but
	// fma(Inf, p, Inf) is NaN for p < 0: ±MaxFloat32 instead
	VMINPS(f32c(math.MaxFloat32), sc, sc)
	VMAXPS(f32c(-math.MaxFloat32), sc, sc)
	u := copyY(sc)
	VFMADD231PS(p, sc, u) // g·p + g
	h := YMM()
	VPSRAD(U8(1), t, h)
	VPSUBD(h, t, t)
	for _, f := range []VecVirtual{h, t} {
		VPADDD(tconst.u32(127), f, f)
		VPSLLD(U8(23), f, f)
		VMULPS(f, u, u)
	}
	VANDPS(tconst.u32(0x80000000), gs, sc)
	VORPS(sc, u, u) // g's sign where the product is 0 (g = ±0, or -0 underflowing)
	// g·(+Inf) from where e^x overflows in float64, as the float64 kernel
	// gives (NaN for g = 0)
	VCMPPS(U8(0x1d), f32c(math.Float32frombits(exp32DOverflow)), xs, big) // GE_OQ
	VBROADCASTSS(f32c(float32(math.Inf(1))), sc)
	VMULPS(gs, sc, sc)
	VBLENDVPS(big, sc, u, u)
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
	act32Fwd = map[string]func(VecVirtual) VecVirtual{"sigmoid": sigmoid32Y, "silu": silu32Y}
	act32Bwd = map[string]func(x, g VecVirtual) VecVirtual{"sigmoid": sigmoid32DY, "exp": exp32DY}
)

// act32Grad reports whether the backward kernel name is one of act32Bwd's:
// lanes with g ±Inf or NaN keep the float64 body's values there.
func act32Grad(name string) bool {
	return act32Bwd[strings.TrimSuffix(name, "GradF32AVX2")] != nil
}

// act32WideKernels generates the float64 AVX2 kernels of op o that
// act32's float32 ones replaced, to compare with (tests and benchmarks):
// sigmoidWideF32AVX2, sigmoidWideGradF32AVX2, siluWideF32AVX2,
// expWideGradF32AVX2, and expWideF32AVX2 (exp's forward was in float32
// already; the wide set is in float64 throughout).
func act32WideKernels(o top) {
	if act32Fwd[o.name] != nil || o.name == "exp" {
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

// copyY returns a new ymm register holding v.
func copyY(v VecVirtual) VecVirtual {
	c := YMM()
	VMOVAPS(v, c)
	return c
}
