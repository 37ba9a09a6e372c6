package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// adam generates adamF32, Adam's float32 update without weight decay in
// the gradient (Adam without L2, or AdamW) after the first step, four
// parameters at a time. Every intermediate is rounded to float32 exactly as
// the Go loop adamRange rounds it (the parameters are not named g: that
// is a register in Go assembly): a product with a float64 constant is
// widened, multiplied in float64 and narrowed (VCVTPS2PD, VMULPD,
// VCVTPD2PS with the default round-to-nearest), and operations between
// float32 values (g·g, the moment sums, √v, m/denominator, p + step) run in
// float32, which is what Go's float32 arithmetic compiles to. The
// constants k are the parameter decay, β₁, β₂, 1−β₁, 1−β₂, the inverse
// denominator scale and the ε term, as float64.
func adam() {
	adamKernel("adamF32", false)
	adamKernel("adamF32AVX512", true)
	adamKernelF32()
}

// adamKernelF32 generates adamF32x8, the same update as adamF32 for
// hyper-parameters that are all float32 values (as tensor.AdamStep makes
// them for float32 parameters, like PyTorch's float32 kernels): then
// float32(float64(x)·c) is the float32 product x·c rounded once (x·c is
// exact in float64), and float32(float64(s) + ε) is the float32 sum, so the
// whole update runs in float32, eight parameters per ymm register, without
// a conversion, bit for bit as adamRange. No FMA: adamRange rounds every
// product before the sum (its explicit conversions forbid Go to fuse them).
// The constants k are the parameter decay, β₁, β₂, 1−β₁, 1−β₂, the inverse
// denominator scale and the ε term, as float32.
func adamKernelF32() {
	const name = "adamF32x8"
	TEXT(name, NOSPLIT, "func(outP, outM, outV, param, grad, mom, vel *float32, n int, k *[7]float32)")
	Pragma("noescape")
	Doc(name + " updates n (a multiple of 8) float32 parameters with float32 hyper-parameters (AVX2), bit for bit as adamRange.")
	outP, outM, outV := Load(Param("outP"), GP64()), Load(Param("outM"), GP64()), Load(Param("outV"), GP64())
	p, g, m, v := Load(Param("param"), GP64()), Load(Param("grad"), GP64()), Load(Param("mom"), GP64()), Load(Param("vel"), GP64())
	n, k := Load(Param("n"), GP64()), Load(Param("k"), GP64())
	decay, b1, b2, c1, c2, inv, eps := Y8, Y9, Y10, Y11, Y12, Y13, Y14
	for i, r := range []VecPhysical{decay, b1, b2, c1, c2, inv, eps} {
		VBROADCASTSS(Mem{Base: k, Disp: 4 * i}, r)
	}
	i := GP64()
	XORQ(i, i)
	Label(name + "_loop")
	CMPQ(i, n)
	JAE(LabelRef(name + "_done"))
	at := func(base Register) Mem { return Mem{Base: base, Index: i, Scale: 4} }
	P, G, M, V, T := Y0, Y1, Y2, Y3, Y4
	VMULPS(at(p), decay, P) // p·decay
	VMOVUPS(at(g), G)
	VMULPS(G, G, T)      // g·g
	VMULPS(c2, T, T)     // (g·g)·(1−β₂)
	VMULPS(c1, G, G)     // g·(1−β₁)
	VMULPS(at(m), b1, M) // m·β₁
	VADDPS(G, M, M)      // m' = m·β₁ + g·(1−β₁)
	VMULPS(at(v), b2, V) // v·β₂
	VADDPS(T, V, V)      // v' = v·β₂ + g²·(1−β₂)
	VMOVUPS(M, at(outM))
	VMOVUPS(V, at(outV))
	VSQRTPS(V, T)     // √v'
	VMULPS(inv, T, T) // √v'·inv
	VADDPS(eps, T, T) // + ε term
	VDIVPS(T, M, M)   // m'/denominator
	VADDPS(M, P, P)   // p + step
	VMOVUPS(P, at(outP))
	ADDQ(U8(8), i)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// adamKernel generates one width of the kernel: four parameters per step
// with AVX2 (float32 in xmm, float64 in ymm), or eight with AVX-512
// (float32 in ymm, float64 in zmm).
func adamKernel(name string, wide bool) {
	lanes, isa := 4, "AVX2"
	if wide {
		lanes, isa = 8, "AVX-512"
	}
	TEXT(name, NOSPLIT, "func(outP, outM, outV, param, grad, mom, vel *float32, n int, k *[7]float64)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s updates n (a multiple of %d) float32 parameters (%s), bit for bit as adamRange.", name, lanes, isa))
	outP, outM, outV := Load(Param("outP"), GP64()), Load(Param("outM"), GP64()), Load(Param("outV"), GP64())
	p, g, m, v := Load(Param("param"), GP64()), Load(Param("grad"), GP64()), Load(Param("mom"), GP64()), Load(Param("vel"), GP64())
	n, k := Load(Param("n"), GP64()), Load(Param("k"), GP64())
	// f64 registers hold the widened values and the constants; f32 ones
	// the float32 lanes.
	var f64 []VecPhysical
	var f32 []VecPhysical
	if wide {
		f64 = []VecPhysical{Z0, Z8, Z9, Z10, Z11, Z12, Z13, Z14}
		f32 = []VecPhysical{Y1, Y2, Y3, Y4, Y5}
	} else {
		f64 = []VecPhysical{Y0, Y8, Y9, Y10, Y11, Y12, Y13, Y14}
		f32 = []VecPhysical{X1, X2, X3, X4, X5}
	}
	w := f64[0]
	decay, b1, b2, c1, c2, inv, eps := f64[1], f64[2], f64[3], f64[4], f64[5], f64[6], f64[7]
	for i, r := range []VecPhysical{decay, b1, b2, c1, c2, inv, eps} {
		VBROADCASTSD(Mem{Base: k, Disp: 8 * i}, r)
	}
	narrow := func(src, dst VecPhysical) {
		if wide {
			VCVTPD2PS(src, dst)
		} else {
			VCVTPD2PSY(src, dst)
		}
	}
	i := GP64()
	XORQ(i, i)
	Label(name + "_loop")
	CMPQ(i, n)
	JAE(LabelRef(name + "_done"))
	at := func(base Register) Mem { return Mem{Base: base, Index: i, Scale: 4} }
	// scale(x32, f64 constant): x32 = float32(float64(x32) · c), via w.
	scale := func(x, c VecPhysical) {
		VCVTPS2PD(x, w)
		VMULPD(c, w, w)
		narrow(w, x)
	}
	P, G, M, V, T := f32[0], f32[1], f32[2], f32[3], f32[4]
	VMOVUPS(at(p), P)
	scale(P, decay) // p·decay
	VMOVUPS(at(g), G)
	VMULPS(G, G, T) // g·g in float32
	scale(T, c2)    // (g·g)·(1−β₂)
	scale(G, c1)    // g·(1−β₁)
	VMOVUPS(at(m), M)
	scale(M, b1)    // m·β₁
	VADDPS(G, M, M) // m' = m·β₁ + g·(1−β₁)
	VMOVUPS(at(v), V)
	scale(V, b2)    // v·β₂
	VADDPS(T, V, V) // v' = v·β₂ + g²·(1−β₂)
	VMOVUPS(M, at(outM))
	VMOVUPS(V, at(outV))
	VSQRTPS(V, T) // √v'
	scale(T, inv) // √v'·inv
	VCVTPS2PD(T, w)
	VADDPD(eps, w, w) // + ε term, in float64
	narrow(w, T)
	VDIVPS(T, M, M) // m'/denominator
	VADDPS(M, P, P) // p + step
	VMOVUPS(P, at(outP))
	ADDQ(U8(lanes), i)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
