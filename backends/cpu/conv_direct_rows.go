package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

// The direct input gradient in row passes. convDirectInputGrad computes
// dx as a valid convolution of dy framed by the window's extent: on small
// maps most of that frame is zeros that every window multiplies (the MNIST
// CNN's second layer: an 11×11 gradient framed to 15×15 for a 13×13 input,
// 56% of its multiply-adds useful). Here the window's rows are taken one
// at a time instead:
//
//	dx[c, y, x] = Σ_ki Σ_(o, kj) w[o, c, ki, kj] · dy[o, y + pt − ki·dh, x + pl − kj·dw]
//
// Pass ki covers only the input rows y whose gradient row y + pt − ki·dh
// exists, so no row of zeros is multiplied. Each (o, sample) gradient
// plane is laid out wd wide, its OutW columns followed by zeros, behind
// lead zeros: numbering dx's positions wd wide too, q = y·wd + x, the
// term (o, kj) of a pass reads the plane at one shift of q, and the
// columns that fall outside the gradient's row land on the zeros of its
// own row or of the one before (wd ≥ W + pl keeps them from reaching the
// next row's data, wd ≥ OutW + (KW−1)·dw − pl the previous row's). A pass
// is then the product convDirect.product makes, weights · shifted runs,
// on the kernels' tiles (4 input channels × 24 positions, or 6 × 16),
// adding into dx's wide planes. On the MNIST CNN's second layer this is
// 84% useful multiply-adds in three passes of 96 terms each, and the
// input gradient ran 1.4-1.6x faster than framed.
//
// Each element's sum runs over the K blocks of a pass's terms (blocks of
// convDirectKC), within a block over the passes in order, then over the
// terms in order: it depends only on the shapes.

// convRowsMode overrides the choice of the direct input gradient's
// formulation, for tests and benchmarks: "" takes the row passes where
// they pay (useConvRows), "off" never, "force" always.
var convRowsMode = ""

// convRows is the plan of a stride-1 input gradient in row passes: d's
// fields as for the framed formulation (cin the gradient's channels O,
// cout the input's C, s the samples per chunk, mr×nr the tile), then the
// wide layout's width, the zeros before a plane's first row, a plane's
// length, the length of a row of product's scratch (a wide dx plane and a
// tile's overrun), and each pass's rows [y0, y1) of dx.
type convRows struct {
	d          convDirect
	h, w       int // dx's plane
	outH, outW int // dy's plane
	pt, pl     int
	wd, lead   int
	plane, ys  int
	rows       [][2]int
}

// newConvRows returns the plan of the input gradient of g with o output
// channels in row passes.
func newConvRows(g backends.ConvGeometry, o int) convRows {
	d := newConvDirect(g.N, o, g.C, g.KH, g.KW, g.DilationH, g.DilationW, g.H, g.W)
	reach := (g.KW - 1) * g.DilationW
	r := convRows{d: d, h: g.H, w: g.W, outH: g.OutH, outW: g.OutW, pt: g.PadTop, pl: g.PadLeft,
		wd: max(g.OutW, g.W+g.PadLeft, g.OutW+reach-g.PadLeft), lead: max(0, reach-g.PadLeft)}
	// a pass's reads end before lead + (OutH−1)·wd + W + pl + nr − 1 and
	// its writes before (H−1)·wd + W + nr − 1 (see product)
	r.plane = r.lead + g.OutH*r.wd + g.PadLeft + d.nr
	r.ys = roundUp(g.H*r.wd+d.nr, 8)
	r.rows = make([][2]int, g.KH)
	for ki := range g.KH {
		// the rows y whose gradient row y + pt − ki·dh lies in [0, OutH)
		y0, y1 := validRange(g.H, 1, ki*g.DilationH, g.PadTop, g.OutH)
		r.rows[ki] = [2]int{y0, y1}
	}
	return r
}

// positions returns the wide positions pass ki computes (0 for none),
// from its first row on, up to its last row's W-th.
func (r convRows) positions(ki int) int {
	y0, y1 := r.rows[ki][0], r.rows[ki][1]
	if y1 <= y0 {
		return 0
	}
	return (y1-y0-1)*r.wd + r.w
}

// convRowsCost estimates the input gradient's cost on the direct path in
// row passes and framed, in the units of one summed term of one tile: the
// tiles times their terms, plus 8 per tile call for its calling and for
// loading and storing its sums (on the MNIST CNN's second layer 1872
// against 2736).
func convRowsCost(g backends.ConvGeometry, o int) (rows, framed int) {
	r := newConvRows(g, o)
	nr, k := r.d.nr, o*g.KW
	calls := func(k int) int { return ceilDiv(k, convDirectKC) }
	for ki := range g.KH {
		rows += ceilDiv(r.positions(ki), nr) * (k + 8*calls(k))
	}
	k *= g.KH
	framed = ceilDiv(r.d.positions(), nr) * (k + 8*calls(k))
	return rows, framed
}

// useConvRows reports whether the direct input gradient of g takes the row
// passes: where they cost clearly less than the framed formulation.
func useConvRows(g backends.ConvGeometry, o int) bool {
	switch convRowsMode {
	case "off":
		return false
	case "force":
		return true
	}
	rows, framed := convRowsCost(g, o)
	return float64(rows) < convRowsMaxCost*float64(framed)
}

// convRowsMaxCost is the largest ratio of the row passes' estimated cost
// to the framed formulation's for which they are taken: the estimate
// favours the row passes more than measured, on ResNet-18's 16×16 maps
// with "same" padding (0.94) they ran 1.1x slower, on the MNIST CNN's
// second layer (0.68) 1.4x faster.
const convRowsMaxCost = 0.8

// offsets returns the byte offsets of the summed terms (o, kj) of a pass,
// in a chunk of sn samples: plane (o, sample 0) read (KW−1−kj)·dw
// elements on, the tile's position pointer standing (KW−1)·dw before the
// term kj = 0 reads.
func (r convRows) offsets(sn int) []int {
	d := r.d
	off := make([]int, d.cin*d.kw)
	for o := range d.cin {
		for kj := range d.kw {
			off[o*d.kw+kj] = 4 * (o*sn*r.plane + (d.kw-1-kj)*d.dw)
		}
	}
	return off
}

// spread copies dy's samples [n0, n0+sn) ([N][O][OutH][OutW]) into gp
// laid out [O][sn][plane], each plane's row oh at lead + oh·wd and zeros
// around.
func (r convRows) spread(gp, dy []float32, n0, sn int) {
	ohw := r.outH * r.outW
	for o := range r.d.cin {
		for i := range sn {
			p := gp[(o*sn+i)*r.plane:][:r.plane]
			clear(p)
			copyRows(p[r.lead:], dy[((n0+i)*r.d.cin+o)*ohw:], r.outH, r.outW, r.wd, r.outW)
		}
	}
}

// product computes samples [n0, n0+sn) of dx ([N][C][H][W]): for each
// sample and panel of mr input channels, y ([mr][ys], a scratch that
// stays in L1, zero first) takes the passes, and its kept positions are
// then copied into dx. Pass ki adds, at dx's wide position q (from its
// first row's), the terms (o, kj) of the panels a[ki], reading plane
// (o, i) at lead + (pt − ki·dh)·wd + pl − kj·dw + q. A sample's passes
// run one after the other, so that its gradient planes (32 of 169 floats
// on the MNIST CNN) stay in L1 across them.
func (r convRows) product(dx, gp []float32, a [][]float32, off []int, n0, sn int, y []float32) {
	d := r.d
	k, mr, nr := d.cin*d.kw, d.mr, d.nr
	panels, hw := (d.cout+mr-1)/mr, r.h*r.w
	tile := d.tile()
	y = y[:mr*r.ys]
	_ = gp[d.cin*sn*r.plane-1] // every read lies in its plane (see newConvRows)
	for i := range sn {
		for p := range panels {
			clear(y)
			for kb := 0; kb < k; kb += convDirectKC {
				kn := min(convDirectKC, k-kb)
				for ki, rows := range r.rows {
					n := r.positions(ki)
					if n == 0 {
						continue
					}
					q0 := rows[0] * r.wd
					// ≥ 0: the pass's first gradient row is ≥ 0, and lead ≥ (KW−1)·dw − pl
					shift := r.lead + (r.pt-ki*d.dh)*r.wd + r.pl - (d.kw-1)*d.dw
					ap := &a[ki][(p*k+kb)*mr]
					for p0 := 0; p0 < n; p0 += nr {
						tile(kn, ap, &gp[i*r.plane+q0+shift+p0], &off[kb], &y[q0+p0], r.ys, true)
					}
				}
			}
			for c := range min(mr, d.cout-p*mr) {
				dst := dx[((n0+i)*d.cout+p*mr+c)*hw:][:hw]
				copyRows(dst, y[c*r.ys:], r.h, r.w, r.w, r.wd)
			}
		}
	}
}

// convRowsInputGrad is convDirectInputGrad in row passes.
func convRowsInputGrad(b *Backend, dx, dy, w []float32, g backends.ConvGeometry, o int) {
	r := newConvRows(g, o)
	d := r.d
	khw := g.KH * g.KW
	pool := poolFor[float32]()
	a := make([][]float32, g.KH)
	bufs := make([]*[]float32, g.KH)
	for ki := range g.KH {
		// pass ki's terms (oc, kj) for input channel c: w[oc, c, ki, kj]
		bufs[ki] = d.packPanels(o*g.KW, func(c, k int) float32 {
			oc, kj := k/g.KW, k%g.KW
			return w[(oc*g.C+c)*khw+ki*g.KW+kj]
		})
		a[ki] = *bufs[ki]
	}
	forChunksOf(b, d.s, g.N, r.offsets, func(_, n0, sn int, off []int) {
		gp := pool.get(o * sn * r.plane)
		y := pool.get(d.mr * r.ys)
		r.spread(*gp, dy, n0, sn)
		r.product(dx, (*gp)[:o*sn*r.plane], a, off, n0, sn, *y)
		pool.put(y)
		pool.put(gp)
	})
	for _, p := range bufs {
		pool.put(p)
	}
}
