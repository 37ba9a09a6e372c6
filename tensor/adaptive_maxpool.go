package tensor

import "github.com/kiln-ml/kiln/backends"

// Adaptive max pooling has windows of varying size, so it cannot use
// Im2Col's fixed geometry. It gathers every window through a host-built
// table of input positions, padded to the largest window by repeating the
// window's last position (which cannot change a maximum, and which loses
// the tie to the first occurrence), then reduces each row of the table.
// The backward pass scatter-adds the gradient to the arg-max positions,
// as max pooling does.

// AdaptiveMaxPool1d takes the maximum of x [..., L] (at least 2-D) over out
// windows along its last axis, as torch.nn.functional.adaptive_max_pool1d
// with return_indices=True: window i covers positions ⌊i·L/out⌋ to
// ⌈(i+1)·L/out⌉ (exclusive). It returns the maxima [..., out] and their
// positions along L (Int64); ties go to the first position and a NaN counts
// as the maximum. A size of 0 keeps the input's. Gradients flow to the
// maxima. It panics with ErrShape for inputs of rank below 2 or an empty
// last axis, ErrArgument for a negative size and ErrDType for non-float
// input.
func AdaptiveMaxPool1d(x *Tensor, out int) (values, indices *Tensor) {
	const op = "AdaptiveMaxPool1d"
	x.live(op)
	r := len(x.shape)
	if r < 2 {
		fail(op, ErrShape, "input %s must be [N, C, L] or [C, L]", shapeString(x.shape))
	}
	if !x.dtype.IsFloat() {
		fail(op, ErrDType, "input %s is %s; pooling needs a floating dtype", shapeString(x.shape), x.dtype)
	}
	l := x.shape[r-1]
	if l == 0 {
		fail(op, ErrShape, "input %s has an empty last axis: no window to pool", shapeString(x.shape))
	}
	out = nnAdaptiveSize(op, out, l)
	b := 1
	for _, d := range x.shape[:r-1] {
		b *= d
	}
	table, k := adaptiveMaxTable(l, out)
	tab := nnHostTensor(op, x.dev, Int64, []int{out * k}, table)
	defer tab.Release()
	outShape := append(append([]int(nil), x.shape[:r-1]...), out)
	vals := newTensor(op, x.dev, x.dtype, []int{b, out})
	idx := newTensor(op, x.dev, Int64, []int{b, out})
	if b > 0 {
		x2 := rawReshape(op, x, []int{b, l})
		ti := tab.newView([]int{b, out * k}, []int{0, 1}, tab.offset)
		win := rawGather(op, x2, 1, ti) // [B, out·k]
		ti.Release()
		x2.Release()
		w3 := nnReshapeOwned(op, win, []int{b, out, k})
		vv := vals.view()
		vv.Shape, vv.Strides = []int{b, out, 1}, []int{out, 1, 1}
		w3.backend().Reduce(backends.Max, vv, w3.view(), []int{2})
		arg := newTensor(op, x.dev, Int64, []int{b, out, 1})
		arg.backend().ArgReduce(backends.ArgMax, arg.view(), w3.view(), 2)
		w3.Release()
		t3 := tab.newView([]int{b, out, k}, []int{0, k, 1}, tab.offset)
		iv := idx.view()
		iv.Shape, iv.Strides = []int{b, out, 1}, []int{out, 1, 1}
		idx.backend().Gather(iv, t3.view(), arg.view(), 2)
		t3.Release()
		arg.Release()
	}
	values = nnReshapeOwned(op, vals, outShape)
	indices = nnReshapeOwned(op, idx, outShape)
	saved := indices.newView(indices.shape, indices.strides, indices.offset)
	xShape := x.Shape()
	values = record("adaptive_max_pool1d", map[string]any{"output_size": []int{out}}, values, []*Tensor{x},
		func(g *Tensor) []*Tensor {
			dx := rawFull(op, g.dev, g.dtype, []int{b, l}, 0)
			if b*out > 0 {
				gc := rawReshape(op, g, []int{b, out})
				ic := rawReshape(op, saved, []int{b, out})
				nnScatterAdd(dx, ic.view(), gc.view(), 1)
				gc.Release()
				ic.Release()
			}
			return []*Tensor{nnReshapeOwned(op, dx, xShape)}
		})
	if values.node == nil {
		saved.Release()
	}
	return values, indices
}

// adaptiveMaxTable returns the input positions of adaptive pooling's out
// windows over in positions, each padded to the largest window size k by
// repeating its last position, as a row-major [out, k] table.
func adaptiveMaxTable(in, out int) ([]float64, int) {
	k := 0
	for i := range out {
		start, end := i*in/out, ((i+1)*in+out-1)/out
		k = max(k, end-start)
	}
	table := make([]float64, out*k)
	for i := range out {
		start, end := i*in/out, ((i+1)*in+out-1)/out
		for j := range k {
			table[i*k+j] = float64(min(start+j, end-1))
		}
	}
	return table, k
}
