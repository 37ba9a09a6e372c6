package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The AVX-512 kernels computed in float32 with the AVX2 float32 kernels'
// bodies (transcendental_act32.go, …): the same algorithms, constants and
// steps, so the same bits as their scalar models and as the AVX2 kernels,
// sixteen lanes a zmm vector instead of eight a ymm. The bodies are
// generic over the vector: with zmm32 set, lanes and vreg give zmm
// registers, the few steps that select lanes go through the mask helpers
// below (compares into K registers and masked moves instead of ymm masks
// and VBLENDVPS), and the constants come from tconstF32AVX512, each value
// sixteen times, so that the bodies' full-width memory operands read a
// whole zmm. The kernels are the AVX-512 template's (transcendental.go:
// masked tail with BZHI, VFPCLASSPS for ±Inf and NaN); in a backward
// kernel the lanes with |g| ≥ 2^64, ±Inf or NaN take the float64 body, as
// the AVX-512 float64 kernel computes them (the AVX2 kernels take theirs
// the same way).

// zmm32 is set while the AVX-512 float32 kernels are generated.
var zmm32 bool

// tconstF32AVX512 is the AVX-512 float32 kernels' constant pool: each
// value eight times (64 bytes, one zmm operand; its first 4 or 8 bytes
// serve embedded broadcasts too).
var tconstF32AVX512 = &tpool{name: "tconstF32AVX512", lanes: 8, off: map[uint64]int{}}

// vreg returns a new vector register for the float32 bodies: zmm with
// zmm32, else ymm.
func vreg() VecVirtual {
	if zmm32 {
		return ZMM()
	}
	return YMM()
}

// cmpMask returns the mask of the lanes where a compares true with b
// (VCMPPS predicate pred): a K register with zmm32, else a ymm vector of
// all-ones lanes.
func cmpMask(pred uint8, b Op, a VecVirtual) Op {
	m := Op(vreg())
	if zmm32 {
		m = K()
	}
	VCMPPS(U8(pred), b, a, m)
	return m
}

// signMask returns the mask of the lanes of a with the sign bit set: a
// itself for VBLENDVPS, which reads the sign bits, or a K register.
func signMask(a VecVirtual) Op {
	if !zmm32 {
		return a
	}
	k := K()
	VPMOVD2M(a, k)
	return k
}

// blend sets dst = b in the lanes of mask m and a elsewhere (VBLENDVPS,
// or VBLENDMPS with a K register); b may be a constant.
func blend(m, b Op, a, dst VecVirtual) {
	if zmm32 {
		VBLENDMPS(b, a, m, dst)
		return
	}
	VBLENDVPS(m, b, a, dst)
}

// subWhere subtracts the 32-bit integer constant c from t in the lanes of
// mask m (with AVX2 the mask vector m is overwritten).
func subWhere(m Op, c Mem, t VecVirtual) {
	if zmm32 {
		VPSUBD(c, t, m, t)
		return
	}
	v := m.(VecVirtual)
	VANDPS(c, v, v)
	VPSUBD(v, t, t)
}

// zeroVec sets v to zero.
func zeroVec(v VecVirtual) {
	if zmm32 {
		VPXORD(v, v, v)
		return
	}
	VPXOR(v, v, v)
}

// wideBody512 returns the float64 body of f on the sixteen floats in, times
// the sixteen g in gs for a backward kernel, rounded to float32 once: what
// the AVX-512 float64 kernel computes (k holds its registers).
func wideBody512(k *tkernel, f tfunc, in, gs VecVirtual) VecVirtual {
	xd := newV()
	hiY := YMM()
	VCVTPS2PD(in.AsY(), xd[0])
	VEXTRACTF32X8(U8(1), in, hiY)
	VCVTPS2PD(hiY, xd[1])
	r := f.body(k, xd)
	if f.bwd {
		gd := newV()
		gY := YMM()
		VCVTPS2PD(gs.AsY(), gd[0])
		VEXTRACTF32X8(U8(1), gs, gY)
		VCVTPS2PD(gY, gd[1])
		vmul(r, r, gd)
	}
	lo, hi := YMM(), YMM()
	VCVTPD2PS(r[0], lo)
	VCVTPD2PS(r[1], hi)
	res := ZMM()
	VINSERTF32X8(U8(1), hi, lo.AsZ(), res)
	return res
}

// wideKernel returns a tkernel with the registers the float64 bodies of
// the exp-based ops need (1, the rounding constant and exp's table),
// loaded where it is called: the float32 kernels load them only on their
// rare path for lanes with a huge g.
func wideKernel() *tkernel {
	k := &tkernel{one: bcast(tconst.f64(1)), magic: bcast(tconst.f64(expMagic))}
	var t [16]float64
	for j := range t {
		t[j] = math.Exp2(float64(j) / 16)
	}
	k.t0, k.t1 = tableRegs(t[:])
	return k
}

// f32AVX512Fwd and f32AVX512Bwd are the float32 bodies of the ops whose
// AVX-512 kernels compute in float32, on blocks of zmm vectors (their
// float64 kernels are generated as …WideF32AVX512 and
// …WideGradF32AVX512, to compare with, and the backward ones for the lanes
// the float32 body leaves to them). All but SiLU's backward
// (transcendental_silu32.go, AVX-512 only) are the AVX2 bodies. On one
// Zen 4 core, in cache, two vectors an iteration (…Pairs), against the
// float64 kernels (BenchmarkTranscendentalWide, interleaved): sigmoid
// 1.44–1.48 times their throughput, σ' 1.11, tanh' 1.11, SiLU 1.29, SiLU'
// 1.36, GELU 1.22, GELU' 1.44; the pairs are 1.06 to 1.11 times as fast as
// one vector an iteration (SiLU': 1.11). Left in float64, where the float32
// bodies measured no faster: exp's backward (exp32DY: 0.93 to 1.05 with
// one vector an iteration, 0.96 with two; the float64 exponential is a
// table lookup, a polynomial of degree 4 and one VSCALEFPD) and
// GELU-tanh's forward (geluTanh32FN: 0.97 with two vectors).
var (
	f32AVX512Fwd = map[string]func(xs lanes) lanes{"gelu": gelu32FN, "sigmoid": sigmoid32Y, "silu": silu32Y}
	f32AVX512Bwd = map[string]func(xs, gs lanes) lanes{"sigmoid": sigmoid32DY, "tanh": tanh32DY, "gelu": gelu32DFN, "silu": silu32DY}
	// f32AVX512BwdCover holds what the backward bodies cover where that
	// is not every finite x with |g| < 2^64
	f32AVX512BwdCover = map[string]bwdCover{"silu": {below: silu32Lo, gFinite: true}}
)

// bwdCover is the inputs a float32 backward body covers, the other lanes
// taking the float64 body (the template's fix-up path, and the one-vector
// kernel for the thirty-two-lane ones).
type bwdCover struct {
	below   float32 // x below it is not covered (0: every finite x is)
	gFinite bool    // every finite g is covered (else |g| ≥ 2^64 is not)
}

// transcendentalKernelsF32AVX512 generates the AVX-512 float32 kernels:
// the template's (one zmm vector an iteration, with the masked tail and
// the fix-up path for special lanes) and …AVX512Pairs (two vectors an
// iteration interleaved, as the AVX2 ones: pairKernel), then their
// constant pool.
func transcendentalKernelsF32AVX512() {
	zmm32, tconst = true, tconstF32AVX512
	defer func() { zmm32, tconst = false, tconst512 }()
	// avx512Steps says how an AVX-512 float32 kernel of op computes: as
	// the AVX2 kernel does, but for GELU's table of polynomials where
	// the table applies (gelu_table.go)
	avx512Steps := func(op, where string) string {
		if op == "gelu" {
			return "from a table of polynomials where " + where + " (gelu_table.go), else the AVX2 kernel's steps"
		}
		return "the AVX2 kernel's steps"
	}
	for _, o := range transcendentalOps() {
		if f := f32AVX512Fwd[o.name]; f != nil {
			fn := o.name + "F32AVX512"
			transcendentalKernel(tfunc{
				name: fn, abs: o.abs,
				body32: func(_ *tkernel, x VecVirtual) VecVirtual { return f(lanes{x})[0] },
				doc:    fmt.Sprintf("%s sets dst[i] = %s(x[i]) for i < n (AVX-512, in float32: %s, sixteen lanes a vector), and sp[0], sp[1] where x[i] is +Inf, -Inf.", fn, o.name, avx512Steps(o.name, "|x[i]| ≤ 3")),
			})
			pn := fn + "Pairs"
			doc := fmt.Sprintf("%s sets dst[i] = %s(x[i]) (AVX-512, in float32) for i < k, thirty-two at a time, and returns k: a multiple of 32, at most n, that stops before the first thirty-two with x ±Inf or NaN.", pn, o.name)
			pairKernel(pn, "func(dst, x *float32, n int) int", doc, false, func(xs, _ lanes, _ Register) lanes { return f(xs) })
		}
		if f := f32AVX512Bwd[o.name]; f != nil {
			gn := o.name + "GradF32AVX512"
			cover := f32AVX512BwdCover[o.name]
			doc := fmt.Sprintf("%s sets dst[i] = grad[i]·%s'(x[i]) for i < n (AVX-512, in float32: %s, sixteen lanes a vector), and grad[i]·sp[0], grad[i]·sp[1] where x[i] is +Inf, -Inf; lanes with |grad[i]| ≥ 2^64 take %sWideGradF32AVX512's float64 body.", gn, o.name, avx512Steps(o.name, "|x[i]| ≤ 3 and |grad[i]| < 2^64"), o.name)
			if cover != (bwdCover{}) {
				doc = fmt.Sprintf("%s sets dst[i] = grad[i]·%s'(x[i]) for i < n (AVX-512, in float32, sixteen lanes a vector), and grad[i]·sp[0], grad[i]·sp[1] where x[i] is +Inf, -Inf; lanes with x[i] < %g or grad[i] ±Inf or NaN take %sWideGradF32AVX512's float64 body.", gn, o.name, cover.below, o.name)
			}
			transcendentalKernel(tfunc{
				name: gn, bwd: true, body: o.bwd, needsExp: true, wideBelow: cover.below, gFinite: cover.gFinite,
				grad32: func(x, g VecVirtual) VecVirtual { return f(lanes{x}, lanes{g})[0] },
				doc:    doc,
			})
			pn := gn + "Pairs"
			body := func(xs, gs lanes, _ Register) lanes { return f(xs, gs) }
			if cover == (bwdCover{}) {
				doc = fmt.Sprintf("%s sets dst[i] = grad[i]·%s'(x[i]) (AVX-512, in float32) for i < k, thirty-two at a time, and returns k: a multiple of 32, at most n, that stops before the first thirty-two with x ±Inf or NaN or |grad| ≥ 2^64.", pn, o.name)
				pairKernel(pn, "func(dst, x, grad *float32, n int) int", doc, true, body)
				continue
			}
			doc = fmt.Sprintf("%s sets dst[i] = grad[i]·%s'(x[i]) (AVX-512, in float32) for i < k, thirty-two at a time, and returns k: a multiple of 32, at most n, that stops before the first thirty-two with x ±Inf, NaN or below %g or grad ±Inf or NaN.", pn, o.name, cover.below)
			pairKernelSpecialG(pn, "func(dst, x, grad *float32, n int) int", doc, true, func(x VecVirtual) Op {
				k1, k2 := K(), K()
				VPCMPUD(U8(6), tconst.u32(math.Float32bits(cover.below)), x, k1) // x < below, -Inf, NaN with the sign bit (unsigned NLE)
				VPCMPGTD(tconst.u32(0x7f7fffff), x, k2)                          // +Inf, NaN
				KORW(k1, k2, k1)
				return k1
			}, func(g VecVirtual) Op {
				k := K()
				VFPCLASSPSZ(U8(0x99), g, k) // ±Inf, NaN
				return k
			}, body)
		}
	}
	geluTableKernelAVX512()
	geluGradTableKernelAVX512()
	tconst.emit()
	geluTableData()
}
