package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The float32 transcendental kernels for CPUs with AVX2 and FMA but not
// AVX-512: the same ops, bodies and float64 evaluation as the AVX-512
// kernels (transcendental.go, whose op list they share), eight floats an
// iteration widened to two ymm vectors of four float64, rounded once to
// float32. exp and tanh forward compute in float32 instead, with
// transcendental32.go's algorithm and steps (so the same results as the
// AVX-512 ones), eight lanes a vector: exp32Y and tanh32Y below.
// backends/cpu/transcendental_model_test.go has the exp below in scalar Go
// (expAVX2Model), with the same constants.
//
// What AVX2 lacks is replaced as follows:
//
//   - exp: no 16-entry table (VPERMI2PD) and no VSCALEFPD. e^v = 2^n·e^r
//     with n = round(v/ln2) (the 2^52 magic-number rounding), r = v - n·ln2
//     in two multiply-adds (Cody–Waite, ln2 split so that n·ln2Hi is
//     exact), and e^r - 1 = r + r²·q(r) with q a polynomial of degree 5
//     fitted on |r| ≤ ln2/2 (relative error 2^-34.1 in e^r). 2^n is built in
//     the exponent field from the integer in the low bits of the rounded
//     value; where v may reach ±expClamp, as two factors 2^(n>>1) and
//     2^(n - n>>1), the second multiply overflowing to +Inf or rounding into
//     the (float64) denormals as VSCALEFPD does.
//   - log: the two 16-entry tables of glibc's reduction are read with
//     VGATHERQPD; the exponent is converted with the 2^52 trick.
//   - masks: compares into ymm masks and VBLENDVPD/VBLENDVPS; the sign bit
//     of x selects directly.
//   - special inputs (±Inf, NaN, and for log zeros and negatives) are found
//     with integer compares on the float32 bits; the tail uses VMASKMOVPS.
//   - constants are full-width memory operands (tconstAVX2), not
//     broadcasts.

// tconstAVX2 is the AVX2 kernels' constant pool: each value four times
// (one ymm operand).
var tconstAVX2 = &tpool{name: "tconstAVX2", lanes: 4, off: map[uint64]int{}}

// expQ is q(r) ≈ (e^r - 1 - r)/r² of degree 5, fitted (reweighted least
// squares) to the relative error of 1 + r + r²·q(r) on |r| ≤ 0.347 ⊃
// [-ln2/2, ln2/2]: 2^-34.1.
var expQ = []float64{0x1.0000003a86997p-1, 0x1.555554415b861p-3, 0x1.55548ce016e7cp-5, 0x1.1112724e2b2fep-7, 0x1.6d8dddd61d924p-10, 0x1.9f07f4b083f78p-13}

// ln2Hi has 32 significant bits, so n·ln2Hi is exact for |n| < 2^21.
const (
	ln2Hi = 0x1.62e42feep-1
	ln2Lo = math.Ln2 - ln2Hi
)

// expReduceY returns the rounded value t (n in its low 32 bits) and
// e^r - 1 for e^v = 2^n·e^r.
func expReduceY(v vv) (t, pm1 vv) {
	t = newV()
	for i := range t {
		VMOVUPD(tconst.f64(expMagic), t[i])
	}
	fma231(t, v, tconst.f64(math.Log2E)) // t = v/ln2 + magic: n in the low bits
	n := newV()
	vsub(n, t, tconst.f64(expMagic))
	r := newV()
	vmov(r, v)
	fnma231(r, n, tconst.f64(ln2Hi))
	fnma231(r, n, tconst.f64(ln2Lo))
	q := poly(r, expQ)
	r2 := newV()
	vmul(r2, r, r)
	fma213(q, r2, r) // r + r²·q
	return t, q
}

// pow2Y returns 2^(the low 32 bits of t) for an exponent in [-1022, 1023]:
// the biased exponent shifted into place (t's high bits shift out).
func pow2Y(t vv) vv {
	s := newV()
	for i := range s {
		VPADDD(tconst.slot(uint64(1023)), t[i], s[i])
		VPSLLQ(U8(52), s[i], s[i])
	}
	return s
}

// expY returns e^v for |v| ≤ 700, or for |v| ≤ expClamp when wide.
func (k *tkernel) expY(v vv, wide bool) vv {
	t, pm1 := expReduceY(v)
	if !wide {
		s := pow2Y(t)
		fma213(pm1, s, s) // s·(1 + pm1)
		return pm1
	}
	h := newV() // n>>1 and n - n>>1 in the low 32 bits
	for i := range h {
		VPSRAD(U8(1), t[i], h[i])
		VPSUBD(h[i], t[i], t[i])
	}
	s1, s2 := pow2Y(h), pow2Y(t)
	fma213(pm1, s1, s1)
	vmul(pm1, pm1, s2)
	return pm1
}

// expm1Y returns e^y - 1 for y in [0, 2·tanhClamp]: 2^n·pm1 + (2^n - 1),
// exact in both terms for n = 0 (then pm1 keeps its relative accuracy).
func (k *tkernel) expm1Y(y vv) vv {
	t, pm1 := expReduceY(y)
	s := pow2Y(t)
	sm1 := newV()
	vsub(sm1, s, k.one)
	fma213(pm1, s, sm1)
	return pm1
}

// nearRootY is nearRoot's polynomial with ymm masks: t = x - hi, a = |t|.
func nearRootY(d, t, a vv, r root) {
	m := newV()
	for i := range m {
		VCMPPD(U8(0x11), tconst.f64(rootWindow), a[i], m[i]) // LT_OQ
	}
	anyLane := YMM()
	VORPD(m[0], m[1], anyLane)
	VTESTPD(anyLane, anyLane)
	labels++
	skip := fmt.Sprintf("rootY%d", labels)
	JZ(LabelRef(skip))
	vsub(t, t, tconst.f64(r.lo))
	p := poly(t, r.c)
	vmul(p, p, t)
	for i := range m {
		VBLENDVPD(m[i], p[i], d[i], d[i])
	}
	Label(skip)
}

// logY is log's reduction (the model's logApprox) with gathers from the
// tables of 1/c and log c.
func logY(x vv) vv {
	tmp := newV()
	for i := range tmp {
		VPSUBQ(tconst.slot(logOff), x[i], tmp[i])
	}
	// k = tmp>>52 (arithmetic), in [-150, 128]: k + 2048 = (tmp ^ 2^63)>>52
	// (logical) as the low bits of 2^52
	ki := newV()
	for i := range ki {
		VPXOR(tconst.slot(1<<63), tmp[i], ki[i])
		VPSRLQ(U8(52), ki[i], ki[i])
		VPOR(tconst.f64(0x1p52), ki[i], ki[i])
	}
	vsub(ki, ki, tconst.f64(0x1p52+2048))
	z := newV()
	for i := range z {
		VPAND(tconst.slot(0xfff<<52), tmp[i], z[i])
		VPSUBQ(z[i], x[i], z[i])
		VPSRLQ(U8(48), tmp[i], tmp[i])
		VPAND(tconst.slot(15), tmp[i], tmp[i]) // the interval
	}
	invBase, logcBase := GP64(), GP64()
	LEAQ(tconst.slotRun(logInvC), invBase)
	LEAQ(tconst.slotRun(logLogC), logcBase)
	inv, logc := newV(), newV()
	for i := range inv {
		for _, g := range []struct {
			base Register
			dst  VecVirtual
		}{{invBase, inv[i]}, {logcBase, logc[i]}} {
			m := YMM()
			VMOVUPD(tconst.slot(math.MaxUint64), m) // the gather clears its mask
			VGATHERQPD(m, Mem{Base: g.base, Index: tmp[i], Scale: 8}, g.dst)
		}
	}
	one := tconst.f64(1)
	fms213(inv, z, one) // r = z·invc - 1
	r := inv
	p := poly(r, logP)
	r2 := newV()
	vmul(r2, r, r)
	fma213(p, r2, r)                       // r + r²·P
	fma231(logc, ki, tconst.f64(math.Ln2)) // k·ln2 + log c
	vadd(p, p, logc)
	return p
}

// widenY converts eight floats to two vectors of four float64.
func widenY(v VecVirtual) vv {
	d := newV()
	h := XMM()
	VCVTPS2PD(v.AsX(), d[0])
	VEXTRACTF128(U8(1), v, h)
	VCVTPS2PD(h, d[1])
	return d
}

// transcendentalKernelY generates one AVX2 kernel.
func transcendentalKernelY(f tfunc) {
	sig := "func(dst, x *float32, n int, sp *[2]float32)"
	if f.bwd {
		sig = "func(dst, x, grad *float32, n int, sp *[2]float32)"
	}
	TEXT(f.name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(f.doc)
	dst, x, n := Load(Param("dst"), GP64()), Load(Param("x"), GP64()), Load(Param("n"), GP64())
	var g Register
	if f.bwd {
		g = Load(Param("grad"), GP64())
	}
	sp := Load(Param("sp"), GP64())
	k := &tkernel{one: bcast(tconst.f64(1))}

	// block computes eight results from x (and g) at the pointers, with
	// the lane mask m on loads and stores when m is not nil.
	// x is loaded again after the body (from L1), and g only then: of the
	// sixteen ymm registers the bodies of log and erf need all but two.
	block := func(tag string, m Op) {
		load := func(p Register) VecVirtual {
			v := YMM()
			if m == nil {
				VMOVUPS(Mem{Base: p}, v)
			} else {
				VMASKMOVPS(Mem{Base: p}, m, v)
			}
			return v
		}
		in := load(x)
		if f.abs {
			VANDPS(tconst.u32(0x7fffffff), in, in)
		}
		var res, gs VecVirtual
		if f.grad32 != nil {
			gs = load(g)
			res = f.grad32(in, gs)
		} else if f.body32 != nil {
			res = f.body32(k, in)
		} else {
			r := f.body(k, widenY(in))
			if f.bwd {
				gs = load(g)
				vmul(r, r, widenY(gs))
			}
			lo, hi := XMM(), XMM()
			VCVTPD2PSY(r[0], lo)
			VCVTPD2PSY(r[1], hi)
			res = YMM()
			VINSERTF128(U8(1), hi, lo.AsY(), res)
		}
		xs, ax := load(x), YMM()
		VANDPS(tconst.u32(0x7fffffff), xs, ax)
		if f.abs { // x's sign onto |f|
			s := YMM()
			VANDPS(tconst.u32(0x80000000), xs, s)
			VORPS(s, res, res)
		}
		// special inputs: ±Inf and NaN (and for log zeros and negatives)
		store := f.name + "_store" + tag
		spc := YMM()
		VPCMPGTD(tconst.u32(0x7f7fffff), ax, spc) // |x| beyond the finite
		if f.log {
			z := YMM()
			VPCMPEQD(tconst.u32(0), ax, z)
			VPOR(z, spc, spc)
			VPOR(xs, spc, spc) // sign bits: negatives
			mb := GP32()
			VMOVMSKPS(spc, mb)
			TESTL(mb, mb)
		} else {
			if f.grad32 != nil { // and g: |g| ≥ 2^64, ±Inf and NaN
				ga := YMM()
				VANDPS(tconst.u32(0x7fffffff), gs, ga)
				VPCMPGTD(tconst.u32(belowHugeGrad), ga, ga)
				VPOR(ga, spc, spc)
			}
			VPTEST(spc, spc)
		}
		JZ(LabelRef(store))
		if f.grad32 != nil {
			// |g| ≥ 2^64 (and ±Inf, NaN): beyond the float32 body's range
			// (its clamp of |x| and its unscaled products), those lanes
			// take the float64 body, as the float64 kernel computes them.
			// res goes to dst meanwhile (the body needs the registers),
			// and x and g are loaded again after it.
			wide := f.name + "_wide" + tag
			big := YMM()
			VANDPS(tconst.u32(0x7fffffff), gs, big)
			VPCMPGTD(tconst.u32(belowHugeGrad), big, big)
			VPTEST(big, big)
			JZ(LabelRef(wide))
			if m == nil {
				VMOVUPS(res, Mem{Base: dst})
			} else {
				VMASKMOVPS(res, m, Mem{Base: dst})
			}
			r := f.body(k, widenY(load(x)))
			vmul(r, r, widenY(load(g)))
			lo, hi := XMM(), XMM()
			VCVTPD2PSY(r[0], lo)
			VCVTPD2PSY(r[1], hi)
			w := YMM()
			VINSERTF128(U8(1), hi, lo.AsY(), w)
			VMOVUPS(Mem{Base: dst}, res) // masked lanes: not stored, never read
			VMOVUPS(Mem{Base: x}, xs)
			VANDPS(tconst.u32(0x7fffffff), xs, ax)
			VMOVUPS(Mem{Base: g}, gs)
			VANDPS(tconst.u32(0x7fffffff), gs, big)
			VPCMPGTD(tconst.u32(belowHugeGrad), big, big)
			VBLENDVPS(big, w, res, res)
			Label(wide)
		}
		mk := YMM()
		if f.grad32 != nil && !act32Grad(f.name) {
			// g ±Inf or NaN (the float32 body's two-term products give
			// NaN there): g with the derivative's sign, negative below
			// its zero at -a0
			v := YMM()
			VCMPPS(U8(0x11), f32c(-a0Hi32), xs, v) // x < -a0 (LT_OQ)
			VANDPS(tconst.u32(0x80000000), v, v)
			VXORPS(gs, v, v)
			VANDPS(tconst.u32(0x7fffffff), gs, mk)
			VPCMPGTD(tconst.u32(0x7f7fffff), mk, mk)
			VBLENDVPS(mk, v, res, res)
		}
		if f.log { // forward only: negatives give NaN, then zeros -Inf
			VBLENDVPS(xs, tconst.u32(0x7fc00000), res, res)
			VPCMPEQD(tconst.u32(0), ax, mk)
			VBLENDVPS(mk, tconst.u32(0xff800000), res, res)
		}
		apply := func(bits uint32, c Mem) {
			v := YMM()
			VBROADCASTSS(c, v)
			if f.bwd {
				VMULPS(gs, v, v)
			}
			VPCMPEQD(tconst.u32(bits), xs, mk)
			VBLENDVPS(mk, v, res, res)
		}
		apply(0x7f800000, Mem{Base: sp})
		apply(0xff800000, Mem{Base: sp, Disp: 4})
		VPCMPGTD(tconst.u32(0x7f800000), ax, mk) // NaN in, quiet NaN out
		q := YMM()
		VADDPS(xs, xs, q)
		VBLENDVPS(mk, q, res, res)
		Label(store)
		if m == nil {
			VMOVUPS(res, Mem{Base: dst})
		} else {
			VMASKMOVPS(res, m, Mem{Base: dst})
		}
	}

	Label(f.name + "_loop")
	CMPQ(n, U32(8))
	JB(LabelRef(f.name + "_tail"))
	block("", nil)
	ADDQ(U32(32), x)
	ADDQ(U32(32), dst)
	if f.bwd {
		ADDQ(U32(32), g)
	}
	SUBQ(U32(8), n)
	JMP(LabelRef(f.name + "_loop"))

	Label(f.name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(f.name + "_done"))
	nx, m := XMM(), YMM()
	VMOVQ(n, nx)
	VPBROADCASTD(nx, m)
	VPCMPGTD(tconst.slotRun([]float64{
		math.Float64frombits(0 | 1<<32), math.Float64frombits(2 | 3<<32),
		math.Float64frombits(4 | 5<<32), math.Float64frombits(6 | 7<<32),
	}), m, m) // lanes below n
	block("_tail", m)
	Label(f.name + "_done")
	VZEROUPPER()
	RET()
}

// transcendentalKernelsAVX2 generates every AVX2 kernel, then their
// constant pool.
func transcendentalKernelsAVX2() {
	ymmMode, tconst = true, tconstAVX2
	defer func() { ymmMode, tconst = false, tconst512 }()
	fwd32 := map[string]func(VecVirtual) VecVirtual{"exp": exp32Y, "tanh": tanh32Y, "gelu": gelu32F}
	fwd32["geluTanh"] = geluTanh32F // transcendental_gelutanh32.go
	fwd32["log"] = log32Y           // transcendental_log32.go
	for name, f := range act32Fwd { // sigmoid and SiLU (transcendental_act32.go)
		fwd32[name] = func(x VecVirtual) VecVirtual { return f(lanes{x})[0] }
	}
	for _, o := range transcendentalOps() {
		fn := o.name + "F32AVX2"
		in, body32 := "float64", (func(*tkernel, VecVirtual) VecVirtual)(nil)
		if f := fwd32[o.name]; f != nil {
			in, body32 = "float32", func(_ *tkernel, x VecVirtual) VecVirtual { return f(x) }
		}
		transcendentalKernelY(tfunc{
			name: fn, abs: o.abs, log: o.log, body: o.fwd, body32: body32,
			doc: fmt.Sprintf("%s sets dst[i] = %s(x[i]) for i < n (AVX2+FMA, in %s), and sp[0], sp[1] where x[i] is +Inf, -Inf.", fn, o.name, in),
		})
		gn := o.name + "GradF32AVX2"
		ing, grad32 := "float64", (func(x, g VecVirtual) VecVirtual)(nil)
		if o.name == "gelu" {
			ing, grad32 = "float32", gelu32DF
		}
		if f := act32Bwd[o.name]; f != nil {
			ing, grad32 = "float32", func(x, g VecVirtual) VecVirtual { return f(lanes{x}, lanes{g})[0] }
		}
		transcendentalKernelY(tfunc{
			name: gn, bwd: true, body: o.bwd, grad32: grad32,
			doc: fmt.Sprintf("%s sets dst[i] = grad[i]·%s'(x[i]) for i < n (AVX2+FMA, in %s), and grad[i]·sp[0], grad[i]·sp[1] where x[i] is +Inf, -Inf.", gn, o.name, ing),
		})
		if o.name == "gelu" { // the float64 kernel too, to compare with (tests and benchmarks)
			transcendentalKernelY(tfunc{
				name: "geluWideF32AVX2", abs: o.abs, log: o.log, body: o.fwd,
				doc: fmt.Sprintf("geluWideF32AVX2 sets dst[i] = gelu(x[i]) for i < n in float64 (AVX2+FMA), as %s did before it computed in float32: kept to compare with in the tests and benchmarks.", fn),
			})
			wn := "geluWideGradF32AVX2"
			transcendentalKernelY(tfunc{
				name: wn, bwd: true, body: o.bwd,
				doc: fmt.Sprintf("%s sets dst[i] = grad[i]·gelu'(x[i]) for i < n in float64 (AVX2+FMA), as %s did before it computed in float32: kept to compare with in the tests and benchmarks.", wn, gn),
			})
		}
		if o.name == "geluTanh" { // the float64 forward too, to compare with
			transcendentalKernelY(tfunc{
				name: "geluTanhWideF32AVX2", body: o.fwd,
				doc: fmt.Sprintf("geluTanhWideF32AVX2 sets dst[i] = geluTanh(x[i]) for i < n in float64 (AVX2+FMA), as %s did before it computed in float32: kept to compare with in the tests and benchmarks.", fn),
			})
		}
		act32WideKernels(o)
		log32Kernels(o)
	}
	geluPairKernelsAVX2()
	act32PairKernelsAVX2()
	geluTanhPairKernelAVX2()
	tconst.emit()
}

// The float32 forward kernels of exp and tanh (transcendental32.go's
// algorithms, constants and rounding steps, so the same results): eight
// lanes a ymm vector. VSCALEFPS becomes two multiplies by powers of two
// built in the exponent field, 2^(n>>1) and then 2^(n - n>>1): for the
// clamped x, n is in [-174, 145], the first product is exact and the
// second rounds once into the denormals, or overflows to +Inf, as
// VSCALEFPS does.

// poly32Y returns c[0] + z·(c[1] + z·(…)) in float32.
func poly32Y(z VecVirtual, c []float32) VecVirtual {
	acc := YMM()
	n := len(c) - 1
	VBROADCASTSS(f32c(c[n]), acc)
	for i := n - 1; i >= 0; i-- {
		VFMADD213PS(f32c(c[i]), z, acc) // acc = z·acc + c[i]
	}
	return acc
}

// exp32eY returns e^x for x within [exp32Lo, exp32Hi].
func exp32eY(x VecVirtual) VecVirtual {
	t := YMM()
	VBROADCASTSS(f32c(exp32Magic), t)
	VFMADD231PS(f32c(log2e32), x, t) // t = x·log2e + magic: n in the low bits
	n := YMM()
	VSUBPS(f32c(exp32Magic), t, n)
	r := YMM()
	VMOVAPS(x, r)
	VFNMADD231PS(f32c(ln2Hi32), n, r) // r = x - n·ln2Hi, exact
	VFNMADD231PS(f32c(ln2Lo32), n, r)
	p := poly32Y(r, exp32P)
	r2 := YMM()
	VMULPS(r, r, r2)
	VFMADD213PS(r, r2, p) // p = r²·P + r
	VADDPS(f32c(1), p, p)
	VPSUBD(f32c(exp32Magic), t, t) // n as an integer
	h := YMM()
	VPSRAD(U8(1), t, h)
	VPSUBD(h, t, t)
	for _, s := range []VecVirtual{h, t} {
		VPADDD(tconst.u32(127), s, s)
		VPSLLD(U8(23), s, s)
		VMULPS(s, p, p)
	}
	return p
}

// exp32Y is exp's float32 body.
func exp32Y(x VecVirtual) VecVirtual {
	c := YMM()
	VMAXPS(f32c(exp32Lo), x, c)
	VMINPS(f32c(exp32Hi), c, c)
	return exp32eY(c)
}

// tanh32Y is tanh's float32 body, on a = |x|.
func tanh32Y(a VecVirtual) VecVirtual {
	y := YMM()
	VMINPS(f32c(tanh32Clamp), a, y)
	VADDPS(y, y, y)
	e := exp32eY(y)
	VADDPS(f32c(1), e, e)
	two := YMM()
	VBROADCASTSS(f32c(2), two)
	VDIVPS(e, two, e) // 2/(e^(2a) + 1)
	one := YMM()
	VBROADCASTSS(f32c(1), one)
	VSUBPS(e, one, e) // 1 - that
	w := YMM()
	VMULPS(a, a, w)
	q := poly32Y(w, tanh32Q)
	VMULPS(a, w, w)      // a³
	VFMADD213PS(a, w, q) // a + a³·Q
	small := YMM()
	VCMPPS(U8(0x11), f32c(tanh32Small), a, small) // a < tanh32Small (LT_OQ)
	VBLENDVPS(small, q, e, e)
	return e
}
