package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// packT8 generates packT8F32, which transposes 8 rows of float32 (row i at
// src + i·lds elements, columns [0, cn), cn a multiple of 8) into
// dst[c·ds + i]: the GEMM packing of an operand whose rows run along k,
// eight columns at a time with an 8×8 in-register transpose (AVX).
func packT8() {
	TEXT("packT8F32", NOSPLIT, "func(dst, src *float32, lds, cn, ds int)")
	Pragma("noescape")
	Doc("packT8F32 sets dst[c·ds+i] = src[i·lds+c] for i < 8 and c < cn (a multiple of 8), with AVX.")
	dst, src, n := RDI, RSI, RCX
	lds, lds3, lds5, lds7 := R8, R9, R10, R11
	ds, ds3, ds5, ds7 := RDX, R12, R13, RBX
	Load(Param("dst"), dst)
	Load(Param("src"), src)
	Load(Param("lds"), lds)
	Load(Param("cn"), n)
	Load(Param("ds"), ds)
	SHLQ(U8(2), lds)
	SHLQ(U8(2), ds)
	times := func(dstReg, base GPPhysical, k int) {
		IMUL3Q(U8(k), base, dstReg)
	}
	times(lds3, lds, 3)
	times(lds5, lds, 5)
	times(lds7, lds, 7)
	times(ds3, ds, 3)
	times(ds5, ds, 5)
	times(ds7, ds, 7)
	SHRQ(U8(3), n)
	JZ(LabelRef("packT8_done"))
	rowAddr := []Mem{
		{Base: src}, {Base: src, Index: lds, Scale: 1}, {Base: src, Index: lds, Scale: 2}, {Base: src, Index: lds3, Scale: 1},
		{Base: src, Index: lds, Scale: 4}, {Base: src, Index: lds5, Scale: 1}, {Base: src, Index: lds3, Scale: 2}, {Base: src, Index: lds7, Scale: 1},
	}
	colAddr := []Mem{
		{Base: dst}, {Base: dst, Index: ds, Scale: 1}, {Base: dst, Index: ds, Scale: 2}, {Base: dst, Index: ds3, Scale: 1},
		{Base: dst, Index: ds, Scale: 4}, {Base: dst, Index: ds5, Scale: 1}, {Base: dst, Index: ds3, Scale: 2}, {Base: dst, Index: ds7, Scale: 1},
	}
	r := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}
	t := []VecPhysical{Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	Label("packT8_loop")
	for i := range 8 {
		VMOVUPS(rowAddr[i], r[i])
	}
	for p := range 4 { // t[2p], t[2p+1] = unpack lo, hi of rows 2p, 2p+1
		VUNPCKLPS(r[2*p+1], r[2*p], t[2*p])
		VUNPCKHPS(r[2*p+1], r[2*p], t[2*p+1])
	}
	// u (in r): columns j and j+4 of rows 0-3 (r[0..3]) and rows 4-7 (r[4..7])
	for h := range 2 {
		a, b := t[4*h], t[4*h+2] // unpacklo of rows (4h, 4h+1) and (4h+2, 4h+3)
		c, d := t[4*h+1], t[4*h+3]
		VSHUFPS(U8(0x44), b, a, r[4*h+0])
		VSHUFPS(U8(0xEE), b, a, r[4*h+1])
		VSHUFPS(U8(0x44), d, c, r[4*h+2])
		VSHUFPS(U8(0xEE), d, c, r[4*h+3])
	}
	for j := range 4 {
		VPERM2F128(U8(0x20), r[4+j], r[j], t[j])
		VPERM2F128(U8(0x31), r[4+j], r[j], t[4+j])
	}
	for j := range 8 {
		VMOVUPS(t[j], colAddr[j])
	}
	ADDQ(U32(32), src)
	LEAQ(Mem{Base: dst, Index: ds, Scale: 8}, dst)
	DECQ(n)
	JNZ(LabelRef("packT8_loop"))
	Label("packT8_done")
	VZEROUPPER()
	RET()
}
