package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// viewGrad records a layout op whose output is a view of t: its backward
// maps the gradient back with inverse (a raw, graph-free function).
func viewGrad(op string, attrs map[string]any, out, t *Tensor, inverse func(g *Tensor) *Tensor) *Tensor {
	return record(op, attrs, out, []*Tensor{t}, func(g *Tensor) []*Tensor { return []*Tensor{inverse(g)} })
}

// rawReshape returns t with a new shape: a view when t's layout allows it,
// else a contiguous copy. No graph.
func rawReshape(op string, t *Tensor, shape []int) *Tensor {
	shape = inferShape(op, t.NumElements(), shape)
	if checkedNumel(op, shape) != t.NumElements() {
		fail(op, ErrShape, "cannot reshape %s (%d elements) to %s", shapeString(t.shape), t.NumElements(), shapeString(shape))
	}
	if t.IsContiguous() {
		return t.newView(append([]int(nil), shape...), backends.RowMajorStrides(shape), t.offset)
	}
	if strides, ok := viewStrides(t.shape, t.strides, shape); ok {
		return t.newView(append([]int(nil), shape...), strides, t.offset)
	}
	c := rawContiguous(op, t)
	v := c.newView(append([]int(nil), shape...), backends.RowMajorStrides(shape), c.offset)
	c.Release()
	return v
}

// Reshape returns t with the given shape (one dimension may be -1). It is a
// view when t's strides allow one (always for a contiguous t; for a strided
// view when only dimensions laid out one inside the other are merged or
// split, as splitting the features of a sliced projection into heads), and
// a copy otherwise, as PyTorch's reshape.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	t.live("Reshape")
	out := rawReshape("Reshape", t, shape)
	return viewGrad("reshape", map[string]any{"shape": out.Shape()}, out, t, func(g *Tensor) *Tensor {
		return rawReshape("Reshape", g, t.shape)
	})
}

// Contiguous returns t laid out row-major: t itself (as a view) when it
// already is, else a copy.
func (t *Tensor) Contiguous() *Tensor {
	t.live("Contiguous")
	out := rawContiguous("Contiguous", t)
	return viewGrad("contiguous", nil, out, t, func(g *Tensor) *Tensor { return g })
}

// rawPermute returns a view of t with dimensions reordered. No graph.
func rawPermute(op string, t *Tensor, perm []int) *Tensor {
	r := len(t.shape)
	if len(perm) != r {
		fail(op, ErrArgument, "permutation %v has %d entries for a tensor of rank %d", perm, len(perm), r)
	}
	seen := make([]bool, r)
	shape, strides := make([]int, r), make([]int, r)
	for i, p := range perm {
		a := normAxis(op, p, r)
		if seen[a] {
			fail(op, ErrArgument, "permutation %v repeats dimension %d", perm, p)
		}
		seen[a] = true
		shape[i], strides[i] = t.shape[a], t.strides[a]
	}
	return t.newView(shape, strides, t.offset)
}

// Permute returns a view of t with its dimensions in the order perm.
func (t *Tensor) Permute(perm ...int) *Tensor {
	t.live("Permute")
	out := rawPermute("Permute", t, perm)
	inv := make([]int, len(perm))
	for i, p := range perm {
		inv[normAxis("Permute", p, len(perm))] = i
	}
	return viewGrad("permute", map[string]any{"perm": perm}, out, t, func(g *Tensor) *Tensor {
		return rawPermute("Permute", g, inv)
	})
}

// Transpose returns a view of t with dimensions d0 and d1 swapped.
func (t *Tensor) Transpose(d0, d1 int) *Tensor {
	t.live("Transpose")
	out := t.transposeView(d0, d1)
	return viewGrad("transpose", map[string]any{"dims": []int{d0, d1}}, out, t, func(g *Tensor) *Tensor {
		return g.transposeView(d0, d1)
	})
}

// T returns the transpose of a matrix (the last two dimensions swapped for
// higher ranks; a 1-D tensor is returned as a view unchanged).
func (t *Tensor) T() *Tensor {
	t.live("T")
	if len(t.shape) < 2 {
		return t.Reshape(t.shape...)
	}
	return t.Transpose(-2, -1)
}

// Unsqueeze returns a view of t with a dimension of size 1 inserted at d
// (negative d counts from the end of the result).
func (t *Tensor) Unsqueeze(d int) *Tensor {
	t.live("Unsqueeze")
	a := normAxis("Unsqueeze", d, len(t.shape)+1)
	shape := append(append(append([]int{}, t.shape[:a]...), 1), t.shape[a:]...)
	st := 1
	if a < len(t.shape) {
		st = t.strides[a] * t.shape[a]
	}
	strides := append(append(append([]int{}, t.strides[:a]...), st), t.strides[a:]...)
	out := t.newView(shape, strides, t.offset)
	return viewGrad("unsqueeze", map[string]any{"dim": a}, out, t, func(g *Tensor) *Tensor {
		return rawReshape("Unsqueeze", g, t.shape)
	})
}

// Squeeze returns a view of t without the given size-1 dimensions (all
// size-1 dimensions when none are given).
func (t *Tensor) Squeeze(dims ...int) *Tensor {
	t.live("Squeeze")
	drop := make([]bool, len(t.shape))
	if len(dims) == 0 {
		for i, s := range t.shape {
			drop[i] = s == 1
		}
	}
	for _, d := range dims {
		a := normAxis("Squeeze", d, len(t.shape))
		drop[a] = t.shape[a] == 1 // like PyTorch, a non-1 dimension is left alone
	}
	var shape, strides []int
	for i := range t.shape {
		if !drop[i] {
			shape = append(shape, t.shape[i])
			strides = append(strides, t.strides[i])
		}
	}
	if shape == nil {
		shape, strides = []int{}, []int{}
	}
	out := t.newView(shape, strides, t.offset)
	return viewGrad("squeeze", nil, out, t, func(g *Tensor) *Tensor { return rawReshape("Squeeze", g, t.shape) })
}

// Expand returns a view of t broadcast to shape (−1 keeps a dimension); no
// memory is copied.
func (t *Tensor) Expand(shape ...int) *Tensor {
	t.live("Expand")
	if len(shape) < len(t.shape) {
		fail("Expand", ErrShape, "cannot expand %s to fewer dimensions %s", shapeString(t.shape), shapeString(shape))
	}
	full := append([]int(nil), shape...)
	off := len(shape) - len(t.shape)
	for i := range full {
		if full[i] == -1 {
			if i < off {
				fail("Expand", ErrShape, "-1 is not allowed for new leading dimension %d", i)
			}
			full[i] = t.shape[i-off]
		}
		if full[i] < 0 {
			fail("Expand", ErrShape, "cannot expand %s to %s: negative dimension %d", shapeString(t.shape), shapeString(shape), i)
		}
		if i >= off && t.shape[i-off] != 1 && t.shape[i-off] != full[i] {
			fail("Expand", ErrShape, "cannot expand %s to %s: dimension %d is %d, not 1", shapeString(t.shape), shapeString(full), i, t.shape[i-off])
		}
	}
	checkedNumel("Expand", full)
	v := t.broadcastView(full)
	out := t.newView(v.Shape, v.Strides, t.offset)
	return viewGrad("expand", map[string]any{"shape": full}, out, t, func(g *Tensor) *Tensor {
		return gradFor(g.newView(g.shape, g.strides, g.offset), t)
	})
}

// sliceOf returns the part of v holding n elements along axis, starting at
// start and stepping by step (a negative step walks backwards, giving a
// negative stride). axis is normalised and the range checked by the caller.
// It describes memory only: nothing is allocated or referenced.
func sliceOf(v backends.View, axis, start, step, n int) backends.View {
	shape := append([]int(nil), v.Shape...)
	strides := append([]int(nil), v.Strides...)
	if n > 0 {
		v.Offset += start * strides[axis]
	}
	shape[axis] = n
	strides[axis] *= step
	v.Shape, v.Strides = shape, strides
	return v
}

// selectOf returns the part of v at position i of axis, without that axis.
func selectOf(v backends.View, axis, i int) backends.View {
	v.Offset += i * v.Strides[axis]
	v.Shape = append(append([]int{}, v.Shape[:axis]...), v.Shape[axis+1:]...)
	v.Strides = append(append([]int{}, v.Strides[:axis]...), v.Strides[axis+1:]...)
	return v
}

// flipOf returns v reversed along axes, as negative strides.
func flipOf(v backends.View, axes []int) backends.View {
	strides := append([]int(nil), v.Strides...)
	for _, a := range axes {
		if n := v.Shape[a]; n > 0 {
			v.Offset += (n - 1) * strides[a]
		}
		strides[a] = -strides[a]
	}
	v.Strides = strides
	return v
}

// viewOf returns a tensor sharing t's storage laid out as v (which must
// describe t's buffer and dtype).
func (t *Tensor) viewOf(v backends.View) *Tensor { return t.newView(v.Shape, v.Strides, v.Offset) }

// rawSliceView returns the view of t holding n elements along axis from
// start by step (see sliceOf). No graph.
func rawSliceView(t *Tensor, axis, start, step, n int) *Tensor {
	return t.viewOf(sliceOf(t.view(), axis, start, step, n))
}

// rawNarrow returns the view of t's elements [start, start+length) along
// axis, which the caller has normalised and checked. No graph.
func rawNarrow(t *Tensor, axis, start, length int) *Tensor {
	return rawSliceView(t, axis, start, 1, length)
}

// rawSelect returns the view of t at position i of axis, without that
// axis. No graph.
func rawSelect(t *Tensor, axis, i int) *Tensor { return t.viewOf(selectOf(t.view(), axis, i)) }

// rawFlip returns the view of t reversed along axes (negative strides). No graph.
func rawFlip(t *Tensor, axes []int) *Tensor { return t.viewOf(flipOf(t.view(), axes)) }

// viewStrides returns the strides of a view of shape [newShape] over the
// elements of a tensor of shape and strides, in row-major order, when one
// exists (PyTorch's computeStride): each run of old dimensions laid out
// one inside the other maps onto a run of new dimensions of the same size.
func viewStrides(shape, strides, newShape []int) ([]int, bool) {
	numel := backends.NumElements(shape)
	if len(shape) == 0 || numel == 0 {
		return nil, false
	}
	out := make([]int, len(newShape))
	vd := len(newShape) - 1
	base := strides[len(strides)-1]
	tn, vn := 1, 1
	for td := len(shape) - 1; td >= 0; td-- {
		tn *= shape[td]
		if td == 0 || (shape[td-1] != 1 && strides[td-1] != tn*base) {
			for vd >= 0 && (vn < tn || newShape[vd] == 1) {
				out[vd] = vn * base
				vn *= newShape[vd]
				vd--
			}
			if vn != tn {
				return nil, false
			}
			if td > 0 {
				base, tn, vn = strides[td-1], 1, 1
			}
		}
	}
	return out, vd == -1
}
