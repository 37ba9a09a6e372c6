package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// Indexing ops: gather and scatter along a dimension, index selection,
// masking and selection by condition, and the integer helpers Nonzero and
// OneHot.
//
// Index tensors hold integers; Int64 is used as is and Int32, Int16, Int8
// or Uint8 are converted (PyTorch insists on int64), while float and bool
// indices fail with ErrDType. An index i of a dimension of size n must lie
// in [-n, n); a negative one counts from the end, as in Python and NumPy's
// take (the backends' Gather and Scatter work that way; PyTorch rejects
// negative indices). An index outside that range is found by the device
// kernel, so it is reported as a device failure (ErrDeviceFailed) at the
// next Device.Sync or host read, not as a panic at the call.

// indexInt64 checks that index holds integers and returns it as Int64 (a
// new view when it already is); the caller releases it.
func indexInt64(op string, index *Tensor) *Tensor {
	if !index.dtype.IsInt() {
		fail(op, ErrDType, "index must hold integers (int64), got %s %s", shapeString(index.shape), index.dtype)
	}
	return rawCast(op, index, Int64)
}

// fitShape returns v viewed with shape (its strides kept): the leading
// part of v along each dimension, which the caller has checked fits.
func fitShape(v backends.View, shape []int) backends.View {
	v.Shape = append([]int(nil), shape...)
	return v
}

// alongAxis returns shape with dimension axis set to n.
func alongAxis(shape []int, axis, n int) []int {
	s := append([]int(nil), shape...)
	s[axis] = n
	return s
}

// scalarExpanded returns a tensor of dtype holding v, viewed with shape
// through stride-0 dimensions: one element of memory.
func scalarExpanded(op string, dev Device, dtype DType, v float64, shape []int) *Tensor {
	s := rawFull(op, dev, dtype, []int{}, v)
	out := s.newView(append([]int(nil), shape...), make([]int, len(shape)), s.offset)
	s.Release()
	return out
}

// rawGather returns out[…i…] = x[…index[…i…]…] along axis, with out shaped
// like index (Int64, same rank as x, no larger than x off axis). No graph.
func rawGather(op string, x *Tensor, axis int, index *Tensor) *Tensor {
	out := newTensor(op, x.dev, x.dtype, index.shape)
	if out.NumElements() > 0 {
		xv := fitShape(x.view(), alongAxis(index.shape, axis, x.shape[axis]))
		out.backend().Gather(out.view(), xv, index.view(), axis)
	}
	return out
}

// rawScatterInto writes src into out (a tensor the caller owns and may
// modify) at the positions index gives along axis, adding when add is set.
// index is Int64 with out's rank, no larger than out off axis and no larger
// than src anywhere; src may be a stride-0 broadcast. No graph.
func rawScatterInto(out *Tensor, axis int, index, src *Tensor, add bool) {
	if index.NumElements() == 0 {
		return
	}
	ov := fitShape(out.view(), alongAxis(index.shape, axis, out.shape[axis]))
	out.backend().Scatter(ov, index.view(), fitShape(src.view(), index.shape), axis, add)
}

// rawScatter returns a copy of x with src scattered into it along axis
// (see rawScatterInto). No graph.
func rawScatter(op string, x *Tensor, axis int, index, src *Tensor, add bool) *Tensor {
	out := newTensor(op, x.dev, x.dtype, x.shape)
	out.backend().Copy(out.view(), x.view())
	rawScatterInto(out, axis, index, src, add)
	return out
}

// checkIndexShape checks gather/scatter shapes: index has x's rank (at
// least 1) and is no larger than x in any dimension but axis (and no
// larger than src, when given, in every dimension). It returns the axis.
func checkIndexShape(op string, x *Tensor, dim int, index, src *Tensor) int {
	r := len(x.shape)
	if r == 0 {
		fail(op, ErrShape, "input is 0-d; view it as 1-d with Reshape(1)")
	}
	a := normAxis(op, dim, r)
	if len(index.shape) != r {
		fail(op, ErrShape, "index %s has rank %d, input %s has rank %d", shapeString(index.shape), len(index.shape), shapeString(x.shape), r)
	}
	for d := range r {
		if d != a && index.shape[d] > x.shape[d] {
			fail(op, ErrShape, "index %s is larger than input %s in dimension %d", shapeString(index.shape), shapeString(x.shape), d)
		}
	}
	if src != nil {
		if len(src.shape) != r {
			fail(op, ErrShape, "src %s has rank %d, input %s has rank %d", shapeString(src.shape), len(src.shape), shapeString(x.shape), r)
		}
		for d := range r {
			if index.shape[d] > src.shape[d] {
				fail(op, ErrShape, "index %s is larger than src %s in dimension %d", shapeString(index.shape), shapeString(src.shape), d)
			}
		}
		if src.dtype != x.dtype {
			fail(op, ErrDType, "src is %s but the input is %s; convert one with To", src.dtype, x.dtype)
		}
	}
	return a
}

// Gather returns out[i][j][k] = t[index[i][j][k]][j][k] (for dim 0; the
// index replaces the coordinate of dim), like torch.gather. index has t's
// rank and no larger size than t in the other dimensions; the result has
// index's shape and t's dtype. Gradients scatter-add back into t. It fails
// with ErrDType for a non-integer index, ErrShape for mismatched shapes or
// a 0-d t, and ErrArgument for a dimension out of range.
func (t *Tensor) Gather(dim int, index *Tensor) *Tensor {
	const op = "Gather"
	sameDevice(op, t, index)
	a := checkIndexShape(op, t, dim, index, nil)
	idx := indexInt64(op, index)
	out := rawGather(op, t, a, idx)
	idx.Release()
	return record("gather", map[string]any{"dim": a}, out, []*Tensor{t, index}, func(g *Tensor) []*Tensor {
		// The index is converted again rather than kept: a graph must not
		// hold device memory the caller cannot release.
		idx := indexInt64(op, index)
		defer idx.Release()
		z := rawFull(op, g.dev, g.dtype, t.shape, 0)
		rawScatterInto(z, a, idx, g, true)
		return []*Tensor{castGrad(z, t), nil}
	})
}

// scatterGrads returns the gradients of a scatter: for the input, g with
// the written positions zeroed (zero) or left alone (add); for src, the
// gather of g at index, zero where src was not read.
func scatterGrads(op string, g, x *Tensor, a int, idx, src *Tensor, add bool) []*Tensor {
	var gx, gs *Tensor
	if x.requiresGrad {
		if add {
			gx = castGrad(g.newView(g.shape, g.strides, g.offset), x)
		} else {
			zero := scalarExpanded(op, g.dev, g.dtype, 0, idx.shape)
			gx = castGrad(rawScatter(op, g, a, idx, zero, false), x)
			zero.Release()
		}
	}
	if src != nil && src.requiresGrad {
		gs = rawGather(op, g, a, idx)
		if !sameShape(gs.shape, src.shape) {
			z := rawFull(op, g.dev, g.dtype, src.shape, 0)
			if gs.NumElements() > 0 {
				z.backend().Copy(fitShape(z.view(), gs.shape), gs.view())
			}
			gs.Release()
			gs = z
		}
		gs = castGrad(gs, src)
	}
	return []*Tensor{gx, nil, gs}
}

// Scatter returns a copy of t with src written at the positions index
// gives along dim: out[index[i][j][k]][j][k] = src[i][j][k] for dim 0,
// like torch.Tensor.scatter (t itself is not modified). index has t's rank,
// is no larger than src in any dimension and no larger than t outside dim;
// src has t's dtype. Where index repeats a position, which write wins is
// up to the backend. Gradients: t's is g with the written positions
// zeroed, src's is g gathered at index. It fails with ErrDType for a
// non-integer index or a src of another dtype, and ErrShape for
// mismatched shapes.
func (t *Tensor) Scatter(dim int, index, src *Tensor) *Tensor {
	return t.scatter("Scatter", "scatter", dim, index, src, false)
}

// ScatterAdd returns a copy of t with src added at the positions index
// gives along dim: out[index[i][j][k]][j][k] += src[i][j][k] for dim 0,
// like torch.Tensor.scatter_add; repeated positions accumulate. Shapes and
// dtypes are as for Scatter. Gradients: t's is g, src's is g gathered at
// index.
func (t *Tensor) ScatterAdd(dim int, index, src *Tensor) *Tensor {
	return t.scatter("ScatterAdd", "scatter_add", dim, index, src, true)
}

func (t *Tensor) scatter(op, name string, dim int, index, src *Tensor, add bool) *Tensor {
	sameDevice(op, t, index, src)
	a := checkIndexShape(op, t, dim, index, src)
	idx := indexInt64(op, index)
	out := rawScatter(op, t, a, idx, src, add)
	idx.Release()
	return record(name, map[string]any{"dim": a}, out, []*Tensor{t, index, src}, func(g *Tensor) []*Tensor {
		idx := indexInt64(op, index)
		defer idx.Release()
		return scatterGrads(op, g, t, a, idx, src, add)
	})
}

// ScatterValue returns a copy of t with value written at the positions
// index gives along dim, like torch.Tensor.scatter(dim, index, value).
// index has t's rank and is no larger than t outside dim. The gradient is
// g with the written positions zeroed. It fails like Scatter.
func (t *Tensor) ScatterValue(dim int, index *Tensor, value float64) *Tensor {
	const op = "ScatterValue"
	sameDevice(op, t, index)
	a := checkIndexShape(op, t, dim, index, nil)
	idx := indexInt64(op, index)
	src := scalarExpanded(op, t.dev, t.dtype, value, index.shape)
	out := rawScatter(op, t, a, idx, src, false)
	src.Release()
	idx.Release()
	return record("scatter_value", map[string]any{"dim": a, "value": value}, out, []*Tensor{t, index}, func(g *Tensor) []*Tensor {
		idx := indexInt64(op, index)
		defer idx.Release()
		return scatterGrads(op, g, t, a, idx, nil, false)[:2]
	})
}

// IndexSelect returns the entries of t at the positions index (1-D) lists
// along dim, in that order and with repeats, like torch.index_select: the
// result has t's shape with dim resized to len(index). It runs as the
// backend's Gather over index expanded by stride 0, so index is not
// copied. The gradient scatter-adds g into zeros, accumulating repeats. It
// fails with ErrDType for a non-integer index and ErrShape when index is
// not 1-D (a 0-d index counts as one position) or t is 0-d.
func (t *Tensor) IndexSelect(dim int, index *Tensor) *Tensor {
	const op = "IndexSelect"
	sameDevice(op, t, index)
	if len(index.shape) > 1 {
		fail(op, ErrShape, "index must be 1-D, got %s", shapeString(index.shape))
	}
	if len(t.shape) == 0 {
		fail(op, ErrShape, "input is 0-d; view it as 1-d with Reshape(1)")
	}
	a := normAxis(op, dim, len(t.shape))
	ix := selectIndex(op, index, t.shape, a)
	out := rawGather(op, t, a, ix)
	ix.Release()
	return record("index_select", map[string]any{"dim": a}, out, []*Tensor{t, index}, func(g *Tensor) []*Tensor {
		ix := selectIndex(op, index, t.shape, a)
		defer ix.Release()
		z := rawFull(op, g.dev, g.dtype, t.shape, 0)
		rawScatterInto(z, a, ix, g, true)
		return []*Tensor{castGrad(z, t), nil}
	})
}

// selectIndex returns the 1-D (or 0-d) index as Int64 viewed with shape
// (resized along axis to the index's length) by stride 0 off axis: the
// gather index of IndexSelect, without copying it.
func selectIndex(op string, index *Tensor, shape []int, axis int) *Tensor {
	idx := indexInt64(op, index)
	k, st := 1, 0
	if len(idx.shape) == 1 {
		k, st = idx.shape[0], idx.strides[0]
	}
	s := alongAxis(shape, axis, k)
	strides := make([]int, len(s))
	strides[axis] = st
	ix := idx.newView(s, strides, idx.offset)
	idx.Release()
	return ix
}

// rawWhere returns cond ? a : b element-wise with cond (Bool), a and b
// broadcast together and a and b promoted to a common dtype. No graph.
func rawWhere(op string, cond, a, b *Tensor) *Tensor {
	sameDevice(op, cond, a, b)
	if cond.dtype != Bool {
		fail(op, ErrDType, "condition must be bool, got %s %s (compare it, e.g. with Ne, first)", shapeString(cond.shape), cond.dtype)
	}
	shape := broadcastShapes(op, broadcastShapes(op, cond.shape, a.shape), b.shape)
	ct := backends.Promote(a.dtype, b.dtype)
	if a.dtype != ct {
		a = rawCast(op, a, ct)
		defer a.Release()
	}
	if b.dtype != ct {
		b = rawCast(op, b, ct)
		defer b.Release()
	}
	out := newTensor(op, cond.dev, ct, shape)
	out.backend().Where(out.view(), cond.broadcastView(shape), a.broadcastView(shape), b.broadcastView(shape))
	return out
}

// Where returns a where cond is true and b elsewhere, like torch.where:
// cond (Bool), a and b broadcast together, and the result has the dtype a
// and b promote to. Each branch's gradient is g where it was chosen and 0
// elsewhere, summed back to the branch's shape. It fails with ErrDType for
// a non-bool cond, ErrShape when the shapes do not broadcast and ErrDevice
// for tensors on different devices.
func Where(cond, a, b *Tensor) *Tensor {
	const op = "Where"
	out := rawWhere(op, cond, a, b)
	return record("where", nil, out, []*Tensor{cond, a, b}, func(g *Tensor) []*Tensor {
		var ga, gb *Tensor
		if a.requiresGrad || b.requiresGrad {
			zero := scalarExpanded(op, g.dev, g.dtype, 0, g.shape)
			if a.requiresGrad {
				ga = gradFor(rawWhere(op, cond, g, zero), a)
			}
			if b.requiresGrad {
				gb = gradFor(rawWhere(op, cond, zero, g), b)
			}
			zero.Release()
		}
		return []*Tensor{nil, ga, gb}
	})
}

// MaskedFill returns a copy of t with value wherever mask (Bool,
// broadcast with t) is true, like torch.Tensor.masked_fill; the result has
// the broadcast shape and t's dtype. The gradient is g zeroed where mask
// is true (summed back to t's shape). It fails with ErrDType for a
// non-bool mask and ErrShape when the shapes do not broadcast.
func (t *Tensor) MaskedFill(mask *Tensor, value float64) *Tensor {
	const op = "MaskedFill"
	sameDevice(op, t, mask)
	if mask.dtype != Bool {
		fail(op, ErrDType, "mask must be bool, got %s %s", shapeString(mask.shape), mask.dtype)
	}
	fill := scalarExpanded(op, t.dev, t.dtype, value, []int{})
	out := rawWhere(op, mask, fill, t)
	fill.Release()
	return record("masked_fill", map[string]any{"value": value}, out, []*Tensor{t, mask}, func(g *Tensor) []*Tensor {
		zero := scalarExpanded(op, g.dev, g.dtype, 0, []int{})
		gt := rawWhere(op, mask, zero, g)
		zero.Release()
		return []*Tensor{gradFor(gt, t), nil}
	})
}

// Nonzero returns the coordinates of t's non-zero elements as an Int64
// tensor [n, rank], in row-major order, like torch.nonzero. It reads t to
// the host (a synchronisation point), so it panics with ErrDeviceFailed if
// the device failed.
func (t *Tensor) Nonzero() *Tensor {
	const op = "Nonzero"
	t.live(op)
	raw := t.hostBytes(op)
	r := len(t.shape)
	var coords []int64
	idx := make([]int, r)
	for i := range t.NumElements() {
		if decode(t.dtype, raw, i) != 0 {
			for _, c := range idx {
				coords = append(coords, int64(c))
			}
		}
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < t.shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	n := 0
	if r > 0 {
		n = len(coords) / r
	} else if t.NumElements() == 1 && decode(t.dtype, raw, 0) != 0 {
		n = 1
	}
	buf := make([]byte, 8*len(coords))
	for i, c := range coords {
		putInt64(buf[8*i:], c)
	}
	return fromBytes(op, t.dev, Int64, []int{n, r}, buf)
}

// OneHot returns the one-hot encoding of an Int64 tensor of class indices,
// like torch.nn.functional.one_hot: an Int64 tensor with t's shape plus a
// last dimension of numClasses, 1 at each index and 0 elsewhere. With
// numClasses -1 it uses one more than the largest index, reading t to the
// host. It fails with ErrDType for a non-Int64 t and ErrArgument for a bad
// numClasses (or, when inferring it, an empty t or a negative index). An
// index outside [0, numClasses) is a device failure reported at the next
// sync.
func (t *Tensor) OneHot(numClasses int) *Tensor {
	const op = "OneHot"
	t.live(op)
	if t.dtype != Int64 {
		fail(op, ErrDType, "class indices must be int64, got %s", t.dtype)
	}
	checked := false
	if numClasses == -1 {
		vals := t.Int64s()
		if len(vals) == 0 {
			fail(op, ErrArgument, "cannot infer the number of classes of an empty tensor")
		}
		hi := vals[0]
		for _, v := range vals {
			if v < 0 {
				fail(op, ErrArgument, "class index %d is negative", v)
			}
			hi = max(hi, v)
		}
		numClasses, checked = int(hi)+1, true
	}
	if numClasses < 0 {
		fail(op, ErrArgument, "number of classes must be positive or -1, got %d", numClasses)
	}
	r := len(t.shape)
	shape := append(append([]int(nil), t.shape...), numClasses)
	out := rawFull(op, t.dev, Int64, shape, 0)
	if t.NumElements() == 0 {
		return t.traceOneHot(out, numClasses)
	}
	idx := t.newView(t.shape, t.strides, t.offset)
	if !checked {
		// Backends count negative indices from the end; make them fall
		// outside [0, numClasses) instead, so they fail as PyTorch's do.
		neg := rawScalar(op, backends.Lt, idx, 0, false)
		big := scalarExpanded(op, t.dev, Int64, float64(numClasses), []int{})
		safe := rawWhere(op, neg, big, idx)
		neg.Release()
		big.Release()
		idx.Release()
		idx = safe
	}
	ix := idx.newView(append(append([]int(nil), idx.shape...), 1), append(append([]int(nil), idx.strides...), 0), idx.offset)
	idx.Release()
	one := scalarExpanded(op, t.dev, Int64, 1, ix.shape)
	out.backend().Scatter(out.view(), ix.view(), one.view(), r, false)
	ix.Release()
	one.Release()
	return t.traceOneHot(out, numClasses)
}

// traceOneHot records OneHot's node when t is traced (see TraceInput).
func (t *Tensor) traceOneHot(out *Tensor, numClasses int) *Tensor {
	if !t.traced {
		return out
	}
	return recordTraced("one_hot", map[string]any{"num_classes": numClasses}, out, t)
}
