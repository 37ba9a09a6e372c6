package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ewKernel generates an AVX2 element-wise float32 kernel: dst[i] = a[i] op
// b[i] (form "vv"), a[i] op s ("vs") or s op a[i] ("sv") for i < n. With nt
// the 32-element blocks are written with non-temporal stores, which need
// dst 32-byte aligned and skip the read-for-ownership of the output lines;
// the caller uses it only for outputs much larger than the caches.
func ewKernel(op, form string, nt bool) {
	name := fmt.Sprintf("%s%sF32", op, form)
	if nt {
		name += "NT"
	}
	sig := "func(dst, a, b *float32, n int)"
	if form != "vv" {
		sig = "func(dst, a *float32, s float32, n int)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	what := map[string]string{"vv": "dst[i] = a[i] %s b[i]", "vs": "dst[i] = a[i] %s s", "sv": "dst[i] = s %s a[i]"}[form]
	sym := map[string]string{"add": "+", "sub": "-", "mul": "×", "div": "÷"}[op]
	doc := fmt.Sprintf("%s sets %s for i < n (AVX2)", name, fmt.Sprintf(what, sym))
	if nt {
		doc += " with non-temporal stores; dst must be 32-byte aligned"
	}
	Doc(doc + ".")
	inst := map[string]func(...Op){"add": VADDPS, "sub": VSUBPS, "mul": VMULPS, "div": VDIVPS}[op]
	sinst := map[string]func(...Op){"add": VADDSS, "sub": VSUBSS, "mul": VMULSS, "div": VDIVSS}[op]
	dst, pa, pb, n := RDI, RSI, RDX, RCX
	Load(Param("dst"), dst)
	Load(Param("a"), pa)
	Load(Param("n"), n)
	sv := Y15
	if form == "vv" {
		Load(Param("b"), pb)
	} else {
		VBROADCASTSS(NewParamAddr("s", 16), sv)
	}
	// apply computes x = x op (b at off | s), or s op x for "sv"
	apply := func(x VecPhysical, off int, scalar bool) {
		in := inst
		if scalar {
			in = sinst
		}
		s, xx := Op(sv), Op(x)
		if scalar {
			s, xx = sv.AsX(), x.AsX()
		}
		switch form {
		case "vv":
			in(Mem{Base: pb, Disp: off}, xx, xx)
		case "vs":
			in(s, xx, xx)
		case "sv":
			in(xx, s, xx)
		}
	}
	var others []Register
	if form == "vv" {
		others = []Register{pb}
	}
	ewLoop(name, dst, pa, n, others, nt, func(x, _ VecPhysical, off int, scalar bool) { apply(x, off, scalar) })
}

// ewLoop generates the loops of an AVX2 element-wise kernel over n
// elements (register n, counted down): 32 a block in four ymm registers,
// written with non-temporal stores with nt (then an SFENCE at the end),
// then 8, then one at a time. Each register x is loaded from src at the
// element's byte offset off, transformed by apply(x, t, off, scalar) (t a
// scratch register; with scalar, the one-element tail, both are to be
// used as xmm registers), and stored at dst; src and others advance with
// dst.
func ewLoop(name string, dst, src, n Register, others []Register, nt bool, apply func(x, t VecPhysical, off int, scalar bool)) {
	advance := func(bytes int) {
		for _, p := range append([]Register{src, dst}, others...) {
			ADDQ(U32(bytes), p)
		}
	}
	regs, tmps := []VecPhysical{Y0, Y1, Y2, Y3}, []VecPhysical{Y4, Y5, Y6, Y7}
	Label(name + "_loop32")
	CMPQ(n, U32(32))
	JB(LabelRef(name + "_loop8"))
	for u, r := range regs {
		VMOVUPS(Mem{Base: src, Disp: 32 * u}, r)
		apply(r, tmps[u], 32*u, false)
	}
	for u, r := range regs {
		if nt {
			VMOVNTPS(r, Mem{Base: dst, Disp: 32 * u})
		} else {
			VMOVUPS(r, Mem{Base: dst, Disp: 32 * u})
		}
	}
	advance(128)
	SUBQ(U32(32), n)
	JMP(LabelRef(name + "_loop32"))

	Label(name + "_loop8")
	CMPQ(n, U32(8))
	JB(LabelRef(name + "_tail"))
	VMOVUPS(Mem{Base: src}, Y0)
	apply(Y0, Y4, 0, false)
	VMOVUPS(Y0, Mem{Base: dst})
	advance(32)
	SUBQ(U32(8), n)
	JMP(LabelRef(name + "_loop8"))

	Label(name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	VMOVSS(Mem{Base: src}, X0)
	apply(Y0, Y4, 0, true)
	VMOVSS(X0, Mem{Base: dst})
	advance(4)
	DECQ(n)
	JMP(LabelRef(name + "_tail"))

	Label(name + "_done")
	if nt {
		SFENCE()
	}
	VZEROUPPER()
	RET()
}

func ewKernels() {
	for _, op := range []string{"add", "sub", "mul", "div"} {
		forms := []string{"vv", "vs"}
		if op == "sub" || op == "div" {
			forms = append(forms, "sv")
		}
		for _, form := range forms {
			ewKernel(op, form, false)
			ewKernel(op, form, true)
		}
	}
}

// outGradKernel generates an AVX2 kernel for the backward of a unary op
// from its output y (backends.UnaryOutputGrad): dst[i] = grad[i]·d(y[i]) for
// i < n, with d(y) = y (exp), 1 − y² (tanh) or y − y² (sigmoid), each
// rounded once to float32 (VFNMADD231PS), then multiplied by grad. With nt the
// 32-element blocks are written with non-temporal stores (dst 32-byte
// aligned), as ewKernel's.
func outGradKernel(op string, nt bool) {
	name := op + "GradOutF32"
	if nt {
		name += "NT"
	}
	TEXT(name, NOSPLIT, "func(dst, y, grad *float32, n int)")
	Pragma("noescape")
	what := map[string]string{"exp": "grad[i]·y[i]", "tanh": "grad[i]·(1 − y[i]²)", "sigmoid": "grad[i]·(y[i] − y[i]²)"}[op]
	doc := fmt.Sprintf("%s sets dst[i] = %s for i < n (AVX2)", name, what)
	if op != "exp" {
		doc += ", the factor rounded once"
	}
	if nt {
		doc += ", with non-temporal stores; dst must be 32-byte aligned"
	}
	Doc(doc + ".")
	dst, py, pg, n := RDI, RSI, RDX, RCX
	Load(Param("dst"), dst)
	Load(Param("y"), py)
	Load(Param("grad"), pg)
	Load(Param("n"), n)
	one := Y15
	if op == "tanh" {
		MOVL(U32(0x3f800000), EAX)
		VMOVD(EAX, one.AsX())
		VBROADCASTSS(one.AsX(), one)
	}
	// apply sets x = g(at off)·d(x); t is a scratch register
	apply := func(xv, tv VecPhysical, off int, scalar bool) {
		x, t, o := Op(xv), Op(tv), Op(one)
		fnmadd, mul := VFNMADD231PS, VMULPS
		if scalar {
			x, t, o = xv.AsX(), tv.AsX(), one.AsX()
			fnmadd, mul = VFNMADD231SS, VMULSS
		}
		switch op {
		case "tanh": // t = 1 − x·x
			VMOVAPS(o, t)
			fnmadd(x, x, t)
			mul(Mem{Base: pg, Disp: off}, t, x)
		case "sigmoid": // x = x − x·x
			fnmadd(x, x, x)
			mul(Mem{Base: pg, Disp: off}, x, x)
		default:
			mul(Mem{Base: pg, Disp: off}, x, x)
		}
	}
	ewLoop(name, dst, py, n, []Register{pg}, nt, apply)
}

// outGradKernels generates outGradKernel for exp, tanh and sigmoid, with
// plain and with non-temporal stores.
func outGradKernels() {
	for _, op := range []string{"exp", "tanh", "sigmoid"} {
		outGradKernel(op, false)
		outGradKernel(op, true)
	}
}
