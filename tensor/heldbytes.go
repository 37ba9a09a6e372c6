package tensor

import (
	"errors"
	"sync"
)

// HeldBytes is a hold on a tensor's elements as raw little-endian bytes in
// row-major order (the layout of Bytes), for code that reads or writes them
// in place: a communication library, a file read straight into a tensor.
// HoldBytes makes one; Release ends it.
//
// For a contiguous tensor whose device keeps its buffers in host memory
// (the CPU), the bytes are the tensor's own storage: nothing is copied, and
// what is written to them is at once the tensor's values (and those of the
// views sharing its storage). Elsewhere (a GPU, a strided view, a backend
// decorator such as the strict backend) they are a copy, read when the hold
// is made, that Store writes back.
//
// While the hold lasts the storage stays allocated, even if the tensor is
// released, and the bytes stay where they are (Go's heap does not move
// objects, and the hold keeps them reachable), so they may be handed to C
// code through purego until Release; cgo callers that keep the pointer
// past a call pin it themselves (runtime.Pinner), as cgo's rules ask. A
// hold never released keeps its storage allocated, nothing worse. The tensor must not be used
// by ops that write it while the hold lasts, as for Assign.
type HeldBytes struct {
	t      *Tensor
	st     *storage
	raw    []byte
	shared bool
	mu     sync.Mutex // guards done: Release may be called from another goroutine
	done   bool
	scrap  *[]byte // the pooled copy, when not shared
}

// heldScratch keeps the copies of holds that could not share a tensor's
// storage, so that a loop holding the same GPU tensor reuses one buffer.
var heldScratch sync.Pool

// hostBuffer is a backend buffer in host memory that its backend lets
// package tensor read and write directly (the CPU backend's buffers). The
// slice is the whole buffer, valid until the buffer is freed.
type hostBuffer interface {
	HostBytes() []byte
}

// HoldBytes returns a hold on t's elements as bytes (see HeldBytes). It
// waits for work queued on t's device. It panics with ErrReleased for a
// released tensor and with ErrDeviceFailed when the device failed.
func (t *Tensor) HoldBytes() *HeldBytes {
	const op = "HoldBytes"
	t.live(op)
	t.dev.st.hostReads.Add(1)
	st := t.st
	if !st.hold() {
		fail(op, ErrReleased, "tensor %s %s was released", shapeString(t.shape), t.dtype)
	}
	h := &HeldBytes{t: t, st: st}
	ok := false
	defer func() {
		if !ok {
			st.unhold()
		}
	}()
	sz := t.dtype.Size()
	n := t.NumElements() * sz
	if hb, isHost := st.buf.(hostBuffer); isHost && t.IsContiguous() {
		if err := t.backend().Sync(); err != nil {
			fail(op, errors.Join(ErrDeviceFailed, err), "waiting for %s %s on %s: %v", shapeString(t.shape), t.dtype, t.dev, err)
		}
		off := t.offset * sz
		h.raw, h.shared = hb.HostBytes()[off:off+n:off+n], true
	} else {
		h.scrap = scratch(n)
		h.raw = (*h.scrap)[:n]
		c := t
		if !t.IsContiguous() {
			c = rawContiguous(op, t)
			defer c.Release()
		}
		if err := c.backend().Read(c.st.buf, int64(c.offset*sz), h.raw); err != nil {
			heldScratch.Put(h.scrap)
			fail(op, errors.Join(ErrDeviceFailed, err), "reading %s %s from %s: %v", shapeString(t.shape), t.dtype, t.dev, err)
		}
	}
	ok = true
	return h
}

// scratch returns a pooled buffer of at least n bytes.
func scratch(n int) *[]byte {
	if p, _ := heldScratch.Get().(*[]byte); p != nil && cap(*p) >= n {
		return p
	}
	b := make([]byte, n)
	return &b
}

// Bytes returns the held bytes: t's storage or a copy (see Shared). They
// are valid until Release; keep no reference past it.
func (h *HeldBytes) Bytes() []byte { return h.raw }

// Shared reports whether Bytes is the tensor's own storage (no copy).
func (h *HeldBytes) Shared() bool { return h.shared }

// Store makes what was written to Bytes the tensor's values: nothing to do
// when the bytes are shared, a copy into the tensor otherwise. It panics
// with ErrReleased after Release or once the tensor is released, and with
// ErrDeviceFailed when the device failed.
func (h *HeldBytes) Store() {
	const op = "HeldBytes.Store"
	h.mu.Lock()
	done := h.done
	h.mu.Unlock()
	if done {
		fail(op, ErrReleased, "hold on %s %s already released", shapeString(h.t.shape), h.t.dtype)
	}
	t := h.t
	t.live(op)
	if h.shared || len(h.raw) == 0 {
		return
	}
	if t.IsContiguous() {
		t.backend().Write(t.st.buf, int64(t.offset*t.dtype.Size()), h.raw)
	} else {
		src := fromBytes(op, t.dev.Inner(), t.dtype, t.shape, h.raw)
		t.backend().Copy(t.view(), src.view())
		src.Release()
	}
	if err := t.backend().Sync(); err != nil {
		fail(op, errors.Join(ErrDeviceFailed, err), "writing %s %s to %s: %v", shapeString(t.shape), t.dtype, t.dev, err)
	}
}

// Release ends the hold: it lets the storage go once
// no tensor uses it. It may be called from any goroutine; a second call
// does nothing, as does Release of a HeldBytes not made by HoldBytes.
func (h *HeldBytes) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done || h.st == nil {
		return
	}
	h.done = true
	h.raw = nil
	if h.scrap != nil {
		heldScratch.Put(h.scrap)
		h.scrap = nil
	}
	h.st.unhold()
}

// hold takes one more reference on st unless it has already been freed.
func (st *storage) hold() bool {
	for {
		n := st.refs.Load()
		if n <= 0 {
			return false
		}
		if st.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unhold drops a reference taken by hold, freeing st when it was the last.
func (st *storage) unhold() {
	if st.refs.Add(-1) == 0 {
		st.dev.free(st.buf, st.bytes)
		st.buf = nil
	}
}
