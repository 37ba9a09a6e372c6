package tensor

// Volumetric pooling is separable: a 3-D window is the product of a
// height × width window and a depth interval, so a 3-D pool is a 2-D pool
// over each depth slice ([N, C·D, H, W]) followed by a pool along depth,
// run as a 2-D pool with a D × 1 kernel over [N, C, D, OH·OW] so that no
// transpose is needed. Maxima of maxima and averages of averages (whose
// divisors, padded or not, are products of per-axis counts) are the 3-D
// results, and the 2-D ops' backward rules compose into the 3-D ones.

// pool3dWindow is a 3-D pooling op's resolved window, per axis
// (depth, height, width).
type pool3dWindow struct {
	kernel, stride, padding, dilation [3]int
}

// pool3dParams resolves and checks a 3-D pooling configuration.
func pool3dParams(op string, kernel, stride, padding, dilation []int) pool3dWindow {
	if len(kernel) == 0 {
		fail(op, ErrArgument, "Kernel is required")
	}
	var p pool3dWindow
	p.kernel = conv3dTriple(op, "Kernel", kernel, 1, 1)
	p.stride = p.kernel
	if len(stride) > 0 {
		p.stride = conv3dTriple(op, "Stride", stride, 1, 1)
	}
	p.padding = conv3dTriple(op, "Padding", padding, 0, 0)
	p.dilation = conv3dTriple(op, "Dilation", dilation, 1, 1)
	for i := range 3 {
		if p.padding[i] > p.kernel[i]/2 {
			fail(op, ErrArgument, "Padding %v must be at most half of Kernel %v", padding, kernel)
		}
	}
	return p
}

// pool3dInput checks x and the output size of p over it, returning x's
// batched [N, C, D, H, W] form and whether x was batched.
func pool3dInput(op string, x *Tensor, p pool3dWindow, ceil bool) (*Tensor, bool) {
	x.live(op)
	nnSameFloat(op, x)
	x5, batched := conv3dInput(op, x)
	var out [3]int
	for i := range 3 {
		out[i] = nnPoolOutSize(op, x5.shape[2+i], p.kernel[i], p.stride[i], p.padding[i], p.dilation[i], ceil)
	}
	if out[0] < 1 || out[1] < 1 || out[2] < 1 {
		fail(op, ErrShape, "input %s is too small for kernel %v with padding %v and dilation %v (output %v)",
			shapeString(x.shape), p.kernel, p.padding, p.dilation, out)
	}
	return x5, batched
}

// MaxPool3d returns the maximum of each window of x [N, C, D, H, W] (or
// unbatched [C, D, H, W]) and the flat position d·H·W + h·W + w of that
// maximum in its input volume (Int64), as torch.nn.functional.max_pool3d
// with return_indices=True. Configuration lists hold one value or three
// (depth, height, width). Ties go to the first element of the window in
// row-major order. Gradients flow to the maxima. It fails as MaxPool2d
// does.
func MaxPool3d(x *Tensor, cfg PoolConfig) (values, indices *Tensor) {
	const op = "MaxPool3d"
	p := pool3dParams(op, cfg.Kernel, cfg.Stride, cfg.Padding, cfg.Dilation)
	x5, batched := pool3dInput(op, x, p, cfg.CeilMode)
	var tmp conv3dTemps
	if !batched {
		tmp.add(x5)
	}
	n, c, d, h, w := x5.shape[0], x5.shape[1], x5.shape[2], x5.shape[3], x5.shape[4]
	xs := tmp.add(x5.Reshape(n, c*d, h, w))
	v1, i1 := MaxPool2d(xs, PoolConfig{Kernel: p.kernel[1:], Stride: p.stride[1:], Padding: p.padding[1:],
		Dilation: p.dilation[1:], CeilMode: cfg.CeilMode})
	tmp.add(v1)
	tmp.add(i1)
	oh, ow := v1.shape[2], v1.shape[3]
	l := oh * ow
	vd := tmp.add(v1.Reshape(n, c, d, l))
	v2, i2 := MaxPool2d(vd, PoolConfig{Kernel: []int{p.kernel[0], 1}, Stride: []int{p.stride[0], 1},
		Padding: []int{p.padding[0], 0}, Dilation: []int{p.dilation[0], 1}, CeilMode: cfg.CeilMode})
	tmp.add(v2)
	tmp.add(i2)
	od := v2.shape[2]
	values = v2.Reshape(n, c, od, oh, ow)

	// i2 = depth·L + j picks a row of i1 (h·W + w): gather it and add the
	// depth's offset.
	i1f := tmp.add(i1.Reshape(n, c, d*l))
	i2f := tmp.add(i2.Reshape(n, c, od*l))
	hw := tmp.add(i1f.Gather(2, i2f))
	lt := tmp.add(ScalarOf(x.dev.NoGrad(), Int64, float64(l)))
	planeT := tmp.add(ScalarOf(x.dev.NoGrad(), Int64, float64(h*w)))
	depth := tmp.add(i2f.FloorDivide(lt))
	off := tmp.add(depth.Mul(planeT))
	flat := tmp.add(off.Add(hw))
	indices = flat.Reshape(n, c, od, oh, ow)
	if !batched {
		values, indices = tmp.add(values).Squeeze(0), tmp.add(indices).Squeeze(0)
	}
	if values.node != nil {
		// keep the graph's tensors; the index temporaries are ours alone
		for _, t := range []*Tensor{i1f, i2f, hw, lt, planeT, depth, off, flat} {
			t.Release()
		}
		return values, indices
	}
	tmp.done(values)
	return values, indices
}

// AvgPool3d returns the average of each window of x [N, C, D, H, W] (or
// unbatched [C, D, H, W]), as torch.nn.functional.avg_pool3d, with
// count_include_pad (the zero value of ExcludePad), ceil mode and divisor
// override as AvgPool2d. Configuration lists hold one value or three
// (depth, height, width). It fails as AvgPool2d does.
func AvgPool3d(x *Tensor, cfg AvgPoolConfig) *Tensor {
	const op = "AvgPool3d"
	if cfg.DivisorOverride < 0 {
		fail(op, ErrArgument, "DivisorOverride %d must not be negative", cfg.DivisorOverride)
	}
	p := pool3dParams(op, cfg.Kernel, cfg.Stride, cfg.Padding, nil)
	x5, batched := pool3dInput(op, x, p, cfg.CeilMode)
	var tmp conv3dTemps
	if !batched {
		tmp.add(x5)
	}
	n, c, d, h, w := x5.shape[0], x5.shape[1], x5.shape[2], x5.shape[3], x5.shape[4]
	// With an override the first pass divides by it and the second sums.
	first, second := cfg.DivisorOverride, 0
	if first > 0 {
		second = 1
	}
	xs := tmp.add(x5.Reshape(n, c*d, h, w))
	a1 := tmp.add(AvgPool2d(xs, AvgPoolConfig{Kernel: p.kernel[1:], Stride: p.stride[1:], Padding: p.padding[1:],
		CeilMode: cfg.CeilMode, ExcludePad: cfg.ExcludePad, DivisorOverride: first}))
	oh, ow := a1.shape[2], a1.shape[3]
	ad := tmp.add(a1.Reshape(n, c, d, oh*ow))
	a2 := tmp.add(AvgPool2d(ad, AvgPoolConfig{Kernel: []int{p.kernel[0], 1}, Stride: []int{p.stride[0], 1},
		Padding: []int{p.padding[0], 0}, CeilMode: cfg.CeilMode, ExcludePad: cfg.ExcludePad, DivisorOverride: second}))
	out := a2.Reshape(n, c, a2.shape[2], oh, ow)
	if !batched {
		out = tmp.add(out).Squeeze(0)
	}
	return tmp.done(out)
}
