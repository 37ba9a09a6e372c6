package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

// Fused convolution: the batch is cut into chunks of a few samples (the
// number depends only on the shapes, so results never depend on the thread
// count), the chunks run in parallel, and each unfolds only its own samples
// into a cache-sized scratch buffer laid out [C·KH·KW, S·L] (S samples side
// by side, L = OutH·OutW window positions), so that one single-threaded GEMM
// per chunk covers all of them. The composed path instead unfolds the whole
// batch into one large tensor and runs a small GEMM per sample.

// convChunkElems bounds a chunk's unfolded windows (elements): 256 Ki, 1 MiB
// of float32, which stays in L2 beside the GEMM's packed panels.
const convChunkElems = 1 << 18

// convChunk returns the samples per chunk for unfolded samples of size per
// elements: as many as fit convChunkElems, but at most an eighth of the
// batch, so that there are chunks for every worker.
func convChunk(n, per int) int {
	return max(1, min(convChunkElems/max(per, 1), n/8))
}

// convMinPositions is the fewest window positions (S·L) a chunk's GEMM
// should span: below it (the deep layers of a network, a few positions
// per sample), each chunk's GEMM packs the whole weight matrix for a
// sliver of work, and the weight gradient's partial sums, one weight-sized
// matrix per chunk, cost more than the products. Such convolutions take
// bigger chunks, up to the whole batch, within convMaxChunkElems.
const convMinPositions = 1024

// convMaxChunkElems bounds a big chunk's unfolded windows: 4 Mi elements,
// 16 MiB of float32.
const convMaxChunkElems = 1 << 22

// convPlan is how a convolution's batch is cut: s samples per chunk,
// chunks in all, which depend only on the shapes (so the sums, and the
// results, never depend on the thread count). With par, there are fewer
// chunks than workers: the chunks run one after another and each GEMM is
// parallel instead (a parallel GEMM gives the same bits as a serial one).
type convPlan struct {
	s, chunks int
	par       bool
}

// runChunks runs chunk for each of p's chunks: one after another, each
// with a parallel GEMM (par true), when p says so, otherwise the chunks in
// parallel, each with a serial GEMM.
func (b *Backend) runChunks(p convPlan, chunk func(ch int, par bool)) {
	if p.par {
		for ch := range p.chunks {
			chunk(ch, true)
		}
		return
	}
	b.parallel(p.chunks, 1, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			chunk(ch, false)
		}
	})
}

// planConv cuts a batch of n samples of per unfolded elements and l
// positions each, for b's workers.
func planConv(b *Backend, n, per, l int) convPlan {
	s := convChunk(n, per)
	if s*l < convMinPositions {
		big := min(n, (convMinPositions+l-1)/max(l, 1), convMaxChunkElems/max(per, 1))
		s = max(s, big)
	}
	chunks := (n + s - 1) / s
	return convPlan{s: s, chunks: chunks, par: chunks < b.workers}
}

// samples returns chunk ch's first sample and sample count.
func (p convPlan) samples(ch, n int) (n0, sn int) {
	n0 = ch * p.s
	return n0, min(p.s, n-n0)
}

func convKernel[T float]() kernel[T] {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(kernelF32).(kernel[T])
	}
	return any(kernelF64).(kernel[T])
}

// convKernels is one fused convolution kernel in both float types: it
// takes the output and two inputs, the geometry and the output channels.
type convKernels struct {
	f32 func(b *Backend, out, a, c []float32, g backends.ConvGeometry, o int)
	f64 func(b *Backend, out, a, c []float64, g backends.ConvGeometry, o int)
}

// run dispatches on out's dtype, each view starting at its offset.
func (k convKernels) run(b *Backend, op string, out, a, c backends.View, g backends.ConvGeometry, o int) {
	switch out.DType {
	case backends.Float32, backends.Float64:
	default:
		b.fail(errDType(op, out.DType))
		return
	}
	if o < 0 || !b.checkGeometry(op, g) {
		return
	}
	xs, ws, ys := convShapes(g, o)
	shapes := map[string][][]int{ // out, a, c of each kernel
		"conv2d":             {ys, xs, ws},
		"conv2d input grad":  {xs, ys, ws},
		"conv2d weight grad": {ws, ys, xs},
	}[op]
	if _, ok := backends.CheckedNumElements(ys); !ok ||
		!b.checkFused(op, out, []backends.View{out, a, c}, []string{"out", "input 0", "input 1"}, shapes) {
		return
	}
	switch out.DType {
	case backends.Float32:
		k.f32(b, buf(out).f32()[out.Offset:], buf(a).f32()[a.Offset:], buf(c).f32()[c.Offset:], g, o)
	case backends.Float64:
		k.f64(b, buf(out).f64()[out.Offset:], buf(a).f64()[a.Offset:], buf(c).f64()[c.Offset:], g, o)
	default:
		b.fail(errDType(op, out.DType))
	}
}

// Conv2d implements backends.ConvFusion.
func (b *Backend) Conv2d(out, x, w backends.View, g backends.ConvGeometry) {
	convKernels{convForward[float32], convForward[float64]}.run(b, "conv2d", out, x, w, g, dim(out, 1))
}

// Conv2dBias implements backends.ConvBiasFusion: on the direct path each
// output plane takes its channel's bias as it is copied out of the tiles'
// scratch, while it is in L1; on the others in a pass over the output's
// planes after the convolution. Either way each element is the
// convolution's sum plus the bias, one rounding: Conv2d then Add.
func (b *Backend) Conv2dBias(out, x, w, bias backends.View, g backends.ConvGeometry) {
	b.conv2dBias("conv2d bias", out, backends.View{}, x, w, bias, g, 0)
}

// Conv2dBiasAct implements backends.ConvBiasActFusion: Conv2dBias into pre,
// and op of each of pre's planes into out right after the plane's bias
// (activationRow, Unary's kernels).
func (b *Backend) Conv2dBiasAct(out, pre, x, w, bias backends.View, g backends.ConvGeometry, op backends.UnaryOp) {
	const name = "conv2d bias act"
	if !backends.IsLinearAct(op) {
		b.refuse(name, "activation %s (want relu, gelu, gelu_tanh, silu, sigmoid or tanh)", op)
		return
	}
	if !b.checkFused(name, pre, []backends.View{out}, []string{"out"}, [][]int{pre.Shape}) ||
		!b.checkApart(name, out, pre, backends.NumElements(pre.Shape)) {
		return
	}
	b.conv2dBias(name, pre, out, x, w, bias, g, op)
}

// conv2dBias is Conv2dBias into pre, and with an act view (not the zero
// View) Conv2dBiasAct's op of it into act.
func (b *Backend) conv2dBias(name string, pre, act, x, w, bias backends.View, g backends.ConvGeometry, op backends.UnaryOp) {
	o := dim(pre, 1)
	if o < 0 || !b.checkFused(name, pre, []backends.View{bias}, []string{"bias"}, [][]int{{o}}) {
		if o < 0 {
			b.refuse(name, "out %v must be [N, O, OutH, OutW]", pre.Shape)
		}
		return
	}
	var k convKernels
	switch pre.DType {
	case backends.Float32:
		k.f32 = convBiasKernel[float32](bias, act, op, o)
	case backends.Float64:
		k.f64 = convBiasKernel[float64](bias, act, op, o)
	}
	k.run(b, "conv2d", pre, x, w, g, o)
}

// convBiasKernel returns conv2dBias's kernel for T: convForwardBias with
// bias's channels elements and, with an act view (not the zero View), op
// of each output plane written to act.
func convBiasKernel[T float](bias, act backends.View, op backends.UnaryOp, channels int) func(b *Backend, out, x, w []T, g backends.ConvGeometry, o int) {
	bs := normView[T](bias, channels)
	var a *activation[T]
	if act.Buf != nil {
		a = &activation[T]{op: op, out: attnData[T](act)[act.Offset:]}
	}
	return func(b *Backend, out, x, w []T, g backends.ConvGeometry, o int) {
		convForwardBias(b, out, x, w, bs, a, g, o)
	}
}

// Conv2dInputGrad implements backends.ConvFusion.
func (b *Backend) Conv2dInputGrad(dx, dy, w backends.View, g backends.ConvGeometry) {
	convKernels{convInputGrad[float32], convInputGrad[float64]}.run(b, "conv2d input grad", dx, dy, w, g, dim(dy, 1))
}

// Conv2dWeightGrad implements backends.ConvFusion.
func (b *Backend) Conv2dWeightGrad(dw, dy, x backends.View, g backends.ConvGeometry) {
	convKernels{convWeightGrad[float32], convWeightGrad[float64]}.run(b, "conv2d weight grad", dw, dy, x, g, dim(dy, 1))
}

// dim returns dimension d of v, or -1 when v has fewer (refused then).
func dim(v backends.View, d int) int {
	if d >= len(v.Shape) {
		return -1
	}
	return v.Shape[d]
}

// convForward: for each chunk, cols [CK, S·L] = unfold(x[n0:n0+S]), then
// y [O, S·L] = w [O, CK] · cols, copied out per sample. Each output
// element is the same K-blocked sum the composed per-sample GEMM makes.
// On AVX2 machines without AVX-512, float32 stride-1 convolutions whose
// padding leaves most of a plane take the direct path (conv_direct.go).
// The tap path (conv_taps.go) is here for tests only (see useConvTaps).
// Where the AVX-512 transform kernels run, float32 3×3 stride-1 layers
// with enough channels and tiles take the Winograd path
// (conv_winograd.go, useConvWino), in all three directions.
func convForward[T float](b *Backend, out, x, w []T, g backends.ConvGeometry, o int) {
	convForwardBias(b, out, x, w, nil, nil, g, o)
}

// convForwardBias is convForward with bias[oc] (where bias is not nil)
// added to each output plane oc and, where act is not nil, act.op of each
// plane written to act.out at the plane's offset: by the direct path as it
// copies the planes out, by the others in a pass over them after
// (addChannelBias).
func convForwardBias[T float](b *Backend, out, x, w, bias []T, act *activation[T], g backends.ConvGeometry, o int) {
	if out32, ok := any(out).([]float32); ok && useConvWino(g, o) {
		convWinoForward(b, out32, any(x).([]float32), any(w).([]float32), g, o, false)
	} else if ok && useConvDirect(g, o, g.OutH, g.OutW, false) {
		var b32 []float32
		if bias != nil {
			b32 = any(bias).([]float32)
		}
		convDirectForward(b, out32, any(x).([]float32), any(w).([]float32), b32, any(act).(*activation[float32]), g, o)
		return
	} else if useConvTaps(g, convForwardPass) {
		convTapsForward(b, out, x, w, g, o)
	} else if convValid(g) {
		convForwardImplicit(b, out, x, w, g, o)
	} else {
		convForwardCols(b, out, x, w, g, o, false)
	}
	if bias != nil {
		addChannelBias(b, out, bias, act, g.N, o, g.OutH*g.OutW)
	}
}

// addChannelBias adds bias[oc] to each plane oc of out ([n][o][l]) and,
// where act is not nil, writes act.op of the plane to act.out.
func addChannelBias[T float](b *Backend, out, bias []T, act *activation[T], n, o, l int) {
	out = out[:n*o*l]
	b.parallel(n*o, max(1, b.ewGrain(n*o*l)/max(l, 1)), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			biasActPlane(out[p*l:][:l], p*l, bias, p%o, act)
		}
	})
}

// biasActPlane is a convolution's epilogue for one output plane or a run
// of one, plane, at offset at of the output: it adds bias[c] where bias is
// not nil, then writes act.op of the result to act.out at the same offset
// where act is not nil (addChannelBias, and the direct paths as they
// write their planes out).
func biasActPlane[T float](plane []T, at int, bias []T, c int, act *activation[T]) {
	if bias != nil {
		addScalar(plane, bias[c])
	}
	if act != nil {
		activationRow(act.op, act.out[at:][:len(plane)], plane)
	}
}

// convForwardCols is convForward's GEMM path on unfolded chunks, with
// bfloat16 products where bf16 is set (float32 only: Conv2dBF16).
func convForwardCols[T float](b *Backend, out, x, w []T, g backends.ConvGeometry, o int, bf16 bool) {
	ck, l := g.C*g.KH*g.KW, g.OutH*g.OutW
	p := planConv(b, g.N, ck*l, l)
	kern, pool := convKernel[T](), poolFor[T]()
	chunk := func(ch int, par bool) {
		n0, sn := p.samples(ch, g.N)
		cols := pool.get(ck * sn * l)
		y := pool.get(o * sn * l)
		forChannels(b, par, g.C, g.KH*g.KW*sn*l, func(c0, c1 int) { unfoldChannels(*cols, x, g, n0, sn, c0, c1) })
		convGEMM(b, kern, o, sn*l, ck,
			matSrc[T]{s: w, rs: ck, cs: 1},
			matSrc[T]{s: *cols, rs: sn * l, cs: 1},
			matDst[T]{s: *y, rs: sn * l, cs: 1}, par, bf16)
		forChannels(b, par, o, sn*l, func(o0, o1 int) {
			for i := range sn {
				for oc := o0; oc < o1; oc++ {
					copy(out[((n0+i)*o+oc)*l:][:l], (*y)[oc*sn*l+i*l:][:l])
				}
			}
		})
		pool.put(y)
		pool.put(cols)
	}
	b.runChunks(p, chunk)
}

// convValid reports whether g is an unpadded, unstrided, undilated
// convolution whose windows all lie inside the input.
func convValid(g backends.ConvGeometry) bool {
	return g.StrideH == 1 && g.StrideW == 1 && g.DilationH == 1 && g.DilationW == 1 &&
		g.PadTop == 0 && g.PadLeft == 0 && g.OutH == g.H-g.KH+1 && g.OutW == g.W-g.KW+1 && g.OutH > 0 && g.OutW > 0
}

// convForwardImplicit is convForward for a valid convolution without
// unfolding: numbering a sample's output positions across the input's
// full width (p = oh·W + ow), the unfolded matrix's row (c, ki, kj) is the
// input plane c read from ki·W + kj on, so the GEMM packs it straight from
// the input through a table of those row offsets. The positions with
// ow ≥ OutW are computed and dropped: (W − OutW)/W more multiply-adds
// instead of a copy of every window. One GEMM per sample, samples split
// across the workers.
func convForwardImplicit[T float](b *Backend, out, x, w []T, g backends.ConvGeometry, o int) {
	ck, hw := g.C*g.KH*g.KW, g.H*g.W
	pw := convWidePositions(g)
	rowOff := convRowOffsets(g)
	kern, pool := convKernel[T](), poolFor[T]()
	b.parallel(g.N, 2, func(lo, hi int) {
		y := pool.get(o * pw)
		for n := lo; n < hi; n++ {
			gemm(b, kern, o, pw, ck,
				matSrc[T]{s: w, rs: ck, cs: 1},
				matSrc[T]{s: x, off: n * g.C * hw, rowOff: rowOff, cs: 1},
				matDst[T]{s: *y, rs: pw, cs: 1}, false)
			for oc := range o {
				dst := out[(n*o+oc)*g.OutH*g.OutW:][:g.OutH*g.OutW]
				src := (*y)[oc*pw:][:pw]
				for oh := range g.OutH {
					copy(dst[oh*g.OutW:][:g.OutW], src[oh*g.W:])
				}
			}
		}
		pool.put(y)
	})
}

// convRowOffsets returns, for each row (c, ki, kj) of a valid
// convolution's unfolded matrix, where it starts in a sample's input: the
// input plane c read from ki·W + kj on (see convWidePositions).
func convRowOffsets(g backends.ConvGeometry) []int {
	rowOff := make([]int, g.C*g.KH*g.KW)
	for c := range g.C {
		for ki := range g.KH {
			for kj := range g.KW {
				rowOff[(c*g.KH+ki)*g.KW+kj] = c*g.H*g.W + ki*g.W + kj
			}
		}
	}
	return rowOff
}

// addPartials sets dst to the sum of the chunks' partial results (each
// len(dst) long, one after another in part; dst may be the first), added
// in chunk order, the elements split among b's workers (each element's
// sum is the same whatever the split).
func addPartials[T float](b *Backend, dst, part []T, chunks int) {
	n := len(dst)
	b.parallel(n, grainFor(n, chunks), func(lo, hi int) {
		d := dst[lo:hi]
		copy(d, part[lo:hi])
		for ch := 1; ch < chunks; ch++ {
			p := part[ch*n+lo : ch*n+hi]
			for i := range p {
				d[i] += p[i]
			}
		}
	})
}

// convInputGrad: for each chunk, dcols [CK, S·L] = wᵀ [CK, O] · dy chunk
// [O, S·L], folded back (overlapping windows added) into dx's samples. The
// direct path (conv_direct.go) and, for maps mostly framed by padding, the
// tap path (conv_taps.go) take some convolutions on AVX2 machines.
func convInputGrad[T float](b *Backend, dx, dy, w []T, g backends.ConvGeometry, o int) {
	if dx32, ok := any(dx).([]float32); ok && useConvWino(g, o) {
		convWinoInputGrad(b, dx32, any(dy).([]float32), any(w).([]float32), g, o, false)
		return
	}
	// the direct input gradient is a stride-1 convolution of dy
	if dx32, ok := any(dx).([]float32); ok && g.StrideH == 1 && g.StrideW == 1 && useConvDirect(g, g.C, g.H, g.W, false) {
		convDirectInputGrad(b, dx32, any(dy).([]float32), any(w).([]float32), g, o)
		return
	}
	if useConvTaps(g, convInputPass) {
		convTapsInputGrad(b, dx, dy, w, g, o)
		return
	}
	convInputGradCols(b, dx, dy, w, g, o, false)
}

// convInputGradCols is convInputGrad's GEMM path, with bfloat16 products
// where bf16 is set (float32 only: Conv2dInputGradBF16).
func convInputGradCols[T float](b *Backend, dx, dy, w []T, g backends.ConvGeometry, o int, bf16 bool) {
	ck, l := g.C*g.KH*g.KW, g.OutH*g.OutW
	wide := convValid(g)
	if wide {
		l = convWidePositions(g)
	}
	p := planConv(b, g.N, ck*l, l)
	kern, pool := convKernel[T](), poolFor[T]()
	chunk := func(ch int, par bool) {
		n0, sn := p.samples(ch, g.N)
		gy := pool.get(o * sn * l)
		forChannels(b, par, o, sn*l, func(o0, o1 int) { gatherChunk(*gy, dy, o, l, n0, sn, g, wide, o0, o1) })
		dcols := pool.get(ck * sn * l)
		convGEMM(b, kern, ck, sn*l, o,
			matSrc[T]{s: w, rs: 1, cs: ck},
			matSrc[T]{s: *gy, rs: sn * l, cs: 1},
			matDst[T]{s: *dcols, rs: sn * l, cs: 1}, par, bf16)
		forChannels(b, par, g.C, g.KH*g.KW*sn*l, func(c0, c1 int) {
			if wide {
				foldWide(dx, *dcols, g, n0, sn, l, c0, c1)
			} else {
				foldChannels(dx, *dcols, g, n0, sn, c0, c1)
			}
		})
		pool.put(dcols)
		pool.put(gy)
	}
	b.runChunks(p, chunk)
}

// convWeightGrad: each chunk computes dy chunk [O, S·L] · colsᵀ [S·L, CK]
// (as its transpose, cols · dyᵀ) into its own partial sum; the partials
// are then added in chunk order, so the result depends only on the shapes.
// The direct path (conv_direct.go) and, for maps mostly framed by padding,
// the tap path (conv_taps.go) take some convolutions on AVX2 machines.
func convWeightGrad[T float](b *Backend, dw, dy, x []T, g backends.ConvGeometry, o int) {
	if dw32, ok := any(dw).([]float32); ok && useConvWino(g, o) {
		convWinoWeightGrad(b, dw32, any(dy).([]float32), any(x).([]float32), g, o, false)
		return
	}
	if dw32, ok := any(dw).([]float32); ok && useConvDirect(g, o, g.OutH, g.OutW, true) {
		convDirectWeightGrad(b, dw32, any(dy).([]float32), any(x).([]float32), g, o)
		return
	}
	if useConvTaps(g, convWeightPass) {
		convTapsWeightGrad(b, dw, dy, x, g, o)
		return
	}
	if dw32, ok := any(dw).([]float32); ok && hasDotTile && convValid(g) {
		convWeightGradDots(b, dw32, any(dy).([]float32), any(x).([]float32), g, o)
		return
	}
	convWeightGradCols(b, dw, dy, x, g, o, false)
}

// convWeightGradCols is convWeightGrad's GEMM path, with bfloat16
// products where bf16 is set (float32 only: Conv2dWeightGradBF16).
func convWeightGradCols[T float](b *Backend, dw, dy, x []T, g backends.ConvGeometry, o int, bf16 bool) {
	ck, l := g.C*g.KH*g.KW, g.OutH*g.OutW
	wide := convValid(g)
	if wide {
		l = convWidePositions(g)
	}
	p := planConv(b, g.N, ck*l, l)
	kern, pool := convKernel[T](), poolFor[T]()
	var partials *[]T
	part := dw // one chunk writes dw itself
	if p.chunks > 1 {
		partials = pool.get(p.chunks * o * ck)
		part = *partials
	}
	chunk := func(ch int, par bool) {
		n0, sn := p.samples(ch, g.N)
		gy := pool.get(o * sn * l)
		forChannels(b, par, o, sn*l, func(o0, o1 int) { gatherChunk(*gy, dy, o, l, n0, sn, g, wide, o0, o1) })
		cols := pool.get(ck * sn * l)
		forChannels(b, par, g.C, g.KH*g.KW*sn*l, func(c0, c1 int) {
			if wide {
				unfoldWide(*cols, x, g, n0, sn, l, c0, c1)
			} else {
				unfoldChannels(*cols, x, g, n0, sn, c0, c1)
			}
		})
		if convDirectKernels && o <= ck {
			// dw [O, CK] = gy · colsᵀ: on the AVX2 kernel (6 rows × 16
			// columns) the side packed in panels of 6, transposed element
			// by element, is then the smaller one (O, not CK), and the
			// output rows are contiguous (1.3-1.5x on ResNet-18's layers)
			convGEMM(b, kern, o, ck, sn*l,
				matSrc[T]{s: *gy, rs: sn * l, cs: 1},
				matSrc[T]{s: *cols, rs: 1, cs: sn * l},
				matDst[T]{s: part[ch*o*ck:], rs: ck, cs: 1}, par, bf16)
		} else {
			// dwᵀ [CK, O] = cols [CK, S·L] · gyᵀ: both operands are read
			// along their contiguous rows when packed, and the output tile
			// shape fits CK (many rows) × O (a few columns)
			convGEMM(b, kern, ck, o, sn*l,
				matSrc[T]{s: *cols, rs: sn * l, cs: 1},
				matSrc[T]{s: *gy, rs: 1, cs: sn * l},
				matDst[T]{s: part[ch*o*ck:], rs: 1, cs: ck}, par, bf16)
		}
		pool.put(cols)
		pool.put(gy)
	}
	b.runChunks(p, chunk)
	if partials != nil {
		addPartials(b, dw[:o*ck], part, p.chunks)
		pool.put(partials)
	}
}

// convWeightGradDots is convWeightGrad for a valid float32 convolution
// with the dot-product tile kernel (dotTile4x4F32): dw[o, k] is the dot
// product of dy's row o with the input read at row k's offset, over each
// sample's wide positions, so neither operand is unfolded or packed, and
// each load feeds four multiply-adds. Tiles of 4 output channels × 4
// window rows keep sixteen lanes of partial sums per dot product across a
// chunk's samples; the lanes are added in order at the chunk's end, and the
// chunks' partial results in chunk order, so the result depends only on
// the shapes.
func convWeightGradDots(b *Backend, dw, dy, x []float32, g backends.ConvGeometry, o int) {
	ck, hw, l := g.C*g.KH*g.KW, g.H*g.W, convWidePositions(g)
	rowOff := convRowOffsets(g)
	s := convChunk(g.N, ck*l)
	chunks := (g.N + s - 1) / s
	ob, kb := (o+3)/4, (ck+3)/4 // tiles of 4×4
	pool := poolFor[float32]()
	partials := pool.get(chunks * o * ck)
	part := *partials
	b.parallel(chunks, 1, func(lo, hi int) {
		var acc [256]float32
		for ch := lo; ch < hi; ch++ {
			n0 := ch * s
			sn := min(s, g.N-n0)
			gy := pool.get(o * sn * l)
			gatherChunk(*gy, dy, o, l, n0, sn, g, true, 0, o)
			xs := x[n0*g.C*hw:]
			row := func(r int) *float32 { return &(*gy)[min(r, o-1)*sn*l] }
			col := func(k int) *float32 { return &xs[rowOff[min(k, ck-1)]] }
			out := part[ch*o*ck:][:o*ck]
			for oi := range ob {
				for ki := range kb {
					o0, k0 := 4*oi, 4*ki
					clear(acc[:])
					// the last sample's rows must end inside the buffers
					_, _ = (*gy)[min(o0+3, o-1)*sn*l+(sn-1)*l+l-1], xs[(sn-1)*g.C*hw+rowOff[min(k0+3, ck-1)]+l-1]
					dotTile4x4F32(row(o0), row(o0+1), row(o0+2), row(o0+3),
						col(k0), col(k0+1), col(k0+2), col(k0+3), l, sn, 4*l, 4*g.C*hw, &acc)
					for r := range min(4, o-o0) {
						for c := range min(4, ck-k0) {
							var sum float32
							for _, v := range acc[16*(4*r+c):][:16] {
								sum += v
							}
							out[(o0+r)*ck+k0+c] = sum
						}
					}
				}
			}
			pool.put(gy)
		}
	})
	addPartials(b, dw[:o*ck], part, chunks)
	pool.put(partials)
}

// gatherChunk copies output channels [o0, o1) of dy's samples [n0,
// n0+sn) ([N, O, OutH·OutW]) into dst laid out [O, sn·l]. With wide, a
// sample's l positions are numbered across the input's width (see
// convWidePositions), and the positions past OutW on each line are zero,
// so that they add nothing to the gradients.
func gatherChunk[T float](dst, dy []T, o, l, n0, sn int, g backends.ConvGeometry, wide bool, o0, o1 int) {
	ohw := g.OutH * g.OutW
	for i := range sn {
		for oc := o0; oc < o1; oc++ {
			src := dy[((n0+i)*o+oc)*ohw:][:ohw]
			seg := dst[oc*sn*l+i*l:][:l]
			if !wide {
				copy(seg, src)
				continue
			}
			for oh := range g.OutH {
				line := seg[oh*g.W:]
				copy(line[:g.OutW], src[oh*g.OutW:][:g.OutW])
				if oh < g.OutH-1 {
					clear(line[g.OutW:g.W])
				}
			}
		}
	}
}

// convWidePositions is the number of a sample's positions numbered across
// the input's full width, p = oh·W + ow, up to the last window: for a
// valid convolution the unfolded row (c, ki, kj) is then the input plane c
// read from ki·W + kj on, one contiguous run, and the positions with ow ≥
// OutW are computed and ignored (their gradient is zero).
func convWidePositions(g backends.ConvGeometry) int { return (g.OutH-1)*g.W + g.OutW }

// unfoldWide is unfoldChannels for a valid convolution with wide
// positions: one copy of l elements per row and sample.
func unfoldWide[T float](dst, x []T, g backends.ConvGeometry, n0, sn, l, c0, c1 int) {
	hw, width := g.H*g.W, sn*l
	for c := c0; c < c1; c++ {
		for ki := range g.KH {
			for kj := range g.KW {
				row := dst[((c*g.KH+ki)*g.KW+kj)*width:][:width]
				for i := range sn {
					copy(row[i*l:][:l], x[((n0+i)*g.C+c)*hw+ki*g.W+kj:][:l])
				}
			}
		}
	}
}

// foldWide is foldChannels for a valid convolution with wide positions:
// each row of cols adds, in one run, into the plane it was read from (its
// ignored positions hold zeros).
func foldWide[T float](dx, cols []T, g backends.ConvGeometry, n0, sn, l, c0, c1 int) {
	hw, width := g.H*g.W, sn*l
	clearChannels(dx, g, n0, sn, c0, c1)
	for c := c0; c < c1; c++ {
		for ki := range g.KH {
			for kj := range g.KW {
				row := cols[((c*g.KH+ki)*g.KW+kj)*width:][:width]
				for i := range sn {
					addTo(dx[((n0+i)*g.C+c)*hw+ki*g.W+kj:][:l], row[i*l:][:l])
				}
			}
		}
	}
}

// addTo sets dst[i] += src[i].
func addTo[T float](dst, src []T) {
	if vecAxpy(dst, src, 1) {
		return
	}
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}

// unfoldChannels writes the windows of channels [c0, c1) of samples [n0,
// n0+sn) of x into dst laid out [C·KH·KW, sn·L]: row (c·KH+ki)·KW+kj,
// column i·L + oh·OutW + ow holds x[n0+i, c, oh·sh−pt+ki·dh, ow·sw−pl+kj·dw],
// or 0 in the padding. Channels [0, C) unfold the whole chunk.
func unfoldChannels[T float](dst, x []T, g backends.ConvGeometry, n0, sn, c0, c1 int) {
	l, hw := g.OutH*g.OutW, g.H*g.W
	width := sn * l
	if g.StrideH == 1 && g.StrideW == 1 && g.OutW == g.W {
		unfoldSame(dst, x, g, n0, sn, c0, c1)
		return
	}
	for c := c0; c < c1; c++ {
		for ki := range g.KH {
			hLo, hHi := validRange(g.OutH, g.StrideH, g.PadTop, ki*g.DilationH, g.H)
			for kj := range g.KW {
				wLo, wHi := validRange(g.OutW, g.StrideW, g.PadLeft, kj*g.DilationW, g.W)
				row := dst[((c*g.KH+ki)*g.KW+kj)*width:][:width]
				for i := range sn {
					plane := x[((n0+i)*g.C+c)*hw:][:hw]
					seg := row[i*l:][:l]
					for oh := range g.OutH {
						line := seg[oh*g.OutW:][:g.OutW]
						if oh < hLo || oh >= hHi || wLo >= wHi {
							clear(line)
							continue
						}
						h := oh*g.StrideH - g.PadTop + ki*g.DilationH
						clear(line[:wLo])
						clear(line[wHi:])
						x0 := h*g.W - g.PadLeft + kj*g.DilationW
						if g.StrideW == 1 {
							copy(line[wLo:wHi], plane[x0+wLo:x0+wHi])
							continue
						}
						for ow := wLo; ow < wHi; ow++ {
							line[ow] = plane[x0+ow*g.StrideW]
						}
					}
				}
			}
		}
	}
}

// unfoldSame is unfoldChannels for an unstrided convolution whose output
// rows are as wide as the input's (a "same" padding): position p of a
// window row then reads the input at p + d for one shift d, so each row
// and sample is one contiguous copy, after which the positions whose
// window column falls in the padding (a column or two at each line's ends)
// and the lines whose window row does are zeroed. For the deep layers of a
// network, whose lines are a few elements long, this replaces a copy call
// per line by one per plane.
func unfoldSame[T float](dst, x []T, g backends.ConvGeometry, n0, sn, c0, c1 int) {
	l, hw := g.OutH*g.OutW, g.H*g.W
	width := sn * l
	for c := c0; c < c1; c++ {
		for ki := range g.KH {
			hLo, hHi := validRange(g.OutH, 1, g.PadTop, ki*g.DilationH, g.H)
			for kj := range g.KW {
				wLo, wHi := validRange(g.OutW, 1, g.PadLeft, kj*g.DilationW, g.W)
				d := (ki*g.DilationH-g.PadTop)*g.W + kj*g.DilationW - g.PadLeft
				lo, hi := max(hLo*g.W, -d), min(hHi*g.W, hw-d)
				row := dst[((c*g.KH+ki)*g.KW+kj)*width:][:width]
				for i := range sn {
					plane := x[((n0+i)*g.C+c)*hw:][:hw]
					seg := row[i*l:][:l]
					if wLo >= wHi || lo >= hi {
						clear(seg)
						continue
					}
					clear(seg[:lo])
					copy(seg[lo:hi], plane[lo+d:hi+d])
					clear(seg[hi:])
					for oh := hLo; oh < hHi; oh++ {
						line := seg[oh*g.W:][:g.W]
						for ow := range wLo {
							line[ow] = 0
						}
						for ow := wHi; ow < g.W; ow++ {
							line[ow] = 0
						}
					}
				}
			}
		}
	}
}

// foldChannels is unfoldChannels' adjoint: it overwrites the planes of
// channels [c0, c1) of samples [n0, n0+sn) of dx with the sums of the
// column values that read each input element, in (c, ki, kj) order (only
// a channel's own rows of cols add into its planes).
func foldChannels[T float](dx, cols []T, g backends.ConvGeometry, n0, sn, c0, c1 int) {
	l, hw := g.OutH*g.OutW, g.H*g.W
	width := sn * l
	if g.StrideH == 1 && g.StrideW == 1 && g.OutW == g.W {
		foldSame(dx, cols, g, n0, sn, c0, c1)
		return
	}
	clearChannels(dx, g, n0, sn, c0, c1)
	for c := c0; c < c1; c++ {
		for ki := range g.KH {
			hLo, hHi := validRange(g.OutH, g.StrideH, g.PadTop, ki*g.DilationH, g.H)
			for kj := range g.KW {
				wLo, wHi := validRange(g.OutW, g.StrideW, g.PadLeft, kj*g.DilationW, g.W)
				if wLo >= wHi {
					continue
				}
				row := cols[((c*g.KH+ki)*g.KW+kj)*width:][:width]
				for i := range sn {
					plane := dx[((n0+i)*g.C+c)*hw:][:hw]
					seg := row[i*l:][:l]
					for oh := hLo; oh < hHi; oh++ {
						line := seg[oh*g.OutW:][:g.OutW]
						x0 := (oh*g.StrideH-g.PadTop+ki*g.DilationH)*g.W - g.PadLeft + kj*g.DilationW
						if g.StrideW == 1 {
							dst := plane[x0+wLo : x0+wHi]
							for j, v := range line[wLo:wHi] {
								dst[j] += v
							}
							continue
						}
						for ow := wLo; ow < wHi; ow++ {
							plane[x0+ow*g.StrideW] += line[ow]
						}
					}
				}
			}
		}
	}
}

// foldSame is foldChannels for an unstrided convolution whose output rows are
// as wide as the input's, unfoldSame's adjoint: the positions whose window
// column falls in the padding are zeroed in cols (they read nothing), and
// each row and sample then adds into its plane in one contiguous run,
// shifted by d, instead of a short loop per line (the deep layers' lines
// are a few elements long). Each element's sum runs in the same (c, ki, kj)
// order as foldChannels', the zeros adding nothing.
func foldSame[T float](dx, cols []T, g backends.ConvGeometry, n0, sn, c0, c1 int) {
	l, hw := g.OutH*g.OutW, g.H*g.W
	width := sn * l
	clearChannels(dx, g, n0, sn, c0, c1)
	for c := c0; c < c1; c++ {
		for ki := range g.KH {
			hLo, hHi := validRange(g.OutH, 1, g.PadTop, ki*g.DilationH, g.H)
			for kj := range g.KW {
				wLo, wHi := validRange(g.OutW, 1, g.PadLeft, kj*g.DilationW, g.W)
				d := (ki*g.DilationH-g.PadTop)*g.W + kj*g.DilationW - g.PadLeft
				lo, hi := max(hLo*g.W, -d), min(hHi*g.W, hw-d)
				if wLo >= wHi || lo >= hi {
					continue
				}
				row := cols[((c*g.KH+ki)*g.KW+kj)*width:][:width]
				for i := range sn {
					seg := row[i*l:][:l]
					if wLo > 0 || wHi < g.W {
						for oh := hLo; oh < hHi; oh++ {
							line := seg[oh*g.W:][:g.W]
							clear(line[:wLo])
							clear(line[wHi:])
						}
					}
					addTo(dx[((n0+i)*g.C+c)*hw+lo+d:][:hi-lo], seg[lo:hi])
				}
			}
		}
	}
}

// clearChannels zeroes the planes of channels [c0, c1) of dx's samples
// [n0, n0+sn).
func clearChannels[T float](dx []T, g backends.ConvGeometry, n0, sn, c0, c1 int) {
	hw := g.H * g.W
	for i := range sn {
		clear(dx[((n0+i)*g.C+c0)*hw : ((n0+i)*g.C+c1)*hw])
	}
}

// forChannels runs f on n channels, of cost elements each: at once, or,
// with par (a chunk whose GEMM runs on all the workers, the chunks one
// after another), on ranges shared by the workers, so that the unfolding,
// folding and copying around the GEMM does not leave them idle (on two
// workers, unfolding the deep layers' batches on one of them took about
// 7% of a ResNet-18 training step's CPU time). Channels are independent:
// the results are the same.
func forChannels(b *Backend, par bool, n, cost int, f func(c0, c1 int)) {
	if !par {
		f(0, n)
		return
	}
	b.parallel(n, grainFor(n, cost), f)
}

// convGEMM is gemm, or with bf16 (float32 only) gemmBF16 on the same
// operands, plain strided ones, rounded to bfloat16 as they are packed, the
// products summed in float32.
func convGEMM[T float](b *Backend, kern kernel[T], m, n, k int, A, B matSrc[T], C matDst[T], par, bf16 bool) {
	if C32, ok := any(C).(matDst[float32]); ok && bf16 {
		A32, B32 := any(A).(matSrc[float32]), any(B).(matSrc[float32])
		if C32.cs != 1 { // Cᵀ = Bᵀ·Aᵀ: the bfloat16 GEMM writes rows
			m, n, A32, B32 = n, m, B32.t(), A32.t()
			C32.rs, C32.cs = C32.cs, C32.rs
		}
		gemmBF16(b, kernelBF16, m, n, k, bf16Src{f32: A32.s, off: A32.off, rs: A32.rs, cs: A32.cs},
			bf16Src{f32: B32.s, off: B32.off, rs: B32.rs, cs: B32.cs}, bf16Dst{c: C32.s, off: C32.off, ld: C32.rs, acc: C32.acc}, par)
		return
	}
	gemm(b, kern, m, n, k, A, B, C, par)
}
