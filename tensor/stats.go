package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Counting (Bincount, Histc) and order statistics (Median, Nanmedian,
// Quantile, Mode). Counting is a Scatter with accumulation into zeros, so
// it runs on every backend; it has no gradient, as in PyTorch.

// Bincount counts the occurrences of each value of the 1-D non-negative
// integer tensor t: element i of the result is the number of times i
// occurs in t, or, with weights (t's shape), the sum of the weights where
// t is i. The result has max(max(t)+1, minlength) elements (minlength for
// an empty t) and is Int64 without weights, the weights' dtype for Float32
// and Float64 weights and Float64 for other weights, as torch.bincount. It
// reads t to the host to find its maximum (a synchronisation point) and
// records no gradient. It panics with ErrDType for a t that is not an
// integer tensor, ErrShape for a t that is not 1-D or weights of another
// shape, and ErrArgument for a negative value or minlength.
func (t *Tensor) Bincount(weights *Tensor, minlength int) *Tensor {
	const op = "Bincount"
	t.live(op)
	if !t.dtype.IsInt() {
		fail(op, ErrDType, "input must hold integers, got %s %s", shapeString(t.shape), t.dtype)
	}
	if len(t.shape) != 1 {
		fail(op, ErrShape, "input must be 1-D, got %s", shapeString(t.shape))
	}
	if minlength < 0 {
		fail(op, ErrArgument, "minlength must be non-negative, got %d", minlength)
	}
	outType := Int64
	if weights != nil {
		sameDevice(op, t, weights)
		if !sameShape(weights.shape, t.shape) {
			fail(op, ErrShape, "weights %s must have the input's shape %s", shapeString(weights.shape), shapeString(t.shape))
		}
		outType = Float64
		if weights.dtype == Float32 {
			outType = Float32
		}
	}
	n := minlength
	raw := t.hostBytes(op)
	for i := range t.NumElements() {
		v := decode(t.dtype, raw, i)
		if v < 0 {
			fail(op, ErrArgument, "input holds a negative value %v", v)
		}
		n = max(n, int(v)+1)
	}
	out := rawFull(op, t.dev, outType, []int{n}, 0)
	idx := indexInt64(op, t)
	defer idx.Release()
	var src *Tensor
	if weights == nil {
		src = rawFull(op, t.dev, Int64, t.shape, 1)
	} else {
		src = rawCast(op, weights, outType)
	}
	defer src.Release()
	rawScatterInto(out, 0, idx, src, true)
	return out
}

// Histc returns the histogram of t in bins equal-width bins over
// [min, max], as torch.histc: a 1-D tensor of t's float dtype counting the
// elements in each bin (the last bin includes max; elements outside the
// range are not counted, and NaNs count in the first bin, as PyTorch 1.13
// counts them). With min == max the range is t's own
// minimum and maximum, widened by 1 on each side when those are equal. It
// records no gradient, and reads t to the host only when it must find the
// range. It panics with ErrDType for an integer t and ErrArgument for
// bins < 1, min > max or a range that is not finite.
func (t *Tensor) Histc(bins int, min, max float64) *Tensor {
	const op = "Histc"
	t.live(op)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "input must be a float tensor, got %s %s", shapeString(t.shape), t.dtype)
	}
	if bins < 1 {
		fail(op, ErrArgument, "bins must be positive, got %d", bins)
	}
	if min > max {
		fail(op, ErrArgument, "max %v must be larger than min %v", max, min)
	}
	if min == max && t.NumElements() > 0 {
		all := normAxes(op, nil, len(t.shape))
		lo := rawReduce(op, backends.Min, t, all, false)
		hi := rawReduce(op, backends.Max, t, all, false)
		min, max = lo.Float64s()[0], hi.Float64s()[0]
		lo.Release()
		hi.Release()
	}
	if min == max {
		min, max = min-1, max+1
	}
	if t.dtype == Float32 { // the edges are in t's dtype, as in PyTorch
		min, max = float64(float32(min)), float64(float32(max))
	}
	if math.IsInf(min, 0) || math.IsInf(max, 0) || math.IsNaN(min) || math.IsNaN(max) {
		fail(op, ErrArgument, "range of [%v, %v] is not finite", min, max)
	}
	// bin = ⌊(x − min)·bins / (max − min)⌋, bins − 1 at x = max; elements
	// outside [min, max] go to an extra bin that is cut off.
	pos := rawScalar(op, subOp, t, min, false)
	pos = mathConsume(pos, func(p *Tensor) *Tensor { return rawScalar(op, mulOp, p, float64(bins), false) })
	pos = mathConsume(pos, func(p *Tensor) *Tensor { return rawScalar(op, divOp, p, max-min, false) })
	pos = mathConsume(pos, func(p *Tensor) *Tensor { return rawUnary(op, backends.Floor, p, 0, 0) })
	pos = mathConsume(pos, func(p *Tensor) *Tensor { return rawUnary(op, backends.Clamp, p, 0, float64(bins-1)) })
	// NaN counts in the first bin, as in PyTorch 1.13 (whose range test
	// lets it through and whose bin index clamps it to 0).
	isNaN := rawUnary(op, backends.IsNaN, t, 0, 0)
	pos = mathMaskZero(op, isNaN, pos)
	isNaN.Release()
	lt := rawScalar(op, backends.Lt, t, min, false)
	gt := rawScalar(op, backends.Gt, t, max, false)
	outside := rawBinary(op, backends.Or, lt, gt)
	lt.Release()
	gt.Release()
	extra := mathScalarTensor(op, t.dev, t.dtype, float64(bins))
	bin := mathWhere(op, outside, extra, pos, t.shape)
	outside.Release()
	extra.Release()
	pos.Release()
	idx := rawCast(op, bin, Int64)
	bin.Release()
	flat := rawReshape(op, idx, []int{-1})
	idx.Release()
	one := rawFull(op, t.dev, t.dtype, flat.shape, 1)
	out := rawFull(op, t.dev, t.dtype, []int{bins + 1}, 0)
	rawScatterInto(out, 0, flat, one, true)
	one.Release()
	flat.Release()
	res := rawNarrow(out, 0, 0, bins)
	out.Release()
	return res
}

// statsSelect returns, no graph, the position along axis (kept with size
// 1) of the median of each line of x sorted stably, with its value and its
// Int64 index in x. For the median a line holding NaN gives its first NaN
// (NaN sorts last); for the NaN-ignoring median the lower median of the
// numbers, or NaN when there are none.
func statsSelect(op string, x *Tensor, axis int, ignoreNaN bool) (values, indices *Tensor) {
	n := x.shape[axis]
	if n == 0 {
		fail(op, ErrShape, "cannot take the median over dimension %d of size 0 in %s", axis, shapeString(x.shape))
	}
	sv, si := mathSort(op, x, axis, false)
	defer sv.Release()
	defer si.Release()
	isNaN := rawUnary(op, backends.IsNaN, x, 0, 0)
	cnt := rawReduce(op, backends.Sum, isNaN, []int{axis}, true) // Int64
	isNaN.Release()
	var pos *Tensor
	if ignoreNaN {
		// ⌊(k − 1)/2⌋ for the k numbers, 0 when there are none.
		k := rawScalar(op, subOp, cnt, float64(n-1), true) // n − 1 − cnt = k − 1
		pos = rawScalar(op, backends.FloorDiv, k, 2, false)
		k.Release()
		pos = mathConsume(pos, func(p *Tensor) *Tensor { return rawScalar(op, backends.Maximum, p, 0, false) })
	} else {
		first := rawScalar(op, subOp, cnt, float64(n), true) // n − cnt: the first NaN
		has := rawScalar(op, backends.Gt, cnt, 0, false)
		mid := mathScalarTensor(op, x.dev, Int64, float64((n-1)/2))
		pos = mathWhere(op, has, first, mid, cnt.shape)
		first.Release()
		has.Release()
		mid.Release()
	}
	cnt.Release()
	values = rawGather(op, sv, axis, pos)
	indices = rawGather(op, si, axis, pos)
	pos.Release()
	return values, indices
}

// statsSqueeze returns t (kept with size 1 along axis) without that axis
// unless keep.
func statsSqueeze(t *Tensor, axis int, keep bool) *Tensor {
	if keep {
		return t
	}
	return t.Squeeze(axis)
}

func (t *Tensor) medianDim(op, name string, dim int, keep, ignoreNaN bool) (values, indices *Tensor) {
	t.live(op)
	if mathScalarDim(op, t, dim) {
		v, i := t.Reshape(1).medianDim(op, name, 0, false, ignoreNaN)
		return v.Reshape(), i.Reshape()
	}
	axis := normAxis(op, dim, len(t.shape))
	values, indices = statsSelect(op, t, axis, ignoreNaN)
	values = mathSelectBackward(name, map[string]any{"dim": axis, "keepdim": keep}, values, indices, t, axis)
	return statsSqueeze(values, axis, keep), statsSqueeze(indices, axis, keep)
}

func (t *Tensor) medianAll(op, name string, ignoreNaN bool) *Tensor {
	t.live(op)
	var out *Tensor
	if t.NumElements() == 0 {
		if !t.dtype.IsFloat() {
			fail(op, ErrShape, "cannot take the median of an empty %s tensor", t.dtype)
		}
		out = rawFull(op, t.dev, t.dtype, []int{}, math.NaN())
	} else {
		flat := rawReshape(op, t, []int{-1})
		v, i := statsSelect(op, flat, 0, ignoreNaN)
		flat.Release()
		i.Release()
		out = v.newView([]int{}, []int{}, v.offset)
		v.Release()
	}
	return record(name, nil, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		// PyTorch's evenly_distribute_backward: g shared equally by every
		// element equal to the result (every NaN when it is NaN).
		mask := mathExtremeMask(op, t, out)
		m := rawCast(op, mask, g.dtype)
		mask.Release()
		all := normAxes(op, nil, len(t.shape))
		cnt := rawReduce(op, backends.Sum, m, all, false)
		share := rawBinary(op, divOp, g, cnt)
		cnt.Release()
		d := rawBinary(op, mulOp, m, share)
		m.Release()
		share.Release()
		return []*Tensor{castGrad(d, t)}
	})
}

// Median returns the median of all of t's elements as a 0-d tensor: the
// lower of the two middle values for an even count, as torch.median, and
// NaN when t holds a NaN (or is an empty float tensor). Its gradient is
// shared equally by the elements equal to the median, as in PyTorch. It
// panics with ErrShape for an empty integer tensor.
func (t *Tensor) Median() *Tensor { return t.medianAll("Median", "median", false) }

// MedianDim returns the lower median of t along dim and its Int64 index in
// t, removing dim unless keep, as torch.median(dim): a line holding NaN
// gives NaN and the index of its first NaN; equal values are taken in
// their order in t. Gradients flow from values back to the selected
// elements. It panics with ErrArgument for a dim out of range and ErrShape
// for an empty dimension.
func (t *Tensor) MedianDim(dim int, keep bool) (values, indices *Tensor) {
	return t.medianDim("MedianDim", "median_dim", dim, keep, false)
}

// Nanmedian is Median ignoring NaNs: the lower median of t's numbers, NaN
// only when there are none, as torch.nanmedian.
func (t *Tensor) Nanmedian() *Tensor { return t.medianAll("Nanmedian", "nanmedian", true) }

// NanmedianDim is MedianDim ignoring NaNs, as torch.nanmedian(dim): a line
// of NaNs alone gives NaN (and index of its first element in sorted
// order).
func (t *Tensor) NanmedianDim(dim int, keep bool) (values, indices *Tensor) {
	return t.medianDim("NanmedianDim", "nanmedian_dim", dim, keep, true)
}

// Mode returns the most frequent value of t along dim and the Int64 index
// of its last occurrence in t, removing dim unless keep, as torch.mode:
// among equally frequent values the smallest wins, and each NaN counts
// once. Gradients flow from values back to the selected elements. It
// panics with ErrArgument for a dim out of range and ErrShape for an empty
// dimension.
func (t *Tensor) Mode(dim int, keep bool) (values, indices *Tensor) {
	const op = "Mode"
	t.live(op)
	if mathScalarDim(op, t, dim) {
		v, i := t.Reshape(1).Mode(0, false)
		return v.Reshape(), i.Reshape()
	}
	axis := normAxis(op, dim, len(t.shape))
	n := t.shape[axis]
	if n == 0 {
		fail(op, ErrShape, "cannot take the mode over dimension %d of size 0 in %s", axis, shapeString(t.shape))
	}
	sv, si := mathSort(op, t, axis, false)
	// Runs of equal values in sorted order: run ids from the cumulative
	// count of run starts, run lengths by a scatter-add of ones.
	start := rawFull(op, t.dev, Bool, t.shape, 1)
	if n > 1 {
		a, b := rawNarrow(sv, axis, 1, n-1), rawNarrow(sv, axis, 0, n-1)
		ne := rawBinary(op, backends.Ne, a, b)
		a.Release()
		b.Release()
		start.backend().Copy(sliceOf(start.view(), axis, 1, 1, n-1), ne.view())
		ne.Release()
	}
	run := mathScan(op, backends.Sum, start, axis, false)
	start.Release()
	run = mathConsume(run, func(r *Tensor) *Tensor { return rawScalar(op, subOp, r, 1, false) })
	counts := rawFull(op, t.dev, Int64, t.shape, 0)
	ones := rawFull(op, t.dev, Int64, t.shape, 1)
	rawScatterInto(counts, axis, run, ones, true)
	ones.Release()
	perPos := rawGather(op, counts, axis, run)
	counts.Release()
	run.Release()
	best := mathArgReduce(op, backends.ArgMax, perPos, axis, true) // first of the smallest most frequent value
	c := rawGather(op, perPos, axis, best)
	perPos.Release()
	last := rawBinary(op, addOp, best, c)
	c.Release()
	last = mathConsume(last, func(l *Tensor) *Tensor { return rawScalar(op, subOp, l, 1, false) })
	values = rawGather(op, sv, axis, best)
	indices = rawGather(op, si, axis, last)
	best.Release()
	last.Release()
	sv.Release()
	si.Release()
	values = mathSelectBackward("mode", map[string]any{"dim": axis, "keepdim": keep}, values, indices, t, axis)
	return statsSqueeze(values, axis, keep), statsSqueeze(indices, axis, keep)
}

// Quantile returns the q-th quantiles of t along dim, as torch.quantile:
// q is a 0-d or 1-D tensor of levels in [0, 1]; the result has t's shape
// without dim (kept with size 1 when keep), preceded by q's dimension when
// q is 1-D. Each quantile sits at rank q·(n−1) of the sorted line and is
// interpolated between its neighbours by interpolation: "linear" (also
// ""), "lower", "higher", "midpoint" or "nearest" (halves to even). A line
// holding NaN gives NaN. Gradients flow to the
// elements interpolated between, weighted as PyTorch's lerp. It reads q to
// the host (a synchronisation point) and panics with ErrDType for an
// integer t, ErrShape for an empty t or a q of rank above 1, and ErrArgument for a level
// outside [0, 1], an unknown interpolation or a dim out of range.
func (t *Tensor) Quantile(q *Tensor, dim int, keep bool, interpolation string) *Tensor {
	const op = "Quantile"
	sameDevice(op, t, q)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "input must be a float tensor, got %s %s", shapeString(t.shape), t.dtype)
	}
	if len(q.shape) > 1 {
		fail(op, ErrShape, "q must be a 0-d or 1-D tensor, got %s", shapeString(q.shape))
	}
	switch interpolation {
	case "", "linear", "lower", "higher", "midpoint", "nearest":
	default:
		fail(op, ErrArgument, "interpolation must be linear, lower, higher, midpoint or nearest, got %q", interpolation)
	}
	if t.NumElements() == 0 {
		fail(op, ErrShape, "input %s must not be empty", shapeString(t.shape))
	}
	for _, v := range q.Float64s() {
		if !(v >= 0 && v <= 1) {
			fail(op, ErrArgument, "q must hold levels in [0, 1], got %v", v)
		}
	}
	if mathScalarDim(op, t, dim) {
		return t.Reshape(1).Quantile(q, 0, false, interpolation)
	}
	axis := normAxis(op, dim, len(t.shape))
	n := t.shape[axis]
	nq := 1
	if len(q.shape) == 1 {
		nq = q.shape[0]
	}
	x := t.Movedim([]int{axis}, []int{-1})
	lead := x.shape[:len(x.shape)-1]
	var out *Tensor // [lead…, nq]
	if nq == 0 {
		out = rawFull(op, t.dev, t.dtype, append(append([]int{}, lead...), nq), math.NaN())
	} else {
		sorted, sortIdx := x.Sort(-1, false)
		sortIdx.Release() // the sort's graph keeps its own view
		ranks := quantileRanks(op, sorted, q, n, nq)
		var below, above, weight *Tensor
		switch interpolation {
		case "lower":
			below = rawUnary(op, backends.Floor, ranks, 0, 0)
		case "higher":
			below = rawUnary(op, backends.Ceil, ranks, 0, 0)
		case "nearest":
			below = rawUnary(op, backends.Round, ranks, 0, 0)
		default:
			below = rawUnary(op, backends.Floor, ranks, 0, 0)
			above = rawUnary(op, backends.Ceil, ranks, 0, 0)
			if interpolation == "midpoint" {
				weight = rawFull(op, t.dev, t.dtype, ranks.shape, 0.5)
			} else {
				weight = rawBinary(op, subOp, ranks, below)
			}
		}
		ranks.Release()
		bi := rawCast(op, below, Int64)
		below.Release()
		out = sorted.Gather(-1, bi)
		if above != nil {
			ai := rawCast(op, above, Int64)
			above.Release()
			hi := sorted.Gather(-1, ai)
			out = quantileLerp(out, hi, weight)
			releaseUnlessRecorded(weight, out)
			releaseUnlessRecorded(ai, out)
		}
		releaseUnlessRecorded(bi, out)
	}
	if len(q.shape) == 0 {
		out = out.Squeeze(-1)
		if keep {
			out = out.Unsqueeze(axis)
		}
		return out
	}
	out = out.Movedim([]int{-1}, []int{0})
	if keep {
		out = out.Unsqueeze(axis + 1)
	}
	return out
}

// QuantileAll returns the q-th quantiles of all of t's elements (t
// flattened): 0-d for a 0-d q, [len(q)] for a 1-D q. See Quantile.
func (t *Tensor) QuantileAll(q *Tensor, interpolation string) *Tensor {
	t.live("QuantileAll")
	return t.Reshape(-1).Quantile(q, 0, false, interpolation)
}

// quantileRanks returns the rank q·(n−1) of each level in t's dtype,
// broadcast to [lead…, nq], and n−1 on lines of sorted holding NaN (which
// then pick their last element, a NaN). No graph.
func quantileRanks(op string, sorted, q *Tensor, n, nq int) *Tensor {
	qc := rawCast(op, q, sorted.dtype)
	r := rawScalar(op, mulOp, qc, float64(n-1), false)
	qc.Release()
	r = mathConsume(r, func(r *Tensor) *Tensor { return rawReshape(op, r, []int{nq}) })
	last := rawReduce(op, backends.Max, sorted, []int{len(sorted.shape) - 1}, true) // NaN where a line holds one
	hasNaN := rawUnary(op, backends.IsNaN, last, 0, 0)
	last.Release()
	shape := append(append([]int{}, sorted.shape[:len(sorted.shape)-1]...), nq)
	top := mathScalarTensor(op, sorted.dev, sorted.dtype, float64(n-1))
	ranks := mathWhere(op, hasNaN, top, r, shape)
	top.Release()
	hasNaN.Release()
	r.Release()
	return ranks
}

// quantileLerp is PyTorch's lerp(lo, hi, w): lo + w·(hi − lo) for w < 0.5,
// else hi − (hi − lo)·(1 − w), with gradients (1 − w) and w. The graph it
// records reads w, so the caller keeps w when the result has one.
func quantileLerp(lo, hi, w *Tensor) *Tensor {
	diff := hi.Sub(lo)
	small := rawScalar("Quantile", backends.Lt, w, 0.5, false)
	rest := rawScalar("Quantile", subOp, w, 1, true)
	a := lo.Add(diff.Mul(w))
	b := hi.Sub(diff.Mul(rest))
	out := Where(small, a, b)
	releaseUnlessRecorded(small, out)
	releaseUnlessRecorded(rest, out)
	return out
}
