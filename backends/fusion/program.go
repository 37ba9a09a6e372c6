package fusion

import (
	"encoding/binary"
	"math"
)

// A group's plan (its merged shape and tiling, the scratch slots of its
// intermediates, the tile kernels of its ops and its segments' programs)
// depends only on the group's structure: the ops and their parameters,
// the views' dtypes, offsets and strides, which views share a buffer, and
// which buffers are freed before the group runs. A training step records
// the same groups every step, so plans are compiled once per structure and
// kept, keyed by that structure; a group of a known structure only binds
// its buffers to a copy of the plan's views.

// maxPrograms is the most compiled plans a Backend keeps; past it the
// cache starts again empty.
const maxPrograms = 512

// program returns the plan of the pending group, from the cache when a
// group of the same structure ran before. Called with b.mu held.
func (b *Backend) program() *plan {
	b.key = b.appendKey(b.key[:0])
	if t := b.programs[string(b.key)]; t != nil {
		if p := b.bind(t); p != nil {
			b.bindReductions(p)
			return p
		}
	}
	p := b.plan()
	b.planFast(p)
	b.planSteps(p)
	b.stats.Compiled++
	if len(b.programs) >= maxPrograms {
		clear(b.programs)
	}
	b.programs[string(b.key)] = template(p)
	b.bindReductions(p)
	return p
}

// template returns p without its buffers, to be kept.
func template(p *plan) *plan {
	t := *p
	t.views = make([][4]viewPlan, len(p.views))
	for i := range p.views {
		t.views[i] = p.views[i]
		for j := range t.views[i] {
			t.views[i][j].buf, t.views[i][j].f32 = nil, nil
		}
	}
	t.reds = make([]redPlan, len(p.reds))
	for r, rp := range p.reds {
		t.reds[r] = redPlan{op: rp.op, after: rp.after, x: rp.x, dtype: rp.dtype, rows: rp.rows,
			outputs: rp.outputs, seg: rp.seg, segs: rp.segs, wide: rp.wide}
		t.reds[r].x.buf = nil
	}
	return &t
}

// bind returns template t with the pending group's buffers, or nil where
// a buffer's memory cannot be read as float32 values as t's tile kernels
// need (the group is then planned afresh).
func (b *Backend) bind(t *plan) *plan {
	p := *t
	p.views = make([][4]viewPlan, len(t.views))
	for i := range t.views {
		n := &b.ops[i]
		p.views[i] = t.views[i]
		for j := range n.nv {
			vp := &p.views[i][j]
			if vp.slot >= 0 {
				continue
			}
			vp.buf = b.real(n.views[j]).Buf
			if p.fast != nil && p.fast[i] != nil {
				if vp.f32 = hostF32(vp.buf); vp.f32 == nil {
					return nil
				}
			}
		}
	}
	return &p
}

// appendKey appends the pending group's structure to key.
func (b *Backend) appendKey(key []byte) []byte {
	key = binary.AppendUvarint(key, uint64(len(b.shape)))
	for _, s := range b.shape {
		key = binary.AppendUvarint(key, uint64(s))
	}
	flags := make([]byte, len(b.bufs))
	for _, bs := range b.bufs {
		var f byte
		for k, set := range []bool{bs.written, bs.readFirst, bs.multi, bs.freed, bs.reduced} {
			if set {
				f |= 1 << k
			}
		}
		flags[bs.id] = f
	}
	key = append(key, flags...)
	for _, r := range b.reds {
		key = append(key, byte(r.op))
		key = binary.AppendUvarint(key, uint64(r.after))
		key = binary.AppendUvarint(key, uint64(b.bufs[r.x.Buf].id))
		key = binary.AppendUvarint(key, uint64(b.bufs[r.out.Buf].id))
		key = binary.AppendUvarint(key, uint64(r.rows))
		key = append(key, byte(r.x.DType))
	}
	for i := range b.ops {
		n := &b.ops[i]
		key = append(key, byte(n.kind), byte(n.unary), byte(n.binary), byte(n.nv))
		if n.reverse {
			key = append(key, 1)
		} else {
			key = append(key, 0)
		}
		key = binary.LittleEndian.AppendUint64(key, math.Float64bits(n.p0))
		key = binary.LittleEndian.AppendUint64(key, math.Float64bits(n.p1))
		for j := range n.nv {
			v := &n.views[j]
			key = binary.AppendUvarint(key, uint64(b.bufs[v.Buf].id))
			key = append(key, byte(v.DType))
			key = binary.AppendVarint(key, int64(v.Offset))
			for _, s := range v.Strides {
				key = binary.AppendVarint(key, int64(s))
			}
		}
	}
	return key
}
