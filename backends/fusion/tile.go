package fusion

import (
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// TileKernels is implemented by a wrapped backend whose buffers are host
// memory and that can run one element-wise op over plain float32 slices
// with no per-call checks, allocation or thread hand-off (the CPU backend
// does). Each method returns a function computing exactly what the
// backend's own method computes for Float32 views of that layout, or nil
// when it does not serve the op that way. A group's op whose views are all
// Float32 and, within every tile, contiguous (or, for Binary's inputs, one
// broadcast element) runs through these; any other op runs through the
// wrapped backend's method on the tile's views.
type TileKernels interface {
	// TileUnaryF32 returns o = op(x) (x as long as o).
	TileUnaryF32(op backends.UnaryOp, p0, p1 float64) func(o, x []float32)
	// TileUnaryGradF32 returns o = g·op'(x) (x and g as long as o).
	TileUnaryGradF32(op backends.UnaryOp, p0, p1 float64) func(o, x, g []float32)
	// TileBinaryF32 returns o = x op y (x and y each as long as o or of
	// one element); with nt it may write o with non-temporal stores.
	TileBinaryF32(op backends.BinaryOp, nt bool) func(o, x, y []float32)
	// TileScalarF32 returns o = x op s, or s op x when reverse (x as long
	// as o); nt as for TileBinaryF32.
	TileScalarF32(op backends.BinaryOp, s float64, reverse, nt bool) func(o, x []float32)
}

// streamBytes is the size of a group's output from which tile kernels
// write it with non-temporal stores, as the CPU backend's own kernels do.
const streamBytes = 32 << 20

// fastOp is one op of a group run through TileKernels functions.
type fastOp struct {
	unary  func(o, x []float32)
	grad   func(o, x, g []float32)
	binary func(o, x, y []float32)
	copy   bool
}

// tileLayout is how a view lies within each tile.
type tileLayout uint8

const (
	layoutOther tileLayout = iota
	layoutFlat             // contiguous, in tile order
	layoutOne              // one element for the whole tile
)

// layout reports how vp lies in a tile of p.
func (p *plan) layout(vp *viewPlan) tileLayout {
	if vp.slot >= 0 {
		return layoutFlat
	}
	zero, want := true, 1
	for d := len(p.shape) - 1; d >= p.split; d-- {
		st := vp.strides[d]
		if st != 0 {
			zero = false
		}
		if p.shape[d] != 1 && st != want {
			want = -1
		}
		if want > 0 {
			want *= p.shape[d]
		}
	}
	switch {
	case zero:
		return layoutOne
	case want > 0:
		return layoutFlat
	}
	return layoutOther
}

// planFast picks the ops of the group that run through tile kernels, and
// the float32 memory of the buffers they touch.
func (b *Backend) planFast(p *plan) {
	tk, ok := b.inner.(TileKernels)
	if !ok || !b.host {
		return
	}
	p.fast = make([]*fastOp, len(b.ops))
	for i := range b.ops {
		n := &b.ops[i]
		var lay [4]tileLayout
		usable := true
		for j := range n.nv {
			vp := &p.views[i][j]
			lay[j] = p.layout(vp)
			vp.one = lay[j] == layoutOne
			if vp.dtype != backends.Float32 || lay[j] == layoutOther || j == 0 && lay[j] != layoutFlat {
				usable = false
				break
			}
			if vp.slot < 0 && vp.f32 == nil {
				if vp.f32 = hostF32(vp.buf); vp.f32 == nil {
					usable = false
					break
				}
			}
		}
		if !usable {
			continue
		}
		// an output that leaves the tiles and is too large for the caches
		// is written past them
		nt := p.views[i][0].slot < 0 && b.n*4 >= streamBytes
		flat := lay[1] == layoutFlat && (n.nv < 3 || lay[2] == layoutFlat)
		f := &fastOp{}
		switch n.kind {
		case kindUnary:
			if flat {
				f.unary = tk.TileUnaryF32(n.unary, n.p0, n.p1)
			}
		case kindUnaryGrad:
			if flat {
				f.grad = tk.TileUnaryGradF32(n.unary, n.p0, n.p1)
			}
		case kindBinary:
			f.binary = tk.TileBinaryF32(n.binary, nt)
		case kindScalar:
			if flat {
				f.unary = tk.TileScalarF32(n.binary, n.p0, n.reverse, nt)
			}
		case kindCopy:
			f.copy = true
		}
		if f.unary != nil || f.grad != nil || f.binary != nil || f.copy {
			p.fast[i] = f
			p.nfast++
		}
	}
}

// hostF32 returns buf's memory as float32 values, or nil.
func hostF32(buf backends.Buffer) []float32 {
	h, ok := buf.(interface{ HostBytes() []byte })
	if !ok {
		return nil
	}
	raw := h.HostBytes()
	if len(raw) < 4 || uintptr(unsafe.Pointer(&raw[0]))%4 != 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), len(raw)/4)
}

// hostF64 returns buf's memory as float64 values, or nil.
func hostF64(buf backends.Buffer) []float64 {
	h, ok := buf.(interface{ HostBytes() []byte })
	if !ok {
		return nil
	}
	raw := h.HostBytes()
	if len(raw) < 8 || uintptr(unsafe.Pointer(&raw[0]))%8 != 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&raw[0])), len(raw)/8)
}

// slice returns view j of op i over elements [lo, hi) of the tile that
// starts at element start of dimension split (index w.index before it):
// one element for a broadcast view, nil where a scratch buffer is missing.
func (w *worker) slice(i, j, start, lo, hi int) []float32 {
	p := w.p
	vp := &p.views[i][j]
	if vp.slot >= 0 {
		sc := w.f32[vp.slot]
		if len(sc) < hi {
			return nil
		}
		return sc[lo:hi]
	}
	off := vp.offset + start*vp.strides[p.split]
	for d, x := range w.index {
		off += x * vp.strides[d]
	}
	if vp.one {
		return vp.f32[off : off+1]
	}
	return vp.f32[off+lo : off+hi]
}

// runFast runs op i of the group on elements [lo, hi) of the tile that
// starts at element start of dimension split (index w.index before it).
func (w *worker) runFast(i int, f *fastOp, n *node, start, lo, hi int) bool {
	var s [4][]float32
	for j := range n.nv {
		if s[j] = w.slice(i, j, start, lo, hi); s[j] == nil {
			return false
		}
	}
	switch {
	case f.unary != nil:
		f.unary(s[0], s[1])
	case f.grad != nil:
		f.grad(s[0], s[1], s[2])
	case f.binary != nil:
		f.binary(s[0], s[1], s[2])
	case f.copy:
		if len(s[1]) == 1 && hi-lo > 1 {
			v := s[1][0]
			for k := range s[0] {
				s[0][k] = v
			}
		} else {
			copy(s[0], s[1])
		}
	}
	return true
}
