package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// maxPool2x2 generates maxPool2x2RowF32: one output row of a 2×2, stride 2
// max-pooling with its arg-max, sixteen outputs at a time (AVX-512). Each
// window's four values are taken in the order (0,0), (0,1), (1,0), (1,1);
// a value replaces the best so far when it is greater or NaN, unless the
// best is already NaN: ties keep the earliest position and the first NaN
// wins, exactly as the Go loop maxPool2x2 chooses.
func maxPool2x2() {
	even := GLOBL("pooleven", RODATA|NOPTR)
	for i := range 16 {
		DATA(4*i, U32(2*i))
	}
	odd := GLOBL("poolodd", RODATA|NOPTR)
	for i := range 16 {
		DATA(4*i, U32(2*i+1))
	}
	TEXT("maxPool2x2RowF32", NOSPLIT, "func(dst *float32, idx *int64, r0, r1 *float32, n int, base, w int64)")
	Pragma("noescape")
	Doc("maxPool2x2RowF32 pools n windows of rows r0 and r1 (2n values each) into dst, and their",
		"positions, base plus the offset in r0 (w is the row stride), into idx (AVX-512, BMI2).")
	dst, idx := Load(Param("dst"), GP64()), Load(Param("idx"), GP64())
	r0, r1 := Load(Param("r0"), GP64()), Load(Param("r1"), GP64())
	n, base := Load(Param("n"), GP64()), Load(Param("base"), GP64())
	w := Load(Param("w"), GP64()).(GPVirtual)

	evenIdx, oddIdx := Z20, Z21
	VMOVDQU32(even, evenIdx)
	VMOVDQU32(odd, oddIdx)
	one, atW, atW1, two, col, base64 := Z22, Z23, Z24, Z25, Z26, Z27
	t := GP32()
	MOVL(U32(1), t)
	VPBROADCASTD(t, one)
	VPBROADCASTD(w.As32(), atW)
	VPADDD(one, atW, atW1)
	MOVL(U32(32), t)
	VPBROADCASTD(t, two)    // 2·16: the column step per block
	VMOVDQA32(evenIdx, col) // columns 2j of the block's outputs
	VPBROADCASTQ(base, base64)

	ones := GP32()
	MOVL(U32(0xffffffff), ones)
	cnt := GP32()
	Label("pool_loop")
	TESTQ(n, n)
	JLE(LabelRef("pool_done"))
	// masks: k1 the block's outputs (min(n, 16)), k2 and k3 its inputs
	// in the low and high 16 values (2·min(n, 16) in all)
	m := GP64()
	MOVQ(U64(16), m)
	CMPQ(n, m)
	CMOVQLT(n, m)
	bits := GP32()
	BZHIL(m.As32(), ones, bits)
	KMOVW(bits, K1)
	MOVL(m.As32(), cnt)
	SHLL(U8(1), cnt)
	BZHIL(cnt, ones, bits)
	KMOVW(bits, K2)
	SHRL(U8(16), bits)
	KMOVW(bits, K3)

	lo0, hi0, lo1, hi1 := Z0, Z1, Z2, Z3
	VMOVUPS_Z(Mem{Base: r0}, K2, lo0)
	VMOVUPS_Z(Mem{Base: r0, Disp: 64}, K3, hi0)
	VMOVUPS_Z(Mem{Base: r1}, K2, lo1)
	VMOVUPS_Z(Mem{Base: r1, Disp: 64}, K3, hi1)
	best, o0, e0, o1 := Z4, Z5, Z6, Z7
	deinterleave := func(lo, hi, tbl, out VecPhysical) {
		VMOVAPS(lo, out)
		VPERMT2PS(hi, tbl, out)
	}
	deinterleave(lo0, hi0, evenIdx, best)
	deinterleave(lo0, hi0, oddIdx, o0)
	deinterleave(lo1, hi1, evenIdx, e0)
	deinterleave(lo1, hi1, oddIdx, o1)
	at := Z9
	VPXORD(at, at, at)
	// take v where !(v <= best) (v greater, or either NaN) and best is not NaN
	pick := func(v, off VecPhysical) {
		VCMPPS(U8(6), best, v, K4)    // NLE_UQ(v, best)
		VCMPPS(U8(7), best, best, K5) // ORD_Q(best, best)
		KANDW(K4, K5, K4)
		VMOVAPS(v, K4, best)
		VMOVDQA32(off, K4, at)
	}
	pick(o0, one)
	pick(e0, atW)
	pick(o1, atW1)
	VMOVUPS(best, K1, Mem{Base: dst})
	// position = base + 2j + offset, widened to int64 in two halves
	VPADDD(col, at, at)
	lo, hi := Z10, Z11
	VPMOVSXDQ(at.AsY(), lo)
	VEXTRACTI64X4(U8(1), at, Y12)
	VPMOVSXDQ(Y12, hi)
	VPADDQ(base64, lo, lo)
	VPADDQ(base64, hi, hi)
	KSHIFTRW(U8(8), K1, K6)
	VMOVDQU64(lo, K1, Mem{Base: idx})
	VMOVDQU64(hi, K6, Mem{Base: idx, Disp: 64})

	VPADDD(two, col, col)
	ADDQ(U32(64), dst)
	ADDQ(U32(128), idx)
	ADDQ(U32(128), r0)
	ADDQ(U32(128), r1)
	SUBQ(U32(16), n)
	JMP(LabelRef("pool_loop"))
	Label("pool_done")
	VZEROUPPER()
	RET()
}
