package tensor

import (
	"runtime"
	"sync/atomic"

	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/backends"
)

// DType is the element type of a tensor; see backends.DType.
type DType = backends.DType

// The element types, re-exported so user code needs only package tensor.
const (
	Float32  = backends.Float32
	Float64  = backends.Float64
	Float16  = backends.Float16
	BFloat16 = backends.BFloat16
	Int64    = backends.Int64
	Int32    = backends.Int32
	Int16    = backends.Int16
	Int8     = backends.Int8
	Uint8    = backends.Uint8
	Bool     = backends.Bool
)

// Tensor is an n-dimensional array on a Device. Rank, shape and dtype are
// run-time properties. Tensors are immutable from the API's point of view:
// ops return new tensors, and layout ops (Reshape, Permute, Slice, …) return
// views that share storage without copying where possible.
//
// Memory is owned explicitly: Release frees a tensor's storage once no view
// uses it, and Scope releases everything a step allocated. A finalizer is
// only a safety net for tensors nobody released.
type Tensor struct {
	dev     Device
	st      *storage
	ref     *ref // this tensor's hold on st
	dtype   DType
	shape   []int
	strides []int
	offset  int

	node         *autodiff.Node
	requiresGrad bool
	traced       bool        // computed from a TraceInput input: every op on it records (tracing.go)
	scope        *scopeFrame // innermost scope that will release this tensor
}

// storage is one backend buffer shared by a tensor and its views.
type storage struct {
	dev   *deviceState
	buf   backends.Buffer
	bytes int64
	refs  atomic.Int64
}

// ref is a tensor's reference on a storage, dropped exactly once by Release
// or, failing that, by the garbage collector.
type ref struct {
	st      *storage
	dropped atomic.Bool
}

func (r *ref) drop() {
	if r.dropped.Swap(true) {
		return
	}
	if r.st.refs.Add(-1) == 0 {
		r.st.dev.free(r.st.buf, r.st.bytes)
		r.st.buf = nil
	}
}

// attach gives t its own reference on st and registers it with the scope
// of the calling goroutine, if any. A tensor outside any scope drops its
// reference when it is garbage collected; one in a scope is released when
// the scope ends (the scope holds it until then), and gets the collector's
// clean-up only if Keep takes it out of every scope.
func (t *Tensor) attach(st *storage) {
	st.refs.Add(1)
	t.st = st
	t.ref = &ref{st: st}
	if !registerInScope(t) {
		t.dropWhenCollected()
	}
}

// dropWhenCollected makes the garbage collector drop t's reference once t
// is unreachable.
func (t *Tensor) dropWhenCollected() { runtime.AddCleanup(t, dropRef, t.ref) }

func dropRef(r *ref) { r.drop() }

// newTensor allocates a contiguous tensor on dev.
func newTensor(op string, dev Device, dtype DType, shape []int) *Tensor {
	dev.check(op)
	bytes := checkedBytes(op, dtype, shape)
	n := backends.NumElements(shape)
	st := &storage{dev: dev.st, bytes: bytes}
	st.buf = dev.st.alloc(op, dtype, n)
	t := &Tensor{dev: dev, dtype: dtype, shape: append([]int(nil), shape...), strides: backends.RowMajorStrides(shape)}
	t.attach(st)
	return t
}

// newView returns a tensor sharing t's storage with another layout. The
// ops that compute shapes check them first; this check is the backstop.
func (t *Tensor) newView(shape, strides []int, offset int) *Tensor {
	checkedNumel("View", shape)
	v := &Tensor{dev: t.dev, dtype: t.dtype, shape: shape, strides: strides, offset: offset}
	v.attach(t.st)
	return v
}

// view returns the backend's description of t.
func (t *Tensor) view() backends.View {
	return backends.View{Buf: t.st.buf, DType: t.dtype, Shape: t.shape, Strides: t.strides, Offset: t.offset}
}

// live panics unless t can be used by op.
func (t *Tensor) live(op string) {
	if t == nil {
		fail(op, ErrArgument, "nil tensor")
	}
	if t.ref.dropped.Load() {
		fail(op, ErrReleased, "tensor %s %s was released", shapeString(t.shape), t.dtype)
	}
}

func (t *Tensor) backend() backends.Backend { return t.dev.st.backend }

// Release frees t's hold on its storage now; the memory returns to the
// device once no view of it remains. Using t afterwards panics with
// ErrReleased. Releasing twice is harmless.
func (t *Tensor) Release() {
	if t == nil || t.ref == nil {
		return
	}
	t.ref.drop()
	t.node = nil
}

// Released reports whether Release has been called on t.
func (t *Tensor) Released() bool { return t.ref.dropped.Load() }

// Shape returns a copy of t's dimensions.
func (t *Tensor) Shape() []int { return append([]int(nil), t.shape...) }

// Dims returns the rank (number of dimensions) of t.
func (t *Tensor) Dims() int { return len(t.shape) }

// Dim returns the size of dimension d (negative d counts from the end).
func (t *Tensor) Dim(d int) int {
	return t.shape[normAxis("Dim", d, len(t.shape))]
}

// NumElements returns the number of elements of t.
func (t *Tensor) NumElements() int { return backends.NumElements(t.shape) }

// DType returns t's element type.
func (t *Tensor) DType() DType { return t.dtype }

// Device returns the device (view) t lives on.
func (t *Tensor) Device() Device { return t.dev }

// Strides returns t's element strides (for debugging and interop).
func (t *Tensor) Strides() []int { return append([]int(nil), t.strides...) }

// IsContiguous reports whether t is laid out row-major without gaps.
func (t *Tensor) IsContiguous() bool { return t.view().IsContiguous() }

// Node returns the graph node recorded for t, or nil.
func (t *Tensor) Node() *autodiff.Node { return t.node }

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(op string, axis, rank int) int {
	a := axis
	if a < 0 {
		a += rank
	}
	if a < 0 || a >= rank {
		fail(op, ErrArgument, "dimension %d out of range for a tensor of rank %d", axis, rank)
	}
	return a
}

// BufferOf returns the backend buffer behind t, for backend tests and
// interop code that must hand device memory to other libraries. The buffer
// stays valid only while t (or a view of it) is live.
func BufferOf(t *Tensor) backends.Buffer {
	t.live("BufferOf")
	return t.st.buf
}
