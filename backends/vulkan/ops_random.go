//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"github.com/kiln-ml/kiln/backends"
)

// Random implements backends.Backend: element i of out (row-major) is
// backends.RandomValue(kind, seed, counter+i, p0, p1) bit for bit, stored
// as the CPU stores it (integers truncated, Bool v ≠ 0).
func (b *Backend) Random(out backends.View, kind backends.RandomKind, seed, counter uint64, p0, p1 float64) {
	const op = "random"
	if b.hostWithoutDoubles(op, vs(out), nil, func(c backends.Backend, o, _ []backends.View) {
		c.Random(o[0], kind, seed, counter, p0, p1)
	}) {
		return
	}
	if kind > backends.RandInt {
		b.refuse(op, "unknown distribution %d", kind)
		return
	}
	if !b.checkRank(op, out) || !b.ok(op, out) {
		return
	}
	n := out.NumElements()
	if n == 0 {
		return
	}
	w := new(argWriter)
	w.view(out)
	w.u64(seed)
	w.u64(counter)
	w.f64(p0)
	w.f64(p1)
	w.i64(int64(n))
	b.launch("random", []int32{int32(out.DType), int32(kind)}, w, groups1D(n))
}
