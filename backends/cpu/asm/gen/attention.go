package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// attnGemmInPlace generates the fused attention's AVX-512 float32 8×32
// micro-kernel with its A operand read in place from a tile, by rows
// (element (i, p) at a[i·lda+p]) or, with byCols, by columns (a[p·lda+i]),
// instead of from a packed panel, and B's rows ldb elements apart (32 for
// a packed panel, or a matrix read in place). It sums in the order of
// sgemm8x32AVX512 with the same fused multiply-adds and adds to C (with
// accum) as it does, so it gives its bits; it stores all 32 columns of
// rows i < mv and reads all 8 rows of A. It is the AVX-512 counterpart of
// attention_gemm_amd64.s's hand-written AVX2 kernels: on the tiles of
// attention, 64×64 with 64 features, packing them cost as much as the
// products saved by the wider kernel.
func attnGemmInPlace(name string, byCols bool) {
	const mr, nv, lanes, unroll = 8, 2, 16, 4
	TEXT(name, NOSPLIT, "func(kc int, a *float32, lda int, b *float32, ldb int, c *float32, ldc, mv int, accum bool)")
	Pragma("noescape")
	how := map[bool]string{false: "by rows, a[i·lda+p]", true: "by columns, a[p·lda+i]"}[byCols]
	Doc(fmt.Sprintf("%s is sgemm8x32AVX512 with A read in place %s, and B's rows ldb elements apart; it stores all 32 columns of rows i < mv.", name, how))
	kc, pa, lda, pb, ldb, pc, ldc, mv := RCX, RSI, R10, RDI, R12, RDX, R8, R9
	Load(Param("kc"), kc)
	Load(Param("a"), pa)
	Load(Param("lda"), lda)
	Load(Param("b"), pb)
	Load(Param("ldb"), ldb)
	Load(Param("c"), pc)
	Load(Param("ldc"), ldc)
	Load(Param("mv"), mv)
	SHLQ(U8(2), lda)
	SHLQ(U8(2), ldb)
	SHLQ(U8(2), ldc)
	// by rows, rows 3 to 5 from a3 = a + 3·lda and rows 6 and 7 from
	// a6 = a + 6·lda, each at most two lda past its base
	a3, a6 := R11, R13
	if !byCols {
		LEAQ(Mem{Base: pa, Index: lda, Scale: 2}, a3)
		ADDQ(lda, a3)
		LEAQ(Mem{Base: a3, Index: lda, Scale: 2}, a6)
		ADDQ(lda, a6)
	}
	// at is element (i, p+u) of A, p the step the pointers are at
	at := func(i, u int) Mem {
		if byCols {
			return Mem{Base: pa, Disp: 4 * i}
		}
		base := []Register{pa, pa, pa, a3, a3, a3, a6, a6}[i]
		scale := []uint8{0, 1, 2, 0, 1, 2, 0, 1}[i]
		m := Mem{Base: base, Disp: 4 * u}
		if scale > 0 {
			m.Index, m.Scale = lda, scale
		}
		return m
	}
	bv := zmm[:nv]
	bc := zmm[nv : nv+2]
	acc := make([][]VecPhysical, mr)
	for i := range mr {
		acc[i] = zmm[nv+2+i*nv : nv+2+(i+1)*nv]
	}
	for i := range mr {
		for _, r := range acc[i] {
			VPXORD(r, r, r)
		}
	}
	step := func(u int) {
		for v := range nv {
			VMOVUPS(Mem{Base: pb, Disp: v * lanes * 4}, bv[v])
		}
		ADDQ(ldb, pb)
		for i := range mr {
			t := bc[i%len(bc)]
			VBROADCASTSS(at(i, u), t)
			for v := range nv {
				VFMADD231PS(bv[v], t, acc[i][v])
			}
		}
		if byCols {
			ADDQ(lda, pa)
		}
	}
	advance := func(p int) { // by rows: the A pointers p columns on
		if !byCols {
			for _, r := range []Register{pa, a3, a6} {
				ADDQ(U32(4*p), r)
			}
		}
	}
	MOVQ(kc, RAX)
	SHRQ(U8(2), RAX)
	JZ(LabelRef(name + "_tail"))
	Label(name + "_loop")
	for u := range unroll {
		step(u)
	}
	advance(unroll)
	DECQ(RAX)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_tail")
	ANDQ(U32(unroll-1), kc)
	JZ(LabelRef(name + "_store"))
	Label(name + "_tailloop")
	step(0)
	advance(1)
	DECQ(kc)
	JNZ(LabelRef(name + "_tailloop"))

	Label(name + "_store")
	Load(Param("accum"), BX)
	rows := func(label string, store func(i int)) {
		Label(label)
		for i := range mr {
			CMPQ(mv, U32(i))
			JLE(LabelRef(name + "_done"))
			store(i)
			if i < mr-1 {
				ADDQ(ldc, pc)
			}
		}
		JMP(LabelRef(name + "_done"))
	}
	TESTB(BL, BL)
	JNZ(LabelRef(name + "_acc"))
	rows(name+"_set", func(i int) {
		for v := range nv {
			VMOVUPS(acc[i][v], Mem{Base: pc, Disp: v * lanes * 4})
		}
	})
	rows(name+"_acc", func(i int) {
		for v := range nv {
			VADDPS(Mem{Base: pc, Disp: v * lanes * 4}, acc[i][v], acc[i][v])
			VMOVUPS(acc[i][v], Mem{Base: pc, Disp: v * lanes * 4})
		}
	})
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
