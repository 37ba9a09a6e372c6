package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// dotTile generates dotTile4x4F32: the sixteen dot products of four rows a
// with four rows b over n elements (any n), for ns samples (the rows of
// sample s start sa and sb bytes after those of sample s−1), added lane by
// lane into sixteen vectors of sixteen partial sums held in acc
// (acc[16·(4i+j)+l] for a_i·b_j), with AVX-512 and BMI2. It serves
// products with a long inner dimension and few rows and columns (a
// convolution's weight gradient), where packing for the GEMM costs more
// than the arithmetic: every load feeds four multiply-adds, and the sums
// stay in registers across the samples. The last n mod 16 elements of a
// sample are loaded under a mask (zeros elsewhere).
func dotTile() {
	TEXT("dotTile4x4F32", NOSPLIT, "func(a0, a1, a2, a3, b0, b1, b2, b3 *float32, n, ns, sa, sb int, acc *[256]float32)")
	Pragma("noescape")
	Doc("dotTile4x4F32 adds the 16 lane-wise partial dot products of rows a_i and b_j (n elements, ns samples sa and sb",
		"bytes apart) into acc[16·(4i+j):] (AVX-512, BMI2).")
	as := []GPVirtual{}
	for _, name := range []string{"a0", "a1", "a2", "a3"} {
		as = append(as, Load(Param(name), GP64()).(GPVirtual))
	}
	bs := []GPVirtual{}
	for _, name := range []string{"b0", "b1", "b2", "b3"} {
		bs = append(bs, Load(Param(name), GP64()).(GPVirtual))
	}
	n := Load(Param("n"), GP64()).(GPVirtual)
	ns := Load(Param("ns"), GP64()).(GPVirtual)
	sa := Load(Param("sa"), GP64()).(GPVirtual)
	sb := Load(Param("sb"), GP64()).(GPVirtual)
	accs := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15}
	{
		acc := Load(Param("acc"), GP64())
		for t, r := range accs {
			VMOVUPS(Mem{Base: acc, Disp: 64 * t}, r)
		}
	}
	av := []VecPhysical{Z16, Z17, Z18, Z19}
	bv := []VecPhysical{Z20, Z21, Z22, Z23}
	fma := func() {
		for ai, a := range av {
			for bi, b := range bv {
				VFMADD231PS(a, b, accs[4*ai+bi])
			}
		}
	}
	i := GP64()
	m := GP64()
	Label("dot_sample")
	TESTQ(ns, ns)
	JZ(LabelRef("dot_done"))
	XORQ(i, i)
	Label("dot_loop")
	MOVQ(n, m)
	SUBQ(i, m)
	CMPQ(m, U32(16))
	JB(LabelRef("dot_tail"))
	for k, r := range as {
		VMOVUPS(Mem{Base: r, Index: i, Scale: 4}, av[k])
	}
	for k, r := range bs {
		VMOVUPS(Mem{Base: r, Index: i, Scale: 4}, bv[k])
	}
	fma()
	ADDQ(U32(16), i)
	JMP(LabelRef("dot_loop"))
	Label("dot_tail")
	TESTQ(m, m)
	JZ(LabelRef("dot_next"))
	ones := GP32()
	MOVL(U32(0xffffffff), ones)
	BZHIL(m.As32(), ones, ones)
	KMOVW(ones, K1)
	for k, r := range as {
		VMOVUPS_Z(Mem{Base: r, Index: i, Scale: 4}, K1, av[k])
	}
	for k, r := range bs {
		VMOVUPS_Z(Mem{Base: r, Index: i, Scale: 4}, K1, bv[k])
	}
	fma()
	Label("dot_next")
	for _, r := range as {
		ADDQ(sa, r)
	}
	for _, r := range bs {
		ADDQ(sb, r)
	}
	DECQ(ns)
	JMP(LabelRef("dot_sample"))
	Label("dot_done")
	{
		acc := Load(Param("acc"), GP64())
		for t, r := range accs {
			VMOVUPS(r, Mem{Base: acc, Disp: 64 * t})
		}
	}
	VZEROUPPER()
	RET()
}
