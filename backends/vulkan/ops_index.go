//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"github.com/kiln-ml/kiln/backends"
)

// checkIndexed checks Gather (walked = out, other = x) and Scatter (walked
// = src, other = out): the shader walks walked's shape over walked and
// index, and over other with axis replaced by the index, so other must be
// at least as large on every other axis.
func (b *Backend) checkIndexed(op string, walked, other, index backends.View, axis int) bool {
	r := len(walked.Shape)
	if !b.checkRank(op, walked, other, index) || !b.checkAxis(op, axis, r) ||
		!b.checkDType(op, "index", index, backends.Int64) || !b.checkShape(op, "index", index, walked.Shape) {
		return false
	}
	if len(other.Shape) != r {
		return b.refuse(op, "indexed view %v and values %v differ in rank", other.Shape, walked.Shape)
	}
	for d := range r {
		if d != axis && walked.Shape[d] > other.Shape[d] {
			return b.refuse(op, "values %v larger than the indexed view %v on axis %d", walked.Shape, other.Shape, d)
		}
	}
	return true
}

// Gather implements backends.Backend: one thread per element of out. A
// negative index counts from the end; one still out of range is reported at
// the next Read or Sync, its element left unwritten.
func (b *Backend) Gather(out, x, index backends.View, axis int) {
	const op = "gather"
	if b.hostWithoutDoubles(op, vs(out), vs(x, index), func(c backends.Backend, o, i []backends.View) { c.Gather(o[0], i[0], i[1], axis) }) {
		return
	}
	if !b.checkIndexed(op, out, x, index, axis) || !b.ok(op, out, x, index) {
		return
	}
	n := out.NumElements()
	if n == 0 {
		return
	}
	if x.Shape[axis] == 0 {
		b.refuse(op, "index into an empty axis %d", axis)
		return
	}
	w := new(argWriter)
	w.view(out)
	w.view(x)
	w.view(index)
	w.i64(int64(axis))
	w.i64(int64(n))
	b.launch("gather", []int32{int32(out.DType), int32(x.DType)}, w, groups1D(n))
}

// Scatter implements backends.Backend: one thread per line of index along
// axis, walking it in order, so that duplicate indices resolve (the last
// write wins, or they accumulate) in the CPU's row-major order of src and
// no two threads write one element. Accumulation rounds to out's dtype at
// every step, exactly for integers.
func (b *Backend) Scatter(out, index, src backends.View, axis int, add bool) {
	const op = "scatter"
	if b.hostWithoutDoubles(op, vs(out), vs(index, src), func(c backends.Backend, o, i []backends.View) {
		c.Scatter(o[0], i[0], i[1], axis, add)
	}) {
		return
	}
	if !b.checkIndexed(op, src, out, index, axis) || !b.ok(op, out, index, src) {
		return
	}
	if src.NumElements() == 0 {
		return
	}
	lines := backends.NumElements(with(index.Shape, axis, 1))
	w := new(argWriter)
	w.view(out)
	w.view(index)
	w.view(src)
	w.i64(int64(axis))
	w.i64(int64(lines))
	a := int32(0)
	if add {
		a = 1
	}
	b.launch("scatter", []int32{int32(out.DType), int32(src.DType), a}, w, groups1D(lines))
}
