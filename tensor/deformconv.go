package tensor

// DeformConv2d is composed from existing ops, so it runs on every backend
// and its gradients for the input, offsets, mask, weight and bias come from
// those ops' rules. Each sampling position p = p₀ + Δp is split into its
// floor and fraction; the four neighbouring input pixels are gathered
// (Gather over the flattened image, with indices clamped into range and a
// zero weight where a neighbour lies outside), weighted bilinearly and
// modulated by the mask, which gives deformed columns [N, C·KH·KW, L];
// one batched Matmul with the grouped weights finishes the convolution, as
// for Conv2d. Gradients reach the offsets through the fractions (the
// floors are constants, as in torchvision's kernels).

// DeformConvConfig configures DeformConv2d, as the keyword arguments of
// torchvision.ops.deform_conv2d. Each list holds one value for both
// spatial dimensions or two (height, width); the zero value is
// torchvision's default: stride 1, no padding, dilation 1.
type DeformConvConfig struct {
	// Stride is the step between windows. Empty means 1.
	Stride []int `json:"stride,omitempty"`
	// Padding is the number of zeros on both sides of each spatial
	// dimension. Empty means 0.
	Padding []int `json:"padding,omitempty"`
	// Dilation is the spacing between kernel elements. Empty means 1.
	Dilation []int `json:"dilation,omitempty"`
}

// DeformConv2d returns the deformable convolution v2 of x [N, C, H, W] with
// weight [O, C/groups, KH, KW], as torchvision.ops.deform_conv2d: kernel
// element k = i·KW + j of output position (oh, ow) reads x at
// (oh·stride − padding + i·dilation + Δy, ow·stride − padding + j·dilation
// + Δx), bilinearly interpolated with zeros outside the image, times
// mask[k] when mask is not nil (v1 without it). offset is
// [N, 2·offsetGroups·KH·KW, OH, OW], holding (Δy, Δx) pairs per offset
// group and kernel element; mask is [N, offsetGroups·KH·KW, OH, OW]; the
// channels split evenly into offset groups, and groups = C / weight's
// second dimension. bias [O] is optional. The output is [N, O, OH, OW]
// with OH = ⌊(H + 2·padding − dilation·(KH−1) − 1)/stride⌋ + 1. Gradients
// flow to x, offset, mask, weight and bias. It panics with ErrShape when
// the shapes do not fit each other (the message names them), ErrDType for
// non-float or mixed dtypes and ErrArgument for a bad configuration.
func DeformConv2d(x, offset, weight, bias, mask *Tensor, cfg DeformConvConfig) *Tensor {
	const op = "DeformConv2d"
	nnLive(op, bias, x, offset, weight)
	if mask != nil {
		sameDevice(op, x, mask)
	}
	if len(x.shape) != 4 {
		fail(op, ErrShape, "input %s must be [N, C, H, W]", shapeString(x.shape))
	}
	if len(weight.shape) != 4 {
		fail(op, ErrShape, "weight %s must be [O, C/groups, KH, KW]", shapeString(weight.shape))
	}
	nnSameFloat(op, x, weight, bias, offset, mask)
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	o, cg, kh, kw := weight.shape[0], weight.shape[1], weight.shape[2], weight.shape[3]
	if cg == 0 || c%cg != 0 {
		fail(op, ErrShape, "input %s has %d channels, which weight %s's %d channels per group do not divide",
			shapeString(x.shape), c, shapeString(weight.shape), cg)
	}
	groups := c / cg
	if o%groups != 0 {
		fail(op, ErrShape, "weight %s has %d output channels, which %d groups do not divide", shapeString(weight.shape), o, groups)
	}
	if bias != nil && (len(bias.shape) != 1 || bias.shape[0] != o) {
		fail(op, ErrShape, "bias %s does not match weight %s: want [%d]", shapeString(bias.shape), shapeString(weight.shape), o)
	}
	sh, sw := nnHW(op, "Stride", cfg.Stride, 2, 1, 1)
	ph, pw := nnHW(op, "Padding", cfg.Padding, 2, 0, 0)
	dh, dw := nnHW(op, "Dilation", cfg.Dilation, 2, 1, 1)
	eh := checkedAdd(op, "padded input height", h, 2*ph, -checkedMul(op, "dilated kernel height", dh, kh-1))
	ew := checkedAdd(op, "padded input width", w, 2*pw, -checkedMul(op, "dilated kernel width", dw, kw-1))
	if eh < 1 || ew < 1 {
		fail(op, ErrShape, "input %s is too small for weight %s with padding [%d %d] and dilation [%d %d]: no window fits",
			shapeString(x.shape), shapeString(weight.shape), ph, pw, dh, dw)
	}
	oh, ow := (eh-1)/sh+1, (ew-1)/sw+1
	k, l := kh*kw, oh*ow
	if len(offset.shape) != 4 || offset.shape[0] != n || offset.shape[2] != oh || offset.shape[3] != ow ||
		offset.shape[1] == 0 || offset.shape[1]%(2*k) != 0 {
		fail(op, ErrShape, "offset %s must be [%d, 2·offset groups·%d, %d, %d] for input %s and weight %s",
			shapeString(offset.shape), n, k, oh, ow, shapeString(x.shape), shapeString(weight.shape))
	}
	og := offset.shape[1] / (2 * k)
	if c%og != 0 {
		fail(op, ErrShape, "offset %s has %d offset groups, which do not divide the input's %d channels",
			shapeString(offset.shape), og, c)
	}
	if mask != nil && (len(mask.shape) != 4 || mask.shape[0] != n || mask.shape[1] != og*k || mask.shape[2] != oh ||
		mask.shape[3] != ow) {
		fail(op, ErrShape, "mask %s must be [%d, %d, %d, %d] for offset %s", shapeString(mask.shape), n, og*k, oh, ow,
			shapeString(offset.shape))
	}
	if n == 0 || o == 0 {
		return Zeros(x.dev, n, o, oh, ow).To(x.dtype)
	}

	// Base sampling positions p₀ for every kernel element and output
	// position, [K, L].
	by, bx := make([]float64, k*l), make([]float64, k*l)
	for i := range kh {
		for j := range kw {
			for y := range oh {
				for xx := range ow {
					at := (i*kw+j)*l + y*ow + xx
					by[at] = float64(y*sh - ph + i*dh)
					bx[at] = float64(xx*sw - pw + j*dw)
				}
			}
		}
	}
	base := func(v []float64) *Tensor {
		t := nnHostTensor(op, x.dev.Inner(), x.dtype, []int{k, l}, v)
		return t
	}
	off := offset.Reshape(n, og, k, 2, l)
	py := off.Select(3, 0).Add(base(by)) // [N, OG, K, L]
	px := off.Select(3, 1).Add(base(bx))
	y0, x0 := py.Detach().Floor(), px.Detach().Floor()
	ly, lx := py.Sub(y0), px.Sub(x0)
	hy, hx := ly.Neg().AddScalar(1), lx.Neg().AddScalar(1)
	// Positions at or past a whole pixel outside the image read nothing,
	// as in torchvision.
	pyd, pxd := py.Detach(), px.Detach()
	inside := pyd.GtScalar(-1).LogicalAnd(pyd.LtScalar(float64(h))).LogicalAnd(pxd.GtScalar(-1)).
		LogicalAnd(pxd.LtScalar(float64(w)))
	outside := inside.LogicalNot().To(x.dtype)
	xg := x.Reshape(n, og, c/og, h*w)
	var val *Tensor
	for _, corner := range [4][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
		yi, xi := y0.AddScalar(float64(corner[0])), x0.AddScalar(float64(corner[1]))
		valid := yi.GeScalar(0).LogicalAnd(yi.LeScalar(float64(h - 1))).
			LogicalAnd(xi.GeScalar(0)).LogicalAnd(xi.LeScalar(float64(w - 1)))
		idx := yi.Clamp(0, float64(h-1)).MulScalar(float64(w)).Add(xi.Clamp(0, float64(w-1))).To(Int64)
		idx = idx.Reshape(n, og, 1, k*l).Expand(n, og, c/og, k*l)
		wy, wx := hy, hx
		if corner[0] == 1 {
			wy = ly
		}
		if corner[1] == 1 {
			wx = lx
		}
		cw := wy.Mul(wx).Mul(valid.To(x.dtype))
		// The value is zero outside, but torchvision's offset gradient
		// is that of the corner-clipped interpolation everywhere (they
		// differ only on the line y = −1 or x = −1): subtracting a
		// detached copy outside keeps that gradient.
		cw = cw.Sub(cw.Detach().Mul(outside)).Reshape(n, og, 1, k*l)
		v := xg.Gather(3, idx).Mul(cw)
		if val == nil {
			val = v
		} else {
			val = val.Add(v)
		}
	}
	if mask != nil {
		val = val.Mul(mask.Reshape(n, og, 1, k*l))
	}
	cols := val.Reshape(n, groups, cg*k, l)
	wm := weight.Reshape(groups, o/groups, cg*k)
	out := wm.Matmul(cols).Reshape(n, o, oh, ow)
	if bias != nil {
		out = out.Add(bias.Reshape(o, 1, 1))
	}
	return out
}
