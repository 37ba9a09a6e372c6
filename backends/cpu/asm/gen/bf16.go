package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// vdpbf16ps emits VDPBF16PS z2, z1, z0 (z0.fp32[i] += z1.bf16[2i]·z2.bf16[2i]
// + z1.bf16[2i+1]·z2.bf16[2i+1]), in the operand order of the FMA helpers
// (vdpbf16ps(src2, src1, dst)), as raw bytes: neither Go's assembler nor avo
// knows the AVX512_BF16 instructions. Register operands only. The encoding
// is EVEX.512.F3.0F38.W0 52 /r: dst in ModRM.reg (extended by EVEX.R and
// R'), src1 in EVEX.vvvv (and V'), src2 in ModRM.rm (extended by EVEX.B and
// X).
func vdpbf16ps(ops ...Op) {
	src2 := int(ops[0].(Physical).PhysicalIndex())
	src1 := int(ops[1].(Physical).PhysicalIndex())
	dst := int(ops[2].(Physical).PhysicalIndex())
	inv := func(r, bit int) uint32 { return uint32(^(r >> bit) & 1) }
	p0 := inv(dst, 3)<<7 | inv(src2, 4)<<6 | inv(src2, 3)<<5 | inv(dst, 4)<<4 | 0b10 // map 0F38
	p1 := uint32(^src1&15)<<3 | 1<<2 | 0b10                                          // W0, vvvv, pp = F3
	p2 := uint32(0b10)<<5 | inv(src1, 4)<<3                                          // L'L = 512 bits, V'
	modrm := uint32(0xc0 | (dst&7)<<3 | src2&7)
	raw("LONG", U32(0x62|p0<<8|p1<<16|p2<<24))
	raw("WORD", U16(0x52|modrm<<8))
}

// raw emits a data directive (BYTE, WORD, LONG) into the instruction
// stream.
func raw(directive string, c Constant) {
	Instruction(&ir.Instruction{Opcode: directive, Operands: []Op{c}})
}

// vcvtneps2bf16 emits VCVTNEPS2BF16 src(zmm), dst(ymm) (16 float32 to
// bfloat16, rounded to nearest even) as raw bytes: EVEX.512.F3.0F38.W0
// 72 /r, dst in ModRM.reg, src in ModRM.rm, vvvv unused (1111).
func vcvtneps2bf16(src, dst Physical) {
	s, d := int(src.PhysicalIndex()), int(dst.PhysicalIndex())
	inv := func(r, bit int) uint32 { return uint32(^(r >> bit) & 1) }
	p0 := inv(d, 3)<<7 | inv(s, 4)<<6 | inv(s, 3)<<5 | inv(d, 4)<<4 | 0b10
	p1 := uint32(0b1111)<<3 | 1<<2 | 0b10
	p2 := uint32(0b10)<<5 | 1<<3
	modrm := uint32(0xc0 | (d&7)<<3 | s&7)
	raw("LONG", U32(0x62|p0<<8|p1<<16|p2<<24))
	raw("WORD", U16(0x72|modrm<<8))
}

// vcvtne2ps2bf16 emits VCVTNE2PS2BF16 lo(zmm), hi(zmm), dst(zmm) as raw
// bytes: dst's words 0–15 are lo's 16 float32 rounded to bfloat16 (nearest
// even), words 16–31 hi's. EVEX.512.F2.0F38.W0 72 /r: dst in ModRM.reg, hi
// (the first source) in EVEX.vvvv, lo (the second) in ModRM.rm.
func vcvtne2ps2bf16(lo, hi, dst Physical) {
	s2, s1, d := int(lo.PhysicalIndex()), int(hi.PhysicalIndex()), int(dst.PhysicalIndex())
	inv := func(r, bit int) uint32 { return uint32(^(r >> bit) & 1) }
	p0 := inv(d, 3)<<7 | inv(s2, 4)<<6 | inv(s2, 3)<<5 | inv(d, 4)<<4 | 0b10 // map 0F38
	p1 := uint32(^s1&15)<<3 | 1<<2 | 0b11                                    // W0, vvvv, pp = F2
	p2 := uint32(0b10)<<5 | inv(s1, 4)<<3                                    // L'L = 512 bits, V'
	modrm := uint32(0xc0 | (d&7)<<3 | s2&7)
	raw("LONG", U32(0x62|p0<<8|p1<<16|p2<<24))
	raw("WORD", U16(0x72|modrm<<8))
}

// lowBits sets dst to (1<<n)-1 for the count n (≤ 63) in register n,
// through CX.
func lowBits(n, dst GPPhysical) {
	MOVQ(n, RCX)
	MOVQ(U32(1), dst)
	SHLQ(CL, dst)
	DECQ(dst)
}

// bf16Helpers generates the bfloat16 GEMM's vector helpers: the rounding
// of float32 to bfloat16 (AVX-512 BF16), the interleaving of two lines of
// bfloat16 or float32 into pairs, and the packing of rows into pair panels
// (a 16×16 transpose of 32-bit words), each with masked loads and stores
// for the elements past the last multiple of 16 instead of a scalar tail.
func bf16Helpers() {
	TEXT("cvtF32BF16AVX512", NOSPLIT, "func(dst *uint16, src *float32, n int)")
	Pragma("noescape")
	Doc("cvtF32BF16AVX512 sets dst[i] to src[i] rounded to bfloat16 (nearest even, subnormals flushed to zero, NaNs quiet) for i < n with VCVTNEPS2BF16.")
	dst, src, n := RDI, RSI, RBX
	Load(Param("dst"), dst)
	Load(Param("src"), src)
	Load(Param("n"), n)
	Label("cvtF32BF16_loop")
	CMPQ(n, U8(16))
	JL(LabelRef("cvtF32BF16_tail"))
	VMOVUPS(Mem{Base: src}, Z0)
	vcvtneps2bf16(Z0, Y1)
	VMOVDQU(Y1, Mem{Base: dst})
	ADDQ(U8(64), src)
	ADDQ(U8(32), dst)
	SUBQ(U8(16), n)
	JMP(LabelRef("cvtF32BF16_loop"))
	Label("cvtF32BF16_tail")
	TESTQ(n, n)
	JZ(LabelRef("cvtF32BF16_done"))
	lowBits(n, RAX)
	KMOVW(EAX, K1)
	VMOVUPS_Z(Mem{Base: src}, K1, Z0)
	vcvtneps2bf16(Z0, Y1)
	VMOVDQU16(Y1, K1, Mem{Base: dst})
	Label("cvtF32BF16_done")
	VZEROUPPER()
	RET()

	TEXT("pairBF16AVX512", NOSPLIT, "func(dst *uint32, lo, hi *uint16, n int)")
	Pragma("noescape")
	Doc("pairBF16AVX512 sets dst[i] = lo[i] | hi[i]<<16 for i < n.")
	pl, ph := RSI, RDX
	Load(Param("dst"), dst)
	Load(Param("lo"), pl)
	Load(Param("hi"), ph)
	Load(Param("n"), n)
	Label("pairBF16_loop")
	CMPQ(n, U8(16))
	JL(LabelRef("pairBF16_tail"))
	VPMOVZXWD(Mem{Base: pl}, Z0)
	VPMOVZXWD(Mem{Base: ph}, Z1)
	VPSLLD(U8(16), Z1, Z1)
	VPORD(Z1, Z0, Z0)
	VMOVDQU32(Z0, Mem{Base: dst})
	ADDQ(U8(32), pl)
	ADDQ(U8(32), ph)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), n)
	JMP(LabelRef("pairBF16_loop"))
	Label("pairBF16_tail")
	TESTQ(n, n)
	JZ(LabelRef("pairBF16_done"))
	lowBits(n, RAX)
	KMOVW(EAX, K1)
	VMOVDQU16_Z(Mem{Base: pl}, K1, Y0)
	VMOVDQU16_Z(Mem{Base: ph}, K1, Y1)
	VPMOVZXWD(Y0, Z0)
	VPMOVZXWD(Y1, Z1)
	VPSLLD(U8(16), Z1, Z1)
	VPORD(Z1, Z0, Z0)
	VMOVDQU32(Z0, K1, Mem{Base: dst})
	Label("pairBF16_done")
	VZEROUPPER()
	RET()

	// word i of pairidx is the index of lo's word i/2 (even i) or hi's
	// (odd i) in VCVTNE2PS2BF16's output: lo's words are 0–15, hi's 16–31
	idx := GLOBL("bf16pairidx", RODATA|NOPTR)
	for i := range 32 {
		DATA(2*i, U16(i/2+16*(i%2)))
	}
	TEXT("pairF32BF16AVX512", NOSPLIT, "func(dst *uint32, lo, hi *float32, n int)")
	Pragma("noescape")
	Doc("pairF32BF16AVX512 sets dst[i] = bf16(lo[i]) | bf16(hi[i])<<16 for i < n, bf16 the rounding of cvtF32BF16AVX512 (VCVTNE2PS2BF16).")
	Load(Param("dst"), dst)
	Load(Param("lo"), pl)
	Load(Param("hi"), ph)
	Load(Param("n"), n)
	VMOVDQU64(idx, Z3)
	Label("pairF32BF16_loop")
	CMPQ(n, U8(16))
	JL(LabelRef("pairF32BF16_tail"))
	VMOVUPS(Mem{Base: pl}, Z0)
	VMOVUPS(Mem{Base: ph}, Z1)
	vcvtne2ps2bf16(Z0, Z1, Z2)
	VPERMW(Z2, Z3, Z2)
	VMOVDQU32(Z2, Mem{Base: dst})
	ADDQ(U8(64), pl)
	ADDQ(U8(64), ph)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), n)
	JMP(LabelRef("pairF32BF16_loop"))
	Label("pairF32BF16_tail")
	TESTQ(n, n)
	JZ(LabelRef("pairF32BF16_done"))
	lowBits(n, RAX)
	KMOVW(EAX, K1)
	VMOVUPS_Z(Mem{Base: pl}, K1, Z0)
	VMOVUPS_Z(Mem{Base: ph}, K1, Z1)
	vcvtne2ps2bf16(Z0, Z1, Z2)
	VPERMW(Z2, Z3, Z2)
	VMOVDQU32(Z2, K1, Mem{Base: dst})
	Label("pairF32BF16_done")
	VZEROUPPER()
	RET()

	pairPanelsBF16("pairPanelsF32BF16AVX512", true, idx)
	pairPanelsBF16("pairPanelsU16BF16AVX512", false, idx)
	packColsBF16("packColsF32BF16AVX512", true, idx)
	packColsBF16("packColsU16BF16AVX512", false, idx)
	packRowsBF16("packRowsF32BF16AVX512", true)
	packRowsBF16("packRowsU16BF16AVX512", false)
}

// packRowsBF16 generates a packing of up to 16 rows whose pairs are
// consecutive in memory (float32 rounded with VCVTNE2PS2BF16, or bfloat16
// bits) into a pair panel: dst[q·w + i] = (src[i·rs + 2q], src[i·rs + 2q +
// 1]) for i < rows and q < ⌈k/2⌉, the high half zero when 2q+1 = k. It
// loads 16 pairs of each row, transposes the 16×16 words in registers
// (unpacks of 32- and 64-bit elements, then two rounds of 128-bit lane
// shuffles) and stores 16 pairs of every row per instruction, masked to
// rows lanes; loads past k are masked to zero.
func packRowsBF16(name string, fromF32 bool) {
	elem, shift := "uint16", uint8(1)
	if fromF32 {
		elem, shift = "float32", 2
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(dst *uint32, w int, src *%s, rs, rows, k int)", elem))
	Pragma("noescape")
	what := "bfloat16 bits"
	if fromF32 {
		what = "float32 rounded to bfloat16 (nearest even, subnormals flushed to zero)"
	}
	Doc(fmt.Sprintf("%s packs rows (≤ 16) rows of %s, row i at src + i·rs, into pairs of consecutive elements: dst[q·w+i] = src[i·rs+2q] | src[i·rs+2q+1]<<16 for q < ⌈k/2⌉, zero past k.", name, what))
	dst, wb, src, rsb, rows, k := RDI, R8, RSI, R9, R10, R11
	k0, p, d, rem := R12, R13, R14, RBX
	Load(Param("dst"), dst)
	Load(Param("w"), wb)
	Load(Param("src"), src)
	Load(Param("rs"), rsb)
	Load(Param("rows"), rows)
	Load(Param("k"), k)
	SHLQ(U8(2), wb)
	SHLQ(U8(shift), rsb)
	lowBits(rows, RAX)
	KMOVW(EAX, K3)
	XORQ(k0, k0)
	r, t := zmm[:16], zmm[16:]
	Label(name + "_loop")
	CMPQ(k0, k)
	JGE(LabelRef(name + "_done"))
	MOVQ(k, rem)
	SUBQ(k0, rem)
	CMPQ(rem, U8(32))
	JLE(LabelRef(name + "_mask"))
	MOVQ(U32(32), rem)
	Label(name + "_mask")
	lowBits(rem, RAX)
	if fromF32 {
		KMOVW(EAX, K1)
		SHRQ(U8(16), RAX)
		KMOVW(EAX, K2)
		LEAQ(Mem{Base: src, Index: k0, Scale: 4}, p)
	} else {
		KMOVD(EAX, K1)
		LEAQ(Mem{Base: src, Index: k0, Scale: 2}, p)
	}
	for i := range 16 {
		CMPQ(rows, U8(i))
		JLE(LabelRef(name + "_loaded"))
		if fromF32 {
			VMOVUPS_Z(Mem{Base: p}, K1, t[0])
			VMOVUPS_Z(Mem{Base: p, Disp: 64}, K2, t[1])
			vcvtne2ps2bf16(t[0], t[1], r[i])
		} else {
			VMOVDQU16_Z(Mem{Base: p}, K1, r[i])
		}
		if i < 15 {
			ADDQ(rsb, p)
		}
	}
	Label(name + "_loaded")
	// rows i of r hold pairs q; lanes of rows past rows are never stored
	for i := range 8 {
		VPUNPCKLDQ(r[2*i+1], r[2*i], t[2*i])
		VPUNPCKHDQ(r[2*i+1], r[2*i], t[2*i+1])
	}
	// r[4g+j], 128-bit lane l: rows 4g…4g+3 of pair 4l+j
	for g := range 4 {
		VPUNPCKLQDQ(t[4*g+2], t[4*g], r[4*g])
		VPUNPCKHQDQ(t[4*g+2], t[4*g], r[4*g+1])
		VPUNPCKLQDQ(t[4*g+3], t[4*g+1], r[4*g+2])
		VPUNPCKHQDQ(t[4*g+3], t[4*g+1], r[4*g+3])
	}
	for j := range 4 {
		VSHUFI32X4(U8(0x44), r[4+j], r[j], t[4*j])
		VSHUFI32X4(U8(0xee), r[4+j], r[j], t[4*j+1])
		VSHUFI32X4(U8(0x44), r[12+j], r[8+j], t[4*j+2])
		VSHUFI32X4(U8(0xee), r[12+j], r[8+j], t[4*j+3])
	}
	// pair 4l+j: 128-bit lanes l of r[j], r[4+j], r[8+j], r[12+j]
	for j := range 4 {
		VSHUFI32X4(U8(0x88), t[4*j+2], t[4*j], r[j])
		VSHUFI32X4(U8(0xdd), t[4*j+2], t[4*j], r[4+j])
		VSHUFI32X4(U8(0x88), t[4*j+3], t[4*j+1], r[8+j])
		VSHUFI32X4(U8(0xdd), t[4*j+3], t[4*j+1], r[12+j])
	}
	// the pairs of this block: ⌈rem/2⌉, at dst + (k0/2)·w
	INCQ(rem)
	SHRQ(U8(1), rem)
	MOVQ(k0, d)
	SHRQ(U8(1), d)
	IMULQ(wb, d)
	ADDQ(dst, d)
	for q := range 16 {
		CMPQ(rem, U8(q))
		JLE(LabelRef(name + "_stored"))
		VMOVDQU32(r[q], K3, Mem{Base: d})
		if q < 15 {
			ADDQ(wb, d)
		}
	}
	Label(name + "_stored")
	ADDQ(U8(32), k0)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// addRowsF32 generates the bfloat16 GEMM's bias epilogue: a vector added
// to every row of a block of C while the block is still in cache.
func addRowsF32() {
	TEXT("addRowsF32AVX512", NOSPLIT, "func(c *float32, ldc int, v *float32, rows, n int)")
	Pragma("noescape")
	Doc("addRowsF32AVX512 adds v[j] to c[i·ldc+j] for i < rows and j < n (each sum rounded once, as Binary's Add), 16 columns at a time, the last ones masked.")
	c, ldc, v, rows, n := RDI, R8, RSI, R10, RBX
	p, i, rem := R11, R12, R13
	Load(Param("c"), c)
	Load(Param("ldc"), ldc)
	Load(Param("v"), v)
	Load(Param("rows"), rows)
	Load(Param("n"), n)
	SHLQ(U8(2), ldc)
	Label("addRowsF32_cols")
	TESTQ(n, n)
	JLE(LabelRef("addRowsF32_done"))
	MOVQ(n, rem)
	CMPQ(rem, U8(16))
	JLE(LabelRef("addRowsF32_mask"))
	MOVQ(U32(16), rem)
	Label("addRowsF32_mask")
	lowBits(rem, RAX)
	KMOVW(EAX, K1)
	VMOVUPS_Z(Mem{Base: v}, K1, Z0)
	MOVQ(c, p)
	MOVQ(rows, i)
	Label("addRowsF32_rows")
	TESTQ(i, i)
	JLE(LabelRef("addRowsF32_next"))
	VMOVUPS_Z(Mem{Base: p}, K1, Z1)
	VADDPS(Z0, Z1, Z1)
	VMOVUPS(Z1, K1, Mem{Base: p})
	ADDQ(ldc, p)
	DECQ(i)
	JMP(LabelRef("addRowsF32_rows"))
	Label("addRowsF32_next")
	ADDQ(U8(64), c)
	ADDQ(U8(64), v)
	SUBQ(U8(16), n)
	JMP(LabelRef("addRowsF32_cols"))
	Label("addRowsF32_done")
	VZEROUPPER()
	RET()
}

// pairPanelsBF16 generates the pairing of two lines of n elements (float32
// rounded with VCVTNE2PS2BF16 and interleaved with VPERMW by idx, or
// bfloat16 bits, zero-extended and shifted) into consecutive panels of w
// pairs, panel p at dst + p·stride: a column pair of B spread over all its
// micro-panels in one call, 16 pairs per instruction, masked at the end of
// each panel.
func pairPanelsBF16(name string, fromF32 bool, idx Mem) {
	elem, scale := "uint16", uint8(2)
	if fromF32 {
		elem, scale = "float32", 4
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(dst *uint32, stride, w int, lo, hi *%s, n int)", elem))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets dst[(i/w)·stride + i%%w] = lo[i] | hi[i]<<16 (%s) for i < n.", name, map[bool]string{true: "each rounded to bfloat16 as by VCVTNE2PS2BF16", false: "bfloat16 bits"}[fromF32]))
	dst, stride, w, lo, hi, n := RDI, R8, R9, RSI, RDX, R10
	p0, rows, c, m := R11, R12, R13, RBX
	Load(Param("dst"), dst)
	Load(Param("stride"), stride)
	Load(Param("w"), w)
	Load(Param("lo"), lo)
	Load(Param("hi"), hi)
	Load(Param("n"), n)
	SHLQ(U8(2), stride)
	if fromF32 {
		VMOVDQU64(idx, Z3)
	}
	XORQ(p0, p0)
	Label(name + "_panel")
	CMPQ(p0, n)
	JGE(LabelRef(name + "_done"))
	MOVQ(n, rows)
	SUBQ(p0, rows)
	CMPQ(rows, w)
	JLE(LabelRef(name + "_rows"))
	MOVQ(w, rows)
	Label(name + "_rows")
	XORQ(c, c)
	Label(name + "_chunk")
	CMPQ(c, rows)
	JGE(LabelRef(name + "_next"))
	MOVQ(rows, m)
	SUBQ(c, m)
	CMPQ(m, U8(16))
	JLE(LabelRef(name + "_mask"))
	MOVQ(U32(16), m)
	Label(name + "_mask")
	lowBits(m, RAX)
	KMOVW(EAX, K1)
	LEAQ(Mem{Base: p0, Index: c, Scale: 1}, RAX)
	if fromF32 {
		VMOVUPS_Z(Mem{Base: lo, Index: RAX, Scale: scale}, K1, Z0)
		VMOVUPS_Z(Mem{Base: hi, Index: RAX, Scale: scale}, K1, Z1)
		vcvtne2ps2bf16(Z0, Z1, Z2)
		VPERMW(Z2, Z3, Z2)
	} else {
		VMOVDQU16_Z(Mem{Base: lo, Index: RAX, Scale: scale}, K1, Y0)
		VMOVDQU16_Z(Mem{Base: hi, Index: RAX, Scale: scale}, K1, Y1)
		VPMOVZXWD(Y0, Z0)
		VPMOVZXWD(Y1, Z1)
		VPSLLD(U8(16), Z1, Z1)
		VPORD(Z1, Z0, Z2)
	}
	VMOVDQU32(Z2, K1, Mem{Base: dst, Index: c, Scale: 4})
	ADDQ(U8(16), c)
	JMP(LabelRef(name + "_chunk"))
	Label(name + "_next")
	ADDQ(w, p0)
	ADDQ(stride, dst)
	JMP(LabelRef(name + "_panel"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// cvtRowsF32BF16 generates the bfloat16 GEMM's rounding epilogue: a block
// of float32 C rounded to a bfloat16 output while it is still in L1.
func cvtRowsF32BF16() {
	TEXT("cvtRowsF32BF16AVX512", NOSPLIT, "func(dst *uint16, ldd int, src *float32, lds, rows, n int)")
	Pragma("noescape")
	Doc("cvtRowsF32BF16AVX512 sets dst[i·ldd+j] to src[i·lds+j] rounded to bfloat16 (as cvtF32BF16AVX512) for i < rows and j < n, 16 columns at a time, the last ones masked.")
	dst, ldd, src, lds, rows, n := RDI, R8, RSI, R9, R10, RBX
	p, q, i, rem := R11, R12, R13, R14
	Load(Param("dst"), dst)
	Load(Param("ldd"), ldd)
	Load(Param("src"), src)
	Load(Param("lds"), lds)
	Load(Param("rows"), rows)
	Load(Param("n"), n)
	SHLQ(U8(1), ldd)
	SHLQ(U8(2), lds)
	Label("cvtRowsF32BF16_cols")
	TESTQ(n, n)
	JLE(LabelRef("cvtRowsF32BF16_done"))
	MOVQ(n, rem)
	CMPQ(rem, U8(16))
	JLE(LabelRef("cvtRowsF32BF16_mask"))
	MOVQ(U32(16), rem)
	Label("cvtRowsF32BF16_mask")
	lowBits(rem, RAX)
	KMOVW(EAX, K1)
	MOVQ(src, p)
	MOVQ(dst, q)
	MOVQ(rows, i)
	Label("cvtRowsF32BF16_rows")
	TESTQ(i, i)
	JLE(LabelRef("cvtRowsF32BF16_next"))
	VMOVUPS_Z(Mem{Base: p}, K1, Z0)
	vcvtneps2bf16(Z0, Y1)
	VMOVDQU16(Y1, K1, Mem{Base: q})
	ADDQ(lds, p)
	ADDQ(ldd, q)
	DECQ(i)
	JMP(LabelRef("cvtRowsF32BF16_rows"))
	Label("cvtRowsF32BF16_next")
	ADDQ(U8(64), src)
	ADDQ(U8(32), dst)
	SUBQ(U8(16), n)
	JMP(LabelRef("cvtRowsF32BF16_cols"))
	Label("cvtRowsF32BF16_done")
	VZEROUPPER()
	RET()
}

// packColsBF16 generates the packing of one panel from a source whose
// panel dimension is contiguous (float32 rounded with VCVTNE2PS2BF16 and
// interleaved with VPERMW by idx, or bfloat16 bits): for each pair of
// columns, the rows of both read 16 at a time and paired into the panel,
// which is written in order (the reads are strided, the writes stream).
func packColsBF16(name string, fromF32 bool, idx Mem) {
	elem, scale := "uint16", uint8(2)
	if fromF32 {
		elem, scale = "float32", 4
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(dst *uint32, w int, src *%s, cs, rows, k int)", elem))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets dst[q·w+i] = src[2q·cs+i] | src[(2q+1)·cs+i]<<16 (%s) for i < rows and q < ⌈k/2⌉, the high half zero when 2q+1 = k.", name, map[bool]string{true: "each rounded to bfloat16 as by VCVTNE2PS2BF16", false: "bfloat16 bits"}[fromF32]))
	dst, wb, src, csb, rows, k := RDI, R8, RSI, R9, R10, R11
	pairs, c, m := R12, RBX, RDX
	Load(Param("dst"), dst)
	Load(Param("w"), wb)
	Load(Param("src"), src)
	Load(Param("cs"), csb)
	Load(Param("rows"), rows)
	Load(Param("k"), k)
	SHLQ(U8(2), wb)
	if fromF32 {
		SHLQ(U8(2), csb)
		VMOVDQU64(idx, Z3)
	} else {
		SHLQ(U8(1), csb)
	}
	MOVQ(k, pairs)
	SHRQ(U8(1), pairs)
	chunks := func(label string, odd bool) {
		XORQ(c, c)
		Label(label)
		CMPQ(c, rows)
		JGE(LabelRef(label + "_done"))
		MOVQ(rows, m)
		SUBQ(c, m)
		CMPQ(m, U8(16))
		JLE(LabelRef(label + "_mask"))
		MOVQ(U32(16), m)
		Label(label + "_mask")
		lowBits(m, RAX)
		KMOVW(EAX, K1)
		LEAQ(Mem{Base: src, Index: csb, Scale: 1}, RCX)
		if fromF32 {
			VMOVUPS_Z(Mem{Base: src, Index: c, Scale: scale}, K1, Z0)
			if odd {
				VPXORD(Z1, Z1, Z1)
			} else {
				VMOVUPS_Z(Mem{Base: RCX, Index: c, Scale: scale}, K1, Z1)
			}
			vcvtne2ps2bf16(Z0, Z1, Z2)
			VPERMW(Z2, Z3, Z2)
		} else {
			VMOVDQU16_Z(Mem{Base: src, Index: c, Scale: scale}, K1, Y0)
			VPMOVZXWD(Y0, Z0)
			if odd {
				VMOVDQA32(Z0, Z2)
			} else {
				VMOVDQU16_Z(Mem{Base: RCX, Index: c, Scale: scale}, K1, Y1)
				VPMOVZXWD(Y1, Z1)
				VPSLLD(U8(16), Z1, Z1)
				VPORD(Z1, Z0, Z2)
			}
		}
		VMOVDQU32(Z2, K1, Mem{Base: dst, Index: c, Scale: 4})
		ADDQ(U8(16), c)
		JMP(LabelRef(label))
		Label(label + "_done")
	}
	Label(name + "_pair")
	TESTQ(pairs, pairs)
	JZ(LabelRef(name + "_odd"))
	chunks(name+"_chunk", false)
	LEAQ(Mem{Base: src, Index: csb, Scale: 2}, src)
	ADDQ(wb, dst)
	DECQ(pairs)
	JMP(LabelRef(name + "_pair"))
	Label(name + "_odd")
	TESTQ(U32(1), k)
	JZ(LabelRef(name + "_done"))
	chunks(name+"_last", true)
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
