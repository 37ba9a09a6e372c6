package tensor

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
)

// Layout ops: flattening, repeating, flipping, rolling, slicing, splitting,
// joining and padding. Those that can be strided views of their input
// (Flatten where the dimensions merge, Flip, Narrow, Slice, Select and the
// pieces of Split and Chunk) share its storage; the others copy once.

// embedGrad returns the gradient of a view op whose output is region(x):
// zeros of x's shape with g copied into the region. It is the adjoint of
// every narrowing view (Narrow, Slice, Select, Split pieces).
func embedGrad(op string, g, x *Tensor, region func(v backends.View) backends.View) *Tensor {
	z := rawFull(op, g.dev, g.dtype, x.shape, 0)
	if g.NumElements() > 0 {
		z.backend().Copy(region(z.view()), g.view())
	}
	return castGrad(z, x)
}

// Flatten returns t with dimensions startDim through endDim (inclusive,
// negative counting from the end) merged into one, like torch.flatten. It
// is a view when those dimensions are laid out one inside the other
// (always for contiguous tensors) and a copy otherwise. A 0-d tensor
// flattens to shape [1]. It fails with ErrArgument when a dimension is out
// of range or startDim comes after endDim.
func (t *Tensor) Flatten(startDim, endDim int) *Tensor {
	const op = "Flatten"
	t.live(op)
	var out *Tensor
	if len(t.shape) == 0 {
		out = t.newView([]int{1}, []int{1}, t.offset)
	} else {
		r := len(t.shape)
		s, e := normAxis(op, startDim, r), normAxis(op, endDim, r)
		if s > e {
			fail(op, ErrArgument, "start dimension %d comes after end dimension %d for shape %s", startDim, endDim, shapeString(t.shape))
		}
		out = flattenView(op, t, s, e)
	}
	return viewGrad("flatten", map[string]any{"start_dim": startDim, "end_dim": endDim}, out, t, func(g *Tensor) *Tensor {
		return rawReshape(op, g, t.shape)
	})
}

// flattenView merges dimensions s..e of t: a view when their strides nest,
// else a contiguous copy reshaped.
func flattenView(op string, t *Tensor, s, e int) *Tensor {
	n, stride, ok := 1, 1, true
	last := -1 // innermost dimension of size > 1 seen so far, walking outwards
	for i := e; i >= s; i-- {
		n *= t.shape[i]
		if t.shape[i] == 1 {
			continue
		}
		if last < 0 {
			stride = t.strides[i]
		} else if t.strides[i] != t.strides[last]*t.shape[last] {
			ok = false
		}
		last = i
	}
	shape := append(append(append([]int{}, t.shape[:s]...), n), t.shape[e+1:]...)
	if !ok && n > 0 {
		return rawReshape(op, t, shape)
	}
	strides := append(append(append([]int{}, t.strides[:s]...), stride), t.strides[e+1:]...)
	return t.newView(shape, strides, t.offset)
}

// Unflatten returns t with dimension dim split into sizes (one of them may
// be -1), the inverse of Flatten, like torch.unflatten. It is a view of t.
// It fails with ErrShape when sizes do not multiply to the dimension.
func (t *Tensor) Unflatten(dim int, sizes ...int) *Tensor {
	const op = "Unflatten"
	t.live(op)
	a := normAxis(op, dim, len(t.shape))
	if len(sizes) == 0 {
		fail(op, ErrArgument, "no sizes to split dimension %d of %s into", dim, shapeString(t.shape))
	}
	sizes = inferShape(op, t.shape[a], sizes)
	if checkedNumel(op, sizes) != t.shape[a] {
		fail(op, ErrShape, "sizes %v do not multiply to dimension %d of %s (%d)", sizes, dim, shapeString(t.shape), t.shape[a])
	}
	shape := append(append(append([]int{}, t.shape[:a]...), sizes...), t.shape[a+1:]...)
	sub := backends.RowMajorStrides(sizes)
	for i := range sub {
		sub[i] *= t.strides[a]
	}
	strides := append(append(append([]int{}, t.strides[:a]...), sub...), t.strides[a+1:]...)
	out := t.newView(shape, strides, t.offset)
	return viewGrad("unflatten", map[string]any{"dim": a, "sizes": sizes}, out, t, func(g *Tensor) *Tensor {
		return rawReshape(op, g, t.shape)
	})
}

// Repeat returns t tiled reps[i] times along each dimension, like
// torch.Tensor.repeat: with more reps than dimensions, t is first viewed
// with leading dimensions of size 1. The result is a copy. It fails with
// ErrArgument when reps has fewer entries than t has dimensions or a
// negative entry.
func (t *Tensor) Repeat(reps ...int) *Tensor {
	const op = "Repeat"
	t.live(op)
	r, k := len(t.shape), len(reps)
	if k < r {
		fail(op, ErrArgument, "%d repeat counts %v for a tensor of rank %d %s; give one per dimension", k, reps, r, shapeString(t.shape))
	}
	for _, n := range reps {
		if n < 0 {
			fail(op, ErrArgument, "negative repeat count in %v", reps)
		}
	}
	// Tiling is a copy from a 2k-dimensional broadcast view [r0 s0 r1 s1 …]
	// (stride 0 on the repeat axes) into the output seen with the same shape.
	eshape, estrides := make([]int, 2*k), make([]int, 2*k)
	outShape := make([]int, k)
	for i := range k {
		s, st := 1, 0
		if j := i - (k - r); j >= 0 {
			s, st = t.shape[j], t.strides[j]
		}
		eshape[2*i], eshape[2*i+1] = reps[i], s
		estrides[2*i+1] = st
		outShape[i] = checkedMul(op, "repeat counts "+fmt.Sprint(reps)+" of "+shapeString(t.shape), reps[i], s)
	}
	out := newTensor(op, t.dev, t.dtype, outShape)
	if out.NumElements() > 0 {
		ov := backends.View{Buf: out.st.buf, DType: out.dtype, Shape: eshape, Strides: backends.RowMajorStrides(eshape)}
		iv := backends.View{Buf: t.st.buf, DType: t.dtype, Shape: eshape, Strides: estrides, Offset: t.offset}
		out.backend().Copy(ov, iv)
	}
	reps = append([]int(nil), reps...)
	return record("repeat", map[string]any{"reps": reps}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		gc := rawContiguous(op, g)
		gv := gc.newView(eshape, backends.RowMajorStrides(eshape), gc.offset)
		gc.Release()
		axes := make([]int, k)
		for i := range axes {
			axes[i] = 2 * i
		}
		s := rawReduce(op, backends.Sum, gv, axes, false)
		gv.Release()
		res := s.newView(t.Shape(), backends.RowMajorStrides(t.shape), s.offset)
		s.Release()
		return []*Tensor{castGrad(res, t)}
	})
}

// Flip returns t reversed along dims (every dimension when none are
// given), like torch.flip. The result is a view with negative strides; no
// memory is copied. It fails with ErrArgument for a dimension out of range
// or repeated.
func (t *Tensor) Flip(dims ...int) *Tensor {
	const op = "Flip"
	t.live(op)
	axes := normAxes(op, dims, len(t.shape))
	out := rawFlip(t, axes)
	return viewGrad("flip", map[string]any{"dims": axes}, out, t, func(g *Tensor) *Tensor { return rawFlip(g, axes) })
}

// rawRoll returns a copy of t rotated by shift along axis: element i moves
// to (i+shift) mod n. No graph.
func rawRoll(op string, t *Tensor, shift, axis int) *Tensor {
	out := newTensor(op, t.dev, t.dtype, t.shape)
	n := t.shape[axis]
	if out.NumElements() == 0 {
		return out
	}
	s := ((shift % n) + n) % n
	ov, tv := out.view(), t.view()
	out.backend().Copy(sliceOf(ov, axis, s, 1, n-s), sliceOf(tv, axis, 0, 1, n-s))
	if s > 0 {
		out.backend().Copy(sliceOf(ov, axis, 0, 1, s), sliceOf(tv, axis, n-s, 1, s))
	}
	return out
}

// Roll returns a copy of t rotated by shift positions along dim, like
// torch.roll(t, shift, dim): element i moves to (i+shift) mod n, so
// elements shifted past the end come back at the start; a negative shift
// rotates the other way. To roll several dimensions, chain calls:
// torch.roll(t, (1, -2), (0, 1)) is t.Roll(1, 0).Roll(-2, 1). torch.roll
// without dims (rolling the flattened tensor) is
// t.Flatten(0, -1).Roll(shift, 0).Reshape(t.Shape()...). It fails with
// ErrArgument when dim is out of range.
func (t *Tensor) Roll(shift, dim int) *Tensor {
	const op = "Roll"
	t.live(op)
	a := normAxis(op, dim, len(t.shape))
	out := rawRoll(op, t, shift, a)
	return record("roll", map[string]any{"shift": shift, "dim": a}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(rawRoll(op, g, -shift, a), t)}
	})
}

// Narrow returns the view of t's elements [start, start+length) along dim,
// like torch.narrow; a negative start counts from the end. It fails with
// ErrArgument when the range does not lie inside the dimension.
func (t *Tensor) Narrow(dim, start, length int) *Tensor {
	const op = "Narrow"
	t.live(op)
	a := normAxis(op, dim, len(t.shape))
	n := t.shape[a]
	s := start
	if s < 0 {
		s += n
	}
	if s < 0 || s > n || length < 0 || length > n-s {
		fail(op, ErrArgument, "start %d and length %d out of range for dimension %d of size %d (shape %s)",
			start, length, dim, n, shapeString(t.shape))
	}
	return t.narrowRecorded(a, s, length)
}

// narrowRecorded returns the recorded view of t's [s, s+length) along axis a.
func (t *Tensor) narrowRecorded(a, s, length int) *Tensor {
	out := rawNarrow(t, a, s, length)
	return viewGrad("narrow", map[string]any{"dim": a, "start": s, "length": length}, out, t, func(g *Tensor) *Tensor {
		return embedGrad("Narrow", g, t, func(v backends.View) backends.View { return sliceOf(v, a, s, 1, length) })
	})
}

// sliceIndices resolves a Python slice start:end:step over a dimension of
// size n into the first index and the element count, exactly as Python's
// slice.indices does: negative bounds count from the end and bounds are
// clamped, so any start and end are valid.
func sliceIndices(n, start, end, step int) (first, count int) {
	lower, upper := 0, n
	if step < 0 {
		lower, upper = -1, n-1
	}
	clamp := func(i int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, lower), upper)
	}
	first, last := clamp(start), clamp(end)
	if step > 0 {
		if last > first {
			count = (last - first + step - 1) / step
		}
	} else if first > last {
		count = (first - last - step - 1) / -step
	}
	return first, count
}

// Slice returns the view t[start:end:step] along dim with Python's slice
// semantics: negative start and end count from the end, out-of-range
// bounds are clamped (so the result may be empty), and step may be
// negative, as in NumPy, walking backwards from start (PyTorch forbids
// negative steps; Kiln returns a view with a negative stride). For an open
// bound pass math.MinInt or math.MaxInt: t[2:] is Slice(d, 2, math.MaxInt,
// 1) and t[::-1] is Slice(d, math.MaxInt, math.MinInt, -1). It fails with
// ErrArgument for a zero step or a dimension out of range.
func (t *Tensor) Slice(dim, start, end, step int) *Tensor {
	const op = "Slice"
	t.live(op)
	a := normAxis(op, dim, len(t.shape))
	if step == 0 {
		fail(op, ErrArgument, "slice step cannot be zero")
	}
	first, count := sliceIndices(t.shape[a], start, end, step)
	out := rawSliceView(t, a, first, step, count)
	attrs := map[string]any{"dim": a, "start": first, "step": step, "length": count}
	return viewGrad("slice", attrs, out, t, func(g *Tensor) *Tensor {
		return embedGrad(op, g, t, func(v backends.View) backends.View { return sliceOf(v, a, first, step, count) })
	})
}

// Select returns the view of t at position index of dim, without that
// dimension, like torch.select (t[..., index, ...]); a negative index
// counts from the end. It fails with ErrArgument when index is out of
// range.
func (t *Tensor) Select(dim, index int) *Tensor {
	const op = "Select"
	t.live(op)
	a := normAxis(op, dim, len(t.shape))
	i := index
	if i < 0 {
		i += t.shape[a]
	}
	if i < 0 || i >= t.shape[a] {
		fail(op, ErrArgument, "index %d out of range for dimension %d of size %d (shape %s)", index, dim, t.shape[a], shapeString(t.shape))
	}
	return t.selectRecorded(a, i)
}

func (t *Tensor) selectRecorded(a, i int) *Tensor {
	out := rawSelect(t, a, i)
	return viewGrad("select", map[string]any{"dim": a, "index": i}, out, t, func(g *Tensor) *Tensor {
		return embedGrad("Select", g, t, func(v backends.View) backends.View { return selectOf(v, a, i) })
	})
}

// Unbind returns the slices of t along dim, each without that dimension,
// like torch.unbind. They are views of t. It fails with ErrArgument when
// dim is out of range.
func (t *Tensor) Unbind(dim int) []*Tensor {
	const op = "Unbind"
	t.live(op)
	a := normAxis(op, dim, len(t.shape))
	out := make([]*Tensor, t.shape[a])
	for i := range out {
		out[i] = t.selectRecorded(a, i)
	}
	return out
}

// pieces returns recorded narrow views of t along axis a with the given sizes.
func (t *Tensor) pieces(a int, sizes []int) []*Tensor {
	out := make([]*Tensor, len(sizes))
	start := 0
	for i, n := range sizes {
		out[i] = t.narrowRecorded(a, start, n)
		start += n
	}
	return out
}

// Chunk splits t into n pieces along dim, like torch.chunk: each piece
// has ceil(size/n) elements along dim except possibly the last, so fewer
// than n pieces come back when size does not divide evenly (a dimension of
// size 0 gives n empty pieces). The pieces are views of t. It fails with
// ErrArgument when n is not positive.
func (t *Tensor) Chunk(n, dim int) []*Tensor {
	const op = "Chunk"
	t.live(op)
	a := normAxis(op, dim, len(t.shape))
	if n <= 0 {
		fail(op, ErrArgument, "number of chunks must be positive, got %d", n)
	}
	size := t.shape[a]
	if size == 0 {
		return t.pieces(a, make([]int, n))
	}
	return t.pieces(a, everySizes(size, (size+n-1)/n))
}

// everySizes returns the piece sizes of splitting size into pieces of
// step (the last one shorter): one empty piece when size is 0.
func everySizes(size, step int) []int {
	if size == 0 {
		return []int{0}
	}
	var sizes []int
	for s := 0; s < size; s += step {
		sizes = append(sizes, min(step, size-s))
	}
	return sizes
}

// SplitEvery splits t along dim into pieces of size elements (the last
// one shorter when size does not divide the dimension), like
// torch.split(t, size, dim). The pieces are views of t. It fails with
// ErrArgument when size is not positive.
func (t *Tensor) SplitEvery(size, dim int) []*Tensor {
	const op = "SplitEvery"
	t.live(op)
	a := normAxis(op, dim, len(t.shape))
	if size <= 0 {
		fail(op, ErrArgument, "split size must be positive, got %d", size)
	}
	return t.pieces(a, everySizes(t.shape[a], size))
}

// Split splits t along dim into pieces with the given sizes, like
// torch.split(t, sizes, dim). The pieces are views of t. It fails with
// ErrShape when the sizes do not add up to the dimension, and with
// ErrArgument when one is negative.
func (t *Tensor) Split(sizes []int, dim int) []*Tensor {
	const op = "Split"
	t.live(op)
	a := normAxis(op, dim, len(t.shape))
	sum := 0
	for _, s := range sizes {
		if s < 0 {
			fail(op, ErrArgument, "negative size in %v", sizes)
		}
		sum += s
	}
	if sum != t.shape[a] {
		fail(op, ErrShape, "sizes %v add up to %d, but dimension %d of %s is %d", sizes, sum, dim, shapeString(t.shape), t.shape[a])
	}
	return t.pieces(a, append([]int(nil), sizes...))
}

// catPlan checks the inputs of Cat and returns the output shape, the axis,
// the promoted dtype and each input's start along the axis; skip marks
// legacy 1-D empty inputs, which PyTorch ignores whatever their rank.
type catPlan struct {
	shape  []int
	axis   int
	dtype  DType
	starts []int
	skip   []bool
}

func planCat(op string, ts []*Tensor, dim int) catPlan {
	if len(ts) == 0 {
		fail(op, ErrArgument, "no tensors to concatenate")
	}
	sameDevice(op, ts...)
	p := catPlan{starts: make([]int, len(ts)), skip: make([]bool, len(ts)), dtype: ts[0].dtype}
	ref := -1
	for i, t := range ts {
		p.skip[i] = len(t.shape) == 1 && t.shape[0] == 0
		if ref < 0 && !p.skip[i] {
			ref = i
		}
		p.dtype = backends.Promote(p.dtype, t.dtype)
	}
	if ref < 0 { // every input is [0]
		ref = 0
		p.skip[0] = false
	}
	r := ts[ref].shape
	if len(r) == 0 {
		fail(op, ErrShape, "cannot concatenate 0-d tensors; use Stack")
	}
	p.axis = normAxis(op, dim, len(r))
	p.shape = append([]int(nil), r...)
	p.shape[p.axis] = 0
	for i, t := range ts {
		if p.skip[i] {
			continue
		}
		ok := len(t.shape) == len(r)
		for d := 0; ok && d < len(r); d++ {
			ok = d == p.axis || t.shape[d] == r[d]
		}
		if !ok {
			fail(op, ErrShape, "tensor %d has shape %s, tensor %d has %s: shapes must match except in dimension %d",
				i, shapeString(t.shape), ref, shapeString(r), p.axis)
		}
		p.starts[i] = p.shape[p.axis]
		p.shape[p.axis] = checkedAdd(op, fmt.Sprintf("dimension %d of the result", p.axis), p.shape[p.axis], t.shape[p.axis])
	}
	return p
}

func catWith(op string, ts []*Tensor, p catPlan) *Tensor {
	out := newTensor(op, ts[0].dev, p.dtype, p.shape)
	ov := out.view()
	for i, t := range ts {
		if p.skip[i] || t.NumElements() == 0 {
			continue
		}
		out.backend().Copy(sliceOf(ov, p.axis, p.starts[i], 1, t.shape[p.axis]), t.view())
	}
	return out
}

// gradInputs builds one gradient per input that requires one, nil elsewhere.
func gradInputs(ts []*Tensor, grad func(i int, t *Tensor) *Tensor) []*Tensor {
	out := make([]*Tensor, len(ts))
	for i, t := range ts {
		if t.requiresGrad {
			out[i] = grad(i, t)
		}
	}
	return out
}

// Cat concatenates tensors along dim, like torch.cat: every input has the
// same shape except in dim, and the result has the dtype the inputs
// promote to (PyTorch's rules). As in PyTorch, 1-D empty inputs (shape
// [0]) are skipped whatever the others' rank. It fails with ErrArgument
// for an empty list or a dimension out of range, ErrShape when shapes
// differ outside dim or the inputs are 0-d, and
// ErrDevice when the inputs live on different devices.
func Cat(tensors []*Tensor, dim int) *Tensor {
	const op = "Cat"
	ts := append([]*Tensor(nil), tensors...)
	p := planCat(op, ts, dim)
	out := catWith(op, ts, p)
	return record("cat", map[string]any{"dim": p.axis}, out, ts, func(g *Tensor) []*Tensor {
		return gradInputs(ts, func(i int, t *Tensor) *Tensor {
			if p.skip[i] {
				return rawFull(op, g.dev, t.dtype, t.shape, 0)
			}
			return castGrad(rawNarrow(g, p.axis, p.starts[i], t.shape[p.axis]), t)
		})
	})
}

// Stack joins tensors of one shape along a new dimension dim (negative
// counts from the end of the result), like torch.stack; the result has
// the dtype the inputs promote to. It fails with ErrArgument for an empty
// list or a dimension out of range, ErrShape when shapes differ, and
// ErrDevice when the inputs live on different devices.
func Stack(tensors []*Tensor, dim int) *Tensor {
	const op = "Stack"
	ts := append([]*Tensor(nil), tensors...)
	if len(ts) == 0 {
		fail(op, ErrArgument, "no tensors to stack")
	}
	sameDevice(op, ts...)
	r := ts[0].shape
	dtype := ts[0].dtype
	for i, t := range ts {
		if !sameShape(t.shape, r) {
			fail(op, ErrShape, "tensor %d has shape %s, tensor 0 has %s: stacked tensors must have one shape", i, shapeString(t.shape), shapeString(r))
		}
		dtype = backends.Promote(dtype, t.dtype)
	}
	a := normAxis(op, dim, len(r)+1)
	shape := append(append(append([]int{}, r[:a]...), len(ts)), r[a:]...)
	out := newTensor(op, ts[0].dev, dtype, shape)
	if out.NumElements() > 0 {
		ov := out.view()
		for i, t := range ts {
			out.backend().Copy(selectOf(ov, a, i), t.view())
		}
	}
	return record("stack", map[string]any{"dim": a}, out, ts, func(g *Tensor) []*Tensor {
		return gradInputs(ts, func(i int, t *Tensor) *Tensor { return castGrad(rawSelect(g, a, i), t) })
	})
}

// Padding modes of Pad.
const (
	padConstant = iota
	padReflect
	padReplicate
	padCircular
)

func parsePadMode(op, mode string) int {
	switch mode {
	case "constant", "":
		return padConstant
	case "reflect":
		return padReflect
	case "replicate", "edge":
		return padReplicate
	case "circular":
		return padCircular
	}
	fail(op, ErrArgument, "unknown padding mode %q (want constant, reflect, replicate (or edge), circular)", mode)
	return 0
}

// padSource returns, for output position j of a dimension of size n
// padded by before, the input position it copies from.
func padSource(mode, n, before, j int) int {
	k := j - before
	switch mode {
	case padReflect:
		if n == 1 {
			return 0
		}
		p := 2 * (n - 1)
		k = ((k % p) + p) % p
		if k >= n {
			k = p - k
		}
	case padReplicate:
		k = min(max(k, 0), n-1)
	case padCircular:
		k = ((k % n) + n) % n
	}
	return k
}

// Pad pads t with torch.nn.functional.pad's conventions: pads holds
// (before, after) pairs starting from the last dimension — [left, right]
// pads the last dimension, [left, right, top, bottom] the last two, and so
// on. Negative pads crop. Modes:
//   - "constant": new elements are value;
//   - "reflect": mirror without repeating the edge (pads must be smaller
//     than the dimension);
//   - "replicate" (or its NumPy name "edge"): repeat the edge element;
//   - "circular": wrap around (pads at most the dimension).
//
// value is used by "constant" only. Unlike PyTorch, the non-constant modes
// pad any number of trailing dimensions of a tensor of any rank. The
// result is a new tensor. It fails with ErrArgument for an odd number of
// pads, more pairs than dimensions, an unknown mode, or pads the mode
// cannot honour, and with ErrShape when a padded size would be negative.
func (t *Tensor) Pad(pads []int, mode string, value float64) *Tensor {
	const op = "Pad"
	t.live(op)
	m := parsePadMode(op, mode)
	r := len(t.shape)
	if len(pads)%2 != 0 || len(pads)/2 > r {
		fail(op, ErrArgument, "pads %v must be (before, after) pairs, at most one per dimension of %s", pads, shapeString(t.shape))
	}
	pads = append([]int(nil), pads...)
	before, after := make([]int, r), make([]int, r)
	outShape := append([]int(nil), t.shape...)
	for i := 0; i < len(pads)/2; i++ {
		d := r - 1 - i
		l, h, n := pads[2*i], pads[2*i+1], t.shape[d]
		before[d], after[d] = l, h
		outShape[d] = checkedAdd(op, fmt.Sprintf("pads (%d, %d) of dimension %d of %s", l, h, d, shapeString(t.shape)), n, l, h)
		if outShape[d] < 0 {
			fail(op, ErrShape, "pads (%d, %d) make dimension %d of %s negative", l, h, d, shapeString(t.shape))
		}
		if m == padConstant || (l == 0 && h == 0) {
			continue
		}
		switch {
		case n == 0:
			fail(op, ErrArgument, "%s padding of empty dimension %d of %s", mode, d, shapeString(t.shape))
		case m == padReflect && (l >= n || h >= n):
			fail(op, ErrArgument, "reflect pads (%d, %d) must be smaller than dimension %d of %s", l, h, d, shapeString(t.shape))
		case m == padCircular && (l > n || h > n):
			fail(op, ErrArgument, "circular pads (%d, %d) must not exceed dimension %d of %s", l, h, d, shapeString(t.shape))
		}
	}
	attrs := map[string]any{"pads": pads, "mode": mode, "value": value}
	if m == padConstant {
		out := rawFull(op, t.dev, t.dtype, outShape, value)
		if src, dst, ok := padOverlap(t.view(), out.view(), before); ok {
			out.backend().Copy(dst, src)
		}
		return record("pad", attrs, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
			z := rawFull(op, g.dev, g.dtype, t.shape, 0)
			if dst, src, ok := padOverlap(z.view(), g.view(), before); ok {
				z.backend().Copy(dst, src)
			}
			return []*Tensor{castGrad(z, t)}
		})
	}
	// Other modes: per padded dimension, a gather along it with host-built
	// source positions; the adjoint scatter-adds into the smaller shape, so
	// reflected and replicated elements accumulate every contribution.
	cur := t.newView(t.shape, t.strides, t.offset)
	for d := range r {
		if before[d] == 0 && after[d] == 0 {
			continue
		}
		shape := append([]int(nil), cur.shape...)
		shape[d] = outShape[d]
		next := newTensor(op, t.dev, t.dtype, shape)
		if next.NumElements() > 0 {
			idx := padIndex(op, t.dev.Inner(), m, cur.shape[d], before[d], shape, d)
			next.backend().Gather(next.view(), cur.view(), idx.view(), d)
			idx.Release()
		}
		cur.Release()
		cur = next
	}
	return record("pad", attrs, cur, []*Tensor{t}, func(g *Tensor) []*Tensor {
		gc := g.newView(g.shape, g.strides, g.offset)
		for d := r - 1; d >= 0; d-- {
			if before[d] == 0 && after[d] == 0 {
				continue
			}
			shape := append([]int(nil), gc.shape...)
			shape[d] = t.shape[d]
			prev := rawFull(op, g.dev, g.dtype, shape, 0)
			if gc.NumElements() > 0 {
				idx := padIndex(op, g.dev.Inner(), m, t.shape[d], before[d], gc.shape, d)
				prev.backend().Scatter(prev.view(), idx.view(), gc.view(), d, true)
				idx.Release()
			}
			gc.Release()
			gc = prev
		}
		return []*Tensor{castGrad(gc, t)}
	})
}

// padIndex uploads the source positions of a padded dimension d of size n
// and returns them as an Int64 view of shape (stride 0 off dimension d).
func padIndex(op string, dev Device, mode, n, before int, shape []int, d int) *Tensor {
	m := shape[d]
	src := make([]int64, m)
	for j := range src {
		src[j] = int64(padSource(mode, n, before, j))
	}
	raw := make([]byte, 8*m)
	for j, v := range src {
		putInt64(raw[8*j:], v)
	}
	it := fromBytes(op, dev, Int64, []int{m}, raw)
	strides := make([]int, len(shape))
	strides[d] = 1
	v := it.newView(append([]int(nil), shape...), strides, 0)
	it.Release()
	return v
}

// padOverlap returns the parts of a smaller view in and a padded view out
// that correspond under constant padding by before (negative pads crop),
// and false when they do not overlap.
func padOverlap(in, out backends.View, before []int) (backends.View, backends.View, bool) {
	for d := range in.Shape {
		n, l := in.Shape[d], before[d]
		inLo, outLo := max(0, -l), max(0, l)
		count := min(n-inLo, out.Shape[d]-outLo)
		if count <= 0 {
			return in, out, false
		}
		in = sliceOf(in, d, inLo, 1, count)
		out = sliceOf(out, d, outLo, 1, count)
	}
	return in, out, true
}

// putInt64 stores v little-endian, as backends expect Int64 buffers.
func putInt64(b []byte, v int64) {
	u := uint64(v)
	for i := range 8 {
		b[i] = byte(u >> (8 * i))
	}
}
