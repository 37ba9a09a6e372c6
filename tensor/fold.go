package tensor

import "github.com/kiln-ml/kiln/backends"

// Unfold and Fold are the backend's Im2Col and Col2Im primitives exposed as
// ops: each is the other's adjoint, so each one's backward pass is the
// other primitive applied to the output gradient.

// FoldConfig configures Unfold and Fold, as the keyword arguments of
// torch.nn.functional.unfold and fold. Each list holds one value for both
// spatial dimensions or one per dimension (height, width). Kernel is
// required; the zero value of every other field is PyTorch's default.
type FoldConfig struct {
	// Kernel is the size of the sliding window.
	Kernel []int `json:"kernel"`
	// Dilation is the spacing between window elements. Empty means 1.
	Dilation []int `json:"dilation,omitempty"`
	// Padding is the number of zeros on both sides of each spatial
	// dimension. Empty means 0.
	Padding []int `json:"padding,omitempty"`
	// Stride is the step between windows. Empty means 1.
	Stride []int `json:"stride,omitempty"`
}

// foldWindow resolves a FoldConfig into the geometry of the windows over
// an h×w image with n images of c channels; the output (block) counts
// must be positive.
func foldWindow(op string, cfg FoldConfig, n, c, h, w int) backends.ConvGeometry {
	if len(cfg.Kernel) == 0 {
		fail(op, ErrArgument, "Kernel is required")
	}
	kh, kw := nnHW(op, "Kernel", cfg.Kernel, 2, 1, 1)
	dh, dw := nnHW(op, "Dilation", cfg.Dilation, 2, 1, 1)
	ph, pw := nnHW(op, "Padding", cfg.Padding, 2, 0, 0)
	sh, sw := nnHW(op, "Stride", cfg.Stride, 2, 1, 1)
	eh := checkedAdd(op, "padded height", h, checkedMul(op, "padding", 2, ph), -checkedMul(op, "dilated kernel height", dh, kh-1))
	ew := checkedAdd(op, "padded width", w, checkedMul(op, "padding", 2, pw), -checkedMul(op, "dilated kernel width", dw, kw-1))
	if eh < 1 || ew < 1 {
		fail(op, ErrShape, "spatial size [%d %d] with padding [%d %d] is smaller than kernel [%d %d] with dilation [%d %d]: no block fits",
			h, w, ph, pw, kh, kw, dh, dw)
	}
	return backends.ConvGeometry{N: n, C: c, H: h, W: w, KH: kh, KW: kw, StrideH: sh, StrideW: sw,
		PadTop: ph, PadLeft: pw, DilationH: dh, DilationW: dw, OutH: (eh-1)/sh + 1, OutW: (ew-1)/sw + 1}
}

func foldAttrs(geo backends.ConvGeometry) map[string]any {
	return map[string]any{"kernel": []int{geo.KH, geo.KW}, "dilation": []int{geo.DilationH, geo.DilationW},
		"padding": []int{geo.PadTop, geo.PadLeft}, "stride": []int{geo.StrideH, geo.StrideW}}
}

// Unfold extracts the sliding blocks of x [N, C, H, W] (or unbatched
// [C, H, W]) into columns, as torch.nn.functional.unfold (im2col): the
// result is [N, C·KH·KW, L] (or [C·KH·KW, L]), where L is the number of
// block positions, ⌊(H + 2·padding − dilation·(KH−1) − 1)/stride⌋ + 1 rows
// times the same for the width, and row c·KH·KW + i·KW + j holds channel c
// at kernel offset (i, j). Gradients flow to x (through Fold). It panics
// with ErrShape for another rank or when no block fits, ErrArgument for a
// bad configuration (no kernel, non-positive sizes) and ErrDType for
// non-float input.
func Unfold(x *Tensor, cfg FoldConfig) *Tensor {
	const op = "Unfold"
	x.live(op)
	batched := true
	switch len(x.shape) {
	case 4:
	case 3:
		batched = false
	default:
		fail(op, ErrShape, "input %s must be [N, C, H, W] or unbatched [C, H, W]", shapeString(x.shape))
	}
	if !x.dtype.IsFloat() {
		fail(op, ErrDType, "input %s is %s; Unfold needs a floating dtype", shapeString(x.shape), x.dtype)
	}
	x4 := nnTo4(x, batched, 2)
	defer x4.Release()
	geo := foldWindow(op, cfg, x4.shape[0], x4.shape[1], x4.shape[2], x4.shape[3])
	cols := nnIm2Col(op, x4, geo)
	out := cols
	if !batched {
		out = nnReshapeOwned(op, cols, cols.shape[1:])
	}
	xShape := x.Shape()
	return record("im2col", foldAttrs(geo), out, []*Tensor{x}, func(g *Tensor) []*Tensor {
		gc := rawContiguous(op, g)
		dx := newTensor(op, g.dev, g.dtype, []int{geo.N, geo.C, geo.H, geo.W})
		cv := gc.view()
		cv.Shape, cv.Strides = []int{geo.N, geo.C * geo.KH * geo.KW, geo.OutH * geo.OutW},
			backends.RowMajorStrides([]int{geo.N, geo.C * geo.KH * geo.KW, geo.OutH * geo.OutW})
		dx.backend().Col2Im(dx.view(), cv, geo)
		gc.Release()
		return []*Tensor{nnReshapeOwned(op, dx, xShape)}
	})
}

// Fold combines columns x [N, C·KH·KW, L] (or unbatched [C·KH·KW, L]) into
// an image [N, C, H, W] (or [C, H, W]) of outputSize [H, W] (one value for
// both, or two), summing overlapping values, as torch.nn.functional.fold
// (col2im); it is the adjoint of Unfold, which gives its gradient. It
// panics with ErrShape when x's rank is not 2 or 3, its rows are not a
// multiple of KH·KW, or its L is not the number of blocks that fit
// outputSize; with ErrArgument for a bad configuration or output size; and
// with ErrDType for non-float input.
func Fold(x *Tensor, outputSize []int, cfg FoldConfig) *Tensor {
	const op = "Fold"
	x.live(op)
	batched := true
	switch len(x.shape) {
	case 3:
	case 2:
		batched = false
	default:
		fail(op, ErrShape, "input %s must be [N, C·KH·KW, L] or unbatched [C·KH·KW, L]", shapeString(x.shape))
	}
	if !x.dtype.IsFloat() {
		fail(op, ErrDType, "input %s is %s; Fold needs a floating dtype", shapeString(x.shape), x.dtype)
	}
	if len(outputSize) == 0 {
		fail(op, ErrArgument, "output size is required")
	}
	h, w := nnHW(op, "output size", outputSize, 2, 0, 1)
	x3 := foldBatchView(x, batched)
	defer x3.Release()
	n, rows, l := x3.shape[0], x3.shape[1], x3.shape[2]
	kh, kw := 1, 1
	if len(cfg.Kernel) > 0 {
		kh, kw = nnHW(op, "Kernel", cfg.Kernel, 2, 1, 1)
	}
	if rows%(kh*kw) != 0 {
		fail(op, ErrShape, "input %s has %d rows, not a multiple of the kernel size %d·%d", shapeString(x.shape), rows, kh, kw)
	}
	geo := foldWindow(op, cfg, n, rows/(kh*kw), h, w)
	if l != geo.OutH*geo.OutW {
		fail(op, ErrShape, "input %s has %d blocks, but output size [%d %d] fits %d·%d = %d", shapeString(x.shape), l, h, w,
			geo.OutH, geo.OutW, geo.OutH*geo.OutW)
	}
	xc := rawContiguous(op, x3)
	out := newTensor(op, x.dev, x.dtype, []int{n, geo.C, h, w})
	out.backend().Col2Im(out.view(), xc.view(), geo)
	xc.Release()
	if !batched {
		out = nnReshapeOwned(op, out, out.shape[1:])
	}
	attrs := foldAttrs(geo)
	attrs["output_size"] = []int{h, w}
	xShape := x.Shape()
	return record("col2im", attrs, out, []*Tensor{x}, func(g *Tensor) []*Tensor {
		g4 := foldBatchView(g, batched)
		cols := nnIm2Col(op, g4, geo)
		g4.Release()
		return []*Tensor{nnReshapeOwned(op, cols, xShape)}
	})
}

// foldBatchView returns a new view of t with a leading unit batch
// dimension added unless batched.
func foldBatchView(t *Tensor, batched bool) *Tensor {
	if batched {
		return t.newView(t.shape, t.strides, t.offset)
	}
	return t.newView(append([]int{1}, t.shape...), append([]int{0}, t.strides...), t.offset)
}
