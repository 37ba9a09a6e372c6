package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// axpy generates axpyF32: dst[i] += a·x[i] (fused) for i < n, with AVX2.
func axpy() {
	TEXT("axpyF32", NOSPLIT, "func(dst, x *float32, a float32, n int)")
	Pragma("noescape")
	Doc("axpyF32 sets dst[i] += a·x[i] for i < n with fused multiply-adds (AVX2+FMA).")
	dst, x, n := RDI, RSI, RCX
	Load(Param("dst"), dst)
	Load(Param("x"), x)
	Load(Param("n"), n)
	a := Y15
	VBROADCASTSS(NewParamAddr("a", 16), a)
	d := []VecPhysical{Y0, Y1, Y2, Y3}
	Label("axpy_loop32")
	CMPQ(n, U32(32))
	JB(LabelRef("axpy_loop8"))
	for u, r := range d {
		VMOVUPS(Mem{Base: dst, Disp: 32 * u}, r)
		VFMADD231PS(Mem{Base: x, Disp: 32 * u}, a, r)
		VMOVUPS(r, Mem{Base: dst, Disp: 32 * u})
	}
	ADDQ(U32(128), dst)
	ADDQ(U32(128), x)
	SUBQ(U32(32), n)
	JMP(LabelRef("axpy_loop32"))
	Label("axpy_loop8")
	CMPQ(n, U32(8))
	JB(LabelRef("axpy_tail"))
	VMOVUPS(Mem{Base: dst}, Y0)
	VFMADD231PS(Mem{Base: x}, a, Y0)
	VMOVUPS(Y0, Mem{Base: dst})
	ADDQ(U32(32), dst)
	ADDQ(U32(32), x)
	SUBQ(U32(8), n)
	JMP(LabelRef("axpy_loop8"))
	Label("axpy_tail")
	TESTQ(n, n)
	JZ(LabelRef("axpy_done"))
	VMOVSS(Mem{Base: dst}, X0)
	VFMADD231SS(Mem{Base: x}, a.AsX(), X0)
	VMOVSS(X0, Mem{Base: dst})
	ADDQ(U32(4), dst)
	ADDQ(U32(4), x)
	DECQ(n)
	JMP(LabelRef("axpy_tail"))
	Label("axpy_done")
	VZEROUPPER()
	RET()
}

// dot generates dotF32: Σ x[i]·y[i] with 32 lanes of fused partial sums
// combined in a fixed order, so the result depends only on n and the data.
func dot() {
	TEXT("dotF32", NOSPLIT, "func(x, y *float32, n int) float32")
	Pragma("noescape")
	Doc("dotF32 returns Σ x[i]·y[i] for i < n (AVX2+FMA), in a fixed order.")
	x, y, n := RSI, RDI, RCX
	Load(Param("x"), x)
	Load(Param("y"), y)
	Load(Param("n"), n)
	acc := []VecPhysical{Y0, Y1, Y2, Y3}
	for _, r := range acc {
		VXORPS(r, r, r)
	}
	VXORPS(X4, X4, X4) // scalar tail
	Label("dot_loop32")
	CMPQ(n, U32(32))
	JB(LabelRef("dot_loop8"))
	for u, r := range acc {
		VMOVUPS(Mem{Base: x, Disp: 32 * u}, Y5)
		VFMADD231PS(Mem{Base: y, Disp: 32 * u}, Y5, r)
	}
	ADDQ(U32(128), x)
	ADDQ(U32(128), y)
	SUBQ(U32(32), n)
	JMP(LabelRef("dot_loop32"))
	Label("dot_loop8")
	CMPQ(n, U32(8))
	JB(LabelRef("dot_tail"))
	VMOVUPS(Mem{Base: x}, Y5)
	VFMADD231PS(Mem{Base: y}, Y5, Y0)
	ADDQ(U32(32), x)
	ADDQ(U32(32), y)
	SUBQ(U32(8), n)
	JMP(LabelRef("dot_loop8"))
	Label("dot_tail")
	TESTQ(n, n)
	JZ(LabelRef("dot_reduce"))
	VMOVSS(Mem{Base: x}, X5)
	VFMADD231SS(Mem{Base: y}, X5, X4)
	ADDQ(U32(4), x)
	ADDQ(U32(4), y)
	DECQ(n)
	JMP(LabelRef("dot_tail"))
	Label("dot_reduce")
	VADDPS(Y1, Y0, Y0)
	VADDPS(Y3, Y2, Y2)
	VADDPS(Y2, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VADDPS(X1, X0, X0)
	VMOVHLPS(X0, X0, X1)
	VADDPS(X1, X0, X0)
	VMOVSHDUP(X0, X1)
	VADDSS(X1, X0, X0)
	VADDSS(X4, X0, X0)
	Store(X0, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// sumWide generates sumF32F64: Σ x[i] for i < n (a multiple of 16) in
// float64, with AVX2: each float32 widened exactly, sixteen partial sums
// (four ymm of four) combined in a fixed order, so the result depends only
// on n and the data.
func sumWide() {
	TEXT("sumF32F64", NOSPLIT, "func(x *float32, n int) float64")
	Pragma("noescape")
	Doc("sumF32F64 returns Σ x[i] for i < n (a multiple of 16), summed in float64 in sixteen partial sums (AVX2).")
	x, n := Load(Param("x"), GP64()), Load(Param("n"), GP64())
	acc := []VecPhysical{Y0, Y1, Y2, Y3}
	for _, r := range acc {
		VXORPD(r, r, r)
	}
	Label("sumw_loop")
	TESTQ(n, n)
	JZ(LabelRef("sumw_done"))
	for u, r := range acc {
		VCVTPS2PD(Mem{Base: x, Disp: 16 * u}, Y4)
		VADDPD(Y4, r, r)
	}
	ADDQ(U32(64), x)
	SUBQ(U32(16), n)
	JMP(LabelRef("sumw_loop"))
	Label("sumw_done")
	VADDPD(Y1, Y0, Y0)
	VADDPD(Y3, Y2, Y2)
	VADDPD(Y2, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VADDPD(X1, X0, X0)
	VUNPCKHPD(X0, X0, X1)
	VADDSD(X1, X0, X0)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

// accWide generates accF32F64: acc[i] += float64(x[i]) for i < n (a
// multiple of 8), with AVX2: each float32 widened exactly and added in
// float64, as the Go loop does element by element.
func accWide() {
	TEXT("accF32F64", NOSPLIT, "func(acc *float64, x *float32, n int)")
	Pragma("noescape")
	Doc("accF32F64 sets acc[i] += float64(x[i]) for i < n (a multiple of 8; AVX2), bit for bit as the Go loop.")
	acc, x, n := Load(Param("acc"), GP64()), Load(Param("x"), GP64()), Load(Param("n"), GP64())
	Label("accw_loop")
	TESTQ(n, n)
	JZ(LabelRef("accw_done"))
	for u, r := range []VecPhysical{Y0, Y1} {
		VCVTPS2PD(Mem{Base: x, Disp: 16 * u}, r)
		VADDPD(Mem{Base: acc, Disp: 32 * u}, r, r)
		VMOVUPD(r, Mem{Base: acc, Disp: 32 * u})
	}
	ADDQ(U32(32), x)
	ADDQ(U32(64), acc)
	SUBQ(U32(8), n)
	JMP(LabelRef("accw_loop"))
	Label("accw_done")
	VZEROUPPER()
	RET()
}

// dotWide generates dotF32F64: Σ float64(x[i])·float64(y[i]) for i < n (a
// multiple of 8) in float64, with AVX2+FMA. The products of two float32
// are exact in float64, so a fused multiply-add rounds as the Go loop's
// multiply then add; the sum is kept in eight partial sums (element i in
// sum i mod 8), combined as ((s0+s4)+(s2+s6)) + ((s1+s5)+(s3+s7)).
func dotWide() {
	TEXT("dotF32F64", NOSPLIT, "func(x, y *float32, n int) float64")
	Pragma("noescape")
	Doc("dotF32F64 returns Σ x[i]·y[i] for i < n (a multiple of 8), in float64 in eight partial sums (AVX2+FMA).")
	x, y, n := Load(Param("x"), GP64()), Load(Param("y"), GP64()), Load(Param("n"), GP64())
	VXORPD(Y0, Y0, Y0)
	VXORPD(Y1, Y1, Y1)
	Label("dotw_loop")
	TESTQ(n, n)
	JZ(LabelRef("dotw_done"))
	for u, acc := range []VecPhysical{Y0, Y1} {
		VCVTPS2PD(Mem{Base: x, Disp: 16 * u}, Y2)
		VCVTPS2PD(Mem{Base: y, Disp: 16 * u}, Y3)
		VFMADD231PD(Y3, Y2, acc)
	}
	ADDQ(U32(32), x)
	ADDQ(U32(32), y)
	SUBQ(U32(8), n)
	JMP(LabelRef("dotw_loop"))
	Label("dotw_done")
	VADDPD(Y1, Y0, Y0) // lanes: s0+s4, s1+s5, s2+s6, s3+s7
	VEXTRACTF128(U8(1), Y0, X1)
	VADDPD(X1, X0, X0) // (s0+s4)+(s2+s6), (s1+s5)+(s3+s7)
	VUNPCKHPD(X0, X0, X1)
	VADDSD(X1, X0, X0)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

// accRowsWide generates accRowsF32F64: acc[j] += float64(x[r·ldx+j]) for
// r < rows, in order of r, and j < n (a multiple of 8). It is accF32F64
// over many rows, four rows at a time: a column sum (a bias's gradient,
// the sum over the batch of a broadcast operand) of a wide matrix then
// loads and stores acc once per four rows instead of once per row, and
// costs one call instead of one per row. It reads x a block of four whole
// rows after another, as stored, so the hardware prefetches it: an
// earlier version held the sums of 32 columns in registers down all the
// rows, reading 128 bytes of each row a page or more apart, and ran at a
// third of this speed on a matrix not in cache (a GPT's bias gradients).
// acc, n doubles, is meant to stay in L1 (the reduction driver passes at
// most 512). Each element is added in the same order as by accF32F64 row
// after row, so the bits are the same.
func accRowsWide() {
	TEXT("accRowsF32F64", NOSPLIT, "func(acc *float64, x *float32, ldx, rows, n int)")
	Pragma("noescape")
	Doc("accRowsF32F64 sets acc[j] += float64(x[r·ldx+j]) for r < rows in order and j < n (a multiple of 8; AVX2), bit for bit as accF32F64 row after row.")
	acc, x := Load(Param("acc"), GP64()), Load(Param("x"), GP64())
	ldx, rows, n := Load(Param("ldx"), GP64()), Load(Param("rows"), GP64()), Load(Param("n"), GP64())
	SHLQ(U8(2), ldx) // bytes
	ldx3 := GP64()
	LEAQ(Mem{Base: ldx, Index: ldx, Scale: 2}, ldx3)
	a, p, c := GP64(), GP64(), GP64()
	// row is element disp/4 of row r (< 4) of the block at p.
	row := func(r, disp int) Mem {
		switch r {
		case 0:
			return Mem{Base: p, Disp: disp}
		case 3:
			return Mem{Base: p, Index: ldx3, Scale: 1, Disp: disp}
		}
		return Mem{Base: p, Index: ldx, Scale: uint8(r), Disp: disp}
	}
	// block adds blocks of R rows of x, all n columns, into acc while
	// rows ≥ R: 16 columns at a time, then 8 (n is a multiple of 8).
	block := func(R int) {
		name := fmt.Sprintf("accr_%d", R)
		Label(name)
		CMPQ(rows, U32(R))
		JB(LabelRef(name + "_done"))
		MOVQ(acc, a)
		MOVQ(x, p)
		MOVQ(n, c)
		for _, w := range []int{4, 2} { // w four-double sums: 4w columns
			lbl := fmt.Sprintf("%s_cols%d", name, 4*w)
			Label(lbl)
			CMPQ(c, U32(4*w))
			JB(LabelRef(lbl + "_end"))
			sums := []VecPhysical{Y0, Y1, Y2, Y3}[:w]
			tmps := []VecPhysical{Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
			for u, y := range sums {
				VMOVUPD(Mem{Base: a, Disp: 32 * u}, y)
			}
			for r := range R {
				for u, y := range sums {
					t := tmps[(r*w+u)%len(tmps)]
					VCVTPS2PD(row(r, 16*u), t)
					VADDPD(t, y, y)
				}
			}
			for u, y := range sums {
				VMOVUPD(y, Mem{Base: a, Disp: 32 * u})
			}
			ADDQ(U32(32*w), a)
			ADDQ(U32(16*w), p)
			SUBQ(U32(4*w), c)
			JMP(LabelRef(lbl))
			Label(lbl + "_end")
		}
		if R == 4 {
			LEAQ(Mem{Base: x, Index: ldx, Scale: 4}, x)
		} else {
			ADDQ(ldx, x)
		}
		SUBQ(U32(R), rows)
		JMP(LabelRef(name))
		Label(name + "_done")
	}
	block(4)
	block(1)
	VZEROUPPER()
	RET()
}
