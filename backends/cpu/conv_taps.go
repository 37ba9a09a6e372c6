package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

// Tap-by-tap convolution for the small maps of a network's deep layers.
// There the unfolded matrix is mostly padding: on ResNet-18's 2×2 maps a
// 3×3 window reads the input at 4 of its 9 taps (44% of the GEMM path's
// multiply-adds are useful), on 4×4 maps 69%. Here each tap t = (ki, kj)
// is a product of its own, over only the positions where it reads inside
// the input, so no multiply-add is spent on padding and nothing is
// unfolded or folded. The input and the output gradient are first laid out
// [channel][position][sample] (sampleMinor) and the weights [tap][O][C]:
// a tap's valid output positions are a rectangle, and each row of it is
// then one run of contiguous columns (whole rows merge into one run):
//
//   - forward: Y [O, P·N] (positions major, samples minor) += W_t · X_t,
//     X_t's columns the input pixels tap t reads for a run of positions;
//   - input gradient: dX [C, Q'·N] += W_tᵀ · dY_t, with dX's input
//     positions ordered by stride phase (qh mod sh, qw mod sw, qh / sh,
//     qw / sw), so that the pixels a run of output positions reaches, sw
//     apart, are contiguous too;
//   - weight gradient: dW_t [O, C] = Σ over the runs of dY_t · X_tᵀ.
//
// The weights of a tap are packed once for all its runs, by all the
// workers (prepackParallel: packed serially, they took ~1% of a ResNet-18
// step's CPU time with the other worker idle). The products are the
// package's serial GEMM, on pieces of columns that the workers share
// (forward pass, input gradient) or on taps that they share (weight
// gradient), so an element's sum (over taps in order, then
// channels or pairs in the GEMM's order) never depends on the thread
// count. Y, dX and dW are then transposed into their tensors' layouts.

// convTapsMode overrides the choice of the tap path, for tests and
// benchmarks: "" chooses it by useConvTaps, "off" never takes it, "force"
// takes it for every convolution.
var convTapsMode = ""

// convTapsMaxUse is the largest fraction of the unfolded matrix's entries
// that read inside the input (convTapsUse) for which the forward pass and
// the input gradient take the tap path: below it (ResNet-18's 4×4 and 2×2
// maps, 69% and 44%) the multiply-adds it saves outweigh its smaller
// products; its 8×8 maps (84%) ran faster on the GEMM path.
const convTapsMaxUse = 0.8

// convTapsMaxUseWeight is convTapsMaxUse for the weight gradient, whose
// tap products are larger (the batch's pairs summed, not a tap's
// positions): ResNet-18's 8×8 layers (84%) ran 1.1-1.2x faster on the tap
// path, its strided 16×16 → 8×8 layer (92%) 1.05x slower.
const convTapsMaxUseWeight = 0.9

// convTapsUse returns the fraction of the (tap, output position) pairs of
// g whose input pixel lies inside the input.
func convTapsUse(g backends.ConvGeometry) float64 {
	in := 0
	for ki := range g.KH {
		hLo, hHi := validRange(g.OutH, g.StrideH, g.PadTop, ki*g.DilationH, g.H)
		for kj := range g.KW {
			wLo, wHi := validRange(g.OutW, g.StrideW, g.PadLeft, kj*g.DilationW, g.W)
			in += (hHi - hLo) * (wHi - wLo)
		}
	}
	return float64(in) / float64(max(1, g.KH*g.KW*g.OutH*g.OutW))
}

// tapRuns returns the runs of tap t of g over n samples per position:
// for each output position whose input pixel (ih, iw) lies inside the
// input, the output's column (oh·OutW+ow)·n as dst and the input's,
// inAt(ih, iw)·n, as src, or the other way round with inIsDst.
func tapRuns(g backends.ConvGeometry, t, n int, inAt func(ih, iw int) int, inIsDst bool) []tapRun {
	ki, kj := t/g.KW, t%g.KW
	hLo, hHi := validRange(g.OutH, g.StrideH, g.PadTop, ki*g.DilationH, g.H)
	wLo, wHi := validRange(g.OutW, g.StrideW, g.PadLeft, kj*g.DilationW, g.W)
	var runs []tapRun
	for oh := hLo; oh < hHi && wLo < wHi; oh++ {
		ih := oh*g.StrideH - g.PadTop + ki*g.DilationH
		for ow := wLo; ow < wHi; ow++ {
			iw := ow*g.StrideW - g.PadLeft + kj*g.DilationW
			r := tapRun{dst: (oh*g.OutW + ow) * n, src: inAt(ih, iw) * n, n: n}
			if inIsDst {
				r.dst, r.src = r.src, r.dst
			}
			runs = addTapRun(runs, r)
		}
	}
	return runs
}

// convPass is one of a convolution's three products.
type convPass int

const (
	convForwardPass convPass = iota
	convInputPass
	convWeightPass
)

// useConvTaps reports whether pass of convolution g takes the tap path. By
// default, on the machines where it was measured faster (AVX2 without
// AVX-512, those that take the direct path: an AVX-512 machine's GEMM path
// is another trade-off, not yet measured), it takes the weight gradients
// of the convolutions that use less than convTapsMaxUseWeight of the
// unfolded matrix, and the input gradients of the unstrided ones that use
// less than convTapsMaxUse (ResNet-18's strided 4×4 → 2×2 layer's input
// gradient ran 1.1x slower there, its weight gradient 1.2x faster). The forward
// pass, measured faster too (1.15-1.35x on ResNet-18's 4×4 and 2×2
// layers), is left on the GEMM path: tensor's TestFusedConvMatchesComposed
// requires the fused forward pass to make the composed one's sums in its
// order (over channels, then taps) bit for bit, and the tap path sums over
// taps, then channels.
func useConvTaps(g backends.ConvGeometry, pass convPass) bool {
	switch convTapsMode {
	case "off":
		return false
	case "force":
		return true
	}
	if !convDirectKernels || g.KH*g.KW == 1 {
		return false
	}
	switch pass {
	case convWeightPass:
		return convTapsUse(g) < convTapsMaxUseWeight
	case convInputPass:
		return g.StrideH == 1 && g.StrideW == 1 && convTapsUse(g) < convTapsMaxUse
	}
	return false
}

// tapRun is one product of a tap: n columns of the destination from
// column dst on, read from the source's columns src on.
type tapRun struct{ dst, src, n int }

// addTapRun appends a run, merging it into the last one where it
// continues it in both the destination and the source.
func addTapRun(runs []tapRun, r tapRun) []tapRun {
	if k := len(runs) - 1; k >= 0 && runs[k].dst+runs[k].n == r.dst && runs[k].src+runs[k].n == r.src {
		runs[k].n += r.n
		return runs
	}
	return append(runs, r)
}

// sampleMinor returns src ([n][rows][cols]) laid out [rows][cols][n], in
// a buffer from the pool: a position's samples side by side, so that a
// tap's run of positions is a run of contiguous columns. The workers
// share the positions: on two workers, a serial transpose took about 4%
// of a ResNet-18 training step's CPU time with one of them idle.
func sampleMinor[T float](b *Backend, src []T, n, rows, cols int) *[]T {
	dst := poolFor[T]().get(n * rows * cols)
	d := *dst
	rc := rows * cols
	if n*rc == 0 {
		return dst
	}
	_ = src[n*rc-1]
	b.parallel(rc, grainFor(rc, n), func(lo, hi int) {
		if n < 64 {
			// a batch: each source row read once, in order
			for s := range n {
				for i, v := range src[s*rc+lo : s*rc+hi] {
					d[(lo+i)*n+s] = v
				}
			}
			return
		}
		// many rows (the weights' [O·C][9] to [9][O·C]) in 32×32 tiles,
		// whose source and destination rows stay in L1: row by row, each
		// step read a row of 9 and wrote 9 rows a megabyte apart (1.7-2x
		// slower)
		const tile = 32
		for i0 := lo; i0 < hi; i0 += tile {
			i1 := min(i0+tile, hi)
			for s0 := 0; s0 < n; s0 += tile {
				s1 := min(s0+tile, n)
				for i := i0; i < i1; i++ {
					row := d[i*n+s0 : i*n+s1]
					for j := range row {
						row[j] = src[(s0+j)*rc+i]
					}
				}
			}
		}
	})
	return dst
}

// tapPiece is the most columns one task of a tap's products computes: 64
// (4 of the AVX2 kernel's 16-wide panels) gives two workers pieces to
// share on ResNet-18's 2×2 maps (128 columns for the central tap).
const tapPiece = 64

// convTapProducts computes dst [m, cols] = Σ_t A_t · B_t. A_t (m×k) is
// tap t's weights: wt holds them tap by tap, [kk][k][m] when trans, else
// [kk][m][k]. B_t's columns are runs(t)'s runs of src, a [k][srcCols]
// matrix.
func convTapProducts[T float](b *Backend, dst, wt, src []T, m, k, cols, srcCols, kk int, trans bool,
	runs func(t int) []tapRun) {
	kern, pool := convKernel[T](), poolFor[T]()
	clear(dst[:m*cols])
	preA := pool.get(roundUp(m, kern.mr) * k)
	for t := range kk {
		rs := runs(t)
		if len(rs) == 0 {
			continue
		}
		a := matSrc[T]{s: wt, off: t * m * k, rs: k, cs: 1}
		if trans {
			a.rs, a.cs = 1, m
		}
		prepackParallel(b, *preA, kern, m, cols, k, a, matSrc[T]{}, false)
		// the runs cut in pieces of tapPiece columns, shared by the
		// workers, each a serial GEMM reading the packed weights: a
		// parallel GEMM of a few columns would pack them again per strip
		var pieces []tapRun
		for _, r := range rs {
			for c := 0; c < r.n; c += tapPiece {
				pieces = append(pieces, tapRun{dst: r.dst + c, src: r.src + c, n: min(tapPiece, r.n-c)})
			}
		}
		b.parallel(len(pieces), 1, func(lo, hi int) {
			for _, r := range pieces[lo:hi] {
				gemmPacked(b, kern, m, r.n, k, a, // packed in preA
					matSrc[T]{s: src, off: r.src, rs: srcCols, cs: 1},
					matDst[T]{s: dst, off: r.dst, rs: cols, cs: 1, acc: true}, false, *preA, nil)
			}
		})
	}
	pool.put(preA)
}

// convTapsForward is convForward on the tap path.
func convTapsForward[T float](b *Backend, out, x, w []T, g backends.ConvGeometry, o int) {
	n, hw, p, kk := g.N, g.H*g.W, g.OutH*g.OutW, g.KH*g.KW
	pool := poolFor[T]()
	xt := sampleMinor(b, x, n, g.C, hw)   // [C][HW][N]
	wt := sampleMinor(b, w, o*g.C, kk, 1) // [KK][O·C]: tap t's [O][C]
	y := pool.get(o * p * n)              // [O][P][N]
	convTapProducts(b, *y, *wt, *xt, o, g.C, p*n, hw*n, kk, false, func(t int) []tapRun {
		return tapRuns(g, t, n, func(ih, iw int) int { return ih*g.W + iw }, false)
	})
	// out[s, oc, pp] = y[oc, pp·n + s]
	b.parallel(o, grainFor(o, p*n), func(lo, hi int) {
		for oc := lo; oc < hi; oc++ {
			for pp := range p {
				row := (*y)[(oc*p+pp)*n:][:n]
				for s, v := range row {
					out[(s*o+oc)*p+pp] = v
				}
			}
		}
	})
	pool.put(y)
	pool.put(wt)
	pool.put(xt)
}

// tapPhases orders a map's positions by stride phase (see the file's
// comment): size places in all, some of them unused where the map's sides
// are not multiples of the strides.
type tapPhases struct{ sh, sw, hs, ws int }

// newTapPhases returns the phase order of g's input positions.
func newTapPhases(g backends.ConvGeometry) tapPhases {
	return tapPhases{sh: g.StrideH, sw: g.StrideW, hs: ceilDiv(g.H, g.StrideH), ws: ceilDiv(g.W, g.StrideW)}
}

// size is the number of places.
func (f tapPhases) size() int { return f.sh * f.sw * f.hs * f.ws }

// index returns position (qh, qw)'s place.
func (f tapPhases) index(qh, qw int) int {
	return (((qh%f.sh)*f.sw+qw%f.sw)*f.hs+qh/f.sh)*f.ws + qw/f.sw
}

// convTapsInputGrad is convInputGrad on the tap path.
func convTapsInputGrad[T float](b *Backend, dx, dy, w []T, g backends.ConvGeometry, o int) {
	n, hw, p, kk := g.N, g.H*g.W, g.OutH*g.OutW, g.KH*g.KW
	ph := newTapPhases(g)
	q := ph.size()
	pool := poolFor[T]()
	dyt := sampleMinor(b, dy, n, o, p)    // [O][P][N]
	wt := sampleMinor(b, w, o*g.C, kk, 1) // [KK][O·C]: tap t's [O][C], read transposed
	gx := pool.get(g.C * q * n)           // [C][Q'][N]
	convTapProducts(b, *gx, *wt, *dyt, g.C, o, q*n, p*n, kk, true, func(t int) []tapRun {
		return tapRuns(g, t, n, ph.index, true)
	})
	// dx[s, c, qh, qw] = gx[c, index(qh, qw)·n + s]
	b.parallel(g.C, grainFor(g.C, hw*n), func(lo, hi int) {
		for c := lo; c < hi; c++ {
			for qh := range g.H {
				for qw := range g.W {
					col := (*gx)[(c*q+ph.index(qh, qw))*n:][:n]
					for s, v := range col {
						dx[(s*g.C+c)*hw+qh*g.W+qw] = v
					}
				}
			}
		}
	})
	pool.put(gx)
	pool.put(wt)
	pool.put(dyt)
}

// convTapsWeightGrad is convWeightGrad on the tap path: dW_t [O, C] is
// the product of the output gradient's and the input's pixels over tap
// t's valid (position, sample) pairs, both laid out [channel][position]
// [sample] so that each of the tap's runs of pairs is a run of contiguous
// columns of both; the runs' products add up in a [tap][O][C] buffer, run
// after run, which is then transposed into dw.
func convTapsWeightGrad[T float](b *Backend, dw, dy, x []T, g backends.ConvGeometry, o int) {
	n, hw, p, kk := g.N, g.H*g.W, g.OutH*g.OutW, g.KH*g.KW
	kern, pool := convKernel[T](), poolFor[T]()
	dyt := sampleMinor(b, dy, n, o, p)  // [O][P][N]
	xt := sampleMinor(b, x, n, g.C, hw) // [C][HW][N]
	gw := pool.get(kk * o * g.C)        // [KK][O][C]
	b.parallel(kk, 1, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			// dst: the output gradient's column, src: the input's
			runs := tapRuns(g, t, n, func(ih, iw int) int { return ih*g.W + iw }, false)
			dst := (*gw)[t*o*g.C:][:o*g.C]
			if len(runs) == 0 {
				clear(dst) // a tap that reads only padding
			}
			for i, r := range runs {
				gemm(b, kern, o, g.C, r.n,
					matSrc[T]{s: *dyt, off: r.dst, rs: p * n, cs: 1},
					matSrc[T]{s: *xt, off: r.src, rs: 1, cs: hw * n},
					matDst[T]{s: dst, rs: g.C, cs: 1, acc: i > 0}, false)
			}
		}
	})
	// dw[oc, c, t] = gw[t, oc, c], written in order and shared by the
	// workers (ResNet-18's last layers have 2.4 M weights)
	oc := o * g.C
	b.parallel(oc, grainFor(oc, kk), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d := dw[i*kk:][:kk]
			for t := range d {
				d[t] = (*gw)[t*oc+i]
			}
		}
	})
	pool.put(gw)
	pool.put(xt)
	pool.put(dyt)
}
