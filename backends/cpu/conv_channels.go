package cpu

import (
	"slices"

	"github.com/kiln-ml/kiln/backends"
)

// The direct convolution in channel tiles. convDirect.product's tiles run
// positions along their lanes: 24 or 16 consecutive wide positions, so a
// plane's rows are computed across the padded width and the columns past
// OutW dropped (on the MNIST CNN's second layer, 144 positions computed
// for 121 kept). With AVX-512 the lanes can run along the output
// channels instead: a tile is 32 channels (two zmm registers) × up to 12
// consecutive positions of one output row, each position's input value
// broadcast (convRow32x{R}AVX512), so only kept positions are computed.
// The tile's sums come out [position][channel]; each group of output rows
// is written through a scratch of at most convChannelScratch floats
// that stays in L1 and is transposed into the output planes
// (transposeInto), where the bias and activation are applied, plane by
// plane, as product applies them.
//
// Each output element is the same sum as on the other paths: the chain of
// fused multiply-adds over (channel, ki, kj) in order, in blocks of
// gemmKC terms, each block's chain from zero added to the blocks' before.
//
// The weight gradient of a 3×3 stride-1 window turns the same way
// (convChannelWeightGrad): a chunk's output gradient is transposed to
// [position][channel], and for each input channel one kernel call sums
// the nine taps' products over the chunk's kept positions, 32 output
// channels along the lanes, instead of dot products over the padded
// width's positions in 8 lanes (convDot3x4AVX2). Its sums are chains over
// the positions in order, so they differ in rounding from the dot tiles'
// (both depend only on the shapes).
//
// A valid convolution's input gradient, which convDirectInputGrad
// computes as a convolution of the zero-framed output gradient, is
// computed as the scatter it is (convChannelInputGrad): each output
// gradient value times a tap's weights, 16 input channels along the
// lanes, added at the tap's input position; no product reads the frame.
//
// On the MNIST CNN's second layer (batch 128, one worker;
// BenchmarkResNetConvs, KILN_CONV_CHANNELS=off against the default,
// alternating runs) the forward pass ran 1.65 → 1.39 ms, the weight
// gradient 2.1-2.5 → 1.39-1.43 ms and the input gradient 1.79-2.12 →
// 1.46-1.60 ms.

// convChannelsMode overrides the choice of channel tiles, for tests and
// benchmarks: "" takes them where they cost less (useConvChannels,
// useConvChannelDW, useConvChannelDX), "off" never, "force" wherever the
// kernels run.
var convChannelsMode = ""

// convChannelScratch is the most floats of a channel product's scratch: 16
// KiB, half of the L1 the kernels' input and weights share it with.
const convChannelScratch = 4096

// convChannelTileCost is the channel tiles' cost per kept position and
// output channel, relative to a position tile's per computed position and
// channel (both run the FMA units at about their rate): a margin for the
// transposition into the output planes (0.09 s against the kernel's 0.91 s
// in a profile of the MNIST CNN's second layer) and the shorter tiles'
// loop overhead. At it, ResNet-18's strided 3×3 layers, whose position
// tiles compute 12.5% more, take the channel tiles and ran 12% faster
// (l2_3x3s2, BenchmarkResNetConvs).
const convChannelTileCost = 1.08

// useConvChannels reports whether d's forward pass runs in channel tiles:
// where the kernels run (AVX-512) and they compute fewer multiply-adds,
// weighted by convChannelTileCost, than d's position tiles, channels
// rounded up to 32 against positions rounded to wide rows and whole tiles.
func useConvChannels(d convDirect) bool {
	if !convChannelKernels || convChannelsMode == "off" {
		return false
	}
	if convChannelsMode == "force" {
		return true
	}
	rows := float64(roundUp(d.cout, d.mr) * roundUp(d.positions(), d.nr))
	channels := float64(roundUp(d.cout, 32)*d.oh*d.ow) * convChannelTileCost
	return channels < rows
}

// convRowMaxR is the most positions of a channel tile (convRowTiles).
const convRowMaxR = 12

// rowSegment returns the length of run s of an output row of ow
// positions split into segs runs (ceil(ow / convRowMaxR)) as even as they
// can be, the first ones the longer.
func rowSegment(ow, segs, s int) int {
	r := ow / segs
	if s < ow%segs {
		r++
	}
	return r
}

// channelGroup is the output rows a channel product computes into its
// scratch before transposing them into the output planes: as many as
// convChannelScratch floats hold, at least one.
func (d convDirect) channelGroup() int { return max(1, convChannelScratch/(32*d.ow)) }

// channelProduct is product in channel tiles: samples [n0, n0+sn) of out
// = a · unfolded(xp) (+ bias, then act, as product), a packed in panels of
// 32 output channels (packPanels with mr 32), sample i's planes read from
// xp at i·sb on through the byte offsets off. y is the scratch
// (32·ow·channelGroup floats).
func (d convDirect) channelProduct(out, xp []float32, sb int, a []float32, off []int, n0, sn int, y, bias []float32, act *activation[float32]) {
	k := d.cin * d.kh * d.kw
	panels, ohw := ceilDiv(d.cout, 32), d.oh*d.ow
	segs := ceilDiv(d.ow, convRowMaxR)
	group := d.channelGroup()
	kc := gemmKC
	// the last position read, sample sn−1's farthest term at its last kept
	// position, lies inside xp
	_ = xp[(sn-1)*sb+slices.Max(off)/4+(d.oh-1)*d.wp+d.ow-1]
	for i := range sn {
		for p := range panels {
			for oy0 := 0; oy0 < d.oh; oy0 += group {
				oy1 := min(d.oh, oy0+group)
				for oy := oy0; oy < oy1; oy++ {
					for s, ox := 0, 0; s < segs; s++ {
						r := rowSegment(d.ow, segs, s)
						tile := convRowTiles[r]
						dst := &y[((oy-oy0)*d.ow+ox)*32]
						src := &xp[i*sb+oy*d.wp+ox]
						for kb := 0; kb < k; kb += kc {
							tile(min(kc, k-kb), &a[(p*k+kb)*32], src, &off[kb], dst, kb > 0)
						}
						ox += r
					}
				}
				rows := (oy1 - oy0) * d.ow
				chans := min(32, d.cout-32*p)
				at := ((n0+i)*d.cout+32*p)*ohw + oy0*d.ow
				transposeInto(out[at:], ohw, y, 32, rows, chans)
				for c := range chans {
					biasActPlane(out[at+c*ohw:][:rows], at+c*ohw, bias, 32*p+c, act)
				}
			}
		}
	}
}

// useConvChannelDW reports whether the direct weight gradient d of g (o
// output channels) runs in channel tiles (convChannelWeightGrad): a 3×3 stride-1
// undilated window, where the kernel runs, and where it computes fewer
// multiply-adds, weighted by convChannelTileCost, than the dot tiles: the
// channels rounded up to 32 over the kept positions against the channels
// over the wide positions rounded up to whole vectors.
func useConvChannelDW(d convDirect, g backends.ConvGeometry, o int) bool {
	if !convChannelKernels || convChannelsMode == "off" || g.KH != 3 || g.KW != 3 ||
		g.StrideH != 1 || g.StrideW != 1 || g.DilationH != 1 || g.DilationW != 1 {
		return false
	}
	if convChannelsMode == "force" {
		return true
	}
	dots := float64(o * roundUp(d.positions(), 8))
	taps := float64(roundUp(o, 32)*d.oh*d.ow) * convChannelTileCost
	return taps < dots
}

// convChannelWeightGrad is convDirectWeightGrad in channel tiles, for a 3×3
// stride-1 window: each chunk's gradient is laid out [position][channel]
// (32 output channels a panel, zeros past o), and for each input channel
// convTapsDW3x3AVX512 sums the nine taps' products over the chunk's kept
// positions in order, 32 output channels along the lanes. The chunks'
// partial sums are added in chunk order, as on the dot tiles; the sums
// depend only on the shapes.
func convChannelWeightGrad(b *Backend, dw, dy, x []float32, g backends.ConvGeometry, o int, d convDirect) {
	ck := g.C * 9
	pool := poolFor[float32]()
	part, sum := chunkPartials(b, dw[:o*ck], ceilDiv(g.N, d.s))
	defer sum()
	hw, ohw := g.H*g.W, d.oh*d.ow
	inPlace := d.inPlaceOffsets(g.H, g.W, g.PadTop, g.PadLeft) != nil
	d.forChunks(b, g.N, func(ch, n0, sn int, _ []int) {
		// channel c of sample i at xs[c·cs + i·ss]
		xs, cs, ss := x[n0*g.C*hw:], hw, g.C*hw
		if !inPlace {
			xp := pool.get(d.inputLen(sn))
			defer pool.put(xp)
			d.pad((*xp)[:d.inputLen(sn)], x, n0, sn, g.H, g.W, g.PadTop, g.PadLeft)
			xs, cs, ss = *xp, sn*d.plane(), d.plane()
		}
		// the last sample's last tap read lies inside
		_ = xs[(g.C-1)*cs+(sn-1)*ss+(d.oh+1)*d.wp+d.ow+1]
		gt := pool.get(sn * ohw * 32)
		dst := part[ch*o*ck:][:o*ck]
		var acc [288]float32
		for p := range ceilDiv(o, 32) {
			rows := min(32, o-32*p)
			if rows < 32 {
				clear((*gt)[:sn*ohw*32])
			}
			for i := range sn {
				transposeInto((*gt)[i*ohw*32:], 32, dy[((n0+i)*o+32*p)*ohw:], ohw, rows, ohw)
			}
			for c := range g.C {
				acc = [288]float32{}
				convTapsDW3x3AVX512(sn, d.oh, d.ow, &(*gt)[0], &xs[c*cs], ss, d.wp, &acc)
				for oc := range rows {
					for t := range 9 {
						dst[(32*p+oc)*ck+c*9+t] = acc[32*t+oc]
					}
				}
			}
		}
		pool.put(gt)
	})
}

// convScatterChannels is the input channels of a scatter kernel's lanes
// (convScatterTiles).
const convScatterChannels = 16

// useConvChannelDX reports whether the input gradient of g (o output
// channels) runs as a scatter in channel tiles (convChannelInputGrad):
// where the kernels run, for a valid stride-1 undilated convolution whose
// input is just the windows' extent, and input channels that fill the
// tiles' 16 lanes within 15%.
func useConvChannelDX(g backends.ConvGeometry, o int) bool {
	if !convChannelKernels || convChannelsMode == "off" || g.StrideH != 1 || g.StrideW != 1 ||
		g.DilationH != 1 || g.DilationW != 1 || g.PadTop != 0 || g.PadLeft != 0 ||
		g.H != g.OutH+g.KH-1 || g.W != g.OutW+g.KW-1 || o < 1 || g.C < 1 || g.N < 1 || g.OutH < 1 || g.OutW < 1 {
		return false
	}
	if convChannelsMode == "force" {
		return true
	}
	return float64(roundUp(g.C, convScatterChannels)) <= 1.15*float64(g.C)
}

// convChannelInputGrad is convInputGrad for useConvChannelDX's
// convolutions, as the scatter its definition is: the output gradient's
// value at position p and channel o', times w[o', c, ki, kj], goes to the
// input gradient at p + (ki, kj). For each row of a sample's output
// gradient and each tap, convScatter16x{R}AVX512 sums over o' the row's
// broadcast values times the tap's weights, 16 input channels along the
// lanes, and adds the sums into the sample's input gradient laid out
// [position][channel] (a scratch in L1), which is then transposed into dx.
// No product reads the zeros that frame the gradient when the input
// gradient is computed as a convolution (convDirectInputGrad), and no
// position past a row's end is computed. Each element is the sum, over
// the output-gradient rows that reach it in order and the taps in order,
// of chains over the output channels: it depends only on the shapes.
func convChannelInputGrad(b *Backend, dx, dy, w []float32, g backends.ConvGeometry, o int) {
	const lanes = convScatterChannels
	taps, hw, ohw := g.KH*g.KW, g.H*g.W, g.OutH*g.OutW
	panels := ceilDiv(g.C, lanes)
	pool := poolFor[float32]()
	// wt[((p·taps + t)·o + o')·16 + c] = w[o', 16p + c, t], zero past C
	wt := pool.get(panels * taps * o * lanes)
	clear(*wt)
	for oc := range o {
		for c := range g.C {
			p, l := c/lanes, c%lanes
			for t := range taps {
				(*wt)[((p*taps+t)*o+oc)*lanes+l] = w[(oc*g.C+c)*taps+t]
			}
		}
	}
	toff := make([]int, taps) // tap (ki, kj)'s position in bytes of the scratch
	for t := range taps {
		toff[t] = (t/g.KW*g.W + t%g.KW) * lanes * 4
	}
	segs := ceilDiv(g.OutW, convRowMaxR)
	_ = dy[g.N*o*ohw-1]
	_ = dx[g.N*g.C*hw-1]
	forChunksOf(b, max(1, g.N/8), g.N, func(int) []int { return nil }, func(_, n0, sn int, _ []int) {
		s := pool.get(hw * lanes)
		scratch := (*s)[:hw*lanes]
		for i := range sn {
			n := n0 + i
			for p := range panels {
				clear(scratch)
				wp := &(*wt)[p*taps*o*lanes]
				for oy := range g.OutH {
					for sg, ox := 0, 0; sg < segs; sg++ {
						r := rowSegment(g.OutW, segs, sg)
						convScatterTiles[r](o, taps, wp, &dy[n*o*ohw+oy*g.OutW+ox], ohw*4,
							&scratch[(oy*g.W+ox)*lanes], &toff[0])
						ox += r
					}
				}
				transposeInto(dx[(n*g.C+p*lanes)*hw:], hw, scratch, lanes, hw, min(lanes, g.C-p*lanes))
			}
		}
		pool.put(s)
	})
	pool.put(wt)
}
