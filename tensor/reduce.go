package tensor

import (
	"sort"

	"github.com/kiln-ml/kiln/backends"
)

// normAxes validates and sorts a dim list; an empty list means every dimension.
func normAxes(op string, dims []int, rank int) []int {
	if len(dims) == 0 {
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all
	}
	seen := make([]bool, rank)
	out := make([]int, 0, len(dims))
	for _, d := range dims {
		a := normAxis(op, d, rank)
		if seen[a] {
			fail(op, ErrArgument, "dimension %d repeated in %v", d, dims)
		}
		seen[a] = true
		out = append(out, a)
	}
	sort.Ints(out)
	return out
}

// keptShape returns shape with axes set to 1 (keep) or removed.
func keptShape(shape, axes []int, keep bool) []int {
	red := make([]bool, len(shape))
	for _, a := range axes {
		red[a] = true
	}
	var out []int
	for i, s := range shape {
		switch {
		case !red[i]:
			out = append(out, s)
		case keep:
			out = append(out, 1)
		}
	}
	if out == nil {
		out = []int{}
	}
	return out
}

// rawReduce reduces x over axes (already normalised) with no graph. Sums of
// bool and integer tensors are Int64, as in PyTorch.
func rawReduce(op string, r backends.ReduceOp, x *Tensor, axes []int, keep bool) *Tensor {
	outType := x.dtype
	if (r == backends.Sum || r == backends.Prod) && !x.dtype.IsFloat() {
		outType = Int64
	}
	kshape := keptShape(x.shape, axes, true)
	out := newTensor(op, x.dev, outType, kshape)
	if len(axes) > 0 && x.NumElements() == 0 && (r == backends.Max || r == backends.Min) {
		fail(op, ErrShape, "cannot take %s over an empty dimension of %s", r, shapeString(x.shape))
	}
	out.backend().Reduce(r, out.view(), x.view(), axes)
	if keep {
		return out
	}
	s := keptShape(x.shape, axes, false)
	v := out.newView(s, backends.RowMajorStrides(s), 0)
	out.Release()
	return v
}

// expandGrad broadcasts a reduced gradient g (reduced over axes, kept or
// not) back to shape, as a contiguous tensor.
func expandGrad(g *Tensor, shape, axes []int) *Tensor {
	k := keptShape(shape, axes, true)
	gv := g.newView(k, backends.RowMajorStrides(k), g.offset)
	if !g.IsContiguous() {
		gv.Release()
		c := rawContiguous("grad", g)
		gv = c.newView(k, backends.RowMajorStrides(k), c.offset)
		c.Release()
	}
	out := newTensor("grad", g.dev, g.dtype, shape)
	out.backend().Copy(out.view(), gv.broadcastView(shape))
	gv.Release()
	return out
}

func (t *Tensor) sum(op string, keep bool, dims []int) *Tensor {
	t.live(op)
	axes := normAxes(op, dims, len(t.shape))
	out := rawReduce(op, backends.Sum, t, axes, keep)
	return record("sum", map[string]any{"axes": axes, "keepdim": keep}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(expandGrad(g, t.shape, axes), t)}
	})
}

// Sum returns the sum over dims (all when none are given), removing them.
func (t *Tensor) Sum(dims ...int) *Tensor { return t.sum("Sum", false, dims) }

// SumKeep is Sum keeping the reduced dimensions with size 1.
func (t *Tensor) SumKeep(dims ...int) *Tensor { return t.sum("SumKeep", true, dims) }

func (t *Tensor) mean(op string, keep bool, dims []int) *Tensor {
	t.live(op)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "mean of a %s tensor; convert it with To(tensor.Float32) first", t.dtype)
	}
	axes := normAxes(op, dims, len(t.shape))
	n := 1
	for _, a := range axes {
		n *= t.shape[a]
	}
	s := rawReduce(op, backends.Sum, t, axes, keep)
	out := rawScalar(op, divOp, s, float64(n), false)
	s.Release()
	return record("mean", map[string]any{"axes": axes, "keepdim": keep}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		e := expandGrad(g, t.shape, axes)
		r := rawScalar(op, divOp, e, float64(n), false)
		e.Release()
		return []*Tensor{r}
	})
}

// Mean returns the mean over dims (all when none are given), removing them.
func (t *Tensor) Mean(dims ...int) *Tensor { return t.mean("Mean", false, dims) }

// MeanKeep is Mean keeping the reduced dimensions with size 1.
func (t *Tensor) MeanKeep(dims ...int) *Tensor { return t.mean("MeanKeep", true, dims) }
