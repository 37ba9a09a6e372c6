package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The float32 transcendental kernels (AVX-512): exp, log, tanh, erf,
// sigmoid, SiLU and GELU (erf and tanh forms), forward (dst = f(x)) and
// backward (dst = g·f'(x), one pass over x and g). Each iteration widens
// sixteen floats to two vectors of eight float64 (the two halves' work
// interleaved, instruction by instruction), evaluates approximations
// accurate to 2^-33 relative or better in float64, rounds once back
// to float32, and replaces the lanes whose input is ±Inf or NaN (found with
// one VFPCLASSPS per iteration; the fix-up is skipped when there are none)
// with the values the caller passes for them, computed from the op's
// definition. A partial last iteration uses masked loads and stores. (The
// stores are ordinary ones even for outputs beyond the caches: VMOVNTPS
// made GELU and exp 20 to 40% slower on the Zen 5 these were tuned on.)
//
// backends/cpu/transcendental_model_test.go has the same algorithms in
// scalar Go, with the same constants, and explains them: exp by a 16-entry
// table of 2^(j/16) (VPERMI2PD) and a polynomial of degree 4 (5 for expm1),
// with VSCALEFPD for the power of two; log by glibc's 16-interval
// reduction (tables of 1/c and log c looked up the same way); erfc by
// e^(-z²) times a rational function of degree 6/7 (5/6 for GELU) with one
// VDIVPD, which on Zen 5 beat a VRCP14PD with two Newton steps; tanh and
// sigmoid by one division each; polynomials in x - x0 near the zeros of
// the GELU and SiLU derivatives. The tests check both against float64
// references: within 0.52 ulp. (exp and tanh forward compute in float32
// instead: transcendental32.go; so do sigmoid's, SiLU's, tanh's and
// GELU's kernels of transcendental_avx512f32.go, SiLU's backward with
// transcendental_silu32.go's body. The AVX2 kernels, generated from the
// same op bodies: transcendental_avx2.go.)

// tpool is a constant pool of the kernels: float64 values (and 32-bit
// patterns, in the low half of a slot) read with embedded broadcasts, or,
// for the AVX2 kernels, each four times, read as whole ymm operands.
type tpool struct {
	name  string
	lanes int // copies of each value: 1 for broadcasts, 4 for ymm operands, 8 for zmm
	off   map[uint64]int
	bits  []uint64
}

// tconst is the pool the helpers below take constants from: tconst512
// while the AVX-512 kernels are generated, tconstAVX2 for the AVX2 ones.
var (
	tconst512 = &tpool{name: "tconst", lanes: 1, off: map[uint64]int{}}
	tconst    = tconst512
)

func (p *tpool) slot(b uint64) Mem {
	o, ok := p.off[b]
	if !ok {
		o = 8 * len(p.bits)
		p.off[b] = o
		for range p.lanes {
			p.bits = append(p.bits, b)
		}
	}
	return p.at(o)
}

// at is the pool's memory at byte offset o.
func (p *tpool) at(o int) Mem {
	return Mem{Symbol: Symbol{Name: p.name, Static: true}, Base: StaticBase, Disp: o}
}

// f64 is a float64 constant in memory; u32 a 32-bit pattern (in every
// 32-bit lane of a ymm slot).
func (p *tpool) f64(v float64) Mem { return p.slot(math.Float64bits(v)) }
func (p *tpool) u32(v uint32) Mem {
	if p.lanes > 1 {
		return p.slot(uint64(v) | uint64(v)<<32)
	}
	return p.slot(uint64(v))
}

// emit writes the pool (after all the kernels that use it).
func (p *tpool) emit() {
	GLOBL(p.name, RODATA|NOPTR)
	for i, b := range p.bits {
		DATA(8*i, U64(b))
	}
}

// Constants shared with backends/cpu/transcendental_model_test.go (and
// geluK1, geluK2, geluK3 and the root polynomials with transcendental.go).
// belowHugeGrad is the bits of the largest float32 below 2^64: the
// float32 kernels' bodies take |g| up to it, and |g| above it as an
// integer (|g| ≥ 2^64, ±Inf, NaN) goes to a float64 body.
const belowHugeGrad = 0x5f7fffff

const (
	expMagic  = 0x1.8p52
	expClamp  = 1000
	log2eBy16 = 16 / math.Ln2
	ln2by16Hi = 0x1.62e42fefap-05
	ln2by16Lo = math.Ln2/16 - ln2by16Hi

	logOff = 0x3FE6600000000000

	erfMaxZ  = 6 // erf's clamp; erfc's fit holds on [0, 11]
	erfSmall = 1.0 / 16
	erfS0    = 2 / math.SqrtPi
	erfS1    = -2 / (3 * math.SqrtPi)
	erfS2    = 2 / (10 * math.SqrtPi)
	erfS3    = -2 / (42 * math.SqrtPi)

	tanhClamp     = 60
	sigmoidClamp  = 300
	geluTanhClamp = 600

	geluC  = 0.7978845608028654
	geluK1 = 2 * geluC
	geluK2 = 2 * geluC * 0.044715
	geluK3 = 6 * geluC * 0.044715

	invSqrt2   = 1 / math.Sqrt2
	invSqrt2Pi = 1 / (math.Sqrt2 * math.SqrtPi)

	rootWindow = 1.0 / 32
	geluMaxA   = 15.5 // 11·√2 and a little less
)

// geluCoefficients returns erfcP5 and erfcQ6 rescaled to take |x| instead
// of z = |x|/√2, P halved: P'(|x|)/Q'(|x|) = e^(x²/2)·erfc(|x|/√2)/2 (the
// same computation as the model's geluP and geluQ).
func geluCoefficients() (p, q []float64) {
	scale := 1.0
	for i := range erfcQ6 {
		if i < len(erfcP5) {
			p = append(p, 0.5*erfcP5[i]*scale)
		}
		q = append(q, erfcQ6[i]*scale)
		scale *= invSqrt2
	}
	return p, q
}

var (
	expE     = []float64{0x1.00000006d99e1p-1, 0x1.55571d829453bp-3, 0x1.5552102101450p-5}
	expC     = []float64{0x1.fffffffe5bdaep-2, 0x1.55555555d30e4p-3, 0x1.55570aaa97b24p-5, 0x1.111171bbf8920p-7}
	logP     = []float64{-0x1.000000000b875p-1, 0x1.555552225c7d5p-2, -0x1.fffff6d4ccdddp-3, 0x1.99f567725f7bap-3, -0x1.55b2eabd36199p-3}
	logInvC  = []float64{0x1.661ec6a5122f9p+0, 0x1.571ed3c506b3ap+0, 0x1.49539e3b2d067p+0, 0x1.3c995a47babe7p+0, 0x1.30d190130d190p+0, 0x1.25e22708092f1p+0, 0x1.1bb4a4046ed29p+0, 0x1.12358e75d3033p+0, 0x1.0953f39010954p+0, 0x1p+0, 0x1.e573ac901e574p-1, 0x1.ca4b3055ee191p-1, 0x1.b2036406c80d9p-1, 0x1.9c2d14ee4a102p-1, 0x1.886e5f0abb04ap-1, 0x1.767dce434a9b1p-1}
	logLogC  = []float64{-0x1.57bf753c8d1fbp-2, -0x1.2bef07cdc9355p-2, -0x1.01eae5626c691p-2, -0x1.b31d8575bce3bp-3, -0x1.6574ebe8c1339p-3, -0x1.1aa2b7e23f729p-3, -0x1.a4e7640b1bc38p-4, -0x1.1973bd1465561p-4, -0x1.252f32f8d1840p-5, 0, 0x1.b42dd711971b9p-5, 0x1.c5e548f5bc743p-4, 0x1.526e5e3a1b438p-3, 0x1.bc286742d8cd4p-3, 0x1.1058bf9ae4ad4p-2, 0x1.404308686a7e4p-2}
	erfcP    = []float64{0x1.000000000176ap+0, 0x1.9f557fb44e51bp+0, 0x1.4ae3953b4753ep+0, 0x1.3d5c025266e79p-1, 0x1.7e99afd95f731p-3, 0x1.138ac55b61065p-5, 0x1.7913eedfa259dp-9}
	erfcP5   = []float64{0x1.ffffffff2a146p-1, 0x1.70f39fbc02033p+0, 0x1.026c5f2e9a2a2p+0, 0x1.a17ada2207196p-2, 0x1.832de90357e66p-4, 0x1.507871d871937p-7}
	erfcQ6   = []float64{1, 0x1.48e88a4408f2fp+1, 0x1.74585497df941p+1, 0x1.df6c10bcb4692p+0, 0x1.76a6c8d5c2e61p-1, 0x1.57207903e62bbp-3, 0x1.2a30841d77f66p-6}
	erfcQ    = []float64{1, 0x1.60197a5cbaa5bp+1, 0x1.b2bf0b282e60bp+1, 0x1.3a165aac153fdp+1, 0x1.20e324cc88254p+0, 0x1.55ae37d27c49ep-2, 0x1.e862c9adb3a69p-5, 0x1.4e2d304755848p-8}
	geluRoot = root{-0x1.80ead197f00b4p-1, 0x1.13e74c58cada8p-56, []float64{0x1.b9d98fa5a3b5fp-2, 0x1.8d9a941ddf61ap-2, -0x1.2a2efc588f630p-6, -0x1.d2fa4ac53b847p-4, -0x1.e3d0becedc4cep-7, 0x1.3e19df5b577d9p-6}}
	siluRoot = root{-0x1.474973c84120bp+0, -0x1.f8d74bc9ac154p-54, []float64{0x1.be141046055c3p-3, 0x1.2c563458cba1cp-3, 0x1.353eb4fe11684p-6, -0x1.f2d0e2edfc1e8p-7, -0x1.b0e48cf3d4692p-8, 0x1.09c33e91274f8p-13}}
	gtRoot   = root{-0x1.81429f9e97e4cp-1, -0x1.406439d087aa4p-55, []float64{0x1.b8bacd2c97656p-2, 0x1.8cd1a2b2fb18dp-2, -0x1.029618f5332b0p-6, -0x1.d2b771ca8099cp-4, -0x1.102a32c446f4bp-6, 0x1.425c340df544fp-6}}
)

// root is a derivative's polynomial near its zero hi + lo.
type root struct {
	hi, lo float64
	c      []float64
}

// vv holds one value as two vectors of eight float64 (the low and high
// halves of sixteen floats); a constant loaded into a register is the same
// register twice.
type vv [2]VecVirtual

func newV() vv {
	if ymmMode {
		return vv{YMM(), YMM()}
	}
	return vv{ZMM(), ZMM()}
}

// ymmMode is set while the AVX2 kernels are generated
// (transcendental_avx2.go): vv halves are ymm registers of four float64,
// and constants are full-width memory operands instead of broadcasts.
var ymmMode bool

// operand of half i: a vv's register, or a constant's memory
func half(b any, i int) (Op, bool) {
	switch b := b.(type) {
	case vv:
		return b[i], false
	case Mem:
		return b, true
	}
	panic(fmt.Sprintf("gen: operand %T", b))
}

type inst func(...Op)

// op3 emits dst = a ∘ b for each half (Go operand order: b, a, dst), with
// the embedded-broadcast form when b is a constant (with AVX2, a full-width
// memory operand).
func op3(reg, bcst inst, dst, a vv, b any) {
	for i := range dst {
		if o, isMem := half(b, i); isMem && !ymmMode {
			bcst(o, a[i], dst[i])
		} else {
			reg(o, a[i], dst[i])
		}
	}
}

func vadd(dst, a vv, b any) { op3(VADDPD, VADDPD_BCST, dst, a, b) }
func vsub(dst, a vv, b any) { op3(VSUBPD, VSUBPD_BCST, dst, a, b) }
func vmul(dst, a vv, b any) { op3(VMULPD, VMULPD_BCST, dst, a, b) }
func vdiv(dst, a vv, b any) { op3(VDIVPD, VDIVPD_BCST, dst, a, b) }

// vmin and vmax: min(a, b) and max(a, b) (b when either is NaN; NaN lanes
// are replaced at the end anyway)
func vmin(dst, a vv, b any) { op3(VMINPD, VMINPD_BCST, dst, a, b) }
func vmax(dst, a vv, b any) { op3(VMAXPD, VMAXPD_BCST, dst, a, b) }
func vand(dst, a vv, b any) { op3(VANDPD, VANDPD_BCST, dst, a, b) }
func vxor(dst, a vv, b any) { op3(VXORPD, VXORPD_BCST, dst, a, b) }

// fma231: acc = a·b + acc; fnma231: acc = acc - a·b; fma213: acc = a·acc + c
func fma231(acc, a vv, b any)  { op3(VFMADD231PD, VFMADD231PD_BCST, acc, a, b) }
func fnma231(acc, a vv, b any) { op3(VFNMADD231PD, VFNMADD231PD_BCST, acc, a, b) }
func fma213(acc, a vv, c any)  { op3(VFMADD213PD, VFMADD213PD_BCST, acc, a, c) }
func fms213(acc, a vv, c any)  { op3(VFMSUB213PD, VFMSUB213PD_BCST, acc, a, c) }

func vmov(dst, src vv) {
	for i := range dst {
		VMOVAPD(src[i], dst[i])
	}
}

// bcast loads a constant into a register (both halves).
func bcast(c Mem) vv {
	r := newV()[0]
	VBROADCASTSD(c, r)
	return vv{r, r}
}

// poly returns c[0] + z·(c[1] + z·(…)) by Horner's rule.
// The leading coefficient is broadcast from memory (a load, not one of the
// multiply-add pipes that bound these kernels).
func poly(z vv, c []float64) vv {
	acc := newV()
	n := len(c) - 1
	for i := range acc {
		VBROADCASTSD(tconst.f64(c[n]), acc[i])
	}
	for i := n - 1; i >= 0; i-- {
		fma213(acc, z, tconst.f64(c[i]))
	}
	return acc
}

// tkernel is the state of one kernel being generated: the constants it
// keeps in registers across the loop.
type tkernel struct {
	magic32, one32     VecVirtual // float32 kernels
	magic, one, t0, t1 vv
	off, inv0, inv1    vv // log
	logc0, logc1       vv
}

// expParts reduces v (|v| ≤ expClamp) as the model's expReduce: it
// returns the table entry 2^(j/16), the exponent k/16 (VSCALEFPD takes its
// floor) and e^r - 1 from r + r²·q(r) with q's coefficients c.
func (k *tkernel) expParts(v vv, c []float64) (tbl, e, pm1 vv) {
	t := newV()
	vmov(t, k.magic)
	fma231(t, v, tconst.f64(log2eBy16)) // t = v·16/ln2 + magic: k in the low bits
	kf := newV()
	vsub(kf, t, k.magic)
	r := newV()
	vmov(r, v)
	fnma231(r, kf, tconst.f64(ln2by16Hi))
	fnma231(r, kf, tconst.f64(ln2by16Lo))
	q := poly(r, c)
	r2 := newV()
	vmul(r2, r, r)
	fma213(q, r2, r) // r + r²·q
	for i := range t {
		VPERMI2PD(k.t1[i], k.t0[i], t[i]) // 2^(j/16), j = k mod 16 from t's low bits
	}
	vmul(kf, kf, tconst.f64(1.0/16))
	return t, kf, q
}

// exp returns e^v for |v| ≤ expClamp (with AVX2 for |v| ≤ 700: expWide
// takes the whole range).
func (k *tkernel) exp(v vv) vv {
	if ymmMode {
		return k.expY(v, false)
	}
	tbl, e, pm1 := k.expParts(v, expE)
	fma213(pm1, tbl, tbl) // tbl·(1 + pm1)
	out := newV()
	for i := range out {
		VSCALEFPD(e[i], pm1[i], out[i])
	}
	return out
}

// expClamped returns e^v, v clamped to ±expClamp first.
func (k *tkernel) expClamped(v vv) vv {
	c := newV()
	vmax(c, v, tconst.f64(-expClamp))
	vmin(c, c, tconst.f64(expClamp))
	return k.expWide(c)
}

// expWide returns e^v for |v| ≤ expClamp (exp takes that whole range with
// AVX-512; with AVX2 it takes |v| ≤ 700 and this one the rest).
func (k *tkernel) expWide(v vv) vv {
	if ymmMode {
		return k.expY(v, true)
	}
	return k.exp(v)
}

// expm1 returns e^y - 1 for y in [0, 2·tanhClamp].
func (k *tkernel) expm1(y vv) vv {
	if ymmMode {
		return k.expm1Y(y)
	}
	tbl, e, pm1 := k.expParts(y, expC)
	s := newV()
	for i := range s {
		VSCALEFPD(e[i], tbl[i], s[i])
	}
	sm1 := newV()
	vsub(sm1, s, k.one)
	fma213(pm1, s, sm1) // s·pm1 + (s - 1)
	return pm1
}

// neg returns -v.
func neg(v vv) vv {
	out := newV()
	vxor(out, v, tconst.f64(math.Copysign(0, -1)))
	return out
}

// erfcScaled returns P(z)/Q(z) ≈ e^(z²)·erfc(z).
func erfcScaled(z vv) vv {
	p, q := poly(z, erfcP), poly(z, erfcQ)
	vdiv(p, p, q)
	return p
}

// labels numbers the labels that helpers place, which must be unique in a
// function (the block is emitted twice).
var labels int

// nearRoot replaces d by the root polynomial where x is within rootWindow
// of the derivative's zero; the polynomial is skipped when no lane is.
func nearRoot(d, x vv, r root) {
	t := newV()
	vsub(t, x, tconst.f64(r.hi))
	a := newV()
	vand(a, t, tconst.f64(math.Float64frombits(1<<63-1)))
	if ymmMode {
		nearRootY(d, t, a, r)
		return
	}
	m := [2]OpmaskVirtual{K(), K()}
	for i := range m {
		VCMPPD_BCST(U8(0x11), tconst.f64(rootWindow), a[i], m[i]) // LT_OQ
	}
	any := K()
	KORW(m[0], m[1], any)
	KORTESTW(any, any)
	labels++
	skip := fmt.Sprintf("root%d", labels)
	JZ(LabelRef(skip))
	vsub(t, t, tconst.f64(r.lo))
	p := poly(t, r.c)
	vmul(p, p, t)
	for i := range m {
		VMOVAPD(p[i], m[i], d[i])
	}
	Label(skip)
}

// sigmoidParts returns E = e^-x and s = 1/(1+E) with x clamped to
// ±sigmoidClamp.
func (k *tkernel) sigmoidParts(x vv) (e, s vv) {
	c := newV()
	vmax(c, x, tconst.f64(-sigmoidClamp))
	vmin(c, c, tconst.f64(sigmoidClamp))
	e = k.exp(neg(c))
	s = newV()
	vadd(s, e, k.one)
	vdiv(s, k.one, s)
	return e, s
}

// geluParts returns Φ(x) and E = e^(-x²/2).
func (k *tkernel) geluParts(x vv) (phi, e vv) {
	w := newV()
	vmul(w, x, x)
	vmul(w, w, tconst.f64(-0.5))
	vmax(w, w, tconst.f64(-expClamp)) // -x²/2 ≤ 0
	e = k.expWide(w)
	a := newV()
	vand(a, x, tconst.f64(math.Float64frombits(1<<63-1)))
	vmin(a, a, tconst.f64(geluMaxA))
	gp, gq := geluCoefficients()
	h := poly(a, gp)
	vdiv(h, h, poly(a, gq))
	vmul(h, h, e) // erfc(|x|/√2)/2
	phi = newV()
	vsub(phi, k.one, h)
	for i := range phi {
		if ymmMode {
			VBLENDVPD(x[i], h[i], phi[i], phi[i]) // x's sign: Φ = h for negative x
			continue
		}
		m := K()
		VPMOVQ2M(x[i], m) // x's sign: Φ = h for negative x
		VMOVAPD(h[i], m, phi[i])
	}
	return phi, e
}

// geluTanhParts returns E = e^(-2u) and S = 1/(1+E), 2u clamped.
func (k *tkernel) geluTanhParts(x vv) (e, s vv) {
	w := newV()
	vmul(w, x, x)
	vmul(w, w, tconst.f64(geluK2))
	vadd(w, w, tconst.f64(geluK1))
	vmul(w, w, x) // 2u
	vmax(w, w, tconst.f64(-geluTanhClamp))
	vmin(w, w, tconst.f64(geluTanhClamp))
	e = k.exp(neg(w))
	s = newV()
	vadd(s, e, k.one)
	vdiv(s, k.one, s)
	return e, s
}

// log returns log(x) for finite x > 0 (garbage elsewhere: the caller
// replaces those lanes).
func (k *tkernel) log(x vv) vv {
	if ymmMode {
		return logY(x)
	}
	tmp := newV()
	for i := range tmp {
		VPSUBQ(k.off[i], x[i], tmp[i])
	}
	ki := newV()
	for i := range ki {
		VPSRAQ(U8(52), tmp[i], ki[i])
		VCVTQQ2PD(ki[i], ki[i])
	}
	z := newV()
	for i := range z {
		VPANDQ_BCST(tconst.slot(0xfff<<52), tmp[i], z[i])
		VPSUBQ(z[i], x[i], z[i])
		VPSRLQ(U8(48), tmp[i], tmp[i]) // the interval in bits 0-3
	}
	inv, logc := newV(), tmp
	for i := range inv {
		VMOVAPD(tmp[i], inv[i])
		VPERMI2PD(k.inv1[i], k.inv0[i], inv[i])
		VPERMI2PD(k.logc1[i], k.logc0[i], logc[i]) // the index register becomes log c
	}
	fms213(inv, z, k.one) // r = z·invc - 1
	r := inv
	p := poly(r, logP)
	r2 := newV()
	vmul(r2, r, r)
	fma213(p, r2, r)                       // r + r²·P
	fma231(logc, ki, tconst.f64(math.Ln2)) // k·ln2 + log c
	vadd(p, p, logc)
	return p
}

// tableRegs loads a 16-entry float64 table into two registers.
func tableRegs(t []float64) (lo, hi vv) {
	a, b := ZMM(), ZMM()
	VMOVUPD(tconst.slotRun(t[:8]), a)
	VMOVUPD(tconst.slotRun(t[8:]), b)
	return vv{a, a}, vv{b, b}
}

// slotRun appends values as consecutive slots (not shared with others).
func (p *tpool) slotRun(t []float64) Mem {
	o := 8 * len(p.bits)
	for _, v := range t {
		p.bits = append(p.bits, math.Float64bits(v))
	}
	return p.at(o)
}

// tfunc describes one kernel: what it computes per pair of halves.
type tfunc struct {
	name, doc string
	bwd       bool
	abs       bool                      // computed on |x|, the sign copied to the result after
	log       bool                      // log forward: its tables, and zeros and negative inputs special too
	needsExp  bool                      // exp's table in registers
	body      func(k *tkernel, x vv) vv // f(x) or f'(x) in float64
	// body32, when set, replaces body: f(x) from sixteen float32 lanes,
	// computed in float32 (no widening)
	body32 func(k *tkernel, x VecVirtual) VecVirtual
	// grad32, when set, replaces body for a backward kernel: g·f'(x) from
	// eight (AVX2) or sixteen (AVX-512, zmm32) float32 lanes of x and g,
	// computed in float32; body stays for the lanes with |g| ≥ 2^64
	grad32 func(x, g VecVirtual) VecVirtual
	// wideBelow, when not 0, is where grad32 stops (AVX-512): the lanes
	// with x < wideBelow take the float64 body too; with gFinite, grad32
	// covers every finite g, and only g ±Inf and NaN take it
	wideBelow float32
	gFinite   bool
}

// transcendentalKernel generates one kernel.
func transcendentalKernel(f tfunc) {
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

	k := &tkernel{}
	if f.body32 == nil && f.grad32 == nil {
		k.one = bcast(tconst.f64(1))
	}
	if f.log {
		k.off = bcast(tconst.slot(logOff))
		k.inv0, k.inv1 = tableRegs(logInvC)
		k.logc0, k.logc1 = tableRegs(logLogC)
	}
	if f.body32 != nil {
		k.magic32, k.one32 = ZMM(), ZMM()
		VBROADCASTSS(f32c(exp32Magic), k.magic32)
		VBROADCASTSS(f32c(1), k.one32)
	} else if f.needsExp && f.grad32 == nil {
		k.magic = bcast(tconst.f64(expMagic))
		var t [16]float64
		for j := range t {
			t[j] = math.Exp2(float64(j) / 16)
		}
		k.t0, k.t1 = tableRegs(t[:])
	}

	// block computes sixteen results from x (and g) at the pointers, with
	// the mask m on loads and stores when m is not nil.
	block := func(tag string, m Op) {
		xs, gs := ZMM(), ZMM()
		if m == nil {
			VMOVUPS(Mem{Base: x}, xs)
			if f.bwd {
				VMOVUPS(Mem{Base: g}, gs)
			}
		} else {
			VMOVUPS_Z(Mem{Base: x}, m, xs)
			if f.bwd {
				VMOVUPS_Z(Mem{Base: g}, m, gs)
			}
		}
		in := xs
		if f.abs {
			in = ZMM()
			VANDPS_BCST(tconst.u32(0x7fffffff), xs, in)
		}
		var res VecVirtual
		switch {
		case f.grad32 != nil:
			res = f.grad32(in, gs)
		case f.body32 != nil:
			res = f.body32(k, in)
		default:
			res = wideBody512(k, f, in, gs)
		}
		if f.abs {
			VPTERNLOGD_BCST(U8(0xd8), tconst.u32(0x80000000), xs, res) // x's sign bit into res
		}
		// special inputs: ±Inf and NaN (and for log zeros and negatives)
		classes := uint8(0x99) // QNaN, +Inf, -Inf, SNaN
		if f.log {
			classes = 0xdf // and ±0, negative finite
		}
		ks := K()
		VFPCLASSPSZ(U8(classes), xs, ks)
		var kg OpmaskVirtual
		if f.grad32 != nil { // and g: |g| ≥ 2^64, ±Inf and NaN
			kg = K()
			if f.gFinite { // ±Inf and NaN only
				VFPCLASSPSZ(U8(0x99), gs, kg)
			} else {
				ga := ZMM()
				VANDPS_BCST(tconst.u32(0x7fffffff), gs, ga)
				VPCMPGTD_BCST(tconst.u32(belowHugeGrad), ga, kg)
			}
			if f.wideBelow != 0 {
				kx := K()
				VPCMPUD(U8(6), tconst.u32(math.Float32bits(f.wideBelow)), xs, kx) // x < wideBelow (and -Inf, NaN with the sign bit): unsigned NLE
				KORW(kx, kg, kg)
			}
			KORW(kg, ks, ks)
		}
		KORTESTW(ks, ks)
		JZ(LabelRef(f.name + "_store" + tag))
		if f.grad32 != nil {
			// |g| ≥ 2^64 (and ±Inf, NaN; with gFinite these alone), or x <
			// wideBelow: beyond the float32 body's range, those lanes take
			// the float64 body, as the float64 kernel computes them (the
			// AVX2 template's fix-up path)
			wide := f.name + "_wide" + tag
			KORTESTW(kg, kg)
			JZ(LabelRef(wide))
			w := wideBody512(wideKernel(), f, xs, gs)
			VMOVAPS(w, kg, res)
			Label(wide)
			if !act32Grad(f.name) {
				// GELU: g ±Inf or NaN (the float32 body's two-term
				// products give NaN there): g with the derivative's sign,
				// negative below its zero at -a0
				kx, ki := K(), K()
				VCMPPS_BCST(U8(0x11), f32c(-a0Hi32), xs, kx) // x < -a0 (LT_OQ)
				v, ga := ZMM(), ZMM()
				VMOVAPS(gs, v)
				VXORPS_BCST(tconst.u32(0x80000000), gs, kx, v)
				VANDPS_BCST(tconst.u32(0x7fffffff), gs, ga)
				VPCMPGTD_BCST(tconst.u32(0x7f7fffff), ga, ki)
				VMOVAPS(v, ki, res)
			}
		}
		kc := K()
		apply := func(class uint8, c Mem) {
			VFPCLASSPSZ(U8(class), xs, kc)
			if f.bwd {
				VMULPS_BCST(c, gs, kc, res)
			} else {
				VBROADCASTSS(c, kc, res)
			}
		}
		apply(0x08, Mem{Base: sp})
		apply(0x10, Mem{Base: sp, Disp: 4})
		if f.log { // forward only: zeros give -Inf, negatives NaN
			VFPCLASSPSZ(U8(0x06), xs, kc)
			VBROADCASTSS(tconst.u32(0xff800000), kc, res)
			VFPCLASSPSZ(U8(0x40), xs, kc)
			VBROADCASTSS(tconst.u32(0x7fc00000), kc, res)
		}
		VFPCLASSPSZ(U8(0x81), xs, kc)
		VADDPS(xs, xs, kc, res) // NaN in, quiet NaN out
		Label(f.name + "_store" + tag)
		if m == nil {
			VMOVUPS(res, Mem{Base: dst})
		} else {
			VMOVUPS(res, m, Mem{Base: dst})
		}
	}

	Label(f.name + "_loop")
	CMPQ(n, U32(16))
	JB(LabelRef(f.name + "_tail"))
	block("", nil)
	ADDQ(U32(64), x)
	ADDQ(U32(64), dst)
	if f.bwd {
		ADDQ(U32(64), g)
	}
	SUBQ(U32(16), n)
	JMP(LabelRef(f.name + "_loop"))

	Label(f.name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(f.name + "_done"))
	ones, bits := GP32(), GP32()
	MOVL(U32(0xffff), ones)
	BZHIL(n.(GPVirtual).As32(), ones, bits)
	m := K()
	KMOVW(bits, m)
	block("_tail", m)
	Label(f.name + "_done")
	VZEROUPPER()
	RET()
}

// whereBelow sets dst = src in the lanes where a < limit.
func whereBelow(dst, a vv, limit float64, src vv) {
	for i := range dst {
		if ymmMode {
			m := YMM()
			VCMPPD(U8(0x11), tconst.f64(limit), a[i], m) // LT_OQ
			VBLENDVPD(m, src[i], dst[i], dst[i])
			continue
		}
		m := K()
		VCMPPD_BCST(U8(0x11), tconst.f64(limit), a[i], m)
		VMOVAPD(src[i], m, dst[i])
	}
}

// top is one op's kernels: forward and backward bodies in float64 (and
// optionally a float32 forward).
type top struct {
	name     string
	abs, log bool
	fwd, bwd func(k *tkernel, x vv) vv
	fwd32    func(k *tkernel, x VecVirtual) VecVirtual // replaces fwd (AVX-512)
}

// transcendentalKernels generates every AVX-512 kernel, then the constant
// pool.
func transcendentalKernels() {
	for _, o := range transcendentalOps() {
		fn := o.name + "F32AVX512"
		in := "float64"
		if o.fwd32 != nil {
			in = "float32"
		}
		if f32AVX512Fwd[o.name] != nil { // transcendentalKernelsF32AVX512 generates fn
			fn = o.name + "WideF32AVX512"
		}
		transcendentalKernel(tfunc{
			name: fn, abs: o.abs, log: o.log, needsExp: !o.log, body: o.fwd, body32: o.fwd32,
			doc: fmt.Sprintf("%s sets dst[i] = %s(x[i]) for i < n (AVX-512, in %s), and sp[0], sp[1] where x[i] is +Inf, -Inf%s.", fn, o.name, in, map[bool]string{true: fmt.Sprintf(": %sF32AVX512 computes in float32, this one stays to compare with", o.name)}[f32AVX512Fwd[o.name] != nil]),
		})
		gn, what := o.name+"GradF32AVX512", ""
		if f32AVX512Bwd[o.name] != nil {
			gn, what = o.name+"WideGradF32AVX512", fmt.Sprintf(": %sGradF32AVX512 computes in float32, this one stays to compare with and for its lanes with a huge grad[i]", o.name)
			if f32AVX512BwdCover[o.name] != (bwdCover{}) {
				what = fmt.Sprintf(": %sGradF32AVX512 computes in float32, this one stays to compare with and for the lanes that one leaves to it", o.name)
			}
		}
		transcendentalKernel(tfunc{
			name: gn, bwd: true, body: o.bwd, needsExp: !o.log,
			doc: fmt.Sprintf("%s sets dst[i] = grad[i]·%s'(x[i]) for i < n (AVX-512, in float64), and grad[i]·sp[0], grad[i]·sp[1] where x[i] is +Inf, -Inf%s.", gn, o.name, what),
		})
		if o.fwd32 != nil && f32AVX512Bwd[o.name] != nil { // the float64 forward too, to compare with (tests and benchmarks)
			wn := o.name + "WideF32AVX512"
			transcendentalKernel(tfunc{
				name: wn, abs: o.abs, needsExp: true, body: o.fwd,
				doc: fmt.Sprintf("%s sets dst[i] = %s(x[i]) for i < n (AVX-512, in float64), and sp[0], sp[1] where x[i] is +Inf, -Inf: %s computes in float32, this one stays to compare with in the tests and benchmarks.", wn, o.name, fn),
			})
		}
	}
	tconst.emit()
}

// transcendentalOps lists the ops and what their kernels compute, for
// both instruction sets.
func transcendentalOps() []top {
	abs := func(v vv) vv {
		a := newV()
		vand(a, v, tconst.f64(math.Float64frombits(1<<63-1)))
		return a
	}
	return []top{
		{"exp", false, false,
			func(k *tkernel, x vv) vv { return k.expClamped(x) },
			func(k *tkernel, x vv) vv { return k.expClamped(x) },
			(*tkernel).exp32},
		{"log", false, true,
			func(k *tkernel, x vv) vv { return k.log(x) },
			func(k *tkernel, x vv) vv { d := newV(); vdiv(d, k.one, x); return d }, nil},
		{"tanh", true, false,
			func(k *tkernel, a vv) vv {
				y := newV()
				vmin(y, a, tconst.f64(tanhClamp))
				vadd(y, y, y)
				m := k.expm1(y)
				d := newV()
				vadd(d, m, tconst.f64(2))
				vdiv(m, m, d)
				return m
			},
			func(k *tkernel, x vv) vv {
				y := abs(x)
				vmin(y, y, tconst.f64(tanhClamp))
				vadd(y, y, y)
				m := k.expm1(y)
				d := newV()
				vadd(d, m, tconst.f64(2))
				vmul(d, d, d)
				vadd(m, m, k.one)
				vmul(m, m, tconst.f64(4))
				vdiv(m, m, d) // 4(m+1)/(m+2)²
				return m
			},
			(*tkernel).tanh32},
		{"erf", true, false,
			func(k *tkernel, a vv) vv {
				z := newV()
				vmin(z, a, tconst.f64(erfMaxZ))
				w := newV()
				vmul(w, z, z)
				e := k.exp(neg(w))
				h := erfcScaled(z)
				vmul(h, h, e)
				big := newV()
				vsub(big, k.one, h)
				a2 := newV()
				vmul(a2, a, a)
				s := poly(a2, []float64{erfS0, erfS1, erfS2, erfS3})
				vmul(s, s, a)
				whereBelow(big, a, erfSmall, s)
				return big
			},
			func(k *tkernel, x vv) vv {
				w := newV()
				vmul(w, x, x)
				e := k.expClamped(neg(w))
				vmul(e, e, tconst.f64(erfS0))
				return e
			}, nil},
		{"sigmoid", false, false,
			func(k *tkernel, x vv) vv { _, s := k.sigmoidParts(x); return s },
			func(k *tkernel, x vv) vv {
				e, s := k.sigmoidParts(x)
				vmul(e, e, s)
				vmul(e, e, s)
				return e
			}, nil},
		{"silu", false, false,
			func(k *tkernel, x vv) vv { _, s := k.sigmoidParts(x); vmul(s, s, x); return s },
			func(k *tkernel, x vv) vv {
				e, s := k.sigmoidParts(x)
				vmul(e, e, s)
				vmul(e, e, x)
				vadd(e, e, k.one)
				vmul(e, e, s) // s·(1 + x·(E·s))
				nearRoot(e, x, siluRoot)
				return e
			}, nil},
		{"gelu", false, false,
			func(k *tkernel, x vv) vv { phi, _ := k.geluParts(x); vmul(phi, phi, x); return phi },
			func(k *tkernel, x vv) vv {
				phi, e := k.geluParts(x)
				vmul(e, e, tconst.f64(invSqrt2Pi))
				fma231(phi, x, e) // Φ + x·E/√(2π)
				nearRoot(phi, x, geluRoot)
				return phi
			}, nil},
		{"geluTanh", false, false,
			func(k *tkernel, x vv) vv { _, s := k.geluTanhParts(x); vmul(s, s, x); return s },
			func(k *tkernel, x vv) vv {
				e, s := k.geluTanhParts(x)
				w := newV()
				vmul(w, x, x)
				vmul(w, w, tconst.f64(geluK3))
				vadd(w, w, tconst.f64(geluK1))
				vmul(w, w, x) // x·2u'
				vmul(e, e, s)
				vmul(w, w, e)
				vadd(w, w, k.one)
				vmul(w, w, s) // S·(1 + x·2u'·E·S)
				nearRoot(w, x, gtRoot)
				return w
			}, nil},
	}
}
