package main

import (
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
	TEXT("adamF32", NOSPLIT, "func(outP, outM, outV, param, grad, mom, vel *float32, n int, k *[7]float64)")
	Pragma("noescape")
	Doc("adamF32 updates n (a multiple of 4) float32 parameters (AVX2), bit for bit as adamRange.")
	outP, outM, outV := Load(Param("outP"), GP64()), Load(Param("outM"), GP64()), Load(Param("outV"), GP64())
	p, g, m, v := Load(Param("param"), GP64()), Load(Param("grad"), GP64()), Load(Param("mom"), GP64()), Load(Param("vel"), GP64())
	n, k := Load(Param("n"), GP64()), Load(Param("k"), GP64())
	decay, b1, b2, c1, c2, inv, eps := Y8, Y9, Y10, Y11, Y12, Y13, Y14
	for i, r := range []VecPhysical{decay, b1, b2, c1, c2, inv, eps} {
		VBROADCASTSD(Mem{Base: k, Disp: 8 * i}, r)
	}
	i := GP64()
	XORQ(i, i)
	Label("adam_loop")
	CMPQ(i, n)
	JAE(LabelRef("adam_done"))
	at := func(base Register) Mem { return Mem{Base: base, Index: i, Scale: 4} }
	// narrow(x32, f64 constant): x32 = float32(float64(x32) · c), via Y0.
	scale := func(x, c VecPhysical) {
		VCVTPS2PD(x, Y0)
		VMULPD(c, Y0, Y0)
		VCVTPD2PSY(Y0, x)
	}
	P, G, M, V, T := X1, X2, X3, X4, X5
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
	VCVTPS2PD(T, Y0)
	VADDPD(eps, Y0, Y0) // + ε term, in float64
	VCVTPD2PSY(Y0, T)
	VDIVPS(T, M, M) // m'/denominator
	VADDPS(M, P, P) // p + step
	VMOVUPS(P, at(outP))
	ADDQ(U8(4), i)
	JMP(LabelRef("adam_loop"))
	Label("adam_done")
	VZEROUPPER()
	RET()
}
