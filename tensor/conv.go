package tensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Convolutions run as matrix products: Im2Col unfolds every window of the
// input into a column, one batched Matmul (over batch and groups, by
// broadcasting views) applies the weights, and the backward pass uses the
// same two primitives in the other direction (Matmul then Col2Im for the
// input, Matmul against the columns for the weights). A transposed
// convolution is the adjoint of a convolution, so it reuses the same three
// raw routines with the roles of forward and input gradient swapped.

// ConvConfig configures Conv1d and Conv2d. Its zero value is PyTorch's
// default: stride 1, no padding, dilation 1, one group. It is a plain struct
// so that it serialises to JSON with a model's configuration.
type ConvConfig struct {
	// Stride is the step between windows: one value for every spatial
	// dimension or one per dimension (height, width). Empty means 1.
	Stride []int `json:"stride,omitempty"`
	// Padding is the number of zeros added on both sides of each spatial
	// dimension: one value or one per dimension. Empty means 0. It must be
	// empty when PaddingMode is "same".
	Padding []int `json:"padding,omitempty"`
	// Dilation is the spacing between kernel elements: one value or one per
	// dimension. Empty means 1.
	Dilation []int `json:"dilation,omitempty"`
	// PaddingMode is PyTorch's string form of padding: "" or "valid" use
	// Padding (valid means none), "same" pads so that the output has the
	// input's size (stride 1 only). When the kernel's extent is even, "same"
	// puts the extra row or column of padding at the end, as PyTorch does.
	PaddingMode string `json:"padding_mode,omitempty"`
	// Groups splits input and output channels into that many independent
	// convolutions (Groups = channels is a depthwise convolution). 0 means 1.
	Groups int `json:"groups,omitempty"`
}

// ConvTransposeConfig configures ConvTranspose1d and ConvTranspose2d. Its
// zero value is PyTorch's default: stride 1, no padding, no output padding,
// dilation 1, one group. Each list holds one value for every spatial
// dimension or one per dimension (height, width).
type ConvTransposeConfig struct {
	// Stride is the step of the convolution this transposes. Empty means 1.
	Stride []int `json:"stride,omitempty"`
	// Padding is the padding of the convolution this transposes: it removes
	// that many rows and columns from each side of the output. Empty means 0.
	Padding []int `json:"padding,omitempty"`
	// OutputPadding adds rows and columns at the end of the output, to pick
	// one of the input sizes a strided convolution maps to the same output
	// size. It must be smaller than the stride or the dilation. Empty means 0.
	OutputPadding []int `json:"output_padding,omitempty"`
	// Dilation is the spacing between kernel elements. Empty means 1.
	Dilation []int `json:"dilation,omitempty"`
	// Groups splits channels into independent groups. 0 means 1.
	Groups int `json:"groups,omitempty"`
}

// Conv2d returns the 2-D cross-correlation of x [N, C, H, W] (or an
// unbatched [C, H, W]) with weight [O, C/groups, KH, KW] (PyTorch's OIHW
// layout), plus bias [O] when bias is not nil: an [N, O, OH, OW] result with
// OH = ⌊(H + 2·padding − dilation·(KH−1) − 1)/stride⌋ + 1, as
// torch.nn.functional.conv2d. x, weight and bias must share one floating
// dtype. It panics with ErrShape when the channels, groups or sizes do not
// fit (the message names the shapes), ErrDType for mixed or integer dtypes
// and ErrArgument for a bad configuration.
func Conv2d(x, weight, bias *Tensor, cfg ConvConfig) *Tensor {
	return nnConv("Conv2d", "conv2d", x, weight, bias, cfg, 2)
}

// Conv2dActivation returns activation(Conv2d(x, weight, bias, cfg)), a
// convolution layer followed by one of the activations LinearActivation
// takes ("relu", "gelu", "gelu_tanh", "silu", "sigmoid" or "tanh"), bit
// for bit as those two calls give it, gradients included. It is the same
// two graph nodes ("conv2d", then the activation's), but where the backend
// has a fused kernel for them (backends.ConvBiasActFusion: the CPU backend
// applies the activation to each output plane as the convolution writes
// it) both results come from one call. It panics as Conv2d does, and with
// ErrArgument for another activation.
func Conv2dActivation(x, weight, bias *Tensor, cfg ConvConfig, activation string) *Tensor {
	const op = "Conv2dActivation"
	u := fusedActivation(op, activation)
	pre, out := nnConvAct(op, "conv2d", x, weight, bias, cfg, 2, &u)
	if out == nil {
		return pre.unaryOp(op, u, 0, 0)
	}
	return recordActivation(op, u, pre, out)
}

// Conv1d returns the 1-D cross-correlation of x [N, C, L] (or an unbatched
// [C, L]) with weight [O, C/groups, K], plus bias [O] when bias is not nil,
// as torch.nn.functional.conv1d; configuration lists hold one value. It runs
// through Conv2d's path with a height of 1 and fails as Conv2d does.
func Conv1d(x, weight, bias *Tensor, cfg ConvConfig) *Tensor {
	return nnConv("Conv1d", "conv1d", x, weight, bias, cfg, 1)
}

// ConvTranspose2d returns the transposed 2-D convolution (the gradient of
// Conv2d with respect to its input, sometimes called a deconvolution) of x
// [N, C_in, H, W] (or unbatched [C_in, H, W]) with weight
// [C_in, C_out/groups, KH, KW] (PyTorch's layout), plus bias [C_out] when not
// nil, as torch.nn.functional.conv_transpose2d. The output is
// [N, C_out, OH, OW] with OH = (H−1)·stride − 2·padding +
// dilation·(KH−1) + output_padding + 1. It fails as Conv2d does, and with
// ErrArgument when an output padding is not smaller than the stride or the
// dilation.
func ConvTranspose2d(x, weight, bias *Tensor, cfg ConvTransposeConfig) *Tensor {
	return nnConvTranspose("ConvTranspose2d", "conv_transpose2d", x, weight, bias, cfg, 2)
}

// ConvTranspose1d is ConvTranspose2d for x [N, C_in, L] (or [C_in, L]) and
// weight [C_in, C_out/groups, K], as torch.nn.functional.conv_transpose1d.
func ConvTranspose1d(x, weight, bias *Tensor, cfg ConvTransposeConfig) *Tensor {
	return nnConvTranspose("ConvTranspose1d", "conv_transpose1d", x, weight, bias, cfg, 1)
}

// nnConv validates a convolution, runs it and records its node.
func nnConv(op, name string, x, weight, bias *Tensor, cfg ConvConfig, spatial int) *Tensor {
	pre, _ := nnConvAct(op, name, x, weight, bias, cfg, spatial, nil)
	return pre
}

// nnConvAct is nnConv that, with act not nil, also returns *act of the
// convolution (its node not recorded: recordActivation) where the
// backend computes both in one call (nnConvForward), else nil.
func nnConvAct(op, name string, x, weight, bias *Tensor, cfg ConvConfig, spatial int, act *backends.UnaryOp) (pre, out *Tensor) {
	bf16 := false // bfloat16 products in the float32 kernels (autocastConvF32)
	switch {
	case autocastConvF32(x, weight, bias, cfg.Groups):
		bf16 = true
	case bias != nil:
		if in, ok := autocastInputs(x, weight, bias); ok {
			return nnConvAct(op, name, in[0], in[1], in[2], cfg, spatial, act)
		}
	default:
		if in, ok := autocastInputs(x, weight); ok {
			return nnConvAct(op, name, in[0], in[1], nil, cfg, spatial, act)
		}
	}
	nnLive(op, bias, x, weight)
	batched := nnBatched(op, "input", x, spatial)
	if len(weight.shape) != spatial+2 {
		fail(op, ErrShape, "weight %s must have %d dimensions [out, in/groups%s]", shapeString(weight.shape), spatial+2,
			nnKernelDims(spatial))
	}
	nnSameFloat(op, x, weight, bias)
	groups := nnGroups(op, cfg.Groups)
	x4, w4 := nnTo4(x, batched, spatial), nnTo4(weight, true, spatial)
	defer x4.Release()
	defer w4.Release()
	n, c, h, w := x4.shape[0], x4.shape[1], x4.shape[2], x4.shape[3]
	o, cg, kh, kw := w4.shape[0], w4.shape[1], w4.shape[2], w4.shape[3]
	if cg*groups != c {
		fail(op, ErrShape, "input %s has %d channels, weight %s expects %d%s", shapeString(x.shape), c,
			shapeString(weight.shape), cg*groups, nnGroupNote(cg, groups))
	}
	if o%groups != 0 {
		fail(op, ErrShape, "weight %s has %d output channels, which %d groups do not divide", shapeString(weight.shape), o, groups)
	}
	if bias != nil && (len(bias.shape) != 1 || bias.shape[0] != o) {
		fail(op, ErrShape, "bias %s does not match weight %s: want [%d]", shapeString(bias.shape), shapeString(weight.shape), o)
	}
	sh, sw := nnHW(op, "Stride", cfg.Stride, spatial, 1, 1)
	dh, dw := nnHW(op, "Dilation", cfg.Dilation, spatial, 1, 1)
	var pt, pl, pb, pr int
	switch cfg.PaddingMode {
	case "", "valid":
		ph, pw := nnHW(op, "Padding", cfg.Padding, spatial, 0, 0)
		if cfg.PaddingMode == "valid" && ph+pw != 0 {
			fail(op, ErrArgument, "PaddingMode \"valid\" with Padding %v: valid means no padding", cfg.Padding)
		}
		pt, pl, pb, pr = ph, pw, ph, pw
	case "same":
		if len(cfg.Padding) > 0 {
			fail(op, ErrArgument, "PaddingMode \"same\" with Padding %v: set one or the other", cfg.Padding)
		}
		if sh != 1 || sw != 1 {
			fail(op, ErrArgument, "PaddingMode \"same\" needs stride 1, got Stride %v (as in PyTorch)", cfg.Stride)
		}
		th, tw := dh*(kh-1), dw*(kw-1)
		pt, pl = th/2, tw/2
		pb, pr = th-pt, tw-pl
	default:
		fail(op, ErrArgument, "unknown PaddingMode %q (want \"\", \"valid\" or \"same\")", cfg.PaddingMode)
	}
	eh := checkedAdd(op, "padded input height", h, pt, pb, -checkedMul(op, "dilated kernel height", dh, kh-1))
	ew := checkedAdd(op, "padded input width", w, pl, pr, -checkedMul(op, "dilated kernel width", dw, kw-1))
	if eh < 1 || ew < 1 {
		fail(op, ErrShape, "input %s is too small for weight %s with padding %s and dilation %s: no window fits",
			shapeString(x.shape), shapeString(weight.shape), nnPairString(spatial, pt, pl), nnPairString(spatial, dh, dw))
	}
	geo := backends.ConvGeometry{N: n, C: c, H: h, W: w, KH: kh, KW: kw, StrideH: sh, StrideW: sw,
		PadTop: pt, PadLeft: pl, DilationH: dh, DilationW: dw, OutH: (eh-1)/sh + 1, OutW: (ew-1)/sw + 1}

	out4, act4 := nnConvForward(op, x4, w4, bias, geo, groups, bf16, act)
	if act4 != nil {
		out = nnFrom4(act4, batched, spatial)
	}
	attrs := map[string]any{"stride": nnPair(spatial, sh, sw), "padding": nnPads(spatial, pt, pl, pb, pr),
		"dilation": nnPair(spatial, dh, dw), "groups": groups}
	return record(name, attrs, nnFrom4(out4, batched, spatial), nnInputs(x, weight, bias), func(g *Tensor) []*Tensor {
		g4 := nnTo4(g, batched, spatial)
		defer g4.Release()
		grads := make([]*Tensor, 2, 3)
		if x.requiresGrad {
			w4 := nnTo4(weight, true, spatial)
			dx := nnConvInputGrad(op, g4, w4, geo, groups, bf16)
			w4.Release()
			grads[0] = nnReshapeOwned(op, dx, x.shape)
		}
		if weight.requiresGrad {
			x4 := nnTo4(x, batched, spatial)
			dw := nnConvWeightGrad(op, g4, x4, geo, groups, bf16)
			x4.Release()
			grads[1] = nnReshapeOwned(op, dw, weight.shape)
		}
		if bias != nil {
			var db *Tensor
			if bias.requiresGrad {
				db = rawReduce(op, backends.Sum, g4, []int{0, 2, 3}, false)
			}
			grads = append(grads, db)
		}
		return grads
	}), out
}

// nnConvTranspose validates a transposed convolution, runs it and records
// its node.
func nnConvTranspose(op, name string, x, weight, bias *Tensor, cfg ConvTransposeConfig, spatial int) *Tensor {
	nnLive(op, bias, x, weight)
	batched := nnBatched(op, "input", x, spatial)
	if len(weight.shape) != spatial+2 {
		fail(op, ErrShape, "weight %s must have %d dimensions [in, out/groups%s]", shapeString(weight.shape), spatial+2,
			nnKernelDims(spatial))
	}
	nnSameFloat(op, x, weight, bias)
	groups := nnGroups(op, cfg.Groups)
	x4, w4 := nnTo4(x, batched, spatial), nnTo4(weight, true, spatial)
	defer x4.Release()
	defer w4.Release()
	n, cin, h, w := x4.shape[0], x4.shape[1], x4.shape[2], x4.shape[3]
	win, cog, kh, kw := w4.shape[0], w4.shape[1], w4.shape[2], w4.shape[3]
	if win != cin {
		fail(op, ErrShape, "input %s has %d channels, weight %s expects %d", shapeString(x.shape), cin, shapeString(weight.shape), win)
	}
	if cin%groups != 0 {
		fail(op, ErrShape, "input %s has %d channels, which %d groups do not divide", shapeString(x.shape), cin, groups)
	}
	cout := cog * groups
	if bias != nil && (len(bias.shape) != 1 || bias.shape[0] != cout) {
		fail(op, ErrShape, "bias %s does not match weight %s with %d groups: want [%d]", shapeString(bias.shape),
			shapeString(weight.shape), groups, cout)
	}
	sh, sw := nnHW(op, "Stride", cfg.Stride, spatial, 1, 1)
	dh, dw := nnHW(op, "Dilation", cfg.Dilation, spatial, 1, 1)
	ph, pw := nnHW(op, "Padding", cfg.Padding, spatial, 0, 0)
	oph, opw := nnHW(op, "OutputPadding", cfg.OutputPadding, spatial, 0, 0)
	if (oph >= sh && oph >= dh) || (opw >= sw && opw >= dw) {
		fail(op, ErrArgument, "OutputPadding %v must be smaller than the stride %s or the dilation %s", cfg.OutputPadding,
			nnPairString(spatial, sh, sw), nnPairString(spatial, dh, dw))
	}
	oh := checkedAdd(op, "output height", checkedMul(op, "strided input height", h-1, sh), -checkedMul(op, "padding", 2, ph),
		checkedMul(op, "dilated kernel height", dh, kh-1), oph, 1)
	ow := checkedAdd(op, "output width", checkedMul(op, "strided input width", w-1, sw), -checkedMul(op, "padding", 2, pw),
		checkedMul(op, "dilated kernel width", dw, kw-1), opw, 1)
	if oh < 1 || ow < 1 {
		fail(op, ErrShape, "input %s with weight %s, stride %s and padding %s gives an empty output %s",
			shapeString(x.shape), shapeString(weight.shape), nnPairString(spatial, sh, sw), nnPairString(spatial, ph, pw),
			nnPairString(spatial, oh, ow))
	}
	// The geometry of the convolution this op is the adjoint of: it maps
	// the [N, C_out, OH, OW] output back to H × W window positions.
	geo := backends.ConvGeometry{N: n, C: cout, H: oh, W: ow, KH: kh, KW: kw, StrideH: sh, StrideW: sw,
		PadTop: ph, PadLeft: pw, DilationH: dh, DilationW: dw, OutH: h, OutW: w}

	out4 := nnAddChannelBias(op, nnConvInputGrad(op, x4, w4, geo, groups, false), bias)
	out := nnFrom4(out4, batched, spatial)
	attrs := map[string]any{"stride": nnPair(spatial, sh, sw), "padding": nnPair(spatial, ph, pw),
		"output_padding": nnPair(spatial, oph, opw), "dilation": nnPair(spatial, dh, dw), "groups": groups}
	return record(name, attrs, out, nnInputs(x, weight, bias), func(g *Tensor) []*Tensor {
		g4 := nnTo4(g, batched, spatial)
		defer g4.Release()
		grads := make([]*Tensor, 2, 3)
		if x.requiresGrad {
			w4 := nnTo4(weight, true, spatial)
			dx, _ := nnConvForward(op, g4, w4, nil, geo, groups, false, nil)
			w4.Release()
			grads[0] = nnReshapeOwned(op, dx, x.shape)
		}
		if weight.requiresGrad {
			x4 := nnTo4(x, batched, spatial)
			dw := nnConvWeightGrad(op, x4, g4, geo, groups, false)
			x4.Release()
			grads[1] = nnReshapeOwned(op, dw, weight.shape)
		}
		if bias != nil {
			var db *Tensor
			if bias.requiresGrad {
				db = rawReduce(op, backends.Sum, g4, []int{0, 2, 3}, false)
			}
			grads = append(grads, db)
		}
		return grads
	})
}

// nnConvForward convolves x [N, C, H, W] with w [O, C/G, KH, KW] over geo
// and adds bias [O] (where not nil) to each output channel, returning a
// new [N, O, OutH, OutW] tensor. Where the backend's ConvFusion takes it,
// that is one call, the bias included where the backend adds it
// (backends.ConvBiasFusion: float32 and float64, no bf16 products);
// elsewhere the columns [N, G, C/G·K, L] are multiplied by the weights
// viewed as [G, O/G, C/G·K], broadcast over N, and the bias is added after
// (the same bits). With act not nil it also returns *act of the result
// where the backend computes both in one call (backends.ConvBiasActFusion,
// for the activations IsLinearAct lists), else nil.
func nnConvForward(op string, x, w, bias *Tensor, geo backends.ConvGeometry, groups int, bf16 bool,
	act *backends.UnaryOp) (pre, out *Tensor) {
	n, o, l := geo.N, w.shape[0], geo.OutH*geo.OutW
	shape := []int{n, o, geo.OutH, geo.OutW}
	if f, ok := nnConvFusion(x, groups, bf16); ok {
		xc, wc := rawContiguous(op, x), rawContiguous(op, w)
		defer xc.Release()
		defer wc.Release()
		pre = newTensor(op, x.dev, x.dtype, shape)
		fb, biased := f.(backends.ConvBiasFusion)
		if bias == nil || !biased || bf16 || bias.dtype != x.dtype {
			f.Conv2d(pre.view(), xc.view(), wc.view(), geo)
			return nnAddChannelBias(op, pre, bias), nil
		}
		bc := rawContiguous(op, bias)
		defer bc.Release()
		if fa, ok := f.(backends.ConvBiasActFusion); ok && act != nil && backends.IsLinearAct(*act) {
			out = newTensor(op, x.dev, x.dtype, shape)
			fa.Conv2dBiasAct(out.view(), pre.view(), xc.view(), wc.view(), bc.view(), geo, *act)
		} else {
			fb.Conv2dBias(pre.view(), xc.view(), wc.view(), bc.view(), geo)
		}
		return pre, out
	}
	cgk := geo.C / groups * geo.KH * geo.KW
	cols := nnIm2Col(op, x, geo)
	cols4 := nnReshapeOwned(op, cols, []int{n, groups, cgk, l})
	wm := rawReshape(op, w, []int{groups, o / groups, cgk})
	pre = rawMatmul(op, wm, cols4)
	wm.Release()
	cols4.Release()
	return nnAddChannelBias(op, nnReshapeOwned(op, pre, shape), bias), nil
}

// nnConvInputGrad maps g [N, O, OutH, OutW] back to the input [N, C, H, W]
// of the convolution geo with weights w [O, C/G, KH, KW]: the column
// gradients Wᵀ·g folded with Col2Im. It is also a transposed convolution's
// forward pass.
func nnConvInputGrad(op string, g, w *Tensor, geo backends.ConvGeometry, groups int, bf16 bool) *Tensor {
	n, o, l := geo.N, w.shape[0], geo.OutH*geo.OutW
	if f, ok := nnConvFusion(g, groups, bf16); ok {
		gc, wc := rawContiguous(op, g), rawContiguous(op, w)
		dx := newTensor(op, g.dev, g.dtype, []int{n, geo.C, geo.H, geo.W})
		f.Conv2dInputGrad(dx.view(), gc.view(), wc.view(), geo)
		gc.Release()
		wc.Release()
		return dx
	}
	k := geo.KH * geo.KW
	cgk := geo.C / groups * k
	g4 := rawReshape(op, g, []int{n, groups, o / groups, l})
	wm := rawReshape(op, w, []int{groups, o / groups, cgk})
	wt := wm.transposeView(-1, -2)
	dcols := rawMatmul(op, wt, g4) // [N, G, C/G·K, L]
	wt.Release()
	wm.Release()
	g4.Release()
	dx := newTensor(op, g.dev, dcols.dtype, []int{n, geo.C, geo.H, geo.W})
	cv := dcols.view()
	cv.Shape, cv.Strides = []int{n, geo.C * k, l}, []int{geo.C * k * l, l, 1}
	dx.backend().Col2Im(dx.view(), cv, geo)
	dcols.Release()
	return dx
}

// nnConvWeightGrad returns the gradient [O, C/G, KH·KW] (flattened kernel)
// of the convolution geo's weights for output gradient g [N, O, OutH,
// OutW] and input x [N, C, H, W]. The batch is folded into the contraction
// (columns laid out [G, C/G·K, N·L]) so no per-sample weight-sized
// intermediate is ever allocated.
func nnConvWeightGrad(op string, g, x *Tensor, geo backends.ConvGeometry, groups int, bf16 bool) *Tensor {
	n, c, l := geo.N, geo.C, geo.OutH*geo.OutW
	o := g.shape[1]
	k := geo.KH * geo.KW
	if f, ok := nnConvFusion(g, groups, bf16); ok {
		gc, xc := rawContiguous(op, g), rawContiguous(op, x)
		dw := newTensor(op, g.dev, g.dtype, []int{o, c, geo.KH, geo.KW})
		f.Conv2dWeightGrad(dw.view(), gc.view(), xc.view(), geo)
		gc.Release()
		xc.Release()
		return nnReshapeOwned(op, dw, []int{groups, o, c * k})
	}
	cols := newTensor(op, x.dev, x.dtype, []int{groups, c / groups * k, n * l})
	cv := cols.view()
	cv.Shape, cv.Strides = []int{n, c * k, l}, []int{l, n * l, 1}
	cols.backend().Im2Col(cv, x.view(), geo)
	ct := cols.transposeView(-1, -2) // [G, N·L, C/G·K]
	cols.Release()
	// g [N, O, L] → [G, O/G, N·L]
	g4 := rawReshape(op, g, []int{n, groups, o / groups, l})
	gp := rawPermute(op, g4, []int{1, 2, 0, 3})
	g4.Release()
	gc := rawReshape(op, gp, []int{groups, o / groups, n * l})
	gp.Release()
	dw := rawMatmul(op, gc, ct) // [G, O/G, C/G·K]
	gc.Release()
	ct.Release()
	return dw
}

// autocastConvF32 reports whether a convolution of x and weight (and bias,
// which may be nil) in groups groups on a BFloat16 Autocast view keeps its
// tensors in float32 instead of casting its inputs to bfloat16: where the
// backend multiplies float32 tensors as bfloat16 itself (autocastBF16: the
// CPU) and its fused convolution takes float32. There the fused
// convolution is faster than a bfloat16 one composed of Im2Col and
// products (a ResNet-18 training step took 3.4 times as long that way on
// a Zen 4, BenchmarkResNet18TrainStepBF16), and its float32 result keeps
// the ops after it (batch norm, activations) in float32, as the products'
// float32 results do. Where the backend also has bfloat16 autocast
// convolutions (bf16Conver), the convolution and its gradients run
// through them (nnConvFusion's bf16).
func autocastConvF32(x, weight, bias *Tensor, groups int) bool {
	if _, ok := autocastBF16(x, weight, bias); !ok {
		return false
	}
	_, ok := nnConvFusion(x, max(groups, 1), false)
	return ok
}

// nnConvFusion returns t's backend's fused convolution when it has one and
// it takes t's dtype and groups; with bf16, its bfloat16 autocast
// convolutions where it has them (bf16Conver, Float32 only), else the
// plain ones.
func nnConvFusion(t *Tensor, groups int, bf16 bool) (backends.ConvFusion, bool) {
	if composeOnly.Load() || groups != 1 || (t.dtype != Float32 && t.dtype != Float64) {
		return nil, false
	}
	if c, ok := t.backend().(bf16Conver); ok && bf16 && t.dtype == Float32 {
		return bf16ConvFusion{c}, true
	}
	f, ok := t.backend().(backends.ConvFusion)
	return f, ok
}

// nnIm2Col unfolds x [N, C, H, W] into a new [N, C·KH·KW, OutH·OutW] tensor.
func nnIm2Col(op string, x *Tensor, geo backends.ConvGeometry) *Tensor {
	cols := newTensor(op, x.dev, x.dtype, []int{geo.N, geo.C * geo.KH * geo.KW, geo.OutH * geo.OutW})
	cols.backend().Im2Col(cols.view(), x.view(), geo)
	return cols
}

// nnAddChannelBias returns out [N, C, H, W] + bias [C] (broadcast over the
// batch and spatial positions), consuming out; out itself where bias is
// nil.
func nnAddChannelBias(op string, out, bias *Tensor) *Tensor {
	if bias == nil {
		return out
	}
	b := bias.newView([]int{bias.shape[0], 1, 1}, []int{bias.strides[0], 0, 0}, bias.offset)
	r := rawBinary(op, addOp, out, b)
	b.Release()
	out.Release()
	return r
}

// nnLive checks that the required tensors and the optional one (when not
// nil) are live and share a device.
func nnLive(op string, optional *Tensor, required ...*Tensor) {
	if optional != nil {
		required = append(required, optional)
	}
	sameDevice(op, required...)
}

// nnInputs lists an op's inputs for record, leaving out a nil optional last one.
func nnInputs(ts ...*Tensor) []*Tensor {
	if ts[len(ts)-1] == nil {
		return ts[:len(ts)-1]
	}
	return ts
}

// nnBatched checks that x has the rank of a batched ([N, C, spatial…]) or
// unbatched ([C, spatial…]) input and reports which.
func nnBatched(op, what string, x *Tensor, spatial int) bool {
	switch len(x.shape) {
	case spatial + 2:
		return true
	case spatial + 1:
		return false
	}
	dims := "L"
	if spatial == 2 {
		dims = "H, W"
	}
	fail(op, ErrShape, "%s %s must be [N, C, %s] or unbatched [C, %s]", what, shapeString(x.shape), dims, dims)
	return false
}

// nnSameFloat checks that x is floating point and that the other non-nil
// tensors share its dtype (PyTorch does not promote inside convolutions).
func nnSameFloat(op string, x *Tensor, others ...*Tensor) {
	if !x.dtype.IsFloat() {
		fail(op, ErrDType, "input %s is %s; convolution and pooling need a floating dtype", shapeString(x.shape), x.dtype)
	}
	for _, t := range others {
		if t != nil && t.dtype != x.dtype {
			fail(op, ErrDType, "input %s is %s but parameter %s is %s; convert one with To", shapeString(x.shape), x.dtype,
				shapeString(t.shape), t.dtype)
		}
	}
}

// nnGroups resolves the Groups field (0 means 1).
func nnGroups(op string, g int) int {
	switch {
	case g == 0:
		return 1
	case g < 0:
		fail(op, ErrArgument, "Groups %d must be positive", g)
	}
	return g
}

func nnGroupNote(perGroup, groups int) string {
	if groups == 1 {
		return ""
	}
	return fmt.Sprintf(" (%d per group × %d groups)", perGroup, groups)
}

func nnKernelDims(spatial int) string {
	if spatial == 1 {
		return ", K"
	}
	return ", KH, KW"
}

// nnHW resolves a per-dimension configuration list for an op with spatial
// (1 or 2) dimensions into a (height, width) pair: empty means def, one
// value applies to every dimension, otherwise there is one value per
// dimension. 1-D ops get height def. Values below lo fail.
func nnHW(op, field string, v []int, spatial, def, lo int) (int, int) {
	h, w := def, def
	switch {
	case len(v) == 0:
	case len(v) == 1:
		w = v[0]
		if spatial == 2 {
			h = v[0]
		}
	case len(v) == 2 && spatial == 2:
		h, w = v[0], v[1]
	default:
		if spatial == 1 {
			fail(op, ErrArgument, "%s %v: want one value", field, v)
		}
		fail(op, ErrArgument, "%s %v: want 1 or 2 values", field, v)
	}
	if h < lo || w < lo {
		fail(op, ErrArgument, "%s %v: values must be at least %d", field, v, lo)
	}
	return h, w
}

// nnPair returns (h, w) as an attribute list: [w] for 1-D ops.
func nnPair(spatial, h, w int) []int {
	if spatial == 1 {
		return []int{w}
	}
	return []int{h, w}
}

func nnPairString(spatial, h, w int) string { return shapeString(nnPair(spatial, h, w)) }

// nnPads lists begin then end paddings as ONNX does ([top, left, bottom,
// right], or [left, right] for 1-D ops).
func nnPads(spatial, top, left, bottom, right int) []int {
	if spatial == 1 {
		return []int{left, right}
	}
	return []int{top, left, bottom, right}
}

// nnTo4 returns a 4-D [N, C, H, W] view of t, an input with spatial (1 or
// 2) spatial dimensions, batched or not: a unit batch and, for 1-D inputs,
// a unit height are inserted.
func nnTo4(t *Tensor, batched bool, spatial int) *Tensor {
	shape, strides := append([]int(nil), t.shape...), append([]int(nil), t.strides...)
	if !batched {
		shape, strides = append([]int{1}, shape...), append([]int{0}, strides...)
	}
	if spatial == 1 {
		shape = append(shape[:2:2], 1, shape[2])
		strides = append(strides[:2:2], 0, strides[2])
	}
	return t.newView(shape, strides, t.offset)
}

// nnFrom4 is the inverse of nnTo4: it returns a view of t4 in the user's
// layout and releases t4.
func nnFrom4(t4 *Tensor, batched bool, spatial int) *Tensor {
	shape, strides := append([]int(nil), t4.shape...), append([]int(nil), t4.strides...)
	if spatial == 1 {
		shape = append(shape[:2:2], shape[3])
		strides = append(strides[:2:2], strides[3])
	}
	if !batched {
		shape, strides = shape[1:], strides[1:]
	}
	v := t4.newView(shape, strides, t4.offset)
	t4.Release()
	return v
}

// nnReshapeOwned reshapes t (a view when its layout allows, else a copy)
// and releases t.
func nnReshapeOwned(op string, t *Tensor, shape []int) *Tensor {
	r := rawReshape(op, t, append([]int(nil), shape...))
	t.Release()
	return r
}

// nnHostTensor uploads row-major host values as a new tensor of dtype.
func nnHostTensor(op string, dev Device, dtype DType, shape []int, data []float64) *Tensor {
	t := newTensor(op, dev.Inner(), Float64, shape)
	if len(data) > 0 {
		raw := make([]byte, 8*len(data))
		for i, v := range data {
			binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(v))
		}
		t.backend().Write(t.st.buf, 0, raw)
	}
	if dtype == Float64 {
		return t
	}
	c := rawCast(op, t, dtype)
	t.Release()
	return c
}
