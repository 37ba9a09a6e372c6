package fusion

import (
	"slices"

	"github.com/kiln-ml/kiln/backends"
)

// runCompiled runs the pending group as one kernel that the inner backend
// compiles for it (backends.GroupCompiler, as the CUDA backend offers),
// and reports whether it did; otherwise the group runs tile by tile
// (execute). Called with b.mu held.
func (b *Backend) runCompiled() bool {
	gc, ok := b.inner.(backends.GroupCompiler)
	if !ok || len(b.reds) > 0 || len(b.epilogue) > 0 {
		return false // reduction tails run only in tiles (reduce.go)
	}
	g := b.group()
	if g == nil {
		return false
	}
	return gc.RunGroup(g)
}

// group translates the pending group into a backends.ElementwiseGroup.
// Each buffer the group writes is one value, reached through its one view;
// a buffer only read is one value per view it is read through. A buffer
// the group writes without reading its earlier contents and that is freed
// before the group runs is kept in the group (no memory), as plan keeps it
// in tiles; every other buffer is materialised. It returns nil when a
// buffer's memory cannot be had (the error is recorded; the tiled path
// then skips what needs it). Called with b.mu held.
func (b *Backend) group() *backends.ElementwiseGroup {
	g := &backends.ElementwiseGroup{Shape: slices.Clone(b.shape), Ops: make([]backends.GroupOp, len(b.ops))}
	type viewKey struct {
		buf    backends.Buffer
		offset int
		dtype  backends.DType
		stride string
	}
	byBuffer := map[backends.Buffer]int{} // written buffers: their one value
	byView := map[viewKey]int{}           // read-only buffers: a value per view
	value := func(v backends.View) int {
		bs := b.bufs[v.Buf]
		var k viewKey
		if bs.written {
			if i, ok := byBuffer[v.Buf]; ok {
				return i
			}
		} else {
			k = viewKey{v.Buf, v.Offset, v.DType, stridesKey(v)}
			if i, ok := byView[k]; ok {
				return i
			}
		}
		gv := backends.GroupValue{DType: v.DType}
		if !(bs.written && bs.freed && !bs.readFirst) {
			gv.View = b.real(v)
			gv.Load = bs.readFirst
			gv.Store = bs.written && !bs.freed
		}
		i := len(g.Values)
		g.Values = append(g.Values, gv)
		if bs.written {
			byBuffer[v.Buf] = i
		} else {
			byView[k] = i
		}
		return i
	}
	for i := range b.ops {
		n := &b.ops[i]
		op := &g.Ops[i]
		op.P0, op.P1, op.Reverse = n.p0, n.p1, n.reverse
		switch n.kind {
		case kindUnary:
			op.Kind, op.Unary = backends.GroupUnary, n.unary
		case kindUnaryGrad:
			op.Kind, op.Unary = backends.GroupUnaryGrad, n.unary
		case kindBinary:
			op.Kind, op.Binary = backends.GroupBinary, n.binary
		case kindScalar:
			op.Kind, op.Binary = backends.GroupScalar, n.binary
		case kindWhere:
			op.Kind = backends.GroupWhere
		case kindFill:
			op.Kind = backends.GroupFill
		case kindCopy:
			op.Kind = backends.GroupCopy
		}
		op.In = make([]int, n.nv-1)
		for j := 1; j < n.nv; j++ { // inputs first: an op reads before it writes
			op.In[j-1] = value(n.views[j])
		}
		op.Out = value(n.views[0])
	}
	for _, v := range g.Values {
		if v.Load || v.Store {
			if v.View.Buf == nil { // materialising failed: the error is recorded
				return nil
			}
		}
	}
	return g
}

// stridesKey identifies a view's strides, ignoring those of size-1
// dimensions (which address nothing), as sameView does.
func stridesKey(v backends.View) string {
	k := make([]byte, 0, 8*len(v.Strides))
	for d, s := range v.Strides {
		if v.Shape[d] == 1 {
			s = 0
		}
		k = append(k, byte(s), byte(s>>8), byte(s>>16), byte(s>>24), byte(s>>32), byte(s>>40), byte(s>>48), byte(s>>56))
	}
	return string(k)
}
