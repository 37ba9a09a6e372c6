package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The Winograd F(2×2, 3×3) convolution's transforms (backends/cpu/
// conv_winograd.go): out = L·in·Lᵀ for a small constant matrix L (m×k),
// in a k×k matrix and out an m×m one of vectors along a contiguous lane
// dimension (the channels), sixteen lanes a zmm register, the last n mod
// 16 under a mask. in(r, c) is read from src + r·srs + c·scs, out(i, j)
// written to dst + i·drs + j·dcs (strides in elements). Each entry is a
// sum over L's nonzero coefficients in index order: ±1 adds or
// subtracts, ±½ adds or subtracts the term halved (exact), the first term
// taken as it is or as 0 minus it; backends/cpu's winoXformGo computes
// the same sums in the same order, so the two give the same bits.

// winoMatrices are the transforms' L: Bᵀ (input tiles), Aᵀ (outputs), G
// (filters), A (output gradients) and Gᵀ (filter gradients), shared with
// backends/cpu/conv_winograd.go.
var winoMatrices = []struct {
	name string
	l    [][]float64
}{
	{"winoBT", [][]float64{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}}},
	{"winoAT", [][]float64{{1, 1, 1, 0}, {0, 1, -1, -1}}},
	{"winoG", [][]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}}},
	{"winoA", [][]float64{{1, 0}, {1, 1}, {1, -1}, {0, -1}}},
	{"winoGT", [][]float64{{1, 0.5, 0.5, 0}, {0, 0.5, -0.5, 0}, {0, 0.5, 0.5, 1}}},
}

// winoKernels generates one AVX-512 kernel per transform.
func winoKernels() {
	for _, w := range winoMatrices {
		winoKernel(w.name+"AVX512", w.l)
	}
}

// winoKernel generates name: out = l·in·lᵀ over the lanes.
func winoKernel(name string, l [][]float64) {
	m, k := len(l), len(l[0])
	TEXT(name, NOSPLIT, "func(dst *float32, drs, dcs int, src *float32, srs, scs, n int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets the %d×%d matrix dst(i, j) = (L·S·Lᵀ)(i, j) over n lanes for the %d×%d matrix S = src(r, c), dst(i, j) at dst + i·drs + j·dcs and src(r, c) at src + r·srs + c·scs (element strides), L = %v (AVX-512).", name, m, m, k, k, l))
	// the mask of the last n mod 16 lanes, then the blocks of 16
	Load(Param("n"), RCX)
	MOVQ(RCX, R15)
	ANDQ(U8(15), RCX)
	MOVQ(U32(1), RAX)
	SHLQ(CL, RAX)
	DECQ(RAX)
	KMOVW(EAX, K1)
	SHRQ(U8(4), R15)
	srcRows := []GPPhysical{RSI, R8, R9, R10}[:k]
	dstRows := []GPPhysical{RDI, R11, R12, R13}[:m]
	scs, scs3, dcs, dcs3 := RDX, RBX, RAX, RCX
	Load(Param("src"), srcRows[0])
	Load(Param("srs"), scs) // scratch for the row stride
	SHLQ(U8(2), scs)
	for r := 1; r < k; r++ {
		LEAQ(Mem{Base: srcRows[r-1], Index: scs, Scale: 1}, srcRows[r])
	}
	Load(Param("dst"), dstRows[0])
	Load(Param("drs"), dcs)
	SHLQ(U8(2), dcs)
	for i := 1; i < m; i++ {
		LEAQ(Mem{Base: dstRows[i-1], Index: dcs, Scale: 1}, dstRows[i])
	}
	Load(Param("scs"), scs)
	SHLQ(U8(2), scs)
	LEAQ(Mem{Base: scs, Index: scs, Scale: 2}, scs3)
	Load(Param("dcs"), dcs)
	SHLQ(U8(2), dcs)
	LEAQ(Mem{Base: dcs, Index: dcs, Scale: 2}, dcs3)
	half, zero := Z30, Z31
	MOVL(U32(math.Float32bits(0.5)), R14L)
	VPBROADCASTD(R14L, half)
	VXORPS(zero, zero, zero)
	col := func(base GPPhysical, c int, s, s3 GPPhysical) Mem {
		switch c {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: s, Scale: 1}
		case 2:
			return Mem{Base: base, Index: s, Scale: 2}
		}
		return Mem{Base: s3, Index: base, Scale: 1}
	}
	// body computes one block with loads and stores under the mask k
	// (K0: all lanes)
	body := func(mask Op, masked bool) {
		// pass 1: t(i, c) = Σ_r l(i, r)·in(r, c), a column of in at a time
		t := make([][]VecPhysical, m)
		next := 0
		reg := func() VecPhysical { z := zmmN(next); next++; return z }
		for i := range t {
			t[i] = make([]VecPhysical, k)
		}
		for c := range k {
			in := make([]VecPhysical, k)
			for r := range k {
				in[r] = zmmN(24 + r)
				if masked {
					VMOVUPS_Z(col(srcRows[r], c, scs, scs3), mask, in[r])
				} else {
					VMOVUPS(col(srcRows[r], c, scs, scs3), in[r])
				}
			}
			for i := range m {
				t[i][c] = reg()
				winoCombine(l[i], in, t[i][c], half, zero, Z28)
			}
		}
		// pass 2: out(i, j) = Σ_c l(j, c)·t(i, c)
		for i := range m {
			for j := range m {
				out := Z29
				winoCombine(l[j], t[i], out, half, zero, Z28)
				if masked {
					VMOVUPS(out, mask, col(dstRows[i], j, dcs, dcs3))
				} else {
					VMOVUPS(out, col(dstRows[i], j, dcs, dcs3))
				}
			}
		}
	}
	Label(name + "_loop")
	TESTQ(R15, R15)
	JZ(LabelRef(name + "_tail"))
	body(nil, false)
	for _, r := range append(append([]GPPhysical{}, srcRows...), dstRows...) {
		ADDQ(U8(64), r)
	}
	DECQ(R15)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_tail")
	KTESTW(K1, K1)
	JZ(LabelRef(name + "_done"))
	body(K1, true)
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// winoCombine sets dst = Σ coef[r]·terms[r] over the nonzero coefficients
// in order (±1 or ±½; tmp holds a halved term).
func winoCombine(coef []float64, terms []VecPhysical, dst, half, zero, tmp VecPhysical) {
	first := true
	for r, c := range coef {
		if c == 0 {
			continue
		}
		term := terms[r]
		if math.Abs(c) == 0.5 {
			VMULPS(half, term, tmp)
			term = tmp
		}
		switch {
		case first && c > 0:
			VMOVAPS(term, dst)
		case first:
			VSUBPS(term, zero, dst) // 0 - term
		case c > 0:
			VADDPS(term, dst, dst)
		default:
			VSUBPS(term, dst, dst) // dst - term
		}
		first = false
	}
}

// zmmN returns zmm register i.
func zmmN(i int) VecPhysical {
	return []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}[i]
}
