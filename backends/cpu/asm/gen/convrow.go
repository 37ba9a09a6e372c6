package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// convRowMaxR is the most positions a channel tile kernel takes: 2 of its
// accumulators per position, 24 of the 32 zmm registers, leaving 2 for a
// term's weights and 6 for the positions' broadcasts.
const convRowMaxR = 12

// convChannelKernels generates the direct convolution's channel tiles
// (conv_channels.go): convRow32x{R}AVX512 for R = 1..convRowMaxR (the
// forward pass, 32 output channels × R consecutive positions),
// convTapsDW3x3AVX512 (a 3×3 weight gradient) and convScatter16x{R}AVX512
// (a valid convolution's input gradient, 16 input channels × R positions
// of an output-gradient row).
func convChannelKernels() {
	for r := 1; r <= convRowMaxR; r++ {
		convRowKernel(r)
	}
	convTapsDW3x3()
	for r := 1; r <= convRowMaxR; r++ {
		convScatterKernel(r)
	}
}

// convRowKernel generates convRow32x{r}AVX512(k, a, x, off, y, accum):
// for j < r and c < 32, the chain of fused multiply-adds over terms t < k
// in order, from zero, of a[32t + c] · x[off[t]/4 + j] (off in bytes), stored
// to y[32j + c], or added to it with accum. The positions' values are
// broadcast and the output channels run along the lanes, so a tile is a
// run of positions of any length up to 12: one row of a small output plane
// without the columns a position-wide tile computes past its end.
func convRowKernel(r int) {
	name := fmt.Sprintf("convRow32x%dAVX512", r)
	TEXT(name, NOSPLIT, "func(k int, a *float32, x *float32, off *int, y *float32, accum bool)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets (or, with accum, adds to) y[32j+c] the chain over t < k of a[32t+c]·x[off[t]/4+j], "+
		"for j < %d and c < 32 (AVX-512).", name, r))
	k := Load(Param("k"), GP64())
	a := Load(Param("a"), GP64())
	x := Load(Param("x"), GP64())
	off := Load(Param("off"), GP64())
	o := GP64()
	acc := zmm[:2*r]
	w0, w1 := Z24, Z25
	tmp := zmm[26:]
	for _, z := range acc {
		VXORPS(z, z, z)
	}
	TESTQ(k, k)
	JZ(LabelRef("row_store"))
	Label("row_loop")
	MOVQ(Mem{Base: off}, o)
	VMOVUPS(Mem{Base: a}, w0)
	VMOVUPS(Mem{Base: a, Disp: 64}, w1)
	for j := range r {
		t := tmp[j%len(tmp)]
		VBROADCASTSS(Mem{Base: x, Index: o, Scale: 1, Disp: 4 * j}, t)
		VFMADD231PS(w0, t, acc[2*j])
		VFMADD231PS(w1, t, acc[2*j+1])
	}
	ADDQ(U8(8), off)
	ADDQ(U32(128), a)
	DECQ(k)
	JNZ(LabelRef("row_loop"))
	Label("row_store")
	y := Load(Param("y"), GP64())
	acm := Load(Param("accum"), GP8())
	TESTB(acm, acm)
	JZ(LabelRef("row_put"))
	for j, z := range acc {
		VADDPS(Mem{Base: y, Disp: 64 * j}, z, z)
	}
	Label("row_put")
	for j, z := range acc {
		VMOVUPS(z, Mem{Base: y, Disp: 64 * j})
	}
	VZEROUPPER()
	RET()
}

// convTapsDW3x3 generates convTapsDW3x3AVX512(ns, oh, ow int, g, x
// *float32, xs, wp int, acc *[288]float32): a 3×3 stride-1 convolution's
// weight gradient for one input channel and 32 output channels, the nine
// taps' sums over every kept position of ns samples. Position (oy, ox) of
// sample s reads the gradient's 32 channels at gt (128 bytes a position,
// the samples' positions one after another) and the input at x + s·xs +
// (oy·wp + ox + ki·wp + kj)·4 for tap (ki, kj), broadcast; each tap's 32
// sums are chains of fused multiply-adds over the positions in order,
// continued from acc[32t + c] and stored back there. No lane is summed
// across and no dropped position is computed, as a position-wide dot
// product over the padded width would.
func convTapsDW3x3() {
	TEXT("convTapsDW3x3AVX512", NOSPLIT, "func(ns, oh, ow int, gt *float32, x *float32, xs, wp int, acc *[288]float32)")
	Pragma("noescape")
	Doc("convTapsDW3x3AVX512 adds to acc[32t+c] the chains over the kept positions p of ns samples of",
		"gt[32p+c]·(the input at tap t of p), for the nine taps t of a 3×3 window and c < 32 (AVX-512).")
	ns := Load(Param("ns"), GP64())
	oh := Load(Param("oh"), GP64())
	ow := Load(Param("ow"), GP64())
	g := Load(Param("gt"), GP64())
	xb := Load(Param("x"), GP64())
	xs := Load(Param("xs"), GP64())
	wp := Load(Param("wp"), GP64())
	SHLQ(U8(2), xs)
	SHLQ(U8(2), wp)
	skip := GP64() // bytes from a row's last kept position to the next row's first
	MOVQ(wp, skip)
	rowBytes := GP64()
	MOVQ(ow, rowBytes)
	SHLQ(U8(2), rowBytes)
	SUBQ(rowBytes, skip)
	accs := zmm[:18]
	g0, g1 := Z18, Z19
	tmp := zmm[20:29]
	{
		acc := Load(Param("acc"), GP64())
		for t, z := range accs {
			VMOVUPS(Mem{Base: acc, Disp: 64 * t}, z)
		}
	}
	x := GP64()
	rows := GP64()
	cols := GP64()
	Label("dw_sample")
	TESTQ(ns, ns)
	JZ(LabelRef("dw_done"))
	MOVQ(xb, x)
	MOVQ(oh, rows)
	Label("dw_row")
	TESTQ(rows, rows)
	JZ(LabelRef("dw_next_sample"))
	MOVQ(ow, cols)
	Label("dw_col")
	VMOVUPS(Mem{Base: g}, g0)
	VMOVUPS(Mem{Base: g, Disp: 64}, g1)
	for ki := range 3 {
		for kj := range 3 {
			t := 3*ki + kj
			m := Mem{Base: x, Disp: 4 * kj}
			if ki > 0 {
				m = Mem{Base: x, Index: wp, Scale: uint8(ki), Disp: 4 * kj}
			}
			VBROADCASTSS(m, tmp[t])
			VFMADD231PS(g0, tmp[t], accs[2*t])
			VFMADD231PS(g1, tmp[t], accs[2*t+1])
		}
	}
	ADDQ(U32(128), g)
	ADDQ(U8(4), x)
	DECQ(cols)
	JNZ(LabelRef("dw_col"))
	ADDQ(skip, x)
	DECQ(rows)
	JMP(LabelRef("dw_row"))
	Label("dw_next_sample")
	ADDQ(xs, xb)
	DECQ(ns)
	JMP(LabelRef("dw_sample"))
	Label("dw_done")
	{
		acc := Load(Param("acc"), GP64())
		for t, z := range accs {
			VMOVUPS(z, Mem{Base: acc, Disp: 64 * t})
		}
	}
	VZEROUPPER()
	RET()
}

// convScatterKernel generates convScatter16x{r}AVX512(o, taps, w, dy, dys,
// dx, toff): for each tap t < taps in order, the chains over o' < o in
// order, from zero, of w[16(t·o + o') + c] · dy[o'·dys/4 + j] for j < r and
// c < 16, each added to the 16 floats at dx + toff[t] + 64j (byte
// offsets). The output gradient's values are broadcast and the input
// channels run along the lanes: every multiply-add is one of the input
// gradient's terms, none reads the zeros that frame the gradient when it
// is computed as a convolution. Taps go two at a time, so that each
// broadcast feeds two multiply-adds: with one, the MNIST CNN's second
// layer's input gradient ran at 74-76 GFLOP/s on a Zen 4, with two at
// 89-98 (BenchmarkResNetConvs).
func convScatterKernel(r int) {
	name := fmt.Sprintf("convScatter16x%dAVX512", r)
	TEXT(name, NOSPLIT, "func(o, taps int, w *float32, dy *float32, dys int, dx *float32, toff *int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s adds to dx[toff[t]/4+16j+c] the chain over o' < o of w[16(t·o+o')+c]·dy[o'·dys/4+j], "+
		"for each tap t < taps, j < %d and c < 16 (AVX-512).", name, r))
	o := Load(Param("o"), GP64())
	taps := Load(Param("taps"), GP64())
	w := Load(Param("w"), GP64())
	dys := Load(Param("dys"), GP64())
	toff := Load(Param("toff"), GP64())
	ostride := GP64() // bytes from a tap's weights to the next tap's
	MOVQ(o, ostride)
	SHLQ(U8(6), ostride)
	acc0, acc1 := zmm[:r], zmm[12:12+r]
	w0, w1 := Z24, Z25
	tmp := zmm[26:]
	d := GP64()
	n := GP64()
	off := GP64()
	// body emits one tap's (pair false) or two taps' chains and their
	// additions into dx, then advances w past them and toff
	body := func(pair bool, lbl string) {
		for j := range r {
			VXORPS(acc0[j], acc0[j], acc0[j])
			if pair {
				VXORPS(acc1[j], acc1[j], acc1[j])
			}
		}
		Load(Param("dy"), d)
		MOVQ(o, n)
		Label(lbl)
		VMOVUPS(Mem{Base: w}, w0)
		if pair {
			VMOVUPS(Mem{Base: w, Index: ostride, Scale: 1}, w1)
		}
		for j := range r {
			t := tmp[j%len(tmp)]
			VBROADCASTSS(Mem{Base: d, Disp: 4 * j}, t)
			VFMADD231PS(w0, t, acc0[j])
			if pair {
				VFMADD231PS(w1, t, acc1[j])
			}
		}
		ADDQ(U8(64), w)
		ADDQ(dys, d)
		DECQ(n)
		JNZ(LabelRef(lbl))
		accs := [][]VecPhysical{acc0}
		if pair {
			accs = append(accs, acc1)
			ADDQ(ostride, w) // past the second tap's weights
		}
		for k, acc := range accs {
			MOVQ(Mem{Base: toff, Disp: 8 * k}, off)
			Load(Param("dx"), d)
			ADDQ(off, d)
			for j, z := range acc {
				VADDPS(Mem{Base: d, Disp: 64 * j}, z, z)
				VMOVUPS(z, Mem{Base: d, Disp: 64 * j})
			}
		}
		ADDQ(U8(uint8(8*len(accs))), toff)
	}
	Label("sc_pair")
	CMPQ(taps, U8(2))
	JB(LabelRef("sc_single"))
	body(true, "sc_pair_o")
	SUBQ(U8(2), taps)
	JMP(LabelRef("sc_pair"))
	Label("sc_single")
	TESTQ(taps, taps)
	JZ(LabelRef("sc_done"))
	body(false, "sc_single_o")
	Label("sc_done")
	VZEROUPPER()
	RET()
}
