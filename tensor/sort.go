package tensor

// Sorting is stable everywhere (equal elements keep their order, in both
// directions; PyTorch guarantees that only with stable=True) and orders NaN
// above every number, as PyTorch does.

// mathSort returns x sorted along axis and the Int64 source indices, no
// graph.
func mathSort(op string, x *Tensor, axis int, descending bool) (values, indices *Tensor) {
	values = newTensor(op, x.dev, x.dtype, x.shape)
	indices = newTensor(op, x.dev, Int64, x.shape)
	values.backend().Sort(values.view(), indices.view(), x.view(), axis, descending)
	return values, indices
}

// mathSelectBackward records the gradient of values selected from t along
// axis by indices (sorted or top-k): g is scattered back to where each value
// came from.
func mathSelectBackward(name string, attrs map[string]any, values, indices, t *Tensor, axis int) *Tensor {
	saved := indices.newView(indices.shape, indices.strides, indices.offset)
	return record(name, attrs, values, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(mathScatter(name, g, saved, t.shape, axis), t)}
	})
}

// Sort returns t sorted along dim (ascending, or descending) and the Int64
// indices of the sorted elements in t. The sort is stable and NaN sorts
// above every number. Gradients flow from values back to the elements they
// came from. It panics with ErrArgument when dim is out of range.
func (t *Tensor) Sort(dim int, descending bool) (values, indices *Tensor) {
	t.live("Sort")
	if mathScalarDim("Sort", t, dim) {
		v, i := t.Reshape(1).Sort(0, descending)
		return v.Reshape(), i.Reshape()
	}
	axis := normAxis("Sort", dim, len(t.shape))
	values, indices = mathSort("Sort", t, axis, descending)
	values = mathSelectBackward("sort", map[string]any{"dim": axis, "descending": descending}, values, indices, t, axis)
	return values, indices
}

// Argsort returns the Int64 indices that sort t along dim (see Sort).
func (t *Tensor) Argsort(dim int, descending bool) *Tensor {
	t.live("Argsort")
	if mathScalarDim("Argsort", t, dim) {
		return rawFull("Argsort", t.dev, Int64, []int{}, 0)
	}
	values, indices := mathSort("Argsort", t, normAxis("Argsort", dim, len(t.shape)), descending)
	values.Release()
	return indices
}

// TopK returns the k largest (or, with largest false, smallest) elements of
// t along dim, sorted (largest first, or smallest first), and their Int64
// indices in t. NaN counts as the largest value. Ties keep their order in
// t. Gradients flow from values back to the selected elements. It panics
// with ErrArgument when k is negative or larger than the dimension.
func (t *Tensor) TopK(k, dim int, largest bool) (values, indices *Tensor) {
	const op = "TopK"
	t.live(op)
	if mathScalarDim(op, t, dim) {
		v, i := t.Reshape(1).TopK(k, 0, largest)
		if k == 0 {
			return v, i
		}
		return v.Reshape(), i.Reshape()
	}
	axis := normAxis(op, dim, len(t.shape))
	if k < 0 || k > t.shape[axis] {
		fail(op, ErrArgument, "k = %d is out of range for dimension %d of size %d in %s", k, dim, t.shape[axis], shapeString(t.shape))
	}
	sv, si := mathSort(op, t, axis, largest)
	shape := append([]int(nil), t.shape...)
	shape[axis] = k
	take := func(s *Tensor) *Tensor {
		v := s.newView(shape, s.strides, s.offset)
		c := rawContiguous(op, v)
		v.Release()
		s.Release()
		return c
	}
	values, indices = take(sv), take(si)
	attrs := map[string]any{"k": k, "dim": axis, "largest": largest}
	values = mathSelectBackward("topk", attrs, values, indices, t, axis)
	return values, indices
}
