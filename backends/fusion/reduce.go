package fusion

import (
	"slices"

	"github.com/kiln-ml/kiln/backends"
)

// Reduction tails: a Sum, Prod, Max or Min over the trailing axes (or all
// axes) of a Float32 or Float64 buffer that the pending group writes joins
// the group and runs inside its tiles, so that an intermediate that only
// feeds it (the square of (x − m), the exponentials of a softmax's
// denominator) is never written to memory. Each output's reduced elements
// are one contiguous run of the group's index space, visited in order;
// the reduction reproduces the CPU backend's order of operations for that
// run (see doc.go), so the results are its bits.

// segmentLen is the CPU backend's parallel segment of a long reduction:
// with fewer than fewOutputs outputs and more than segmentLen reduced
// elements each, each output is reduced in segments of segmentLen
// elements, combined in order (backends/cpu/reduce.go).
const (
	segmentLen = 1 << 15
	fewOutputs = 64
)

// reduction is a Reduce recorded in the pending group.
type reduction struct {
	op    backends.ReduceOp
	after int           // it runs after ops [0, after) of the group
	x     backends.View // its input, in the group's shape
	out   backends.View // its output, contiguous, as given
	rows  int           // reduced elements per output (R)
}

// TileRunner is implemented by a wrapped backend with a parallel runtime
// of its own that a group's tiles should run on (the CPU backend's pool:
// dynamic chunks, a tuner that runs small jobs serially, cores taken away
// by the operating system coped with). ParallelTiles runs fn over [0, n)
// in chunks of grain, possibly on several goroutines at once, and returns
// when all have run. Without it, tiles run on goroutines of this package.
type TileRunner interface {
	ParallelTiles(n, grain int, fn func(lo, hi int))
}

// reduceFusable reports whether Reduce(op, out, x, axes) can join the
// pending group as a reduction tail, and its reduced elements per output.
// Called with b.mu held.
func (b *Backend) reduceFusable(op backends.ReduceOp, out, x backends.View, axes []int) (int, bool) {
	// The tail reproduces the CPU backend's order; a wrapped backend that
	// serves tile kernels and tile scheduling over host memory is the CPU.
	if len(b.ops) == 0 || !b.host || len(b.ops)+len(b.reds) >= MaxOps-1 {
		return 0, false
	}
	if _, ok := b.inner.(TileKernels); !ok {
		return 0, false
	}
	if _, ok := b.inner.(TileRunner); !ok {
		return 0, false
	}
	switch op {
	case backends.Sum, backends.Prod, backends.Max, backends.Min:
	default:
		return 0, false
	}
	if x.DType != backends.Float32 && x.DType != backends.Float64 || out.DType != x.DType {
		return 0, false
	}
	if x.Buf == nil || out.Buf == nil || x.Buf == out.Buf || len(x.Strides) != len(x.Shape) ||
		len(out.Shape) != len(x.Shape) || len(out.Strides) != len(out.Shape) || !x.IsContiguous() || !out.IsContiguous() {
		return 0, false
	}
	n, ok := backends.CheckedNumElements(x.Shape)
	if !ok || n != b.n {
		return 0, false
	}
	red := make([]bool, len(x.Shape))
	for _, a := range axes {
		if a < 0 || a >= len(x.Shape) || red[a] {
			return 0, false
		}
		red[a] = true
	}
	// The reduced axes must be trailing: every kept axis longer than one
	// comes before every reduced axis longer than one.
	rows, seenReduced := 1, false
	for d, s := range x.Shape {
		want := s
		if red[d] {
			want = 1
			rows *= s
			if s > 1 {
				seenReduced = true
			}
		} else if s > 1 && seenReduced {
			return 0, false
		}
		if out.Shape[d] != want {
			return 0, false
		}
	}
	if rows == 0 {
		return 0, false
	}
	// x is a buffer the group writes, read through the view it is written
	// through, so the group's flat index is x's.
	bs := b.bufs[x.Buf]
	if bs == nil || !bs.written || bs.multi || bs.reduced || !sameView(bs.view, inShape(x, b.shape)) {
		return 0, false
	}
	if !bs.view.IsContiguous() {
		return 0, false
	}
	// The boundary between kept and reduced elements must fall between two
	// dimensions of the group's shape, so that tiles can hold whole runs.
	if b.barrier(rows) < 0 {
		return 0, false
	}
	if ob := b.bufs[out.Buf]; ob != nil {
		return 0, false
	}
	return rows, true
}

// barrier returns the dimension of the group's shape from which the
// trailing dimensions hold rows elements, or -1.
func (b *Backend) barrier(rows int) int {
	p := 1
	for d := len(b.shape); d >= 0; d-- {
		if p == rows {
			return d
		}
		if d > 0 {
			p *= b.shape[d-1]
		}
	}
	return -1
}

// recordReduce adds a reduction tail to the group. Called with b.mu held.
func (b *Backend) recordReduce(op backends.ReduceOp, out, x backends.View, rows int) {
	x = inShape(x, b.shape)
	b.reds = append(b.reds, reduction{op: op, after: len(b.ops), x: x, out: out, rows: rows})
	b.bufs[out.Buf] = &bufState{id: len(b.bufs), view: out, written: true, reduced: true}
}

// Reduce implements backends.Backend: a reduction tail of the pending
// group (see reduce.go) where it can be one, else forwarded unfused.
func (b *Backend) Reduce(op backends.ReduceOp, out, x backends.View, axes []int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rows, ok := b.reduceFusable(op, out, x, slices.Clone(axes)); ok {
		b.recordReduce(op, out, x, rows)
		return
	}
	b.stats.Passthrough++
	for _, v := range []backends.View{out, x} {
		if v.Buf != nil && b.bufs[v.Buf] != nil {
			b.flushLocked()
			break
		}
	}
	b.inner.Reduce(op, b.real(out), b.real(x), axes)
}

// epilogueFits reports whether n, an element-wise op that does not fit the
// group, can wait for it as part of its epilogue: an op over fewer elements
// than the group (the size of a reduction's result) that touches only the
// results of the group's reductions, of its epilogue, or buffers the group
// does not touch. Dividing a sum by its count (a mean) is one: recording
// it does not run the group, so intermediates that a program frees after
// taking the mean are still kept in tiles.
func (b *Backend) epilogueFits(n *node, count int) bool {
	if len(b.reds) == 0 || count >= b.n || len(b.ops)+len(b.reds)+len(b.epilogue) >= MaxOps-1 {
		return false
	}
	for i := range n.nv {
		if bs := b.bufs[n.views[i].Buf]; bs != nil && !bs.reduced {
			return false
		}
	}
	return true
}

// enterEpilogue records n in the epilogue; its buffers join the group's
// table as results that are whole only after the group, so that anything
// else touching them runs the group first.
func (b *Backend) enterEpilogue(n *node) {
	for i := range n.nv {
		v := n.views[i]
		if b.bufs[v.Buf] == nil {
			b.bufs[v.Buf] = &bufState{id: len(b.bufs), view: v, written: i == 0, readFirst: i > 0, reduced: true}
		}
	}
	b.epilogue = append(b.epilogue, *n)
	b.stats.Epilogue++
}

// runEpilogue runs the epilogue's ops in order on the wrapped backend,
// after the group's tiles. Called with b.mu held.
func (b *Backend) runEpilogue() {
	for i := range b.epilogue {
		n := &b.epilogue[i]
		for j := range n.nv {
			n.views[j] = b.real(n.views[j])
		}
		b.run(n, n.views[:n.nv])
	}
}
