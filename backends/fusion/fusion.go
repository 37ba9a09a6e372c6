package fusion

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kiln-ml/kiln/backends"
)

// MaxOps is the most operations one fused group holds; recording one more
// runs the group first.
const MaxOps = 64

// DefaultTile is the number of elements a tile holds when New is given
// no other size: 4096 float32 values are 16 KiB, so a tile's inputs and
// the few intermediates live at once stay in the L1 and L2 caches.
const DefaultTile = 4096

// Backend is the fusing decorator (see the package doc). Its methods are
// safe for concurrent use; operations from several goroutines join one
// stream, in the order their calls take the lock.
type Backend struct {
	inner backends.Backend
	tile  int
	host  bool // the wrapped backend's buffers are host memory

	mu       sync.Mutex
	ops      []node
	shape    []int // the group's index space: every recorded view has this shape
	n        int   // elements of shape
	bufs     map[backends.Buffer]*bufState
	deferred []backends.Buffer // freed while the group still names them
	scratch  map[backends.DType][]backends.Buffer
	err      error // a call the wrapped backend cannot serve
	stats    Stats
	reds     []reduction      // reduction tails of the group (reduce.go)
	epilogue []node           // element-wise ops on the reductions' results, run after the group (reduce.go)
	programs map[string]*plan // compiled plans by the structure of their group (program.go)
	key      []byte           // the pending group's structure, reused
}

// Stats counts what a Backend has fused since it was made.
type Stats struct {
	Groups        int64 // fused groups run
	Ops           int64 // operations run inside groups
	Scratch       int64 // intermediate buffers kept in tiles, never written to memory
	Tiles         int64 // tiles run
	TileKernelOps int64 // operations of groups run through the wrapped backend's TileKernels
	SegmentOps    int64 // of those, operations run in segments: several ops a pass, in vector registers
	Compiled      int64 // groups planned afresh; the others reused the plan of a group of the same structure
	Reductions    int64 // reductions run inside groups, as their tails (reduce.go)
	Epilogue      int64 // element-wise ops on reductions' results that waited for their group (reduce.go)
	Kernels       int64 // groups run as one kernel the wrapped backend compiled (backends.GroupCompiler)
	Passthrough   int64 // operations forwarded unfused (not element-wise)
	FlushForRead  int64 // groups run because a buffer they touch was read
	FlushForShape int64 // groups run because an op did not fit them
}

// kind is the kernel a node records.
type kind uint8

const (
	kindUnary kind = iota
	kindUnaryGrad
	kindBinary
	kindScalar
	kindWhere
	kindFill
	kindCopy
)

// node is one recorded element-wise kernel. views[0] is its output; all
// views have the group's shape.
type node struct {
	kind    kind
	unary   backends.UnaryOp
	binary  backends.BinaryOp
	p0, p1  float64
	reverse bool
	views   [4]backends.View
	nv      int
}

// bufState is what the group knows of one buffer it touches.
type bufState struct {
	id        int           // the buffer's number in the group, by first use
	view      backends.View // the view it is touched through (the first one)
	written   bool          // some op of the group writes it
	readFirst bool          // read before any write: its earlier contents matter
	multi     bool          // read through more than one view (never written then)
	freed     bool          // freed before the group ran
	reduced   bool          // the output of a reduction tail: complete only once the group ran
}

// New returns a fusing decorator over inner with DefaultTile elements per
// tile.
func New(inner backends.Backend) *Backend { return NewTiled(inner, DefaultTile) }

// NewTiled is New with tile elements per tile; tile below 256 is taken as
// 256.
func NewTiled(inner backends.Backend, tile int) *Backend {
	b := &Backend{inner: inner, tile: max(tile, 256), bufs: map[backends.Buffer]*bufState{},
		scratch: map[backends.DType][]backends.Buffer{}, programs: map[string]*plan{}}
	if probe, err := inner.Alloc(backends.Float32, 1); err == nil {
		_, b.host = probe.(interface{ HostBytes() []byte })
		inner.Free(probe)
	}
	return b
}

// Inner returns the wrapped backend.
func (b *Backend) Inner() backends.Backend { return b.inner }

// Stats returns the fusion counters so far.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Pending returns the number of operations recorded and not yet run.
func (b *Backend) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ops)
}

// Info implements backends.Backend: the wrapped device, named as fused.
func (b *Backend) Info() backends.DeviceInfo {
	i := b.inner.Info()
	i.Name = "fused " + i.Name
	return i
}

// buffer is a Backend's buffer: a wrapped backend's buffer allocated on
// first use, so that an intermediate a group keeps in tiles never gets one.
type buffer struct {
	inner backends.Buffer // nil until materialised
	dtype backends.DType
	n     int
	bytes int64
	owner *Backend
}

// Bytes implements backends.Buffer.
func (f *buffer) Bytes() int64 { return f.bytes }

// hostBuffer is a buffer over a wrapped backend whose buffers are host
// memory (the CPU's): it lets package tensor read them in place, after a
// Sync, as it reads the CPU's own.
type hostBuffer struct{ *buffer }

// HostBytes returns the wrapped buffer's host memory, allocating it first
// if nothing has used the buffer yet.
func (h hostBuffer) HostBytes() []byte {
	b := h.owner
	b.mu.Lock()
	defer b.mu.Unlock()
	if in, ok := b.materialise(h.buffer).(interface{ HostBytes() []byte }); ok {
		return in.HostBytes()
	}
	return nil
}

// Alloc implements backends.Backend. Memory is taken from the wrapped
// backend when the buffer is first used outside a group's tiles, so a
// failure to allocate it (out of memory) is the sticky error of the next
// Read or Sync rather than Alloc's.
func (b *Backend) Alloc(dtype backends.DType, n int) (backends.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("fusion: alloc of %d elements of %s", n, dtype)
	}
	f := &buffer{dtype: dtype, n: n, bytes: int64(n) * int64(dtype.Size()), owner: b}
	if b.host {
		return hostBuffer{f}, nil
	}
	return f, nil
}

// unwrap returns the Backend buffer behind buf, or nil for a buffer of
// another backend.
func unwrap(buf backends.Buffer) *buffer {
	switch f := buf.(type) {
	case *buffer:
		return f
	case hostBuffer:
		return f.buffer
	}
	return nil
}

// materialise returns the wrapped backend's buffer behind f, allocating it
// on first use. Called with b.mu held.
func (b *Backend) materialise(f *buffer) backends.Buffer {
	if f.inner == nil {
		in, err := b.inner.Alloc(f.dtype, f.n)
		if err != nil {
			if b.err == nil {
				b.err = fmt.Errorf("fusion: allocating %d × %s: %w", f.n, f.dtype, err)
			}
			return nil
		}
		f.inner = in
	}
	return f.inner
}

// real returns v on the wrapped backend's buffer. Called with b.mu held.
func (b *Backend) real(v backends.View) backends.View {
	if f := unwrap(v.Buf); f != nil {
		v.Buf = b.materialise(f)
	}
	return v
}

// reals is real for each view of vs.
func (b *Backend) reals(vs []backends.View) []backends.View {
	out := make([]backends.View, len(vs))
	for i, v := range vs {
		out[i] = b.real(v)
	}
	return out
}

// Free implements backends.Backend. A buffer the pending group names is
// freed after the group runs; if the group only writes it and reads it
// back, it is never allocated at all.
func (b *Backend) Free(buf backends.Buffer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bs := b.bufs[buf]; bs != nil && !bs.freed {
		bs.freed = true
		b.deferred = append(b.deferred, buf)
		return
	}
	b.release(buf)
}

// release gives buf's memory back to the wrapped backend. Called with b.mu
// held.
func (b *Backend) release(buf backends.Buffer) {
	f := unwrap(buf)
	if f == nil {
		b.inner.Free(buf)
		return
	}
	if f.inner != nil {
		b.inner.Free(f.inner)
		f.inner = nil
	}
}

// Write implements backends.Backend, running the group first when it
// touches buf.
func (b *Backend) Write(buf backends.Buffer, off int64, src []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bufs[buf] != nil {
		b.flushLocked()
	}
	if in := b.real(backends.View{Buf: buf}).Buf; in != nil {
		b.inner.Write(in, off, src)
	}
}

// Read implements backends.Backend, running the group first when it
// touches buf.
func (b *Backend) Read(buf backends.Buffer, off int64, dst []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bufs[buf] != nil {
		b.stats.FlushForRead++
		b.flushLocked()
	}
	in := b.real(backends.View{Buf: buf}).Buf
	err := b.takeErrLocked()
	if in == nil {
		return err
	}
	return errors.Join(err, b.inner.Read(in, off, dst))
}

// Sync implements backends.Backend: it runs the pending group, gives the
// tiles' scratch buffers back to the wrapped backend (so that a leak check
// after Sync sees only the caller's buffers), then waits for the wrapped
// backend.
func (b *Backend) Sync() error {
	b.mu.Lock()
	b.flushLocked()
	for dt, bufs := range b.scratch {
		for _, buf := range bufs {
			b.inner.Free(buf)
		}
		delete(b.scratch, dt)
	}
	err := b.takeErrLocked()
	b.mu.Unlock()
	return errors.Join(err, b.inner.Sync())
}

// Flush runs the pending group without waiting for the wrapped backend.
func (b *Backend) Flush() {
	b.mu.Lock()
	b.flushLocked()
	b.mu.Unlock()
}

func (b *Backend) takeErrLocked() error {
	err := b.err
	b.err = nil
	return err
}

// MemoryStats implements backends.Backend: the wrapped backend's, which
// include the tiles' scratch buffers.
func (b *Backend) MemoryStats() backends.MemoryStats { return b.inner.MemoryStats() }

// Fill implements backends.Backend (recorded).
func (b *Backend) Fill(out backends.View, v float64) {
	b.record(node{kind: kindFill, p0: v, views: [4]backends.View{out}, nv: 1})
}

// Copy implements backends.Backend (recorded).
func (b *Backend) Copy(out, x backends.View) {
	b.record(node{kind: kindCopy, views: [4]backends.View{out, x}, nv: 2})
}

// Unary implements backends.Backend (recorded).
func (b *Backend) Unary(op backends.UnaryOp, out, x backends.View, p0, p1 float64) {
	b.record(node{kind: kindUnary, unary: op, p0: p0, p1: p1, views: [4]backends.View{out, x}, nv: 2})
}

// UnaryGrad implements backends.Backend (recorded).
func (b *Backend) UnaryGrad(op backends.UnaryOp, out, x, g backends.View, p0, p1 float64) {
	b.record(node{kind: kindUnaryGrad, unary: op, p0: p0, p1: p1, views: [4]backends.View{out, x, g}, nv: 3})
}

// Binary implements backends.Backend (recorded).
func (b *Backend) Binary(op backends.BinaryOp, out, x, y backends.View) {
	b.record(node{kind: kindBinary, binary: op, views: [4]backends.View{out, x, y}, nv: 3})
}

// BinaryScalar implements backends.Backend (recorded).
func (b *Backend) BinaryScalar(op backends.BinaryOp, out, a backends.View, s float64, reverse bool) {
	b.record(node{kind: kindScalar, binary: op, p0: s, reverse: reverse, views: [4]backends.View{out, a}, nv: 2})
}

// Where implements backends.Backend (recorded).
func (b *Backend) Where(out, cond, x, y backends.View) {
	b.record(node{kind: kindWhere, views: [4]backends.View{out, cond, x, y}, nv: 4})
}

// record adds n to the group, running the group first when n does not
// fit it, or runs n alone when it cannot be fused at all.
func (b *Backend) record(n node) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := n.views[0]
	count, ok := backends.CheckedNumElements(out.Shape)
	if !ok || count == 0 || n.views[0].Buf == nil || !b.selfConsistent(&n) {
		// Nothing to fuse (or a call the wrapped backend will refuse):
		// run it in order, after the group.
		b.flushLocked()
		b.stats.Passthrough++
		for i := range n.nv {
			n.views[i] = b.real(n.views[i])
		}
		b.run(&n, n.views[:n.nv])
		return
	}
	if len(b.ops) > 0 && !b.fits(&n, count) {
		if b.epilogueFits(&n, count) {
			b.enterEpilogue(&n)
			return
		}
		b.stats.FlushForShape++
		b.flushLocked()
	}
	if len(b.ops) == 0 {
		b.shape = slices.Clone(out.Shape)
		b.n = count
	}
	for i := range n.nv {
		n.views[i] = inShape(n.views[i], b.shape)
	}
	b.enter(&n)
	b.ops = append(b.ops, n)
	if len(b.ops)+len(b.reds)+len(b.epilogue) >= MaxOps {
		b.flushLocked()
	}
}

// selfConsistent reports whether n's own views let it run tile by tile:
// an output that is also an input must be read through the same view, and
// every view must have out's shape.
func (b *Backend) selfConsistent(n *node) bool {
	out := n.views[0]
	for i := 1; i < n.nv; i++ {
		v := n.views[i]
		if v.Buf == nil || !slices.Equal(v.Shape, out.Shape) || len(v.Strides) != len(v.Shape) {
			return false
		}
		if v.Buf == out.Buf && !sameView(v, out) {
			return false
		}
	}
	return len(out.Strides) == len(out.Shape)
}

// fits reports whether n can join the pending group of the same count of
// elements: every view expressible in the group's shape, and no view that
// would read or write a buffer of the group through another view than the
// group's (which would make one tile depend on another).
func (b *Backend) fits(n *node, count int) bool {
	if count != b.n {
		return false
	}
	for i := range n.nv {
		if !slices.Equal(n.views[i].Shape, b.shape) && !n.views[i].IsContiguous() {
			return false
		}
	}
	for i := range n.nv {
		v := inShape(n.views[i], b.shape)
		bs := b.bufs[v.Buf]
		if bs == nil {
			continue
		}
		if bs.reduced {
			return false // a reduction's result is whole only after the group
		}
		if i == 0 {
			if bs.multi || !sameView(bs.view, v) {
				return false
			}
		} else if bs.written && !sameView(bs.view, v) {
			return false
		}
	}
	return true
}

// enter records n's buffers in the group's table: inputs first (an op
// reads before it writes), then the output.
func (b *Backend) enter(n *node) {
	for i := 1; i < n.nv; i++ {
		v := n.views[i]
		bs := b.bufs[v.Buf]
		if bs == nil {
			b.bufs[v.Buf] = &bufState{id: len(b.bufs), view: v, readFirst: true}
			continue
		}
		if !bs.written && !sameView(bs.view, v) {
			bs.multi = true
		}
	}
	out := n.views[0]
	if bs := b.bufs[out.Buf]; bs != nil {
		bs.written = true
	} else {
		b.bufs[out.Buf] = &bufState{id: len(b.bufs), view: out, written: true}
	}
}

// inShape returns v with shape (which has v's number of elements): v
// itself when it has that shape, else v's contiguous elements re-viewed.
func inShape(v backends.View, shape []int) backends.View {
	if slices.Equal(v.Shape, shape) {
		return v
	}
	return backends.View{Buf: v.Buf, DType: v.DType, Shape: shape, Strides: backends.RowMajorStrides(shape), Offset: v.Offset}
}

// sameView reports whether a and b address the same elements in the same
// order (both have the group's shape). Strides of size-1 dimensions do not
// matter.
func sameView(a, b backends.View) bool {
	if a.Buf != b.Buf || a.DType != b.DType || a.Offset != b.Offset || len(a.Shape) != len(b.Shape) {
		return false
	}
	for i, s := range a.Shape {
		if s != b.Shape[i] {
			return false
		}
		if s != 1 && a.Strides[i] != b.Strides[i] {
			return false
		}
	}
	return true
}

// run calls the wrapped backend's kernel for n on views vs.
func (b *Backend) run(n *node, vs []backends.View) {
	in := b.inner
	switch n.kind {
	case kindUnary:
		in.Unary(n.unary, vs[0], vs[1], n.p0, n.p1)
	case kindUnaryGrad:
		in.UnaryGrad(n.unary, vs[0], vs[1], vs[2], n.p0, n.p1)
	case kindBinary:
		in.Binary(n.binary, vs[0], vs[1], vs[2])
	case kindScalar:
		in.BinaryScalar(n.binary, vs[0], vs[1], n.p0, n.reverse)
	case kindWhere:
		in.Where(vs[0], vs[1], vs[2], vs[3])
	case kindFill:
		in.Fill(vs[0], n.p0)
	case kindCopy:
		in.Copy(vs[0], vs[1])
	}
}
