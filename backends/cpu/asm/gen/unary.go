package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// unaryKernel generates an AVX2 float32 kernel dst[i] = f(x[i]) for i < n,
// for the ops that are exact in float32: relu (max(x, 0) with NaN kept and
// -0 made +0, as math.Max does), neg and abs (sign bit flipped or cleared),
// and square.
func unaryKernel(op string) {
	name := op + "F32"
	TEXT(name, NOSPLIT, "func(dst, x *float32, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets dst[i] = %s(x[i]) for i < n (AVX2), bit for bit as Go's float32 arithmetic.", name, op))
	dst, x, n := RDI, RSI, RCX
	Load(Param("dst"), dst)
	Load(Param("x"), x)
	Load(Param("n"), n)
	k := Y15 // the op's constant
	switch op {
	case "relu":
		VXORPS(k, k, k)
	case "neg", "abs":
		bits := uint32(0x80000000)
		if op == "abs" {
			bits = 0x7fffffff
		}
		MOVL(U32(bits), EAX)
		VMOVD(EAX, k.AsX())
		VBROADCASTSS(k.AsX(), k)
	}
	apply := func(r VecPhysical, scalar bool) {
		var v, c Op = r, k
		if scalar {
			v, c = r.AsX(), k.AsX()
		}
		switch op {
		case "relu": // max(0, x) keeps a NaN x; adding +0 turns -0 into +0
			if scalar {
				VMAXSS(v, c, v)
				VADDSS(c, v, v)
			} else {
				VMAXPS(v, c, v)
				VADDPS(c, v, v)
			}
		case "neg":
			VXORPS(c, v, v)
		case "abs":
			VANDPS(c, v, v)
		case "square":
			if scalar {
				VMULSS(v, v, v)
			} else {
				VMULPS(v, v, v)
			}
		}
	}
	regs := []VecPhysical{Y0, Y1, Y2, Y3}
	Label(name + "_loop32")
	CMPQ(n, U32(32))
	JB(LabelRef(name + "_loop8"))
	for u, r := range regs {
		VMOVUPS(Mem{Base: x, Disp: 32 * u}, r)
		apply(r, false)
		VMOVUPS(r, Mem{Base: dst, Disp: 32 * u})
	}
	ADDQ(U32(128), x)
	ADDQ(U32(128), dst)
	SUBQ(U32(32), n)
	JMP(LabelRef(name + "_loop32"))
	Label(name + "_loop8")
	CMPQ(n, U32(8))
	JB(LabelRef(name + "_tail"))
	VMOVUPS(Mem{Base: x}, Y0)
	apply(Y0, false)
	VMOVUPS(Y0, Mem{Base: dst})
	ADDQ(U32(32), x)
	ADDQ(U32(32), dst)
	SUBQ(U32(8), n)
	JMP(LabelRef(name + "_loop8"))
	Label(name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	VMOVSS(Mem{Base: x}, X0)
	apply(Y0, true)
	VMOVSS(X0, Mem{Base: dst})
	ADDQ(U32(4), x)
	ADDQ(U32(4), dst)
	DECQ(n)
	JMP(LabelRef(name + "_tail"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

func unaryKernels() {
	for _, op := range []string{"relu", "neg", "abs", "square"} {
		unaryKernel(op)
	}
}

// reluGrad generates reluGradF32AVX2: dst[i] = g[i]·[x[i] > 0] for i < n,
// a multiple of 8 (AVX2): the comparison (false for NaN) selects the bits
// of 1.0 or 0.0, and the product is Go's float32 product, so a NaN or
// infinite g still gives NaN where x ≤ 0, as the Go loop reluGradF32 does.
func reluGrad() {
	TEXT("reluGradF32AVX2", NOSPLIT, "func(dst, x, grad *float32, n int)")
	Pragma("noescape")
	Doc("reluGradF32AVX2 sets dst[i] = grad[i]·[x[i] > 0] for i < n (a multiple of 8; AVX2), bit for bit as reluGradF32.")
	dst, x, g, n := Load(Param("dst"), GP64()), Load(Param("x"), GP64()), Load(Param("grad"), GP64()), Load(Param("n"), GP64())
	zero, one := Y14, Y15
	VXORPS(zero, zero, zero)
	t := GP32()
	MOVL(U32(0x3f800000), t)
	VMOVD(t, one.AsX())
	VBROADCASTSS(one.AsX(), one)
	// one group of eight: x at Disp, its mask in m, the product stored
	group := func(u int, v, m VecPhysical) {
		VMOVUPS(Mem{Base: x, Disp: 32 * u}, v)
		VCMPPS(U8(0x1e), zero, v, m) // GT_OQ: x > 0
		VANDPS(one, m, m)
		VMULPS(Mem{Base: g, Disp: 32 * u}, m, m)
		VMOVUPS(m, Mem{Base: dst, Disp: 32 * u})
	}
	advance := func(elems int) {
		ADDQ(U32(4*elems), x)
		ADDQ(U32(4*elems), g)
		ADDQ(U32(4*elems), dst)
		SUBQ(U32(elems), n)
	}
	Label("relugrad_loop")
	CMPQ(n, U32(32))
	JB(LabelRef("relugrad_loop8"))
	for u := range 4 {
		group(u, []VecPhysical{Y0, Y1, Y2, Y3}[u], []VecPhysical{Y4, Y5, Y6, Y7}[u])
	}
	advance(32)
	JMP(LabelRef("relugrad_loop"))
	Label("relugrad_loop8")
	TESTQ(n, n)
	JZ(LabelRef("relugrad_done"))
	group(0, Y0, Y4)
	advance(8)
	JMP(LabelRef("relugrad_loop8"))
	Label("relugrad_done")
	VZEROUPPER()
	RET()
}
