//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
)

// Reductions, arg-reductions, scans and sorts (shaders/reduce.comp,
// argreduce.comp, scan.comp, sort.comp).
//
// Order of operations: Reduce combines the reduced elements of one output
// in row-major order of the reduced dimensions. With few reduced elements
// or many outputs (reduceByThread) one thread reduces one output strictly
// in order; otherwise one workgroup of 256 threads reduces one output,
// thread t combining elements t, t+256, … in order before the 256 partial
// results combine in a fixed tree. Few outputs of very many elements each
// reduce in two passes: segments of reduceSegment elements (each as one
// output above), then the segment results in order. The choice depends on
// the shapes alone, so results never depend on the device or the launch.
// Float inputs accumulate in double and integers exactly in int64, as on
// the CPU: integer results equal the CPU's, and float32, float16 and
// bfloat16 ones are, like the CPU's, the rounding of a double-precision sum
// (the sums differ only in the order of double additions). Max and Min
// propagate NaN and order -0 below +0, as on the CPU.

// reduceByThread reports whether a reduction of r elements into k outputs
// runs one thread per output (else one workgroup per output).
func reduceByThread(k, r int) bool { return r <= 64 || k >= 16384 }

// Reduce implements backends.Backend.
func (b *Backend) Reduce(op backends.ReduceOp, out, x backends.View, axes []int) {
	name := op.String()
	if b.hostWithoutDoubles(name, vs(out), vs(x), func(c backends.Backend, o, i []backends.View) { c.Reduce(op, o[0], i[0], axes) }) {
		return
	}
	if op > backends.Min {
		b.refuse(name, "not a reduction for Reduce")
		return
	}
	if !b.checkRank(name, out, x) {
		return
	}
	kept := append([]int(nil), x.Shape...)
	red := make([]bool, len(x.Shape))
	for _, a := range axes {
		if !b.checkAxis(name, a, len(x.Shape)) {
			return
		}
		kept[a], red[a] = 1, true
	}
	if !b.checkShape(name, "out", out, kept) || !b.checkDType(name, "out", out, x.DType) || !b.ok(name, out, x) {
		return
	}
	xk := x
	xk.Shape, xk.Strides = out.Shape, append([]int(nil), x.Strides...)
	var rShape, rStrides []int
	for d := range x.Shape {
		if red[d] {
			xk.Strides[d] = 0
			rShape = append(rShape, x.Shape[d])
			rStrides = append(rStrides, x.Strides[d])
		}
	}
	_, ko := coalesce(out.Shape, out, xk)
	_, rv := coalesce(rShape, backends.View{Buf: x.Buf, DType: x.DType, Strides: rStrides})
	K, R := out.NumElements(), backends.NumElements(rShape)
	if K == 0 {
		return
	}
	args := func(S int, scratch uint64) *argWriter {
		w := new(argWriter)
		w.view(ko[0])
		w.view(ko[1])
		w.view(rv[0])
		w.i64(int64(K))
		w.i64(int64(R))
		w.i64(int64(S))
		w.i64(reduceSegment)
		w.u64(scratch)
		return w
	}
	spec := func(mode int32) []int32 { return []int32{int32(x.DType), int32(op), mode} }
	switch {
	case K < reduceFewOutputs && R > 2*reduceSegment:
		// two passes: segments into scratch, then the segments in order
		S := (R + reduceSegment - 1) / reduceSegment
		scratch, err := b.Alloc(backends.Int64, K*S)
		if err != nil {
			b.fail(fmt.Errorf("vulkan: %s: scratch for %d partial results: %w", name, K*S, err))
			return
		}
		defer b.Free(scratch) // reused only once both passes have run
		addr := b.buf(scratch).blk.addr
		b.launch("reduce", spec(2), args(S, addr), [3]uint32{uint32(min(K*S, 65535)), 1, 1})
		b.launch("reduce", spec(3), args(S, addr), groups1D(K))
	case reduceByThread(K, R):
		b.launch("reduce", spec(0), args(0, 0), groups1D(K))
	default:
		b.launch("reduce", spec(1), args(0, 0), [3]uint32{uint32(min(K, 65535)), 1, 1})
	}
}

// reduceSegment is the number of reduced elements per segment of a
// two-pass reduction, and reduceFewOutputs the output count under which
// reductions of more than two segments take two passes (so that a sum of
// millions of elements spreads over many workgroups, not one).
const (
	reduceSegment    = 1 << 15
	reduceFewOutputs = 64
)

// ArgReduce implements backends.Backend: the index of the first maximum or
// minimum along axis, NaN counting as both (the first NaN wins): one thread
// per output, or one workgroup per output for long lines (as Reduce
// chooses), with the same answer.
func (b *Backend) ArgReduce(op backends.ReduceOp, out, x backends.View, axis int) {
	name := op.String()
	if b.hostWithoutDoubles(name, vs(out), vs(x), func(c backends.Backend, o, i []backends.View) { c.ArgReduce(op, o[0], i[0], axis) }) {
		return
	}
	if op != backends.ArgMax && op != backends.ArgMin {
		b.refuse(name, "not an arg-reduction")
		return
	}
	if !b.checkRank(name, out, x) || !b.checkAxis(name, axis, len(x.Shape)) ||
		!b.checkShape(name, "out", out, with(x.Shape, axis, 1)) || !b.checkDType(name, "out", out, backends.Int64) ||
		!b.ok(name, out, x) {
		return
	}
	K, n := out.NumElements(), x.Shape[axis]
	if K == 0 || n == 0 {
		return
	}
	xk := x
	xk.Shape, xk.Strides = out.Shape, with(x.Strides, axis, 0)
	_, v := coalesce(out.Shape, out, xk)
	w := new(argWriter)
	w.view(v[0])
	w.view(v[1])
	w.i64(int64(n))
	w.i64(int64(x.Strides[axis]))
	w.i64(int64(K))
	isMin := int32(0)
	if op == backends.ArgMin {
		isMin = 1
	}
	if reduceByThread(K, n) {
		b.launch("argreduce", []int32{int32(x.DType), isMin, 0}, w, groups1D(K))
		return
	}
	b.launch("argreduce", []int32{int32(x.DType), isMin, 1}, w, [3]uint32{uint32(min(K, 65535)), 1, 1})
}

// Scan implements backends.Backend: the inclusive cumulative sum or product
// along axis, one thread per line, accumulated in double for floats (each
// output rounded from the running sum) and exactly in int64 for integers.
func (b *Backend) Scan(op backends.ReduceOp, out, x backends.View, axis int) {
	name := "cumulative " + op.String()
	if b.hostWithoutDoubles(name, vs(out), vs(x), func(c backends.Backend, o, i []backends.View) { c.Scan(op, o[0], i[0], axis) }) {
		return
	}
	if op != backends.Sum && op != backends.Prod {
		b.refuse(name, "not a scan")
		return
	}
	if !b.checkRank(name, out, x) || !b.checkAxis(name, axis, len(x.Shape)) ||
		!b.checkShape(name, "out", out, x.Shape) || !b.checkDType(name, "out", out, x.DType) || !b.ok(name, out, x) {
		return
	}
	lines := with(x.Shape, axis, 1)
	L, n := backends.NumElements(lines), x.Shape[axis]
	if L == 0 || n == 0 {
		return
	}
	_, v := coalesce(lines, out, x)
	w := new(argWriter)
	w.view(v[0])
	w.view(v[1])
	w.i64(int64(n))
	w.i64(int64(out.Strides[axis]))
	w.i64(int64(x.Strides[axis]))
	w.i64(int64(L))
	b.launch("scan", []int32{int32(x.DType), int32(op)}, w, groups1D(L))
}

// Sort implements backends.Backend: a stable sort of each line along axis,
// NaN ordered above every number, keys compared as double (integers are
// copied exactly), one thread per line: by insertion for lines of up to
// insertionSortMax elements, else by a bottom-up merge sort.
func (b *Backend) Sort(values, indices, x backends.View, axis int, descending bool) {
	const name = "sort"
	if b.hostWithoutDoubles(name, vs(values, indices), vs(x), func(c backends.Backend, o, i []backends.View) {
		c.Sort(o[0], o[1], i[0], axis, descending)
	}) {
		return
	}
	if !b.checkRank(name, values, indices, x) || !b.checkAxis(name, axis, len(x.Shape)) ||
		!b.checkShape(name, "values", values, x.Shape) || !b.checkShape(name, "indices", indices, x.Shape) ||
		!b.checkDType(name, "values", values, x.DType) || !b.checkDType(name, "indices", indices, backends.Int64) ||
		!b.ok(name, values, indices, x) {
		return
	}
	lines := with(x.Shape, axis, 1)
	L, n := backends.NumElements(lines), x.Shape[axis]
	if L == 0 || n == 0 {
		return
	}
	_, v := coalesce(lines, values, indices, x)
	w := new(argWriter)
	for _, view := range v {
		w.view(view)
	}
	w.i64(int64(n))
	w.i64(int64(values.Strides[axis]))
	w.i64(int64(indices.Strides[axis]))
	w.i64(int64(x.Strides[axis]))
	w.i64(int64(L))
	desc, merge := int32(0), int32(0)
	if descending {
		desc = 1
	}
	var scratch backends.Buffer
	if n > insertionSortMax {
		var err error
		if scratch, err = b.Alloc(backends.Int64, L*n); err != nil {
			b.fail(fmt.Errorf("vulkan: sort: scratch for %d lines of %d: %w", L, n, err))
			return
		}
		defer b.Free(scratch) // reused only once the sort has run
		merge = 1
		w.u64(b.buf(scratch).blk.addr)
	} else {
		w.u64(0)
	}
	b.launch("sort", []int32{int32(x.DType), desc, merge}, w, groups1D(L))
}

// insertionSortMax is the longest line Sort sorts by insertion; longer
// lines take the merge sort and a scratch buffer.
const insertionSortMax = 32
