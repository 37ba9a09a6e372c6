//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"fmt"
	"slices"

	"github.com/kiln-ml/kiln/backends"
)

// span returns the lowest and highest element offsets v addresses; ok is
// false for a view with no elements.
func span(v backends.View) (lo, hi int, ok bool) {
	lo, hi = v.Offset, v.Offset
	for k, s := range v.Shape {
		if s == 0 {
			return 0, 0, false
		}
		d := (s - 1) * v.Strides[k]
		if d < 0 {
			lo += d
		} else {
			hi += d
		}
	}
	return lo, hi, true
}

// ok checks that every view belongs to this device, has its buffer's dtype,
// at most 8 dimensions and stays inside its buffer. When one does not it
// records the sticky error, naming op, and returns false: the caller then
// runs nothing.
func (b *Backend) ok(op string, views ...backends.View) bool {
	for _, v := range views {
		if err := b.checkView(v); err != nil {
			b.fail(fmt.Errorf("vulkan: %s: %w", op, err))
			return false
		}
	}
	return true
}

func (b *Backend) checkView(v backends.View) error {
	bb, isOurs := v.Buf.(*buffer)
	switch {
	case !isOurs || bb.owner != b:
		return fmt.Errorf("view %v: buffer %T does not belong to vulkan:%d", v, v.Buf, b.index)
	case bb.blk == nil:
		return fmt.Errorf("view %v: its buffer was freed", v)
	case v.DType != bb.dtype:
		return fmt.Errorf("view %v: dtype %s, but its buffer holds %s", v, v.DType, bb.dtype)
	case len(v.Shape) > 8:
		return fmt.Errorf("view %v: %d dimensions (at most 8)", v, len(v.Shape))
	case len(v.Strides) != len(v.Shape):
		return fmt.Errorf("view %v: %d strides for %d dimensions", v, len(v.Strides), len(v.Shape))
	}
	for _, s := range v.Shape {
		if s < 0 {
			return fmt.Errorf("view %v: negative dimension", v)
		}
	}
	lo, hi, nonEmpty := span(v)
	n := int(bb.bytes / int64(bb.dtype.Size()))
	if nonEmpty && (lo < 0 || hi >= n) {
		return fmt.Errorf("view %v reaches elements [%d, %d] of a %d-element buffer", v, lo, hi, n)
	}
	return nil
}

// hostCopy is the CPU copy of the part of one device buffer that onHost's
// views reference.
type hostCopy struct {
	dev    *buffer
	lo, hi int // element range copied
	cpu    backends.Buffer
	outLo  int // element range written back (outs only)
	outHi  int
	isOut  bool
}

// onHost runs fn on the CPU backend with host copies: it waits for queued
// work, copies the regions of the buffers the views reference into CPU
// buffers (one per device buffer, so aliasing views still alias), calls fn
// with the CPU backend and the translated views (same order), then writes
// the regions of outs back through the stream. An error fn's kernels record
// becomes the sticky error. Each call is counted per op in b.hostOps.
func (b *Backend) onHost(op string, outs []backends.View, ins []backends.View, fn func(c backends.Backend, outs, ins []backends.View)) {
	if !b.ok(op, slices.Concat(outs, ins)...) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hostOps[op]++
	if b.lost() {
		return
	}
	copies := map[*buffer]*hostCopy{}
	var order []*hostCopy
	note := func(v backends.View, out bool) {
		lo, hi, nonEmpty := span(v)
		if !nonEmpty {
			return
		}
		bb := v.Buf.(*buffer)
		c := copies[bb]
		if c == nil {
			c = &hostCopy{dev: bb, lo: lo, hi: hi, outLo: lo, outHi: hi}
			copies[bb] = c
			order = append(order, c)
		}
		c.lo, c.hi = min(c.lo, lo), max(c.hi, hi)
		if out {
			if !c.isOut {
				c.outLo, c.outHi = lo, hi
			}
			c.outLo, c.outHi = min(c.outLo, lo), max(c.outHi, hi)
			c.isOut = true
		}
	}
	for _, v := range outs {
		note(v, true)
	}
	for _, v := range ins {
		note(v, false)
	}
	b.waitIdle()
	for _, c := range order {
		size := c.dev.dtype.Size()
		buf, err := b.cpu.Alloc(c.dev.dtype, c.hi-c.lo+1)
		if err != nil {
			b.fail(fmt.Errorf("vulkan: %s on the host: %w", op, err))
			return
		}
		c.cpu = buf
		data := make([]byte, (c.hi-c.lo+1)*size)
		b.download(c.dev.blk, int64(c.lo*size), data)
		b.cpu.Write(buf, 0, data)
	}
	defer func() {
		for _, c := range order {
			b.cpu.Free(c.cpu)
		}
	}()
	translate := func(vs []backends.View) []backends.View {
		out := make([]backends.View, len(vs))
		for i, v := range vs {
			out[i] = v
			if c := copies[v.Buf.(*buffer)]; c != nil {
				out[i].Buf = c.cpu
				out[i].Offset = v.Offset - c.lo
			} else { // an empty view: any buffer of its dtype will do
				out[i].Buf, _ = b.cpu.Alloc(v.DType, 0)
				out[i].Offset = 0
			}
		}
		return out
	}
	fn(b.cpu, translate(outs), translate(ins))
	if err := b.cpu.Sync(); err != nil {
		b.fail(err)
	}
	for _, c := range order {
		if !c.isOut {
			continue
		}
		size := c.dev.dtype.Size()
		data := make([]byte, (c.outHi-c.outLo+1)*size)
		if err := b.cpu.Read(c.cpu, int64((c.outLo-c.lo)*size), data); err != nil {
			b.fail(err)
			return
		}
		b.upload(c.dev.blk, int64(c.outLo*size), data)
	}
}
