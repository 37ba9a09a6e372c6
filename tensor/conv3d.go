package tensor

// Volumetric convolutions are composed on the 2-D ones, so that they reuse
// their kernels (Im2Col + GEMM or a backend's fused convolution) and their
// backward rules. A 3-D convolution unfolds the depth axis by strided views
// (one per kernel depth tap), stacks those taps into the channel axis and
// runs one Conv2d over [N·OD, KD·C, H, W] with the weights laid out
// [O, KD·C/G, KH, KW]: the same multiply-adds as a 3-D Im2Col, in one GEMM.
// A transposed 3-D convolution runs ConvTranspose2d over height and width
// with the depth taps as extra output channels, then folds the taps back
// onto the depth axis with a second ConvTranspose2d whose one-hot weights
// place tap k of input depth i at output depth i·stride − padding +
// k·dilation (a Col2Im along depth).

// conv3dTriple resolves a per-dimension configuration list for a 3-D op
// into (depth, height, width): empty means def, one value applies to every
// dimension, otherwise there are three. Values below lo fail.
func conv3dTriple(op, field string, v []int, def, lo int) [3]int {
	var r [3]int
	switch len(v) {
	case 0:
		r = [3]int{def, def, def}
	case 1:
		r = [3]int{v[0], v[0], v[0]}
	case 3:
		r = [3]int{v[0], v[1], v[2]}
	default:
		fail(op, ErrArgument, "%s %v: want 1 or 3 values", field, v)
	}
	if r[0] < lo || r[1] < lo || r[2] < lo {
		fail(op, ErrArgument, "%s %v: values must be at least %d", field, v, lo)
	}
	return r
}

// conv3dInput checks that x is [N, C, D, H, W] or unbatched [C, D, H, W]
// and returns the batched form and whether x was batched.
func conv3dInput(op string, x *Tensor) (*Tensor, bool) {
	switch len(x.shape) {
	case 5:
		return x, true
	case 4:
		return x.Unsqueeze(0), false
	}
	fail(op, ErrShape, "input %s must be [N, C, D, H, W] or unbatched [C, D, H, W]", shapeString(x.shape))
	return nil, false
}

// conv3dTemps collects the intermediate tensors of a composed op; they are
// released when the result recorded no graph (on an autodiff device the
// backward rules hold them until the graph goes).
type conv3dTemps []*Tensor

func (ts *conv3dTemps) add(t *Tensor) *Tensor {
	*ts = append(*ts, t)
	return t
}

func (ts conv3dTemps) done(out *Tensor) *Tensor {
	if out.node == nil {
		for _, t := range ts {
			if t != out {
				t.Release()
			}
		}
	}
	return out
}

// Conv3d returns the 3-D cross-correlation of x [N, C, D, H, W] (or an
// unbatched [C, D, H, W]) with weight [O, C/groups, KD, KH, KW] (PyTorch's
// layout), plus bias [O] when bias is not nil: an [N, O, OD, OH, OW]
// result with OD = ⌊(D + 2·padding − dilation·(KD−1) − 1)/stride⌋ + 1 (and
// likewise for height and width), as torch.nn.functional.conv3d.
// Configuration lists hold one value or three (depth, height, width);
// PaddingMode "same" works as in Conv2d. It fails as Conv2d does.
func Conv3d(x, weight, bias *Tensor, cfg ConvConfig) *Tensor {
	const op = "Conv3d"
	nnLive(op, bias, x, weight)
	if len(weight.shape) != 5 {
		fail(op, ErrShape, "weight %s must have 5 dimensions [out, in/groups, KD, KH, KW]", shapeString(weight.shape))
	}
	nnSameFloat(op, x, weight, bias)
	groups := nnGroups(op, cfg.Groups)
	var tmp conv3dTemps
	x5, batched := conv3dInput(op, x)
	if !batched {
		tmp.add(x5)
	}
	n, c, d := x5.shape[0], x5.shape[1], x5.shape[2]
	o, cg, kd := weight.shape[0], weight.shape[1], weight.shape[2]
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
	stride := conv3dTriple(op, "Stride", cfg.Stride, 1, 1)
	dil := conv3dTriple(op, "Dilation", cfg.Dilation, 1, 1)
	cfg2 := ConvConfig{Stride: stride[1:], Dilation: dil[1:], Groups: groups}
	var front, back int
	switch cfg.PaddingMode {
	case "", "valid":
		pad := conv3dTriple(op, "Padding", cfg.Padding, 0, 0)
		if cfg.PaddingMode == "valid" && pad != [3]int{} {
			fail(op, ErrArgument, "PaddingMode \"valid\" with Padding %v: valid means no padding", cfg.Padding)
		}
		front, back = pad[0], pad[0]
		cfg2.Padding = pad[1:]
	case "same":
		if len(cfg.Padding) > 0 {
			fail(op, ErrArgument, "PaddingMode \"same\" with Padding %v: set one or the other", cfg.Padding)
		}
		if stride != [3]int{1, 1, 1} {
			fail(op, ErrArgument, "PaddingMode \"same\" needs stride 1, got Stride %v (as in PyTorch)", cfg.Stride)
		}
		total := dil[0] * (kd - 1)
		front, back = total/2, total-total/2
		cfg2.PaddingMode = "same"
	default:
		fail(op, ErrArgument, "unknown PaddingMode %q (want \"\", \"valid\" or \"same\")", cfg.PaddingMode)
	}
	ed := checkedAdd(op, "padded input depth", d, front, back, -checkedMul(op, "dilated kernel depth", dil[0], kd-1))
	if ed < 1 {
		fail(op, ErrShape, "input %s is too small in depth for weight %s with padding %d and dilation %d: no window fits",
			shapeString(x.shape), shapeString(weight.shape), front, dil[0])
	}
	od := (ed-1)/stride[0] + 1

	xp := x5
	if front+back > 0 {
		xp = tmp.add(x5.Pad([]int{0, 0, 0, 0, front, back}, "constant", 0))
	}
	// taps[k] is [N, OD, G, C/G, H, W]: the input depths tap k meets.
	taps := make([]*Tensor, kd)
	for k := range kd {
		s := tmp.add(xp.Slice(2, k*dil[0], k*dil[0]+(od-1)*stride[0]+1, stride[0]))
		u := tmp.add(s.Unflatten(1, groups, cg))
		taps[k] = tmp.add(u.Permute(0, 3, 1, 2, 4, 5))
	}
	h, w := x5.shape[3], x5.shape[4]
	st := tmp.add(Stack(taps, 3)) // [N, OD, G, KD, C/G, H, W]
	x2 := tmp.add(st.Reshape(n*od, groups*kd*cg, h, w))
	wp := tmp.add(weight.Permute(0, 2, 1, 3, 4))
	w2 := tmp.add(wp.Reshape(o, kd*cg, weight.shape[3], weight.shape[4]))
	y := tmp.add(Conv2d(x2, w2, bias, cfg2)) // [N·OD, O, OH, OW]
	oh, ow := y.shape[2], y.shape[3]
	y5 := tmp.add(y.Reshape(n, od, o, oh, ow))
	yp := tmp.add(y5.Permute(0, 2, 1, 3, 4))
	out := yp.Contiguous()
	if !batched {
		out = tmp.add(out).Squeeze(0)
	}
	return tmp.done(out)
}

// ConvTranspose3d returns the transposed 3-D convolution (the gradient of
// Conv3d with respect to its input) of x [N, C_in, D, H, W] (or unbatched
// [C_in, D, H, W]) with weight [C_in, C_out/groups, KD, KH, KW] (PyTorch's
// layout), plus bias [C_out] when not nil, as
// torch.nn.functional.conv_transpose3d: OD = (D−1)·stride − 2·padding +
// dilation·(KD−1) + output_padding + 1, and likewise for height and width.
// Configuration lists hold one value or three. It fails as
// ConvTranspose2d does.
func ConvTranspose3d(x, weight, bias *Tensor, cfg ConvTransposeConfig) *Tensor {
	const op = "ConvTranspose3d"
	nnLive(op, bias, x, weight)
	if len(weight.shape) != 5 {
		fail(op, ErrShape, "weight %s must have 5 dimensions [in, out/groups, KD, KH, KW]", shapeString(weight.shape))
	}
	nnSameFloat(op, x, weight, bias)
	groups := nnGroups(op, cfg.Groups)
	var tmp conv3dTemps
	x5, batched := conv3dInput(op, x)
	if !batched {
		tmp.add(x5)
	}
	n, cin, d, h, w := x5.shape[0], x5.shape[1], x5.shape[2], x5.shape[3], x5.shape[4]
	win, cog, kd := weight.shape[0], weight.shape[1], weight.shape[2]
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
	stride := conv3dTriple(op, "Stride", cfg.Stride, 1, 1)
	dil := conv3dTriple(op, "Dilation", cfg.Dilation, 1, 1)
	pad := conv3dTriple(op, "Padding", cfg.Padding, 0, 0)
	outPad := conv3dTriple(op, "OutputPadding", cfg.OutputPadding, 0, 0)
	for i := range 3 {
		if outPad[i] >= stride[i] && outPad[i] >= dil[i] {
			fail(op, ErrArgument, "OutputPadding %v must be smaller than the stride %v or the dilation %v", cfg.OutputPadding,
				stride, dil)
		}
	}
	od := checkedAdd(op, "output depth", checkedMul(op, "strided input depth", d-1, stride[0]), -2*pad[0],
		checkedMul(op, "dilated kernel depth", dil[0], kd-1), outPad[0], 1)
	if od < 1 {
		fail(op, ErrShape, "input %s with weight %s, stride %v and padding %v gives an empty output depth %d",
			shapeString(x.shape), shapeString(weight.shape), stride, pad, od)
	}

	// Height and width: the depth taps become output channels [G, KD, C_out/G].
	xp := tmp.add(x5.Permute(0, 2, 1, 3, 4))
	x2 := tmp.add(xp.Reshape(n*d, cin, h, w))
	wp := tmp.add(weight.Permute(0, 2, 1, 3, 4))
	w2 := tmp.add(wp.Reshape(cin, kd*cog, weight.shape[3], weight.shape[4]))
	y := tmp.add(ConvTranspose2d(x2, w2, nil, ConvTransposeConfig{Stride: stride[1:], Padding: pad[1:],
		OutputPadding: outPad[1:], Dilation: dil[1:], Groups: groups}))
	oh, ow := y.shape[2], y.shape[3]
	// Depth: fold tap k of input depth i onto output depth i·s − p + k·d.
	y6 := tmp.add(y.Reshape(n, d, groups, kd, cog, oh*ow))
	yp := tmp.add(y6.Permute(0, 2, 4, 3, 1, 5))
	y4 := tmp.add(yp.Reshape(n*cout, kd, d, oh*ow))
	onehot := make([]float64, kd*kd)
	for k := range kd {
		onehot[k*kd+k] = 1
	}
	fold := tmp.add(nnHostTensor(op, x.dev, x.dtype, []int{kd, 1, kd, 1}, onehot))
	z := tmp.add(ConvTranspose2d(y4, fold, nil, ConvTransposeConfig{Stride: []int{stride[0], 1},
		Padding: []int{pad[0], 0}, OutputPadding: []int{outPad[0], 0}, Dilation: []int{dil[0], 1}}))
	out := z.Reshape(n, cout, od, oh, ow)
	if bias != nil {
		b := tmp.add(bias.Reshape(cout, 1, 1, 1))
		out = tmp.add(out).Add(b)
	}
	if !batched {
		out = tmp.add(out).Squeeze(0)
	}
	return tmp.done(out)
}
