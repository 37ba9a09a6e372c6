package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// elem gathers the instructions that differ between float32 and float64.
type elem struct {
	name       string // Go type
	size       int    // bytes
	broadcast  func(...Op)
	fma        func(...Op)
	add        func(...Op)
	movu       func(...Op)
	movuZ      func(m, k, z Op) // zeroing masked load
	maskmov    func(m, x, y Op) // AVX2 masked load/store
	pbroadcast func(...Op)
	pcmpeq     func(...Op)
	bits       Mem // lane i holds 1<<i
	// sig, when set, is the kernel's Go signature (else every pointer is
	// *name)
	sig string
}

var f32, f64, bf16 elem

func initElems() {
	b32 := GLOBL("lanebits32", RODATA|NOPTR)
	for i := range 8 {
		DATA(4*i, U32(1<<i))
	}
	b64 := GLOBL("lanebits64", RODATA|NOPTR)
	for i := range 4 {
		DATA(8*i, U64(1<<i))
	}
	f32 = elem{"float32", 4, VBROADCASTSS, VFMADD231PS, VADDPS, VMOVUPS, VMOVUPS_Z, VMASKMOVPS, VPBROADCASTD, VPCMPEQD, b32, ""}
	f64 = elem{"float64", 8, VBROADCASTSD, VFMADD231PD, VADDPD, VMOVUPD, VMOVUPD_Z, VMASKMOVPD, VPBROADCASTQ, VPCMPEQQ, b64, ""}
	// bf16: the packed panels hold pairs of bfloat16 (consecutive k) in
	// each 32-bit word, multiplied and summed in pairs by VDPBF16PS into
	// float32 accumulators; C is float32. AVX-512 only.
	bf16 = elem{"bf16", 4, VPBROADCASTD, vdpbf16ps, VADDPS, VMOVUPS, VMOVUPS_Z, nil, nil, nil, b32,
		"func(kp int, a, b *uint32, c *float32, ldc, mv int, mask uint64, accum bool)"}
}

var (
	zmm = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
	ymm  = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	kreg = []OpmaskPhysical{K1, K2, K3, K4, K5, K6, K7}
)

// gemmKernel generates a register-blocked micro-kernel computing the
// mr×(nv·lanes) product of a packed A panel (a[p·mr+i]) and a packed B panel
// (b[p·nr+j]) summed over p in order with fused multiply-adds, then storing
// rows i < mv of it to c (row stride ldc elements), only the columns whose
// bit is set in mask, replacing the old values or, with accum, adding to
// them.
func gemmKernel(name string, e elem, avx512 bool, mr, nv, unroll int) {
	gemmKernelOf(name, e, avx512, mr, nv, unroll, false)
}

// gemmKernelOf generates gemmKernel's kernel, or with bias the same kernel
// with one more argument, bias (nr elements, those whose bit is set in mask
// read), added to every row of the result after the old C (with accum) and
// before the store: a GEMM's last K-block then adds a linear layer's bias
// while the tile is in registers instead of in a pass over C of its own,
// with the same two roundings in the same order.
func gemmKernelOf(name string, e elem, avx512 bool, mr, nv, unroll int, bias bool) {
	gemmKernelGen(name, e, avx512, mr, nv, unroll, gemmShape{bias: bias})
}

// gemmKernelRows generates gemmKernel's AVX-512 float32 8-row kernel with A
// read in place by rows (element (i, p) at a[i·lda+p]) instead of from a
// packed panel, for an A stored by rows: the GEMM then skips packing A
// (gemm.go's macroTileRows). It reads all 8 rows, stores rows i < mv, and
// gives the packed kernel's bits (the same multiply-adds in the same order).
// With bias it adds a bias as gemmKernelOf's do.
func gemmKernelRows(name string, nv, unroll int, bias bool) {
	gemmKernelGen(name, f32, true, 8, nv, unroll, gemmShape{aRows: true, bias: bias})
}

// gemmKernelCols is gemmKernelRows with A read in place by columns
// (element (i, p) at a[p·lda+i]), for an A that is the transpose of a
// matrix stored by rows (a weight gradient's gᵀ): each step reads 8
// contiguous elements of A, as a packed panel holds them.
func gemmKernelCols(name string, nv, unroll int) {
	gemmKernelGen(name, f32, true, 8, nv, unroll, gemmShape{aCols: true})
}

// gemmShape says how a kernel of gemmKernelGen reads and writes its
// operands, where it is not gemmKernel's.
type gemmShape struct {
	bias  bool // add bias[j] before storing (gemmKernelOf, gemmKernelRows)
	aRows bool // A read in place by rows, a[i·lda+p]
	aCols bool // A read in place by columns, a[p·lda+i]
	// attn: the fused attention's signature (attnGemmInPlace): B's rows
	// ldb elements apart, every column stored (no mask), C not prefetched
	attn bool
}

// gemmKernelGen is gemmKernelOf, gemmKernelRows or attnGemmInPlace.
func gemmKernelGen(name string, e elem, avx512 bool, mr, nv, unroll int, sh gemmShape) {
	bias, aRows, aCols := sh.bias, sh.aRows, sh.aCols
	if bias && (e.sig != "" || aCols || sh.attn) {
		panic(name + ": the bias epilogue is for float32 and float64 kernels with A packed or read by rows")
	}
	if (aRows || aCols || sh.attn) && (!avx512 || mr != 8 || e.sig != "") {
		panic(name + ": A read in place is for AVX-512 float32 8-row kernels")
	}
	vbytes := 32
	regs := ymm
	if avx512 {
		vbytes = 64
		regs = zmm
	}
	lanes := vbytes / e.size
	nr := nv * lanes
	sig, kparam := e.sig, "kp"
	if sig == "" {
		sig, kparam = fmt.Sprintf("func(kc int, a, b, c *%s, ldc, mv int, mask uint64, accum bool)", e.name), "kc"
		if bias {
			sig = fmt.Sprintf("func(kc int, a, b, c *%s, ldc, mv int, mask uint64, accum bool, bias *%s)", e.name, e.name)
		}
		if aRows || aCols {
			sig = fmt.Sprintf("func(kc int, a *%s, lda int, b, c *%s, ldc, mv int, mask uint64, accum bool)", e.name, e.name)
			if bias {
				sig = fmt.Sprintf("func(kc int, a *%s, lda int, b, c *%s, ldc, mv int, mask uint64, accum bool, bias *%s)", e.name, e.name, e.name)
			}
		}
		if sh.attn {
			sig = fmt.Sprintf("func(kc int, a *%s, lda int, b *%s, ldb int, c *%s, ldc, mv int, accum bool)", e.name, e.name, e.name)
		}
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	if sh.attn {
		how := map[bool]string{false: "by rows, a[i·lda+p]", true: "by columns, a[p·lda+i]"}[aCols]
		Doc(fmt.Sprintf("%s is sgemm8x32AVX512 with A read in place %s, and B's rows ldb elements apart; it stores all 32 columns of rows i < mv.", name, how))
	} else if aRows || aCols {
		how := map[bool]string{true: "by rows, a[i·lda+p]", false: "by columns, a[p·lda+i]"}[aRows]
		adds := ""
		if bias {
			adds = " and adds bias[j] to column j of the result before storing it"
		}
		Doc(fmt.Sprintf("%s is the %d×%d %s micro-kernel (AVX-512) with A read in place %s; it reads all %d rows of A%s.", name, mr, nr, e.name, how, mr, adds))
	} else if bias {
		Doc(fmt.Sprintf("%s is the %d×%d %s micro-kernel (%s) that adds bias[j] to column j of the result before storing it.", name, mr, nv*lanes, e.name, map[bool]string{true: "AVX-512", false: "AVX2+FMA"}[avx512]))
	} else if e.sig != "" {
		Doc(fmt.Sprintf("%s is the %d×%d bfloat16 micro-kernel (AVX-512 BF16): kp pairs of k, float32 sums and C.", name, mr, nr))
	} else {
		Doc(fmt.Sprintf("%s is the %d×%d %s micro-kernel (%s).", name, mr, nr, e.name, map[bool]string{true: "AVX-512", false: "AVX2+FMA"}[avx512]))
	}
	kc, pa, pb, pc := RCX, RSI, RDI, RDX
	ldc, mv := R8, R9
	Load(Param(kparam), kc)
	Load(Param("a"), pa)
	Load(Param("b"), pb)
	Load(Param("c"), pc)
	Load(Param("ldc"), ldc)
	Load(Param("mv"), mv)
	SHLQ(U8(log2(e.size)), ldc)
	// with aRows, rows 3 to 5 of A from a3 = a + 3·lda and rows 6 and 7
	// from a6 = a + 6·lda, each at most two lda past its base
	lda, a3, a6, ldb := R10, R11, R13, R12
	if aRows || aCols {
		Load(Param("lda"), lda)
		SHLQ(U8(log2(e.size)), lda)
	}
	if sh.attn {
		Load(Param("ldb"), ldb)
		SHLQ(U8(log2(e.size)), ldb)
	}
	if aRows {
		LEAQ(Mem{Base: pa, Index: lda, Scale: 2}, a3)
		ADDQ(lda, a3)
		LEAQ(Mem{Base: a3, Index: lda, Scale: 2}, a6)
		ADDQ(lda, a6)
	}
	// aAt is element (i, p+u) of A, p the step the A pointers are at (by
	// columns, p+u: the pointer moves every step)
	aAt := func(i, u int) Mem {
		if aCols {
			return Mem{Base: pa, Disp: i * e.size}
		}
		if !aRows {
			return Mem{Base: pa, Disp: (u*mr + i) * e.size}
		}
		base := []Register{pa, pa, pa, a3, a3, a3, a6, a6}[i]
		scale := []uint8{0, 1, 2, 0, 1, 2, 0, 1}[i]
		m := Mem{Base: base, Disp: u * e.size}
		if scale > 0 {
			m.Index, m.Scale = lda, scale
		}
		return m
	}
	advanceA := func(steps int) {
		switch {
		case aCols:
			return // every step
		case !aRows:
			ADDQ(U32(steps*mr*e.size), pa)
			return
		}
		for _, r := range []Register{pa, a3, a6} {
			ADDQ(U32(steps*e.size), r)
		}
	}

	bv := regs[:nv]
	bc := regs[nv : nv+2]
	acc := make([][]VecPhysical, mr)
	next := nv + 2
	if !avx512 {
		next = nv + 1
		bc = regs[nv : nv+1]
	}
	for i := range mr {
		acc[i] = regs[next : next+nv]
		next += nv
	}
	if next > len(regs) {
		panic(fmt.Sprintf("%s: needs %d vector registers", name, next))
	}

	// warm the C tile while the products run
	if !sh.attn {
		MOVQ(pc, RAX)
		for range mr {
			PREFETCHT0(Mem{Base: RAX})
			if nr*e.size > 64 {
				PREFETCHT0(Mem{Base: RAX, Disp: nr*e.size - 1})
			}
			ADDQ(ldc, RAX)
		}
	}
	for i := range mr {
		for _, r := range acc[i] {
			if avx512 {
				VPXORD(r, r, r)
			} else {
				VXORPS(r.AsY(), r.AsY(), r.AsY())
			}
		}
	}

	step := func(u int) {
		for v := range nv {
			if sh.attn {
				e.movu(Mem{Base: pb, Disp: v * lanes * e.size}, bv[v])
			} else {
				e.movu(Mem{Base: pb, Disp: (u*nr + v*lanes) * e.size}, bv[v])
			}
		}
		if sh.attn {
			ADDQ(ldb, pb)
		}
		for i := range mr {
			t := bc[i%len(bc)]
			e.broadcast(aAt(i, u), t)
			for v := range nv {
				e.fma(bv[v], t, acc[i][v])
			}
		}
		if aCols {
			ADDQ(lda, pa)
		}
	}
	advanceB := func(steps int) {
		if !sh.attn {
			ADDQ(U32(steps*nr*e.size), pb)
		}
	}
	MOVQ(kc, RAX)
	SHRQ(U8(log2(unroll)), RAX)
	JZ(LabelRef(name + "_tail"))
	Label(name + "_loop")
	for u := range unroll {
		step(u)
	}
	advanceA(unroll)
	advanceB(unroll)
	DECQ(RAX)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_tail")
	ANDQ(U32(unroll-1), kc)
	JZ(LabelRef(name + "_store"))
	Label(name + "_tailloop")
	step(0)
	advanceA(1)
	advanceB(1)
	DECQ(kc)
	JNZ(LabelRef(name + "_tailloop"))

	Label(name + "_store")
	if !sh.attn {
		Load(Param("mask"), RAX)
	}
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
	if sh.attn { // every column
		TESTB(BL, BL)
		JNZ(LabelRef(name + "_acc"))
		rows(name+"_set", func(i int) {
			for v := range nv {
				VMOVUPS(acc[i][v], Mem{Base: pc, Disp: v * vbytes})
			}
		})
		rows(name+"_acc", func(i int) {
			for v := range nv {
				VADDPS(Mem{Base: pc, Disp: v * vbytes}, acc[i][v], acc[i][v])
				VMOVUPS(acc[i][v], Mem{Base: pc, Disp: v * vbytes})
			}
		})
	} else if avx512 {
		for v := range nv {
			KMOVW(EAX, kreg[v])
			if v < nv-1 {
				SHRQ(U8(lanes), RAX)
			}
		}
		t := bc[0]
		if bias { // the B registers are free now: they hold the bias (masked lanes 0)
			pbias := R11
			Load(Param("bias"), pbias)
			for v := range nv {
				e.movuZ(Mem{Base: pbias, Disp: v * vbytes}, kreg[v], bv[v])
			}
		}
		addBias := func(i, v int) {
			if bias {
				e.add(bv[v], acc[i][v], acc[i][v])
			}
		}
		TESTB(BL, BL)
		JNZ(LabelRef(name + "_acc"))
		rows(name+"_set", func(i int) {
			for v := range nv {
				addBias(i, v)
				e.movu(acc[i][v], kreg[v], Mem{Base: pc, Disp: v * vbytes})
			}
		})
		rows(name+"_acc", func(i int) {
			for v := range nv {
				e.movuZ(Mem{Base: pc, Disp: v * vbytes}, kreg[v], t)
				e.add(t, acc[i][v], acc[i][v])
				addBias(i, v)
				e.movu(acc[i][v], kreg[v], Mem{Base: pc, Disp: v * vbytes})
			}
		})
	} else {
		full := uint64(1)<<nr - 1
		// masks for the masked path (B registers are free now)
		CMPQ(RAX, U32(full))
		JNE(LabelRef(name + "_masked"))
		pbias := R11
		if bias { // the B registers are free now: they hold the bias
			Load(Param("bias"), pbias)
			for v := range nv {
				e.movu(Mem{Base: pbias, Disp: v * vbytes}, bv[v])
			}
		}
		addBias := func(i int) {
			if bias {
				for v := range nv {
					e.add(bv[v], acc[i][v], acc[i][v])
				}
			}
		}
		TESTB(BL, BL)
		JNZ(LabelRef(name + "_fullacc"))
		rows(name+"_fullset", func(i int) {
			addBias(i)
			for v := range nv {
				e.movu(acc[i][v], Mem{Base: pc, Disp: v * vbytes})
			}
		})
		rows(name+"_fullacc", func(i int) {
			for v := range nv {
				e.add(Mem{Base: pc, Disp: v * vbytes}, acc[i][v], acc[i][v])
				if bias {
					e.add(bv[v], acc[i][v], acc[i][v])
				}
				e.movu(acc[i][v], Mem{Base: pc, Disp: v * vbytes})
			}
		})
		Label(name + "_masked")
		t := bc[0]
		for v := range nv {
			MOVQ(RAX, R10)
			if v > 0 {
				SHRQ(U8(v*lanes), R10)
			}
			VMOVQ(R10, t.AsX())
			e.pbroadcast(t.AsX(), bv[v])
			VPAND(e.bits, bv[v], bv[v])
			e.pcmpeq(e.bits, bv[v], bv[v])
		}
		// the bias of the masked columns, reloaded for each row (an edge
		// tile) into Y15, the one register the 6×16 kernel leaves free:
		// the B registers hold the masks here
		maskBias := func(i, v int) {
			if bias {
				e.maskmov(Mem{Base: pbias, Disp: v * vbytes}, bv[v], Y15)
				e.add(Y15, acc[i][v], acc[i][v])
			}
		}
		if bias {
			if next > 15 {
				panic(name + ": no register left for the bias")
			}
			Load(Param("bias"), pbias)
		}
		TESTB(BL, BL)
		JNZ(LabelRef(name + "_maskacc"))
		rows(name+"_maskset", func(i int) {
			for v := range nv {
				maskBias(i, v)
				e.maskmov(acc[i][v], bv[v], Mem{Base: pc, Disp: v * vbytes})
			}
		})
		rows(name+"_maskacc", func(i int) {
			for v := range nv {
				e.maskmov(Mem{Base: pc, Disp: v * vbytes}, bv[v], t)
				e.add(t, acc[i][v], acc[i][v])
				maskBias(i, v)
				e.maskmov(acc[i][v], bv[v], Mem{Base: pc, Disp: v * vbytes})
			}
		})
	}
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

func log2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	if 1<<k != n {
		panic(fmt.Sprint(n, " is not a power of two"))
	}
	return k
}
