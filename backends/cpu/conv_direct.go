package cpu

import (
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// Direct convolution for machines with AVX2 but no AVX-512, float32, any
// padding and dilation: the three passes of stride-1 convolutions, the
// forward pass and weight gradient of strided ones. There the GEMM path
// spends much of
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
//     dropped. Where the input needs no padding the rows are read from it
//     in place. A strided convolution's chunk is laid out as phase planes
//     (newConvDirectStrided), over which each tap is such a run too.
//   - The forward pass and the input gradient (a convolution of the padded
//     output gradient with the flipped, transposed weights) are products
//     weights · unfolded, computed 6 output channels × 16 positions (or 4 ×
//     24, whichever wastes fewer channels) at a time by convTile6x16AVX2
//     or convTile4x24AVX2, which read the weights from panels packed once
//     per call and the positions straight from the padded chunk. On small
//     maps the input gradient runs in row passes (conv_direct_rows.go).
//     With AVX-512 the forward pass runs in channel tiles where they
//     compute less (conv_channels.go): 32 output channels along the lanes
//     × a run of one output row's positions, no dropped column computed;
//     a valid convolution's input gradient as a scatter, 16 input
//     channels along the lanes, no product of the zero frame.
//   - The weight gradient is a dot product of each output channel's
//     gradient (laid out over the same wide positions, zero at the dropped
//     ones) with each unfolded row, over the chunk's samples, 3 channels ×
//     4 rows or 4 channels × 3 rows (convDotByRows) at a time by
//     convDot3x4AVX2, in 8 lanes per pair. With AVX-512, a 3×3 stride-1
//     window's runs in channel tiles where they compute less: the
//     gradient's 32 channels along the lanes, the nine taps' sums over
//     the kept positions only (conv_channels.go).
//
// The direct products compute every position of a padded plane's rows;
// where the padding is most of a plane (the deep layers of a network) the
// GEMM path is taken instead (convDirectMinUse).
//
// Each output element of the forward pass is the GEMM path's sum: chains
// of fused multiply-adds over (channel, ki, kj) in order, in blocks of
// gemmKC added one after another; the input gradient's are fixed chains
// too; the weight gradient's lanes are added in a fixed order per chunk
// and the chunks' partial sums in chunk order. Chunks depend only on the
// shapes, so the results never depend on the thread count.

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

// convDirectKC bounds the summed rows per tile call of the row passes (the
// forward pass's follow the GEMM path's blocks, gemmKC): a weight panel of
// 256 rows (4-6 KiB) stays in L1 while the tile walks the positions.
const convDirectKC = 256

// convDirect describes a convolution as a valid stride-1 one over a padded
// chunk: cin padded planes hp×wp per sample (sh·sw phase planes each, for
// strides sh, sw) are read, cout output planes oh×ow are written, through
// a kh×kw window dilated by dh, dw.
type convDirect struct {
	cin, cout      int
	kh, kw, dh, dw int
	sh, sw         int // strides: the input is read as sh·sw phase planes
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
// over such positions: on a machine with the kernels, one that uses
// convDirectMinUse of its work (of its phase planes' positions where it
// is strided; the caller takes only stride-1 input gradients). (Windows
// that lie wholly in the padding read nothing; the padded buffers crop
// them.)
func useConvDirect(g backends.ConvGeometry, cout, oh, ow int, dots bool) bool {
	if !convDirectUsable || !(convDirectKernels || convDirectForce) || g.StrideH < 1 || g.StrideW < 1 ||
		g.DilationH < 1 || g.DilationW < 1 || g.N <= 0 || cout <= 0 || oh <= 0 || ow <= 0 {
		return false
	}
	// a strided convolution reads its phase planes; each must hold a tap
	// (a pointwise strided one would copy planes it never reads)
	if (g.KH-1)*g.DilationH < g.StrideH-1 || (g.KW-1)*g.DilationW < g.StrideW-1 {
		return false
	}
	hp, wp := oh+(g.KH-1)*g.DilationH/g.StrideH, ow+(g.KW-1)*g.DilationW/g.StrideW
	use := float64(oh*ow) / float64(hp*wp)
	if !dots {
		use *= float64(cout) / float64(roundUp(cout, convDirectRows(cout)))
	}
	if dots && (g.StrideH != 1 || g.StrideW != 1) && !convDirectForce {
		// a strided layer's dot products span a few positions per
		// sample: ResNet-18's 16×16 → 8×8 layer (72 positions, 4
		// samples a chunk) ran 1.15x slower than on the GEMM path, its
		// stem (1120 positions) 1.7x faster
		d := newConvDirectStrided(g.N, g.C, cout, g.KH, g.KW, g.DilationH, g.DilationW, oh, ow, g.StrideH, g.StrideW)
		if d.s*roundUp(d.positions(), 8) < convMinPositions {
			return false
		}
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

// newConvDirect returns the plan of a stride-1 convolution reading cin
// planes and writing cout planes of oh×ow, for a batch of n samples.
func newConvDirect(n, cin, cout, kh, kw, dh, dw, oh, ow int) convDirect {
	return newConvDirectStrided(n, cin, cout, kh, kw, dh, dw, oh, ow, 1, 1)
}

// newConvDirectStrided is newConvDirect for strides sh, sw: the padded
// input is read as sh·sw phase planes, phase (a, b) holding its elements
// (y·sh + a, x·sw + b), so that tap (ki, kj) reads phase (ki·dh mod sh,
// kj·dw mod sw) from row ki·dh / sh and column kj·dw / sw on, as a
// stride-1 convolution reads its plane.
func newConvDirectStrided(n, cin, cout, kh, kw, dh, dw, oh, ow, sh, sw int) convDirect {
	d := convDirect{cin: cin, cout: cout, kh: kh, kw: kw, dh: dh, dw: dw, sh: sh, sw: sw, oh: oh, ow: ow,
		hp: oh + (kh-1)*dh/sh, wp: ow + (kw-1)*dw/sw, mr: convDirectRows(cout), nr: 16}
	if d.mr == 4 {
		d.nr = 24
	}
	per := (cin*sh*sw + cout) * d.hp * d.wp * 4
	d.s = max(1, min(max(convDirectChunkBytes/max(per, 1), ceilDiv(convMinPositions, d.plane())), n/8))
	return d
}

// plane is the elements of one padded plane.
func (d convDirect) plane() int { return d.hp * d.wp }

// positions is a sample's wide positions, up to its last kept one.
func (d convDirect) positions() int { return (d.oh-1)*d.wp + d.ow }

// inputLen is the padded chunk buffer's length for sn samples: the planes
// and room for the last tile's overrun.
func (d convDirect) inputLen(sn int) int { return d.cin*d.sh*d.sw*sn*d.plane() + 32 }

// offsets returns the byte offsets of the unfolded rows (c, ki, kj) in a
// chunk of sn samples.
func (d convDirect) offsets(sn int) []int {
	off := make([]int, d.cin*d.kh*d.kw)
	for c := range d.cin {
		for ki := range d.kh {
			for kj := range d.kw {
				y, x := ki*d.dh, kj*d.dw
				phase := c*d.sh*d.sw + y%d.sh*d.sw + x%d.sw
				off[(c*d.kh+ki)*d.kw+kj] = 4 * (phase*sn*d.plane() + y/d.sh*d.wp + x/d.sw)
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
	if d.sh != 1 || d.sw != 1 {
		d.padPhases(dst, src, n0, sn, h, w, top, left)
		return
	}
	y0, y1 := max(0, -top), min(h, d.hp-top)
	x0, x1 := max(0, -left), min(w, d.wp-left)
	if x0 >= x1 || y0 >= y1 {
		return
	}
	for c := range d.cin {
		for i := range sn {
			s := src[((n0+i)*d.cin+c)*h*w:][:h*w]
			p := dst[(c*sn+i)*d.plane():][:d.plane()]
			copyRows(p[(y0+top)*d.wp+x0+left:], s[y0*w+x0:], y1-y0, x1-x0, d.wp, w)
		}
	}
}

// padPhases is pad for a strided convolution: dst is laid out [cin][sh·sw]
// [sn][hp][wp], phase (a, b)'s element (y, x) holding src's element
// (y·sh + a − top, x·sw + b − left), or zero (dst is zero first).
func (d convDirect) padPhases(dst, src []float32, n0, sn, h, w, top, left int) {
	plane := d.plane()
	for c := range d.cin {
		for i := range sn {
			s := src[((n0+i)*d.cin+c)*h*w:][:h*w]
			for a := range d.sh {
				// the phase rows y whose source row y·sh + a − top lies in [0, h)
				y0, y1 := validRange(d.hp, d.sh, top, a, h)
				for b := range d.sw {
					x0, x1 := validRange(d.wp, d.sw, left, b, w)
					p := dst[((c*d.sh*d.sw+a*d.sw+b)*sn+i)*plane:][:plane]
					for y := y0; y < y1; y++ {
						row := s[(y*d.sh+a-top)*w:][:w]
						line := p[y*d.wp:][:d.wp]
						for x := x0; x < x1; x++ {
							line[x] = row[x*d.sw+b-left]
						}
					}
				}
			}
		}
	}
}

// copyRows copies rows rows of n floats from src, rows srcStride apart,
// to dst, rows dstStride apart; the rows must not overlap. A
// convolution's plane rows are short (11 floats on the MNIST CNN's second
// layer): a call of the runtime's memmove for each cost 20% of its direct
// forward pass, and Go's moves of 8 elements at a time 15%; the AVX2
// kernel copies a plane's rows in one call. Rows that follow each other
// in both (n equal to both strides) are one run, copied at once.
func copyRows(dst, src []float32, rows, n, dstStride, srcStride int) {
	if rows <= 0 || n <= 0 {
		return
	}
	_ = dst[(rows-1)*dstStride+n-1]
	_ = src[(rows-1)*srcStride+n-1]
	if n == dstStride && n == srcStride {
		copy(dst[:rows*n], src[:rows*n])
		return
	}
	if convDirectUsable && n >= 8 {
		copyRowsAVX2(&dst[0], dstStride, &src[0], srcStride, rows, n)
		return
	}
	for r := range rows {
		copy(dst[r*dstStride:][:n], src[r*srcStride:][:n])
	}
}

// packPanels packs weights wt(o, j) (j < k, over the summed terms) into
// panels of mr output channels, panel p holding a[p·k·mr + j·mr + i] =
// wt(mr·p+i, j), zero past cout, in a buffer from the pool (put back by
// the caller).
func (d convDirect) packPanels(k int, wt func(o, j int) float32) *[]float32 {
	mr := d.mr
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

// product computes samples [n0, n0+sn) of out ([N][cout][oh][ow]) =
// a · unfolded(xp) (+ bias[oc] on each plane oc, where bias is not nil,
// added as the plane is copied out, and then act.op of the plane written
// to act.out where act is not nil), sample i's wide positions (ys, whole
// tiles) read from xp at i·sb on. For each sample and panel of mr output channels the
// tiles write y ([mr][ys], a scratch that stays in L1; y holds twice that
// where the sum has several blocks), and the kept positions are then
// copied into out while y is in L1 (a copy of the chunk's whole product,
// through L2, cost 17% of the MNIST CNN's second layer). The sum is cut
// in blocks of gemmKC terms as the GEMM path cuts it: each block's chain
// of fused multiply-adds from zero, added to the blocks' before, so that
// the fused forward pass equals the composed one (Im2Col and a matrix
// product) bit for bit.
func (d convDirect) product(out, xp []float32, sb int, a []float32, off []int, n0, sn, ys int, y, bias []float32, act *activation[float32]) {
	k, mr, nr := d.cin*d.kh*d.kw, d.mr, d.nr
	panels, ohw := (d.cout+mr-1)/mr, d.oh*d.ow
	tile := d.tile()
	kc := gemmKC
	sum, block := y[:mr*ys], y[:mr*ys]
	if k > kc {
		block = y[mr*ys : 2*mr*ys]
	}
	_ = xp[off[k-1]/4+(sn-1)*sb+ys-1] // the last sample's last tile ends inside
	for i := range sn {
		for p := range panels {
			for kb := 0; kb < k; kb += kc {
				kn := min(kc, k-kb)
				ap := &a[(p*k+kb)*mr]
				dst := sum
				if kb > 0 {
					dst = block
				}
				for p0 := 0; p0 < ys; p0 += nr {
					tile(kn, ap, &xp[i*sb+p0], &off[kb], &dst[p0], ys, false)
				}
				if kb > 0 {
					addTo(sum, block)
				}
			}
			for r := range min(mr, d.cout-p*mr) {
				at := ((n0+i)*d.cout + p*mr + r) * ohw
				dst := out[at:][:ohw]
				copyRows(dst, sum[r*ys:], d.oh, d.ow, d.ow, d.wp)
				biasActPlane(dst, at, bias, p*mr+r, act)
			}
		}
	}
}

// convDirectForward is convForwardBias on the direct path.
func convDirectForward(b *Backend, out, x, w, bias []float32, act *activation[float32], g backends.ConvGeometry, o int) {
	d := newConvDirectStrided(g.N, g.C, o, g.KH, g.KW, g.DilationH, g.DilationW, g.OutH, g.OutW, g.StrideH, g.StrideW)
	ck := g.C * g.KH * g.KW
	channels := useConvChannels(d)
	if channels {
		d.mr = 32
	}
	a := d.packPanels(ck, func(oc, k int) float32 { return w[oc*ck+k] })
	d.run(b, g.N, func(n0, sn int, xp []float32) {
		d.pad(xp, x, n0, sn, g.H, g.W, g.PadTop, g.PadLeft)
	}, *a, out, bias, act, x, d.inPlaceOffsets(g.H, g.W, g.PadTop, g.PadLeft), channels)
	poolFor[float32]().put(a)
}

// convDirectInputGrad is convInputGrad on the direct path: dx is the
// valid convolution of dy, padded by the window's extent less the forward
// padding, with the weights flipped and transposed, wᵀ(c, (o, ki, kj)) =
// w(o, c, KH−1−ki, KW−1−kj).
func convDirectInputGrad(b *Backend, dx, dy, w []float32, g backends.ConvGeometry, o int) {
	if useConvChannelDX(g, o) {
		convChannelInputGrad(b, dx, dy, w, g, o)
		return
	}
	d := newConvDirect(g.N, o, g.C, g.KH, g.KW, g.DilationH, g.DilationW, g.H, g.W)
	if useConvRows(g, o) {
		convRowsInputGrad(b, dx, dy, w, g, o)
		return
	}
	khw := g.KH * g.KW
	a := d.packPanels(o*khw, func(c, k int) float32 {
		oc, kk := k/khw, k%khw
		return w[(oc*g.C+c)*khw+khw-1-kk]
	})
	top, left := (g.KH-1)*g.DilationH-g.PadTop, (g.KW-1)*g.DilationW-g.PadLeft
	d.run(b, g.N, func(n0, sn int, xp []float32) {
		d.pad(xp, dy, n0, sn, g.OutH, g.OutW, top, left)
	}, *a, dx, nil, nil, nil, nil, false)
	poolFor[float32]().put(a)
}

// run computes out for every chunk: fill pads the chunk's samples into
// its buffer, a holds the packed weight panels, bias (or nil) is added
// to out's planes and act (or nil) applied to them (product, or with
// channels channelProduct, a packed in panels of 32). Where srcOff is not
// nil (inPlaceOffsets), the chunks that may read src in place do so
// instead: all of them in channel tiles, which read only the kept
// positions.
func (d convDirect) run(b *Backend, n int, fill func(n0, sn int, xp []float32), a, out, bias []float32,
	act *activation[float32], src []float32, srcOff []int, channels bool) {
	pool := poolFor[float32]()
	ys := roundUp(d.positions(), d.nr)
	product, scratch := d.product, 2*d.mr*ys
	if channels {
		product = func(out, xp []float32, sb int, a []float32, off []int, n0, sn, _ int, y, bias []float32, act *activation[float32]) {
			d.channelProduct(out, xp, sb, a, off, n0, sn, y, bias, act)
		}
		scratch = 32 * d.ow * d.channelGroup()
	}
	d.forChunks(b, n, func(_, n0, sn int, off []int) {
		y := pool.get(scratch)
		if sb := d.cin * d.plane(); srcOff != nil && (channels || d.inPlaceChunk(src, sb, srcOff, n0, sn, ys)) {
			product(out, src[n0*sb:], sb, a, srcOff, n0, sn, ys, *y, bias, act)
		} else {
			xp := pool.get(d.inputLen(sn))
			fill(n0, sn, (*xp)[:d.inputLen(sn)])
			product(out, *xp, d.plane(), a, off, n0, sn, ys, *y, bias, act)
			pool.put(xp)
		}
		pool.put(y)
	})
}

// inPlaceOffsets returns, where the planes of a convolution's input src
// ([N][cin][h][w], padded by top and left) are the padded planes, the
// byte offsets of the unfolded rows in one sample of src, to read them
// from src itself without a copy; nil where src needs padding.
func (d convDirect) inPlaceOffsets(h, w, top, left int) []int {
	if top != 0 || left != 0 || d.hp != h || d.wp != w || d.sh != 1 || d.sw != 1 {
		return nil
	}
	off := make([]int, d.cin*d.kh*d.kw)
	for c := range d.cin {
		for ki := range d.kh {
			for kj := range d.kw {
				off[(c*d.kh+ki)*d.kw+kj] = 4 * (c*h*w + ki*d.dh*w + kj*d.dw)
			}
		}
	}
	return off
}

// inPlaceChunk reports whether the chunk of samples [n0, n0+sn) may read
// its input in place from src, whose samples are sb floats apart, with the
// unfolded rows at off (inPlaceOffsets) and ys positions per sample: the
// positions past a sample's last kept one (multiplied by zero, or
// dropped) read on into the samples after it, which must be in src, so
// the chunks at the batch's end read a padded copy unless they read no
// such position. (On small planes, a one-dimensional convolution's, the
// positions rounded up to whole tiles reach past the next sample too.)
// The values read are the same either way.
func (d convDirect) inPlaceChunk(src []float32, sb int, off []int, n0, sn, ys int) bool {
	return (n0+sn-1)*sb+off[len(off)-1]/4+ys <= len(src)
}

// forChunks runs fn on the chunks of d.s samples of a batch of n, in
// parallel (runChunks), with the chunk's number, first sample, sample count
// and the offsets of its unfolded rows.
func (d convDirect) forChunks(b *Backend, n int, fn func(ch, n0, sn int, off []int)) {
	forChunksOf(b, d.s, n, d.offsets, fn)
}

// forChunksOf runs fn on the chunks of s samples of a batch of n, in
// parallel (runChunks), with the chunk's number, first sample, sample
// count and offsets(sample count), computed once for the full chunks.
func forChunksOf(b *Backend, s, n int, offsets func(sn int) []int, fn func(ch, n0, sn int, off []int)) {
	p := convPlan{s: s, chunks: ceilDiv(n, s)}
	full := offsets(s)
	b.runChunks(p, func(ch int, _ bool) {
		n0, sn := p.samples(ch, n)
		off := full
		if sn != s {
			off = offsets(sn)
		}
		fn(ch, n0, sn, off)
	})
}

// tile returns the kernel of the product's mr×nr tiles.
func (d convDirect) tile() func(k int, a *float32, x *float32, off *int, y *float32, ldy int, accum bool) {
	if d.mr == 4 {
		return convTile4x24AVX2
	}
	return convTile6x16AVX2
}

// convDirectWeightGrad is convWeightGrad on the direct path: each chunk's
// dw(o, k) is the dot product of o's gradient, laid out over the chunk's
// wide positions with zeros at the dropped ones, and the unfolded row k
// of the padded input.
func convDirectWeightGrad(b *Backend, dw, dy, x []float32, g backends.ConvGeometry, o int) {
	d := newConvDirectStrided(g.N, g.C, o, g.KH, g.KW, g.DilationH, g.DilationW, g.OutH, g.OutW, g.StrideH, g.StrideW)
	if useConvChannelDW(d, g, o) {
		convChannelWeightGrad(b, dw, dy, x, g, o, d)
		return
	}
	ck := g.C * g.KH * g.KW
	pool := poolFor[float32]()
	part, sum := chunkPartials(b, dw[:o*ck], ceilDiv(g.N, d.s))
	defer sum()
	// each sample's wide positions up to its last kept one, in whole
	// vectors (ys), gy's samples ys apart and xp's hp·wp
	ys := roundUp(d.positions(), 8)
	// where x needs no padding, its samples are read in place
	hw := g.H * g.W
	offX := d.inPlaceOffsets(g.H, g.W, g.PadTop, g.PadLeft)
	d.forChunks(b, g.N, func(ch, n0, sn int, off []int) {
		var sums [12]float32
		gy := pool.get(o * sn * ys)
		d.gatherWide(*gy, dy, n0, sn, ys)
		var xs []float32
		sb := d.plane()
		if offX != nil && d.inPlaceChunk(x, g.C*hw, offX, n0, sn, ys) {
			xs, sb, off = x[n0*g.C*hw:], g.C*hw, offX
		} else {
			xp := pool.get(d.inputLen(sn))
			defer pool.put(xp)
			d.pad((*xp)[:d.inputLen(sn)], x, n0, sn, g.H, g.W, g.PadTop, g.PadLeft)
			xs = *xp
		}
		_ = xs[off[ck-1]/4+(sn-1)*sb+ys-1] // the last sample's last row ends inside
		row := func(r int) *float32 { return &(*gy)[min(r, o-1)*sn*ys] }
		col := func(k int) *float32 {
			return (*float32)(unsafe.Add(unsafe.Pointer(&xs[0]), off[min(k, ck-1)]))
		}
		dst := part[ch*o*ck:][:o*ck]
		if convDotByRows(o, ck) {
			// 3 gradient rows × 4 unfolded rows a call
			for o0 := 0; o0 < o; o0 += 3 {
				for k0 := 0; k0 < ck; k0 += 4 {
					convDot3x4AVX2(ys, sn, ys, sb, row(o0), row(o0+1), row(o0+2),
						col(k0), col(k0+1), col(k0+2), col(k0+3), &sums)
					for j := range min(4, ck-k0) {
						for i := range min(3, o-o0) {
							dst[(o0+i)*ck+k0+j] = sums[3*j+i]
						}
					}
				}
			}
		} else {
			// 3 unfolded rows × 4 gradient rows a call (the same sums:
			// each product's factors are swapped, which does not change
			// its bits)
			for o0 := 0; o0 < o; o0 += 4 {
				for k0 := 0; k0 < ck; k0 += 3 {
					convDot3x4AVX2(ys, sn, sb, ys, col(k0), col(k0+1), col(k0+2),
						row(o0), row(o0+1), row(o0+2), row(o0+3), &sums)
					for j := range min(4, o-o0) {
						for i := range min(3, ck-k0) {
							dst[(o0+j)*ck+k0+i] = sums[3*j+i]
						}
					}
				}
			}
		}
		pool.put(gy)
	})
}

// chunkPartials returns where the chunks of a weight gradient dw, summed
// over chunks chunks of samples, write their sums, chunk ch's at
// ch·len(dw): dw itself where there is one chunk, else partial sums
// (from the pool) that sum adds into dw in chunk order.
func chunkPartials(b *Backend, dw []float32, chunks int) (part []float32, sum func()) {
	if chunks <= 1 {
		return dw, func() {}
	}
	pool := poolFor[float32]()
	partials := pool.get(chunks * len(dw))
	return *partials, func() {
		addPartials(b, dw, *partials, chunks)
		pool.put(partials)
	}
}

// convDotByRows reports whether the direct weight gradient of o output
// channels and ck unfolded rows takes its dot tiles as 3 gradient rows ×
// 4 unfolded rows (else 4 gradient rows × 3 unfolded rows): whichever
// computes fewer dot products past the edges (on the MNIST CNN's second
// layer, 32 channels × 144 rows, 4 × 3 computes none, 3 × 4 a 33rd
// channel), 3 × 4 on a tie. convDotRows overrides it for tests.
func convDotByRows(o, ck int) bool {
	switch convDotRows {
	case "3x4":
		return true
	case "4x3":
		return false
	}
	return roundUp(o, 3)*roundUp(ck, 4) <= roundUp(o, 4)*roundUp(ck, 3)
}

// convDotRows overrides convDotByRows's choice: "" (the default), "3x4" or
// "4x3".
var convDotRows = ""

// gatherWide copies dy's samples [n0, n0+sn) ([N][cout][oh][ow]) into
// dst laid out [cout][sn·ys], sample i's wide positions at i·ys on, zero
// at the dropped ones.
func (d convDirect) gatherWide(dst, dy []float32, n0, sn, ys int) {
	dst = dst[:d.cout*sn*ys]
	clear(dst)
	for o := range d.cout {
		row := dst[o*sn*ys:][:sn*ys]
		for i := range sn {
			copyRows(row[i*ys:], dy[((n0+i)*d.cout+o)*d.oh*d.ow:], d.oh, d.ow, d.wp, d.ow)
		}
	}
}
