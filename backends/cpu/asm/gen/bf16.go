package main

import (
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

// bf16Helpers generates the bfloat16 GEMM's vector helpers: the rounding
// of float32 to bfloat16 (AVX-512 BF16) and the interleaving of two rows
// of bfloat16 into pairs (AVX-512F).
func bf16Helpers() {
	TEXT("cvtF32BF16AVX512", NOSPLIT, "func(dst *uint16, src *float32, n int)")
	Pragma("noescape")
	Doc("cvtF32BF16AVX512 sets dst[i] to src[i] rounded to bfloat16 (nearest even, subnormals flushed to zero, NaNs quiet) for i < n, a multiple of 16, with VCVTNEPS2BF16.")
	dst, src, n := RDI, RSI, RCX
	Load(Param("dst"), dst)
	Load(Param("src"), src)
	Load(Param("n"), n)
	SHRQ(U8(4), n)
	JZ(LabelRef("cvtF32BF16_done"))
	Label("cvtF32BF16_loop")
	VMOVUPS(Mem{Base: src}, Z0)
	vcvtneps2bf16(Z0, Y1)
	VMOVDQU(Y1, Mem{Base: dst})
	ADDQ(U8(64), src)
	ADDQ(U8(32), dst)
	DECQ(n)
	JNZ(LabelRef("cvtF32BF16_loop"))
	Label("cvtF32BF16_done")
	VZEROUPPER()
	RET()

	TEXT("pairBF16AVX512", NOSPLIT, "func(dst *uint32, lo, hi *uint16, n int)")
	Pragma("noescape")
	Doc("pairBF16AVX512 sets dst[i] = lo[i] | hi[i]<<16 for i < n, a multiple of 16.")
	pl, ph := RSI, RDX
	Load(Param("dst"), dst)
	Load(Param("lo"), pl)
	Load(Param("hi"), ph)
	Load(Param("n"), n)
	SHRQ(U8(4), n)
	JZ(LabelRef("pairBF16_done"))
	Label("pairBF16_loop")
	VPMOVZXWD(Mem{Base: pl}, Z0)
	VPMOVZXWD(Mem{Base: ph}, Z1)
	VPSLLD(U8(16), Z1, Z1)
	VPORD(Z1, Z0, Z0)
	VMOVDQU32(Z0, Mem{Base: dst})
	ADDQ(U8(32), pl)
	ADDQ(U8(32), ph)
	ADDQ(U8(64), dst)
	DECQ(n)
	JNZ(LabelRef("pairBF16_loop"))
	Label("pairBF16_done")
	VZEROUPPER()
	RET()
}
