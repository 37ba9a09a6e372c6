package tensor

import (
	"math"
	"sync/atomic"

	"github.com/kiln-ml/kiln/backends"
)

// Window pooling unfolds the windows with Im2Col and reduces over the window
// axis: max pooling pads with −∞ and finds each window's maximum and its
// position, average pooling pads with zeros and divides by a per-position
// count. Adaptive average pooling is separable, so it runs as two products
// with small pooling matrices built on the host (out = Ph·x·Pwᵀ), whose
// backward pass is the same two products transposed.

// PoolConfig configures MaxPool1d and MaxPool2d. Each list holds one value
// for every spatial dimension or one per dimension (height, width). The
// zero value of every field but Kernel is PyTorch's default.
type PoolConfig struct {
	// Kernel is the window size. It is required.
	Kernel []int `json:"kernel"`
	// Stride is the step between windows. Empty means Kernel.
	Stride []int `json:"stride,omitempty"`
	// Padding is implicit −∞ padding on both sides, at most half the
	// kernel. Empty means 0.
	Padding []int `json:"padding,omitempty"`
	// Dilation is the spacing between window elements. Empty means 1.
	Dilation []int `json:"dilation,omitempty"`
	// CeilMode rounds the output size up instead of down, so that windows
	// may hang over the end of the input (but never start past it).
	CeilMode bool `json:"ceil_mode,omitempty"`
}

// AvgPoolConfig configures AvgPool1d and AvgPool2d. Each list holds one
// value for every spatial dimension or one per dimension. The zero value of
// every field but Kernel is PyTorch's default.
type AvgPoolConfig struct {
	// Kernel is the window size. It is required.
	Kernel []int `json:"kernel"`
	// Stride is the step between windows. Empty means Kernel.
	Stride []int `json:"stride,omitempty"`
	// Padding is implicit zero padding on both sides, at most half the
	// kernel. Empty means 0.
	Padding []int `json:"padding,omitempty"`
	// CeilMode rounds the output size up instead of down.
	CeilMode bool `json:"ceil_mode,omitempty"`
	// ExcludePad leaves padding out of each window's divisor: PyTorch's
	// count_include_pad=False. The zero value counts padding, as PyTorch's
	// default count_include_pad=True does. Windows hanging past the padding
	// in ceil mode never count the part beyond it.
	ExcludePad bool `json:"exclude_pad,omitempty"`
	// DivisorOverride, when positive, replaces every window's divisor.
	// 0 means none.
	DivisorOverride int `json:"divisor_override,omitempty"`
}

// MaxPool2d returns the maximum of each window of x [N, C, H, W] (or
// unbatched [C, H, W]) and the flat position h·W + w of that maximum in its
// input plane (Int64), as torch.nn.functional.max_pool2d with
// return_indices=True. Ties go to the first element of the window in
// row-major order; a NaN counts as the maximum. Gradients flow to the
// maxima. It panics with ErrArgument for a bad configuration (no kernel,
// padding over half the kernel), ErrShape when the input is too small and
// ErrDType for non-float input.
func MaxPool2d(x *Tensor, cfg PoolConfig) (values, indices *Tensor) {
	return nnMaxPool("MaxPool2d", "max_pool2d", x, cfg, 2)
}

// MaxPool1d is MaxPool2d over the last axis of x [N, C, L] (or [C, L]);
// indices are positions along L. Configuration lists hold one value.
func MaxPool1d(x *Tensor, cfg PoolConfig) (values, indices *Tensor) {
	return nnMaxPool("MaxPool1d", "max_pool1d", x, cfg, 1)
}

// AvgPool2d returns the average of each window of x [N, C, H, W] (or
// unbatched [C, H, W]), as torch.nn.functional.avg_pool2d. It fails as
// MaxPool2d does.
func AvgPool2d(x *Tensor, cfg AvgPoolConfig) *Tensor {
	return nnAvgPool("AvgPool2d", "avg_pool2d", x, cfg, 2)
}

// AvgPool1d is AvgPool2d over the last axis of x [N, C, L] (or [C, L]).
// Configuration lists hold one value.
func AvgPool1d(x *Tensor, cfg AvgPoolConfig) *Tensor {
	return nnAvgPool("AvgPool1d", "avg_pool1d", x, cfg, 1)
}

// AdaptiveAvgPool2d averages x [..., H, W] (at least 3-D) into an
// [..., outH, outW] grid, as torch.nn.functional.adaptive_avg_pool2d: output
// cell i covers input rows ⌊i·H/outH⌋ to ⌈(i+1)·H/outH⌉ (exclusive), so
// windows may overlap when the sizes do not divide. A size of 0 keeps the
// input's (PyTorch's None). It panics with ErrShape for inputs of rank
// below 3 and ErrArgument for negative sizes.
func AdaptiveAvgPool2d(x *Tensor, outH, outW int) *Tensor {
	const op = "AdaptiveAvgPool2d"
	x.live(op)
	if len(x.shape) < 3 {
		fail(op, ErrShape, "input %s must be [N, C, H, W] or [C, H, W]", shapeString(x.shape))
	}
	h, w := x.shape[len(x.shape)-2], x.shape[len(x.shape)-1]
	outH, outW = nnAdaptiveSize(op, outH, h), nnAdaptiveSize(op, outW, w)
	return nnSeparable(op, "adaptive_avg_pool2d", map[string]any{"output_size": []int{outH, outW}}, x,
		nnAdaptiveMatrix(h, outH), outH, nnAdaptiveMatrix(w, outW), outW)
}

// AdaptiveAvgPool1d averages x [..., L] (at least 2-D) into [..., out]
// windows as AdaptiveAvgPool2d does along one axis.
func AdaptiveAvgPool1d(x *Tensor, out int) *Tensor {
	const op = "AdaptiveAvgPool1d"
	x.live(op)
	if len(x.shape) < 2 {
		fail(op, ErrShape, "input %s must be [N, C, L] or [C, L]", shapeString(x.shape))
	}
	l := x.shape[len(x.shape)-1]
	out = nnAdaptiveSize(op, out, l)
	return nnSeparable(op, "adaptive_avg_pool1d", map[string]any{"output_size": []int{out}}, x, nil, 0,
		nnAdaptiveMatrix(l, out), out)
}

func nnAdaptiveSize(op string, out, in int) int {
	switch {
	case out < 0:
		fail(op, ErrArgument, "output size %d must not be negative", out)
	case out == 0:
		return in
	}
	return out
}

// nnAdaptiveMatrix returns the [out, in] row-major averaging matrix of
// adaptive pooling.
func nnAdaptiveMatrix(in, out int) []float64 {
	m := make([]float64, out*in)
	for i := range out {
		start := i * in / out
		end := ((i+1)*in + out - 1) / out
		for j := start; j < end; j++ {
			m[i*in+j] = 1 / float64(end-start)
		}
	}
	return m
}

// nnPoolWindow is a pooling op's resolved window along height and width.
type nnPoolWindow struct {
	kh, kw, sh, sw, ph, pw, dh, dw int
}

// nnPoolParams resolves and checks a pooling configuration.
func nnPoolParams(op string, spatial int, kernel, stride, padding, dilation []int) nnPoolWindow {
	if len(kernel) == 0 {
		fail(op, ErrArgument, "Kernel is required")
	}
	var p nnPoolWindow
	p.kh, p.kw = nnHW(op, "Kernel", kernel, spatial, 1, 1)
	p.sh, p.sw = p.kh, p.kw
	if len(stride) > 0 {
		p.sh, p.sw = nnHW(op, "Stride", stride, spatial, 1, 1)
	}
	p.ph, p.pw = nnHW(op, "Padding", padding, spatial, 0, 0)
	p.dh, p.dw = nnHW(op, "Dilation", dilation, spatial, 1, 1)
	if p.ph > p.kh/2 || p.pw > p.kw/2 {
		fail(op, ErrArgument, "Padding %v must be at most half of Kernel %v", padding, kernel)
	}
	return p
}

// nnPoolOutSize is PyTorch's pooling output size: floor or ceil of the
// window count, where in ceil mode the last window must start inside the
// input or its leading padding.
// The arithmetic is checked: sizes that overflow panic with ErrShape.
func nnPoolOutSize(op string, in, k, s, p, d int, ceil bool) int {
	num := checkedAdd(op, "padded input size", in, checkedMul(op, "padding", 2, p), -checkedMul(op, "dilated kernel size", d, k-1), -1)
	if ceil {
		num = checkedAdd(op, "padded input size", num, s-1)
	}
	out := nnFloorDiv(num, s) + 1
	if ceil && out > 0 && checkedMul(op, "last window start", out-1, s) >= checkedAdd(op, "padded input size", in, p) {
		out--
	}
	return out
}

func nnFloorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// nnPoolGeometry checks x and returns its 4-D view and the pooling
// geometry over it.
func nnPoolGeometry(op string, x *Tensor, spatial int, p nnPoolWindow, ceil bool) (*Tensor, bool, backends.ConvGeometry) {
	x.live(op)
	batched := nnBatched(op, "input", x, spatial)
	nnSameFloat(op, x)
	x4 := nnTo4(x, batched, spatial)
	n, c, h, w := x4.shape[0], x4.shape[1], x4.shape[2], x4.shape[3]
	oh := nnPoolOutSize(op, h, p.kh, p.sh, p.ph, p.dh, ceil)
	ow := nnPoolOutSize(op, w, p.kw, p.sw, p.pw, p.dw, ceil)
	if oh < 1 || ow < 1 {
		x4.Release()
		fail(op, ErrShape, "input %s is too small for kernel %s with padding %s and dilation %s (output %s)",
			shapeString(x.shape), nnPairString(spatial, p.kh, p.kw), nnPairString(spatial, p.ph, p.pw),
			nnPairString(spatial, p.dh, p.dw), nnPairString(spatial, oh, ow))
	}
	geo := backends.ConvGeometry{N: n, C: c, H: h, W: w, KH: p.kh, KW: p.kw, StrideH: p.sh, StrideW: p.sw,
		PadTop: p.ph, PadLeft: p.pw, DilationH: p.dh, DilationW: p.dw, OutH: oh, OutW: ow}
	return x4, batched, geo
}

func nnPoolAttrs(spatial int, p nnPoolWindow, ceil bool) map[string]any {
	return map[string]any{"kernel": nnPair(spatial, p.kh, p.kw), "stride": nnPair(spatial, p.sh, p.sw),
		"padding": nnPair(spatial, p.ph, p.pw), "dilation": nnPair(spatial, p.dh, p.dw), "ceil_mode": ceil}
}

func nnMaxPool(op, name string, x *Tensor, cfg PoolConfig, spatial int) (*Tensor, *Tensor) {
	x.live(op)
	p := nnPoolParams(op, spatial, cfg.Kernel, cfg.Stride, cfg.Padding, cfg.Dilation)
	x4, batched, geo := nnPoolGeometry(op, x, spatial, p, cfg.CeilMode)
	n, c, l := geo.N, geo.C, geo.OutH*geo.OutW
	fused, isFused := nnPoolFusion(x4)
	var vals4, idx4 *Tensor
	if isFused {
		vals4, idx4 = nnMaxPoolFused(op, fused, x4, geo)
	} else {
		vals4, idx4 = nnMaxPoolComposed(op, x4, geo)
	}
	x4.Release()

	values := nnFrom4(vals4, batched, spatial)
	indices := nnFrom4(idx4, batched, spatial)
	// The backward pass keeps its own hold on the indices, so that the
	// caller may release the ones returned.
	saved := indices.newView(indices.shape, indices.strides, indices.offset)
	xShape := x.Shape()
	values = record(name, nnPoolAttrs(spatial, p, cfg.CeilMode), values, []*Tensor{x}, func(g *Tensor) []*Tensor {
		if f, ok := nnPoolFusion(g); ok {
			gc := rawContiguous(op, g)
			ic := rawContiguous(op, saved)
			dx := newTensor(op, g.dev, g.dtype, []int{n, c, geo.H, geo.W})
			gv, iv := gc.view(), ic.view()
			gv.Shape, gv.Strides = []int{n, c, geo.OutH, geo.OutW}, backends.RowMajorStrides([]int{n, c, geo.OutH, geo.OutW})
			iv.Shape, iv.Strides = gv.Shape, gv.Strides
			f.MaxPool2dGrad(dx.view(), gv, iv, geo)
			gc.Release()
			ic.Release()
			return []*Tensor{nnReshapeOwned(op, dx, xShape)}
		}
		g3 := rawReshape(op, g, []int{n, c, l})
		i3 := rawReshape(op, saved, []int{n, c, l})
		dx := rawFull(op, g.dev, g.dtype, []int{n, c, geo.H * geo.W}, 0)
		nnScatterAdd(dx, i3.view(), g3.view(), 2)
		g3.Release()
		i3.Release()
		return []*Tensor{nnReshapeOwned(op, dx, xShape)}
	})
	if values.node == nil {
		saved.Release()
	}
	return values, indices
}

// composeOnly makes every op take its composed path even where the backend
// has a fused kernel; tests set it to check the two agree.
var composeOnly atomic.Bool

// nnPoolFusion returns t's backend's fused kernels when it has them and
// they take t's dtype.
func nnPoolFusion(t *Tensor) (backends.Fusion, bool) {
	if composeOnly.Load() {
		return nil, false
	}
	f, ok := t.backend().(backends.Fusion)
	return f, ok && (t.dtype == Float32 || t.dtype == Float64)
}

// nnMaxPoolFused pools x4 [N, C, H, W] with the backend's fused kernel,
// returning the values and flat input positions as [N, C, OutH, OutW].
func nnMaxPoolFused(op string, f backends.Fusion, x4 *Tensor, geo backends.ConvGeometry) (*Tensor, *Tensor) {
	shape4 := []int{geo.N, geo.C, geo.OutH, geo.OutW}
	xc := rawContiguous(op, x4)
	vals := newTensor(op, x4.dev, x4.dtype, shape4)
	idx := newTensor(op, x4.dev, Int64, shape4)
	f.MaxPool2d(vals.view(), idx.view(), xc.view(), geo)
	xc.Release()
	return vals, idx
}

// nnMaxPoolComposed pools x4 from the primitives: unfold every window,
// reduce it to its maximum, arg-reduce to the window position of the
// maximum, and turn that into a flat input position by gathering from the
// unfolded windows of an image whose pixels hold their own index.
func nnMaxPoolComposed(op string, x4 *Tensor, geo backends.ConvGeometry) (*Tensor, *Tensor) {
	n, c, l, k := geo.N, geo.C, geo.OutH*geo.OutW, geo.KH*geo.KW
	geo.PadValue = math.Inf(-1)
	cols := nnIm2Col(op, x4, geo)
	cw := nnReshapeOwned(op, cols, []int{n, c, k, l})
	vals := rawReduce(op, backends.Max, cw, []int{2}, true) // [N, C, 1, L]
	arg := newTensor(op, x4.dev, Int64, []int{n, c, 1, l})
	arg.backend().ArgReduce(backends.ArgMax, arg.view(), cw.view(), 2)
	cw.Release()

	iota := make([]float64, geo.H*geo.W)
	for i := range iota {
		iota[i] = float64(i)
	}
	img := nnHostTensor(op, x4.dev, Float64, []int{1, 1, geo.H, geo.W}, iota)
	ig := geo
	ig.N, ig.C, ig.PadValue = 1, 1, -1
	icols := nnIm2Col(op, img, ig) // [1, K, L]
	img.Release()
	iv := icols.view()
	iv.Shape, iv.Strides = []int{n, c, k, l}, []int{0, 0, l, 1}
	flat := newTensor(op, x4.dev, Float64, []int{n, c, 1, l})
	flat.backend().Gather(flat.view(), iv, arg.view(), 2)
	icols.Release()
	arg.Release()
	idx := rawCast(op, flat, Int64)
	flat.Release()
	shape4 := []int{n, c, geo.OutH, geo.OutW}
	return nnReshapeOwned(op, vals, shape4), nnReshapeOwned(op, idx, shape4)
}

// nnScatterAdd adds src into out at index along axis, in place, through
// the backend's Scatter (index and src share a shape; out matches it on
// every other axis).
func nnScatterAdd(out *Tensor, index, src backends.View, axis int) {
	out.backend().Scatter(out.view(), index, src, axis, true)
}

func nnAvgPool(op, name string, x *Tensor, cfg AvgPoolConfig, spatial int) *Tensor {
	x.live(op)
	if cfg.DivisorOverride < 0 {
		fail(op, ErrArgument, "DivisorOverride %d must not be negative", cfg.DivisorOverride)
	}
	p := nnPoolParams(op, spatial, cfg.Kernel, cfg.Stride, cfg.Padding, nil)
	x4, batched, geo := nnPoolGeometry(op, x, spatial, p, cfg.CeilMode)
	n, c, l, k := geo.N, geo.C, geo.OutH*geo.OutW, geo.KH*geo.KW
	inv := nnAvgDivisors(geo, cfg)
	cols := nnIm2Col(op, x4, geo)
	x4.Release()
	cw := nnReshapeOwned(op, cols, []int{n, c, k, l})
	sum := rawReduce(op, backends.Sum, cw, []int{2}, true) // [N, C, 1, L]
	cw.Release()
	it := nnHostTensor(op, x.dev, x.dtype, []int{l}, inv)
	avg := rawBinary(op, mulOp, sum, it)
	sum.Release()
	it.Release()
	out := nnFrom4(nnReshapeOwned(op, avg, []int{n, c, geo.OutH, geo.OutW}), batched, spatial)
	attrs := nnPoolAttrs(spatial, p, cfg.CeilMode)
	delete(attrs, "dilation")
	attrs["count_include_pad"], attrs["divisor_override"] = !cfg.ExcludePad, cfg.DivisorOverride
	xShape := x.Shape()
	return record(name, attrs, out, []*Tensor{x}, func(g *Tensor) []*Tensor {
		g4 := rawReshape(op, g, []int{n, c, 1, l})
		it := nnHostTensor(op, g.dev, g.dtype, []int{l}, inv)
		gs := rawBinary(op, mulOp, g4, it)
		g4.Release()
		it.Release()
		// every element of a window receives the window's scaled gradient
		dcols := newTensor(op, g.dev, g.dtype, []int{n, c, k, l})
		dcols.backend().Copy(dcols.view(), gs.broadcastView(dcols.shape))
		gs.Release()
		dx := newTensor(op, g.dev, g.dtype, []int{n, c, geo.H, geo.W})
		cv := dcols.view()
		cv.Shape, cv.Strides = []int{n, c * k, l}, []int{c * k * l, l, 1}
		dx.backend().Col2Im(dx.view(), cv, geo)
		dcols.Release()
		return []*Tensor{nnReshapeOwned(op, dx, xShape)}
	})
}

// nnAvgDivisors returns 1/divisor for every output position, PyTorch's
// way: the window clipped to the padded input (count_include_pad), or to
// the input itself (ExcludePad), or the override.
func nnAvgDivisors(geo backends.ConvGeometry, cfg AvgPoolConfig) []float64 {
	counts := func(in, out, k, s, p int) (padded, valid []int) {
		padded, valid = make([]int, out), make([]int, out)
		for i := range out {
			start := i*s - p
			end := min(start+k, in+p)
			padded[i] = end - start
			valid[i] = min(end, in) - max(start, 0)
		}
		return padded, valid
	}
	ph, vh := counts(geo.H, geo.OutH, geo.KH, geo.StrideH, geo.PadTop)
	pw, vw := counts(geo.W, geo.OutW, geo.KW, geo.StrideW, geo.PadLeft)
	inv := make([]float64, geo.OutH*geo.OutW)
	for i := range geo.OutH {
		for j := range geo.OutW {
			d := ph[i] * pw[j]
			switch {
			case cfg.DivisorOverride > 0:
				d = cfg.DivisorOverride
			case cfg.ExcludePad:
				d = vh[i] * vw[j]
			}
			inv[i*geo.OutW+j] = 1 / float64(d)
		}
	}
	return inv
}

// nnSeparable records out = A·x·Bᵀ over the last two dimensions of x
// (only x·Bᵀ over the last one when a is nil), where A [oh, H] and
// B [ow, W] are constant matrices given row-major on the host. Resampling
// ops that act on each axis independently (adaptive pooling,
// interpolation) are such products, and the backward pass is the same
// products transposed: dx = Aᵀ·g·B. The matrices are uploaded again for
// the backward pass rather than held by the graph.
func nnSeparable(op, name string, attrs map[string]any, x *Tensor, a []float64, oh int, b []float64, ow int) *Tensor {
	if !x.dtype.IsFloat() {
		fail(op, ErrDType, "input %s is %s; resampling needs a floating dtype", shapeString(x.shape), x.dtype)
	}
	r := len(x.shape)
	w := x.shape[r-1]
	h := 0
	if a != nil {
		h = x.shape[r-2]
	}
	upload := func(dev Device, dtype DType) (at, bt *Tensor) {
		// bt is Bᵀ [W, ow]
		tb := make([]float64, len(b))
		for i := range ow {
			for j := range w {
				tb[j*ow+i] = b[i*w+j]
			}
		}
		bt = nnHostTensor(op, dev, dtype, []int{w, ow}, tb)
		if a != nil {
			at = nnHostTensor(op, dev, dtype, []int{oh, h}, a)
		}
		return at, bt
	}
	at, bt := upload(x.dev, x.dtype)
	out := rawMatmul(op, x, bt)
	bt.Release()
	if at != nil {
		o2 := rawMatmul(op, at, out)
		out.Release()
		at.Release()
		out = o2
	}
	return record(name, attrs, out, []*Tensor{x}, func(g *Tensor) []*Tensor {
		at, bt := upload(g.dev, g.dtype)
		d := g.newView(g.shape, g.strides, g.offset)
		if at != nil {
			att := at.transposeView(-1, -2)
			d2 := rawMatmul(op, att, d)
			att.Release()
			at.Release()
			d.Release()
			d = d2
		}
		b := bt.transposeView(-1, -2)
		dx := rawMatmul(op, d, b)
		b.Release()
		bt.Release()
		d.Release()
		return []*Tensor{castGrad(dx, x)}
	})
}
