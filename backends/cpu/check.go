package cpu

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/kiln-ml/kiln/backends"
)

// Every kernel method checks the views it is given before it touches
// memory, once per call and never per element: each view must be of a
// buffer of this backend, of that buffer's dtype, with one stride per
// dimension, and every element the kernel will address must lie inside the
// buffer; index, condition and output views must have the dtypes the
// kernel reads them as, and the shapes of the views must agree as the
// method's contract says. A view that fails is refused as the backend
// reports every failure: a sticky error, naming the op, the view and the
// buffer, returned by the next Sync or Read, and the kernel does nothing.
// This keeps a wrong call (from a notebook cell through package tensor, or
// from a new composite op) from reading or writing memory past a buffer,
// which the typed slices below would otherwise do without a bounds check
// (they are unsafe.Slice views of the buffer's words), and so do the
// assembly kernels, which are handed pointers and lengths.

// refuse records a refused call for op and returns false.
func (b *Backend) refuse(op, format string, args ...any) bool {
	b.fail(fmt.Errorf("cpu: %s: %s", op, fmt.Sprintf(format, args...)))
	return false
}

// walkSpan returns the lowest and highest element offsets that a walk over
// shape with strides from off reaches; empty when shape has no elements,
// ok false when an offset does not fit in an int.
func walkSpan(shape, strides []int, off int) (lo, hi int, empty, ok bool) {
	lo, hi = off, off
	for _, d := range shape {
		if d == 0 {
			return 0, 0, true, true
		}
	}
	for i, d := range shape {
		st := strides[i]
		if d == 1 || st == 0 {
			continue
		}
		// (d-1)·|st| must fit, and so must the sum
		hi64, lo64 := bits.Mul64(uint64(d-1), uint64(abs(st)))
		if st == math.MinInt || hi64 != 0 || lo64 > math.MaxInt {
			return 0, 0, false, false
		}
		step := (d - 1) * st
		switch {
		case step > 0 && hi > math.MaxInt-step, step < 0 && lo < math.MinInt-step:
			return 0, 0, false, false
		case step > 0:
			hi += step
		default:
			lo += step
		}
	}
	return lo, hi, false, true
}

// checkWalk checks view v (named what in errors) of op for a walk over
// shape with v's strides and offset: v is a view of a live buffer of this
// backend and of its dtype, and every element the walk reaches lies in the
// buffer. It returns v's buffer, or nil after recording the refusal.
func (b *Backend) checkWalk(op, what string, v backends.View, shape []int) *buffer {
	bb, isCPU := v.Buf.(*buffer)
	switch {
	case !isCPU:
		b.refuse(op, "%s: buffer %T is not a CPU buffer", what, v.Buf)
		return nil
	case bb == nil:
		b.refuse(op, "%s: nil buffer", what)
		return nil
	case v.DType != bb.dtype:
		b.refuse(op, "%s: view %s of a buffer of %d %s elements: the dtypes differ", what, v, bb.n, bb.dtype)
		return nil
	case len(v.Shape) != len(v.Strides):
		b.refuse(op, "%s: view %s has %d dimensions but %d strides", what, v, len(v.Shape), len(v.Strides))
		return nil
	case len(shape) != len(v.Strides):
		b.refuse(op, "%s: view %s walked over shape %v: the ranks differ", what, v, shape)
		return nil
	}
	for _, d := range v.Shape {
		if d < 0 {
			b.refuse(op, "%s: view %s has a negative dimension", what, v)
			return nil
		}
	}
	for _, d := range shape {
		if d < 0 {
			b.refuse(op, "%s: view %s walked over shape %v, which has a negative dimension", what, v, shape)
			return nil
		}
	}
	lo, hi, empty, ok := walkSpan(shape, v.Strides, v.Offset)
	switch {
	case empty:
		return bb
	case !ok:
		b.refuse(op, "%s: view %s over shape %v: element offsets overflow", what, v, shape)
		return nil
	case lo < 0 || hi >= bb.n:
		b.refuse(op, "%s: view %s over shape %v reaches elements [%d, %d] of a buffer of %d %s elements",
			what, v, shape, lo, hi, bb.n, bb.dtype)
		return nil
	}
	return bb
}

// checkView checks view v of op over its own shape (see checkWalk).
func (b *Backend) checkView(op, what string, v backends.View) *buffer {
	return b.checkWalk(op, what, v, v.Shape)
}

// checkDType refuses v unless its dtype is one of want.
func (b *Backend) checkDType(op, what string, v backends.View, want ...backends.DType) bool {
	for _, d := range want {
		if v.DType == d {
			return true
		}
	}
	return b.refuse(op, "%s: dtype %s (want %v)", what, v.DType, want)
}

// checkShape refuses v unless its shape is want.
func (b *Backend) checkShape(op, what string, v backends.View, want ...int) bool {
	if !slices.Equal(v.Shape, want) {
		return b.refuse(op, "%s: shape %v (want %v)", what, v.Shape, want)
	}
	return true
}

// checkElementwise checks the views of an element-wise kernel: out over
// its own shape, every input walked over out's shape with its own strides
// (stride 0 broadcasts).
func (b *Backend) checkElementwise(op string, out backends.View, inputs ...backends.View) bool {
	if b.checkView(op, "out", out) == nil {
		return false
	}
	for i, v := range inputs {
		if b.checkWalk(op, inputName(i), v, out.Shape) == nil {
			return false
		}
	}
	return true
}

// inputNames name a kernel's inputs in errors (constants, so that the
// checks allocate nothing).
var inputNames = [...]string{"input 0", "input 1", "input 2", "input 3"}

// inputName names input i of a kernel in errors.
func inputName(i int) string {
	if i < len(inputNames) {
		return inputNames[i]
	}
	return "input"
}

// checkAxis refuses axis unless it is a dimension of a view of rank r.
func (b *Backend) checkAxis(op string, axis, r int) bool {
	if axis < 0 || axis >= r {
		return b.refuse(op, "axis %d out of range for rank %d", axis, r)
	}
	return true
}

// checkContiguous checks fused-kernel views, which are read as flat runs
// from their offsets: each is contiguous, of dtype (when given) and of the
// shape listed for it (nil shapes are not checked).
func (b *Backend) checkContiguous(op string, views []backends.View, names []string, shapes [][]int, dtype backends.DType) bool {
	for i, v := range views {
		if b.checkView(op, names[i], v) == nil {
			return false
		}
		if !v.IsContiguous() {
			return b.refuse(op, "%s: view %s is not contiguous", names[i], v)
		}
		if v.DType != dtype {
			return b.refuse(op, "%s: dtype %s (want %s)", names[i], v.DType, dtype)
		}
		if shapes[i] != nil && backends.NumElements(v.Shape) != backends.NumElements(shapes[i]) {
			return b.refuse(op, "%s: shape %v (want %v)", names[i], v.Shape, shapes[i])
		}
	}
	return true
}

// checkGeometry refuses a window geometry that is not self-consistent:
// negative sizes, strides or dilations below 1, or an output size the
// windows do not fit (which would index outside the padded input).
func (b *Backend) checkGeometry(op string, g backends.ConvGeometry) bool {
	for _, d := range []int{g.N, g.C, g.H, g.W, g.KH, g.KW, g.OutH, g.OutW, g.PadTop, g.PadLeft} {
		if d < 0 {
			return b.refuse(op, "geometry %+v has a negative size", g)
		}
	}
	if g.StrideH < 1 || g.StrideW < 1 || g.DilationH < 1 || g.DilationW < 1 {
		return b.refuse(op, "geometry %+v has a stride or dilation below 1", g)
	}
	for _, s := range [][]int{{g.N, g.C, g.H, g.W}, {g.N, g.C, g.KH, g.KW, g.OutH, g.OutW}} {
		if _, ok := backends.CheckedNumElements(s); !ok {
			return b.refuse(op, "geometry %+v: sizes overflow", g)
		}
	}
	return true
}

// checkSame checks x and views that must have x's shape (Scan's output,
// Sort's values and indices).
func (b *Backend) checkSame(op string, x backends.View, views ...backends.View) bool {
	if b.checkView(op, "input", x) == nil {
		return false
	}
	for i, v := range views {
		what := [...]string{"output 0", "output 1"}[min(i, 1)]
		if !b.checkShape(op, what, v, x.Shape...) || b.checkView(op, what, v) == nil {
			return false
		}
	}
	return true
}

// checkReduce checks a reduction of x over axes into out, whose shape is
// x's with those axes set to 1.
func (b *Backend) checkReduce(op string, out, x backends.View, axes ...int) bool {
	if b.checkView(op, "input", x) == nil {
		return false
	}
	kept := append([]int(nil), x.Shape...)
	for _, a := range axes {
		if !b.checkAxis(op, a, len(kept)) {
			return false
		}
		kept[a] = 1
	}
	return b.checkShape(op, "out", out, kept...) && b.checkView(op, "out", out) != nil
}

// checkIndexed checks Gather (walked = out, other = x) and Scatter
// (walked = src, other = out): the kernel walks shape (walked's) over
// walked and index, and over other with axis replaced by the index, so
// other must be at least as large on every other axis; index holds Int64.
func (b *Backend) checkIndexed(op string, walked, other, index backends.View, axis int, shape []int) bool {
	r := len(shape)
	switch {
	case !b.checkAxis(op, axis, r) || !b.checkDType(op, "index", index, backends.Int64):
		return false
	case b.checkView(op, "values", walked) == nil || b.checkWalk(op, "index", index, shape) == nil ||
		b.checkView(op, "indexed", other) == nil:
		return false
	case len(other.Shape) != r:
		return b.refuse(op, "indexed view %v and values %v differ in rank", other.Shape, shape)
	}
	for d := range r {
		if d != axis && shape[d] > other.Shape[d] {
			return b.refuse(op, "values %v larger than the indexed view %v on axis %d", shape, other.Shape, d)
		}
	}
	return true
}

// checkMatmul checks out [batch…, M, N] = x [batch…, M, K] · y [batch…, K, N],
// x and y walked over out's batch dimensions.
func (b *Backend) checkMatmul(out, x, y backends.View) bool {
	const op = "matmul"
	r := len(out.Shape)
	if r < 2 || len(x.Shape) != r || len(y.Shape) != r {
		return b.refuse(op, "shapes %v · %v into %v: want equal ranks of at least 2", x.Shape, y.Shape, out.Shape)
	}
	m, k, n := x.Shape[r-2], x.Shape[r-1], y.Shape[r-1]
	if y.Shape[r-2] != k || out.Shape[r-2] != m || out.Shape[r-1] != n {
		return b.refuse(op, "shapes %v · %v into %v do not match", x.Shape, y.Shape, out.Shape)
	}
	if b.checkView(op, "out", out) == nil {
		return false
	}
	batch := out.Shape[:r-2]
	walk := func(v backends.View, what string, rows, cols int) bool {
		shape := append(append(make([]int, 0, r), batch...), rows, cols)
		return b.checkView(op, what, v) != nil && b.checkWalk(op, what, v, shape) != nil
	}
	return walk(x, "input 0", m, k) && walk(y, "input 1", k, n)
}

// checkUnfolded checks Im2Col and Col2Im: image [N, C, H, W] and cols
// [N, C·KH·KW, OutH·OutW] as g describes them.
func (b *Backend) checkUnfolded(op string, image, cols backends.View, g backends.ConvGeometry) bool {
	return b.checkGeometry(op, g) &&
		b.checkShape(op, "image", image, g.N, g.C, g.H, g.W) && b.checkView(op, "image", image) != nil &&
		b.checkShape(op, "columns", cols, g.N, g.C*g.KH*g.KW, g.OutH*g.OutW) && b.checkView(op, "columns", cols) != nil
}

// checkFused checks the views of a fused kernel: each contiguous, of
// x's float dtype (Float32 or Float64) and of the shape listed for it;
// index views (named in ints) hold Int64 instead.
func (b *Backend) checkFused(op string, x backends.View, views []backends.View, names []string, shapes [][]int, ints ...string) bool {
	if x.DType != backends.Float32 && x.DType != backends.Float64 {
		return b.refuse(op, "dtype %s (want float32 or float64)", x.DType)
	}
	for i, v := range views {
		want := x.DType
		for _, n := range ints {
			if n == names[i] {
				want = backends.Int64
			}
		}
		if !b.checkContiguous(op, views[i:i+1], names[i:i+1], shapes[i:i+1], want) {
			return false
		}
		if len(shapes[i]) > 1 && !b.checkShape(op, names[i], v, shapes[i]...) {
			return false
		}
	}
	return true
}

// checkApart refuses out and pre, contiguous views of n elements each
// (checked by checkFused), where they share an element: a fused kernel's
// two results (MatmulBiasAct, Conv2dBiasAct).
func (b *Backend) checkApart(op string, out, pre backends.View, n int) bool {
	if out.Buf == pre.Buf && out.Offset < pre.Offset+n && pre.Offset < out.Offset+n {
		return b.refuse(op, "out and pre overlap")
	}
	return true
}

// convShapes returns the shapes of a fused convolution's input
// [N, C, H, W], weights [O, C, KH, KW] and output [N, O, OutH, OutW].
func convShapes(g backends.ConvGeometry, o int) (x, w, y []int) {
	return []int{g.N, g.C, g.H, g.W}, []int{o, g.C, g.KH, g.KW}, []int{g.N, o, g.OutH, g.OutW}
}

// checkUpdate is checkFused for an optimizer's update: every view that is
// used, or given though unused, must have p's shape, dtype and layout.
func (b *Backend) checkUpdate(op string, p backends.View, views []backends.View, names []string, used []bool) bool {
	var vs []backends.View
	var ns []string
	var shapes [][]int
	for i, view := range views {
		if used[i] || view.Buf != nil {
			vs, ns, shapes = append(vs, view), append(ns, names[i]), append(shapes, p.Shape)
		}
	}
	return b.checkFused(op, p, vs, ns, shapes)
}
