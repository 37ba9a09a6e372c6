package tensor

import (
	"encoding/binary"

	"github.com/kiln-ml/kiln/backends"
)

// Selection ops composed on Permute, Reshape, Expand and Gather, so they
// run on every backend and take their gradients from those ops (a
// permutation's inverse; a scatter-add back into the selected positions).

// Movedim returns a view of t with dimension src[i] moved to position
// dst[i], the other dimensions keeping their relative order, as
// torch.movedim. Negative dimensions count from the end. It panics with
// ErrArgument when src and dst differ in length, hold a dimension out of
// range or repeat one.
func (t *Tensor) Movedim(src, dst []int) *Tensor {
	const op = "Movedim"
	t.live(op)
	r := len(t.shape)
	if len(src) != len(dst) {
		fail(op, ErrArgument, "source %v and destination %v must have the same number of dimensions", src, dst)
	}
	perm := make([]int, r)
	for i := range perm {
		perm[i] = -1
	}
	usedSrc := make([]bool, r)
	for i := range src {
		s, d := normAxis(op, src[i], max(r, 1)), normAxis(op, dst[i], max(r, 1))
		if r == 0 {
			continue
		}
		if usedSrc[s] {
			fail(op, ErrArgument, "source %v repeats dimension %d", src, src[i])
		}
		if perm[d] != -1 {
			fail(op, ErrArgument, "destination %v repeats dimension %d", dst, dst[i])
		}
		usedSrc[s] = true
		perm[d] = s
	}
	if r == 0 {
		return t.Reshape()
	}
	next := 0
	for i := range perm {
		if perm[i] != -1 {
			continue
		}
		for usedSrc[next] {
			next++
		}
		perm[i] = next
		next++
	}
	return t.Permute(perm...)
}

// MaskedSelect returns the 1-D tensor of t's elements where the Bool mask
// is true, in row-major order, after broadcasting t and mask together, as
// torch.masked_select. Gradients flow back to the selected elements. It
// reads mask to the host (a synchronisation point). It panics with ErrDType
// for a mask that is not Bool and ErrShape when the shapes do not
// broadcast.
func (t *Tensor) MaskedSelect(mask *Tensor) *Tensor {
	const op = "MaskedSelect"
	sameDevice(op, t, mask)
	if mask.dtype != Bool {
		fail(op, ErrDType, "mask must be bool, got %s %s", shapeString(mask.shape), mask.dtype)
	}
	shape := broadcastShapes(op, t.shape, mask.shape)
	raw := mask.hostBytes(op)
	mv := mask.broadcastView(shape)
	// Strides of the broadcast mask over its own contiguous copy.
	mst := make([]int, len(shape))
	cst := backends.RowMajorStrides(mask.shape)
	off := len(shape) - len(mask.shape)
	for i := range shape {
		if j := i - off; j >= 0 && mv.Strides[i] != 0 {
			mst[i] = cst[j]
		}
	}
	n := backends.NumElements(shape)
	var picked []int64
	idx := make([]int, len(shape))
	for i := range n {
		at := 0
		for d, c := range idx {
			at += c * mst[d]
		}
		if raw[at] != 0 {
			picked = append(picked, int64(i))
		}
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	index := selectIndexTensor(op, t.dev, picked)
	out := t.Expand(shape...).Reshape(-1).Gather(0, index)
	releaseUnlessRecorded(index, out)
	return out
}

// releaseUnlessRecorded releases an index tensor an op built for itself,
// unless out carries a graph whose backward still reads it (then the graph
// owns it, and the garbage collector or an enclosing Scope frees it).
func releaseUnlessRecorded(index, out *Tensor) {
	if out.node == nil {
		index.Release()
	}
}

// selectIndexTensor returns an Int64 tensor [len(v)] holding v.
func selectIndexTensor(op string, dev Device, v []int64) *Tensor {
	buf := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(x))
	}
	return fromBytes(op, dev, Int64, []int{len(v)}, buf)
}

// Take returns the elements of t at the given flat (row-major) indices,
// with the shape of indices, as torch.take; negative indices count from
// the end. Gradients scatter-add back into t. It reads indices to the host
// (a synchronisation point) and panics with ErrDType for non-integer
// indices and ErrArgument for an index outside [−n, n) (n the number of
// elements of t).
func (t *Tensor) Take(indices *Tensor) *Tensor {
	const op = "Take"
	sameDevice(op, t, indices)
	if !indices.dtype.IsInt() {
		fail(op, ErrDType, "indices must hold integers (int64), got %s %s", shapeString(indices.shape), indices.dtype)
	}
	n := t.NumElements()
	raw := indices.hostBytes(op)
	flat := make([]int64, indices.NumElements())
	for i := range flat {
		v := int64(decode(indices.dtype, raw, i))
		if v < -int64(n) || v >= int64(n) {
			fail(op, ErrArgument, "index %d out of range for a tensor of %d elements %s", v, n, shapeString(t.shape))
		}
		if v < 0 {
			v += int64(n)
		}
		flat[i] = v
	}
	index := selectIndexTensor(op, t.dev, flat)
	out := t.Reshape(-1).Gather(0, index).Reshape(indices.shape...)
	releaseUnlessRecorded(index, out)
	return out
}
