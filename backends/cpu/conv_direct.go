package cpu

import (
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// Direct convolution for machines with AVX2 but no AVX-512, float32,
// stride 1 (any padding and dilation). There the GEMM path spends much of
// its time outside the multiply-adds (on the MNIST CNN's second layer, a
// half): packing an implicit operand through a table element by element,
// transposing operands whose contiguous dimension is the summed one,
// folding columns back. Here nothing is unfolded or packed per product:
//
//   - A chunk of s samples is copied once into a zero-padded buffer laid
//     out [channel][sample][hp][wp]. A stride-1 convolution is then a
//     valid one over it, and numbering a sample's output positions across
//     the padded width, p = row·wp + column, the unfolded matrix's row
//     (c, ki, kj) is the sample's part of the buffer read from
//     c·s·hp·wp + ki·dh·wp + kj·dw on: one contiguous run, addressed
//     through a table of those offsets. The positions with column ≥ OutW
//     (and those past the last one, up to a whole tile) are computed and
//     dropped.
//   - The forward pass and the input gradient (a convolution of the padded
//     output gradient with the flipped, transposed weights) are products
//     weights · unfolded, computed 6 output channels × 16 positions (or 4 ×
//     24, whichever wastes fewer channels) at a time by convTile6x16AVX2
//     or convTile4x24AVX2, which read the weights from panels packed once
//     per call and the positions straight from the padded chunk.
//   - The weight gradient is a dot product of each output channel's
//     gradient (laid out over the same wide positions, zero at the dropped
//     ones) with each unfolded row, over the chunk's samples, 3 channels ×
//     4 rows at a time by convDot3x4AVX2, in 8 lanes per pair.
//
// The direct products compute every position of a padded plane's rows;
// where the padding is most of a plane (the deep layers of a network) the
// GEMM path is taken instead (convDirectMinUse).
//
// Each output element of the forward pass and of the input gradient is one
// chain of fused multiply-adds over (channel, ki, kj) in order; the weight
// gradient's lanes are added in a fixed order per chunk and the chunks'
// partial sums in chunk order. Chunks depend only on the shapes, so the
// results never depend on the thread count.

// convDirectForce makes the direct path run wherever its kernels can (an
// AVX-512 machine included), for tests.
var convDirectForce = false

// convDirectChunkBytes bounds a chunk's padded input and wide output
// (bytes), so that they stay in the 512 KiB L2 of the AVX2 machines,
// unless that leaves fewer than convMinPositions positions per chunk: then
// the weight gradient's partial sums (one weight-sized matrix per chunk)
// and its tiles' lane sums cost more than the lost locality (measured on
// ResNet-18's first 3×3 layers: 4 samples of 64×18×18 run faster than 1).
// A chunk is at most an eighth of the batch, so that there are chunks for
// every worker.
const convDirectChunkBytes = 256 << 10

// convDirectKC bounds the summed rows per tile call: a weight panel of 256
// rows (6 KiB) stays in L1 while the tile walks the positions.
const convDirectKC = 256

// convDirect describes a stride-1 convolution as a valid one over a padded
// chunk: cin padded planes hp×wp per sample are read, cout output planes
// oh×ow are written, through a kh×kw window dilated by dh, dw.
type convDirect struct {
	cin, cout      int
	kh, kw, dh, dw int
	hp, wp, oh, ow int
	s              int // samples per chunk
	mr, nr         int // the product's tile: output channels × positions
}

// convDirectMinUse is the least fraction of its multiply-adds a direct
// product must use to be taken. It computes every position of its padded
// planes and output channels in panels of 6; below this (the deep layers
// of a network, planes of a few positions framed by padding, or an input
// gradient for a channel or two) the GEMM path, which computes only the
// kept positions, is faster.
const convDirectMinUse = 0.7

// useConvDirect reports whether the direct path takes a product of
// convolution g writing cout planes of oh×ow (the output's, or the input's
// for the input gradient) and, with dots (the weight gradient), summing
// over such positions: a stride-1 one, on a machine with the kernels, that
// uses convDirectMinUse of its work. (Windows that lie wholly in the
// padding read nothing; the padded buffers crop them.)
func useConvDirect(g backends.ConvGeometry, cout, oh, ow int, dots bool) bool {
	if !convDirectUsable || !(convDirectKernels || convDirectForce) || g.StrideH != 1 || g.StrideW != 1 ||
		g.DilationH < 1 || g.DilationW < 1 || g.N <= 0 || cout <= 0 || oh <= 0 || ow <= 0 {
		return false
	}
	hp, wp := oh+(g.KH-1)*g.DilationH, ow+(g.KW-1)*g.DilationW
	use := float64(oh*ow) / float64(hp*wp)
	if !dots {
		use *= float64(cout) / float64(roundUp(cout, convDirectRows(cout)))
	}
	return convDirectForce || use >= convDirectMinUse
}

// convDirectRows is the tile height (4 or 6 output channels) that wastes
// the fewest rows on cout channels, 6 on a tie.
func convDirectRows(cout int) int {
	if roundUp(cout, 4) < roundUp(cout, 6) {
		return 4
	}
	return 6
}

// newConvDirect returns the plan of a convolution reading cin planes and
// writing cout planes of oh×ow, for a batch of n samples.
func newConvDirect(n, cin, cout, kh, kw, dh, dw, oh, ow int) convDirect {
	d := convDirect{cin: cin, cout: cout, kh: kh, kw: kw, dh: dh, dw: dw, oh: oh, ow: ow,
		hp: oh + (kh-1)*dh, wp: ow + (kw-1)*dw, mr: convDirectRows(cout), nr: 16}
	if d.mr == 4 {
		d.nr = 24
	}
	per := (cin + cout) * d.hp * d.wp * 4
	d.s = max(1, min(max(convDirectChunkBytes/max(per, 1), ceilDiv(convMinPositions, d.plane())), n/8))
	return d
}

// plane is the elements of one padded plane.
func (d convDirect) plane() int { return d.hp * d.wp }

// positions is a sample's wide positions, up to its last kept one.
func (d convDirect) positions() int { return (d.oh-1)*d.wp + d.ow }

// inputLen is the padded chunk buffer's length for sn samples: the planes
// and room for the last tile's overrun.
func (d convDirect) inputLen(sn int) int { return d.cin*sn*d.plane() + 32 }

// offsets returns the byte offsets of the unfolded rows (c, ki, kj) in a
// chunk of sn samples.
func (d convDirect) offsets(sn int) []int {
	off := make([]int, d.cin*d.kh*d.kw)
	for c := range d.cin {
		for ki := range d.kh {
			for kj := range d.kw {
				off[(c*d.kh+ki)*d.kw+kj] = 4 * (c*sn*d.plane() + ki*d.dh*d.wp + kj*d.dw)
			}
		}
	}
	return off
}

// pad copies samples [n0, n0+sn) of src (planes h×w, [N][cin][h][w]) into
// dst laid out [cin][sn][hp][wp], element (y, x) at (y+top, x+left);
// what falls outside is cropped, the rest of dst is zero.
func (d convDirect) pad(dst, src []float32, n0, sn, h, w, top, left int) {
	clear(dst)
	y0, y1 := max(0, -top), min(h, d.hp-top)
	x0, x1 := max(0, -left), min(w, d.wp-left)
	if x0 >= x1 {
		return
	}
	for c := range d.cin {
		for i := range sn {
			s := src[((n0+i)*d.cin+c)*h*w:][:h*w]
			p := dst[(c*sn+i)*d.plane():][:d.plane()]
			for y := y0; y < y1; y++ {
				copy(p[(y+top)*d.wp+x0+left:][:x1-x0], s[y*w+x0:][:x1-x0])
			}
		}
	}
}

// packPanels packs weights wt(o, k) (k over the unfolded rows) into
// panels of mr output channels, panel p holding a[p·k·mr + k·mr + i] =
// wt(mr·p+i, k), zero past cout, in a buffer from the pool (put back by
// the caller).
func (d convDirect) packPanels(wt func(o, k int) float32) *[]float32 {
	k, mr := d.cin*d.kh*d.kw, d.mr
	panels := (d.cout + mr - 1) / mr
	buf := poolFor[float32]().get(panels * k * mr)
	a := *buf
	clear(a)
	for p := range panels {
		for kk := range k {
			for i := range min(mr, d.cout-mr*p) {
				a[(p*k+kk)*mr+i] = wt(mr*p+i, kk)
			}
		}
	}
	return buf
}

// product computes y [roundUp(cout, mr)][sn·ys] = a · unfolded(xp) for
// each of a chunk's sn samples, sample i's wide positions (rounded up to
// whole tiles, ys) at columns i·ys on. It is K-blocked by convDirectKC,
// each block continuing the previous one's sums, so that every element's
// sum is one chain.
func (d convDirect) product(y, xp, a []float32, off []int, sn, ys int) {
	k, mr, nr := d.cin*d.kh*d.kw, d.mr, d.nr
	panels, ldy := (d.cout+mr-1)/mr, sn*ys
	tile := convTile6x16AVX2
	if mr == 4 {
		tile = convTile4x24AVX2
	}
	_ = y[(panels*mr-1)*ldy+ldy-1]
	_ = xp[off[k-1]/4+(sn-1)*d.plane()+ys-1] // the last sample's last tile ends inside
	for kb := 0; kb < k; kb += convDirectKC {
		kn := min(convDirectKC, k-kb)
		for p := range panels {
			ap := &a[(p*k+kb)*mr]
			for i := range sn {
				for p0 := 0; p0 < ys; p0 += nr {
					tile(kn, ap, &xp[i*d.plane()+p0], &off[kb], &y[p*mr*ldy+i*ys+p0], ldy, kb > 0)
				}
			}
		}
	}
}

// scatter copies the kept positions of y (product's layout) into samples
// [n0, n0+sn) of out ([N][cout][oh][ow]).
func (d convDirect) scatter(out, y []float32, n0, sn, ys int) {
	ldy := sn * ys
	for i := range sn {
		for o := range d.cout {
			dst := out[((n0+i)*d.cout+o)*d.oh*d.ow:][:d.oh*d.ow]
			src := y[o*ldy+i*ys:]
			for r := range d.oh {
				copy(dst[r*d.ow:][:d.ow], src[r*d.wp:][:d.ow])
			}
		}
	}
}

// convDirectForward is convForward on the direct path.
func convDirectForward(b *Backend, out, x, w []float32, g backends.ConvGeometry, o int) {
	d := newConvDirect(g.N, g.C, o, g.KH, g.KW, g.DilationH, g.DilationW, g.OutH, g.OutW)
	ck := g.C * g.KH * g.KW
	a := d.packPanels(func(oc, k int) float32 { return w[oc*ck+k] })
	d.run(b, g.N, func(n0, sn int, xp []float32) {
		d.pad(xp, x, n0, sn, g.H, g.W, g.PadTop, g.PadLeft)
	}, *a, out)
	poolFor[float32]().put(a)
}

// convDirectInputGrad is convInputGrad on the direct path: dx is the
// valid convolution of dy, padded by the window's extent less the forward
// padding, with the weights flipped and transposed, wᵀ(c, (o, ki, kj)) =
// w(o, c, KH−1−ki, KW−1−kj).
func convDirectInputGrad(b *Backend, dx, dy, w []float32, g backends.ConvGeometry, o int) {
	d := newConvDirect(g.N, o, g.C, g.KH, g.KW, g.DilationH, g.DilationW, g.H, g.W)
	khw := g.KH * g.KW
	a := d.packPanels(func(c, k int) float32 {
		oc, kk := k/khw, k%khw
		return w[(oc*g.C+c)*khw+khw-1-kk]
	})
	top, left := (g.KH-1)*g.DilationH-g.PadTop, (g.KW-1)*g.DilationW-g.PadLeft
	d.run(b, g.N, func(n0, sn int, xp []float32) {
		d.pad(xp, dy, n0, sn, g.OutH, g.OutW, top, left)
	}, *a, dx)
	poolFor[float32]().put(a)
}

// run computes out for every chunk: fill pads the chunk's samples into
// its buffer, a holds the packed weight panels.
func (d convDirect) run(b *Backend, n int, fill func(n0, sn int, xp []float32), a []float32, out []float32) {
	pool := poolFor[float32]()
	d.forChunks(b, n, func(_, n0, sn int, off []int) {
		ys := roundUp(d.positions(), d.nr)
		xp := pool.get(d.inputLen(sn))
		y := pool.get(roundUp(d.cout, d.mr) * sn * ys)
		fill(n0, sn, (*xp)[:d.inputLen(sn)])
		d.product(*y, *xp, a, off, sn, ys)
		d.scatter(out, *y, n0, sn, ys)
		pool.put(y)
		pool.put(xp)
	})
}

// forChunks runs fn on the chunks of d.s samples of a batch of n, in
// parallel (runChunks), with the chunk's number, first sample, sample count
// and the offsets of its unfolded rows.
func (d convDirect) forChunks(b *Backend, n int, fn func(ch, n0, sn int, off []int)) {
	p := convPlan{s: d.s, chunks: ceilDiv(n, d.s)}
	full := d.offsets(d.s)
	b.runChunks(p, func(ch int, _ bool) {
		n0, sn := p.samples(ch, n)
		off := full
		if sn != d.s {
			off = d.offsets(sn)
		}
		fn(ch, n0, sn, off)
	})
}

// convDirectWeightGrad is convWeightGrad on the direct path: each chunk's
// dw(o, k) is the dot product of o's gradient, laid out over the chunk's
// wide positions with zeros at the dropped ones, and the unfolded row k
// of the padded input.
func convDirectWeightGrad(b *Backend, dw, dy, x []float32, g backends.ConvGeometry, o int) {
	d := newConvDirect(g.N, g.C, o, g.KH, g.KW, g.DilationH, g.DilationW, g.OutH, g.OutW)
	ck := g.C * g.KH * g.KW
	chunks := ceilDiv(g.N, d.s)
	pool := poolFor[float32]()
	part := dw[:o*ck]
	var partials *[]float32
	if chunks > 1 {
		partials = pool.get(chunks * o * ck)
		part = *partials
	}
	d.forChunks(b, g.N, func(ch, n0, sn int, off []int) {
		var acc [96]float32
		// each sample's wide positions up to its last kept one, in
		// whole vectors (ys), gy's samples ys apart and xp's hp·wp
		ys := roundUp(d.positions(), 8)
		xp := pool.get(d.inputLen(sn))
		d.pad((*xp)[:d.inputLen(sn)], x, n0, sn, g.H, g.W, g.PadTop, g.PadLeft)
		gy := pool.get(o * sn * ys)
		d.gatherWide(*gy, dy, n0, sn, ys)
		xs := *xp
		_ = xs[off[ck-1]/4+(sn-1)*d.plane()+ys-1] // the last sample's last row ends inside
		row := func(r int) *float32 { return &(*gy)[min(r, o-1)*sn*ys] }
		col := func(k int) *float32 {
			return (*float32)(unsafe.Add(unsafe.Pointer(&xs[0]), off[min(k, ck-1)]))
		}
		dst := part[ch*o*ck:][:o*ck]
		for o0 := 0; o0 < o; o0 += 3 {
			for k0 := 0; k0 < ck; k0 += 4 {
				clear(acc[:])
				convDot3x4AVX2(ys, sn, ys, d.plane(), row(o0), row(o0+1), row(o0+2),
					col(k0), col(k0+1), col(k0+2), col(k0+3), &acc)
				for j := range min(4, ck-k0) {
					for i := range min(3, o-o0) {
						l := acc[(3*j+i)*8:][:8]
						dst[(o0+i)*ck+k0+j] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
					}
				}
			}
		}
		pool.put(gy)
		pool.put(xp)
	})
	if partials != nil {
		addPartials(dw[:o*ck], part, chunks)
		pool.put(partials)
	}
}

// gatherWide copies dy's samples [n0, n0+sn) ([N][cout][oh][ow]) into
// dst laid out [cout][sn·ys], sample i's wide positions at i·ys on, zero
// at the dropped ones.
func (d convDirect) gatherWide(dst, dy []float32, n0, sn, ys int) {
	dst = dst[:d.cout*sn*ys]
	clear(dst)
	for o := range d.cout {
		row := dst[o*sn*ys:][:sn*ys]
		for i := range sn {
			src := dy[((n0+i)*d.cout+o)*d.oh*d.ow:][:d.oh*d.ow]
			for r := range d.oh {
				copy(row[i*ys+r*d.wp:][:d.ow], src[r*d.ow:][:d.ow])
			}
		}
	}
}
