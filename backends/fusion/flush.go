package fusion

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kiln-ml/kiln/backends"
)

// plan is a group laid out for its tiles: the group's shape with
// mergeable dimensions merged, and each distinct view's strides in it.
type plan struct {
	shape   []int // merged shape
	split   int   // the dimension tiles cut; later ones are whole in every tile
	chunk   int   // elements of dimension split per tile
	perRow  int   // tiles per index of the dimensions before split
	tiles   int
	views   [][4]viewPlan // per op, per view
	scratch []scratchSlot // tile-sized buffers that hold the buffers kept in tiles
	kept    int           // buffers kept in tiles
	fast    []*fastOp     // per op, its tile kernels (tile.go), or nil
	nfast   int           // ops with tile kernels
	steps   []step        // what a tile runs, in order (segment.go)
	nseg    int           // ops run inside segments
	inner   int           // elements of the dimensions after split
	reds    []redPlan     // the reduction tails (reduce.go)
	units   []int         // with reductions: the first tile of each run of tiles one worker runs in order, then p.tiles
}

// viewPlan is one view of one op in merged coordinates.
type viewPlan struct {
	buf     backends.Buffer
	dtype   backends.DType
	strides []int
	offset  int
	slot    int       // index into plan.scratch, or -1
	f32     []float32 // buf's memory, for the tile kernels (tile.go)
	one     bool      // one element for the whole tile (tile kernels only)
}

// scratchSlot is a buffer of the group that lives only in tiles.
type scratchSlot struct {
	dtype backends.DType
}

// flushLocked runs the pending group, then forgets it and frees the
// buffers freed meanwhile.
func (b *Backend) flushLocked() {
	if len(b.ops) == 0 {
		b.freeDeferred()
		return
	}
	b.stats.Groups++
	b.stats.Ops += int64(len(b.ops))
	if b.runCompiled() {
		b.stats.Kernels++
		b.forget()
		return
	}
	p := b.program()
	b.execute(p)
	b.stats.Scratch += int64(p.kept)
	b.stats.Tiles += int64(p.tiles)
	b.stats.TileKernelOps += int64(p.nfast)
	b.stats.SegmentOps += int64(p.nseg)
	b.stats.Reductions += int64(len(p.reds))
	b.runEpilogue()
	b.forget()
}

// forget drops the group that ran and frees the buffers freed meanwhile.
func (b *Backend) forget() {
	clear(b.ops)
	b.ops = b.ops[:0]
	clear(b.reds)
	b.reds = b.reds[:0]
	clear(b.epilogue)
	b.epilogue = b.epilogue[:0]
	clear(b.bufs)
	b.freeDeferred()
}

func (b *Backend) freeDeferred() {
	for _, buf := range b.deferred {
		b.release(buf)
	}
	clear(b.deferred)
	b.deferred = b.deferred[:0]
}

// plan merges the group's dimensions, picks the tiling and the buffers
// kept in tiles.
func (b *Backend) plan() *plan {
	p := &plan{}
	// Dimensions of size 1 go; neighbours merge when every view steps
	// through them as through one.
	var keep []int
	for d, s := range b.shape {
		if s != 1 {
			keep = append(keep, d)
		}
	}
	var groups [][]int // runs of original dimensions merged into one
	for _, d := range keep {
		if k := len(groups); k > 0 {
			last := groups[k-1][len(groups[k-1])-1]
			if b.mergeable(last, d) && !b.isBarrier(d) {
				groups[k-1] = append(groups[k-1], d)
				continue
			}
		}
		groups = append(groups, []int{d})
	}
	p.shape = make([]int, len(groups))
	for i, g := range groups {
		n := 1
		for _, d := range g {
			n *= b.shape[d]
		}
		p.shape[i] = n
	}
	if len(p.shape) == 0 {
		p.shape = []int{1}
		groups = [][]int{nil}
	}
	// Buffers kept in tiles share scratch slots: a slot is taken at the
	// buffer's first write and given back after its last use, so a chain
	// ping-pongs between two slots however long it is.
	last := map[backends.Buffer]int{}
	for i := range b.ops {
		for j := range b.ops[i].nv {
			last[b.ops[i].views[j].Buf] = i
		}
	}
	for _, r := range b.reds { // a reduction tail holds its input's slot until it has run
		if last[r.x.Buf] < r.after {
			last[r.x.Buf] = r.after
		}
	}
	p.reds = make([]redPlan, len(b.reds))
	slotOf := map[backends.Buffer]int{}
	free := map[backends.DType][]int{}
	p.views = make([][4]viewPlan, len(b.ops))
	for i := 0; ; i++ {
		b.planReductions(p, i, groups, slotOf, free, last)
		if i == len(b.ops) {
			break
		}
		n := &b.ops[i]
		for j := n.nv - 1; j >= 0; j-- { // inputs first: they hold their slots already
			v := n.views[j]
			vp := viewPlan{buf: v.Buf, dtype: v.DType, offset: v.Offset, slot: -1, strides: make([]int, len(groups))}
			for k, g := range groups {
				if len(g) > 0 {
					vp.strides[k] = v.Strides[g[len(g)-1]] // the innermost of a run steps by one
				}
			}
			if bs := b.bufs[v.Buf]; bs.written && bs.freed && !bs.readFirst {
				s, ok := slotOf[v.Buf]
				if !ok {
					if f := free[v.DType]; len(f) > 0 {
						s, free[v.DType] = f[len(f)-1], f[:len(f)-1]
					} else {
						s = len(p.scratch)
						p.scratch = append(p.scratch, scratchSlot{dtype: v.DType})
					}
					slotOf[v.Buf] = s
					p.kept++
				}
				vp.slot = s
			} else {
				vp.buf = b.real(v).Buf
			}
			p.views[i][j] = vp
		}
		for j := range n.nv { // slots free after the op, so out never aliases an input
			buf := n.views[j].Buf
			if s, ok := slotOf[buf]; ok && last[buf] == i {
				delete(slotOf, buf)
				free[n.views[j].DType] = append(free[n.views[j].DType], s)
				last[buf] = -1 // give it back once
			}
		}
	}
	// Tiles cut dimension split into chunks, whole in the later ones.
	inner := 1
	p.split = len(p.shape) - 1
	for p.split > 0 && inner*p.shape[p.split] <= b.tile {
		inner *= p.shape[p.split]
		p.split--
	}
	p.chunk = max(1, min(p.shape[p.split], b.tile/inner))
	p.inner = 1
	for _, s := range p.shape[p.split+1:] {
		p.inner *= s
	}
	b.alignChunk(p)
	p.perRow = (p.shape[p.split] + p.chunk - 1) / p.chunk
	p.tiles = p.perRow
	for _, s := range p.shape[:p.split] {
		p.tiles *= s
	}
	b.planUnits(p)
	return p
}

// mergeable reports whether original dimensions a and the next kept one d
// step alike in every view of the group (a's stride is d's times d's size).
func (b *Backend) mergeable(a, d int) bool {
	for i := range b.ops {
		n := &b.ops[i]
		for j := range n.nv {
			st := n.views[j].Strides
			if st[a] != st[d]*b.shape[d] {
				return false
			}
		}
	}
	return true
}

// useTileRunner: groups run on the wrapped backend's runtime where it has
// one (tests and benchmarks turn it off to compare).
var useTileRunner = func() *atomic.Bool { var b atomic.Bool; b.Store(true); return &b }()

// minWork is the fewest elements of a group given to a worker of its own.
const minWork = 1 << 16

// execute runs every op of the group on each tile, tiles in parallel,
// then combines the reductions' segmented runs.
func (b *Backend) execute(p *plan) {
	b.runUnits(p)
	for r := range p.reds {
		p.reds[r].finish()
	}
}

// runUnits runs the group's units (single tiles, or with reductions the
// runs of tiles in p.units) in parallel: on the wrapped backend's runtime
// where it has one (TileRunner), else on goroutines of this package. A
// unit's tiles run in order on one worker.
func (b *Backend) runUnits(p *plan) {
	units := p.tiles
	if p.units != nil {
		units = len(p.units) - 1
	}
	unit := func(w *worker, u int) {
		lo, hi := u, u+1
		if p.units != nil {
			lo, hi = p.units[u], p.units[u+1]
		}
		for t := lo; t < hi; t++ {
			w.tile(t)
		}
	}
	// As the CPU backend's element-wise kernels do, a worker gets at least
	// minWork elements: below that, starting it costs more than it saves.
	workers := min(units, runtime.GOMAXPROCS(0), (b.n+minWork-1)/minWork)
	if workers <= 1 {
		w := b.newWorker(p)
		for u := range units {
			unit(w, u)
		}
		storeFence()
		w.release()
		return
	}
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = b.newWorker(p)
	}
	defer func() {
		for _, w := range ws {
			w.release()
		}
	}()
	if tr, ok := b.inner.(TileRunner); ok && useTileRunner.Load() {
		// Chunks of about minWork elements (whole units), claimed one at a
		// time by the runtime's workers; each takes a worker's scratch
		// for the chunk.
		grain := max(1, int(int64(units)*minWork/int64(b.n)))
		idle := make(chan *worker, len(ws))
		for _, w := range ws {
			idle <- w
		}
		tr.ParallelTiles(units, grain, func(lo, hi int) {
			w := <-idle
			defer func() { idle <- w }()
			for u := lo; u < hi; u++ {
				unit(w, u)
			}
			storeFence()
		})
		return
	}
	// Workers take runs of consecutive units, so that a tile's prefetches
	// (segment.go) are for the tile its worker runs next, and a few runs
	// each, so that a worker slowed by the machine's other work is not left
	// with a large share.
	run := max(1, min(16, units/(4*workers)))
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(run))) - run
				if lo >= units {
					break
				}
				for u := lo; u < min(lo+run, units); u++ {
					unit(w, u)
				}
			}
			storeFence()
		}()
	}
	wg.Wait()
}

// worker runs tiles with scratch buffers of its own.
type worker struct {
	b       *Backend
	p       *plan
	scratch []backends.Buffer
	f32     [][]float32 // the scratch buffers' memory, where tile kernels or reductions use it
	f64     [][]float64 // the float64 scratch buffers' memory, where reductions use it
	runs    []redState  // per reduction tail, the run in progress
	views   [4]backends.View
	index   []int       // the tile's index in the dimensions before split
	progs   [][]segInst // per step, its segment's program, patched per tile
}

// newWorker returns a worker with one tile-sized scratch buffer per
// scratch slot, reused from earlier groups where possible. Called with
// b.mu held.
func (b *Backend) newWorker(p *plan) *worker {
	w := &worker{b: b, p: p, scratch: make([]backends.Buffer, len(p.scratch)), index: make([]int, p.split)}
	for i, s := range p.scratch {
		free := b.scratch[s.dtype]
		if k := len(free); k > 0 {
			w.scratch[i] = free[k-1]
			b.scratch[s.dtype] = free[:k-1]
			continue
		}
		buf, err := b.inner.Alloc(s.dtype, b.tile)
		if err != nil {
			if b.err == nil {
				b.err = err
			}
			continue
		}
		w.scratch[i] = buf
	}
	if p.nseg > 0 {
		w.progs = make([][]segInst, len(p.steps))
		for i, st := range p.steps {
			if st.seg != nil {
				w.progs[i] = slices.Clone(st.seg.prog)
			}
		}
	}
	if p.nfast > 0 || len(p.reds) > 0 {
		w.f32 = make([][]float32, len(w.scratch))
		for i, buf := range w.scratch {
			if buf != nil && p.scratch[i].dtype == backends.Float32 {
				w.f32[i] = hostF32(buf)
			}
		}
	}
	if len(p.reds) > 0 {
		w.runs = make([]redState, len(p.reds))
		w.f64 = make([][]float64, len(w.scratch))
		for i, buf := range w.scratch {
			if buf != nil && p.scratch[i].dtype == backends.Float64 {
				w.f64[i] = hostF64(buf)
			}
		}
	}
	return w
}

// release returns w's scratch buffers for later groups. Called with b.mu
// held.
func (w *worker) release() {
	for i, buf := range w.scratch {
		if buf != nil {
			dt := w.p.scratch[i].dtype
			w.b.scratch[dt] = append(w.b.scratch[dt], buf)
		}
	}
}

// tile runs every op of the group on tile t.
func (w *worker) tile(t int) {
	p := w.p
	row, ch := t/p.perRow, t%p.perRow
	for d := p.split - 1; d >= 0; d-- {
		w.index[d] = row % p.shape[d]
		row /= p.shape[d]
	}
	start := ch * p.chunk
	cnt := min(p.chunk, p.shape[p.split]-start)
	for _, s := range p.shape[p.split+1:] {
		cnt *= s
	}
	var shape, contiguous []int // the tile's shape and a scratch tile's strides, for the generic path
	for si, st := range p.steps {
		if st.red > 0 {
			if p.reds != nil && !w.reduceTile(st.red-1, p.flatStart(t), cnt) {
				return // a scratch buffer's allocation failed: the error is recorded
			}
			continue
		}
		if st.seg != nil {
			if !w.runSegmentTile(si, st.seg, start, cnt) {
				return // a scratch buffer's allocation failed: the error is recorded
			}
			continue
		}
		i := st.op
		n := &w.b.ops[i]
		if p.fast != nil && p.fast[i] != nil && w.runFast(i, p.fast[i], n, start, 0, cnt) {
			continue
		}
		if shape == nil {
			shape = make([]int, len(p.shape)-p.split)
			copy(shape, p.shape[p.split:])
			shape[0] = min(p.chunk, p.shape[p.split]-start)
			contiguous = backends.RowMajorStrides(shape)
		}
		for j := range n.nv {
			vp := &p.views[i][j]
			if vp.slot >= 0 {
				buf := w.scratch[vp.slot]
				if buf == nil {
					return // its allocation failed: the error is recorded
				}
				w.views[j] = backends.View{Buf: buf, DType: vp.dtype, Shape: shape, Strides: contiguous}
				continue
			}
			if vp.buf == nil {
				return // its allocation failed: the error is recorded
			}
			off := vp.offset + start*vp.strides[p.split]
			for d, x := range w.index {
				off += x * vp.strides[d]
			}
			w.views[j] = backends.View{Buf: vp.buf, DType: vp.dtype, Shape: shape, Strides: vp.strides[p.split:], Offset: off}
		}
		w.b.run(n, w.views[:n.nv])
	}
}
