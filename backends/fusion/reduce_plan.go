package fusion

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
)

// isBarrier reports whether original dimension d starts the reduced
// dimensions of a reduction tail over part of the group: dimensions are
// not merged across it, so that a tile holds whole runs or part of one.
func (b *Backend) isBarrier(d int) bool {
	if len(b.reds) == 0 {
		return false
	}
	p := 1
	for _, s := range b.shape[d:] {
		p *= s
	}
	for _, r := range b.reds {
		if r.rows == p && r.rows < b.n {
			return true
		}
	}
	return false
}

// planReductions lays out the reductions that run after ops [0, i): each
// reads its input from the slot the input holds then, or from memory; a
// slot no later op reads is given back after them.
func (b *Backend) planReductions(p *plan, i int, groups [][]int, slotOf map[backends.Buffer]int, free map[backends.DType][]int, last map[backends.Buffer]int) {
	for r := range b.reds {
		red := &b.reds[r]
		if red.after != i {
			continue
		}
		v := red.x
		vp := viewPlan{buf: v.Buf, dtype: v.DType, offset: v.Offset, slot: -1, strides: make([]int, len(groups))}
		for k, g := range groups {
			if len(g) > 0 {
				vp.strides[k] = v.Strides[g[len(g)-1]]
			}
		}
		if s, ok := slotOf[v.Buf]; ok {
			vp.slot = s
		} else {
			vp.buf = b.real(v).Buf
		}
		rp := redPlan{op: red.op, after: i, x: vp, dtype: v.DType, rows: red.rows, outputs: b.n / red.rows,
			seg: red.rows, segs: 1}
		if rp.outputs < fewOutputs && rp.rows > segmentLen {
			rp.seg, rp.segs = segmentLen, (rp.rows+segmentLen-1)/segmentLen
		}
		rp.wide = wideSum && rp.dtype == backends.Float32 && rp.op == backends.Sum
		p.reds[r] = rp
	}
	for r := range b.reds {
		buf := b.reds[r].x.Buf
		if b.reds[r].after != i || last[buf] != i || i < len(b.ops) && names(&b.ops[i], buf) {
			continue
		}
		if s, ok := slotOf[buf]; ok {
			delete(slotOf, buf)
			free[b.reds[r].x.DType] = append(free[b.reds[r].x.DType], s)
		}
		last[buf] = -1
	}
}

// names reports whether n reads or writes buf.
func names(n *node, buf backends.Buffer) bool {
	for j := range n.nv {
		if n.views[j].Buf == buf {
			return true
		}
	}
	return false
}

// alignChunk makes the tiles of a group with segmented reductions (few
// outputs, long runs) start at the runs' boundaries where the dimensions
// allow it: a chunk of a power of two elements that divides segmentLen.
func (b *Backend) alignChunk(p *plan) {
	segmented := false
	for _, rp := range p.reds {
		segmented = segmented || rp.segs > 1
	}
	if !segmented || segmentLen%p.inner != 0 {
		return
	}
	c := 1
	for 2*c*p.inner <= min(b.tile, segmentLen) {
		c *= 2
	}
	p.chunk = max(1, min(p.shape[p.split], c))
}

// planUnits cuts the tiles of a group with reductions into units: runs of
// consecutive tiles that one worker runs in order, because a reduction's
// run continues from one into the next. A unit starts at every tile that
// starts a run of every reduction.
func (b *Backend) planUnits(p *plan) {
	p.units = nil
	if len(p.reds) == 0 {
		return
	}
	for t := range p.tiles {
		f0 := p.flatStart(t)
		boundary := true
		for _, rp := range p.reds {
			boundary = boundary && f0%rp.rows%rp.seg == 0
		}
		if t == 0 || boundary {
			p.units = append(p.units, t)
		}
	}
	p.units = append(p.units, p.tiles)
}

// flatStart is the group's flat index of the first element of tile t.
func (p *plan) flatStart(t int) int {
	return (t/p.perRow)*p.shape[p.split]*p.inner + (t%p.perRow)*p.chunk*p.inner
}

// bindReductions binds the reductions' inputs and outputs to the pending
// group's buffers. Called with b.mu held.
func (b *Backend) bindReductions(p *plan) {
	if len(p.reds) == 0 {
		return
	}
	reds := make([]redPlan, len(p.reds))
	copy(reds, p.reds)
	p.reds = reds
	for r := range reds {
		rp := &reds[r]
		red := &b.reds[r]
		if rp.x.slot < 0 {
			rp.x.buf = b.real(red.x).Buf
		}
		out := b.real(red.out)
		rp.outOff = out.Offset
		ok := out.Buf != nil && (rp.x.slot >= 0 || rp.x.buf != nil)
		if ok && rp.dtype == backends.Float32 {
			rp.of32 = hostF32(out.Buf)
			if rp.x.slot < 0 {
				rp.xf32 = hostF32(rp.x.buf)
			}
			ok = rp.of32 != nil && (rp.x.slot >= 0 || rp.xf32 != nil)
		} else if ok {
			rp.of64 = hostF64(out.Buf)
			if rp.x.slot < 0 {
				rp.xf64 = hostF64(rp.x.buf)
			}
			ok = rp.of64 != nil && (rp.x.slot >= 0 || rp.xf64 != nil)
		}
		if !ok {
			if b.err == nil {
				b.err = fmt.Errorf("fusion: %s: a buffer of the reduction is not host memory", red.op)
			}
			p.reds = nil
			return
		}
		if rp.segs > 1 {
			rp.parts = make([]float64, rp.outputs*rp.segs)
		}
	}
}
