package cpu

import (
	"sync"
	"sync/atomic"
)

// The strips of a parallel GEMM (gemmInStrips) all multiply one operand,
// packed once in the layout of prepackA (or prepackB). Packed before the
// strips start, by the caller alone or by a parallel job of its own
// (prepackParallel), it is a serial phase or a barrier: at 128³ on two
// cores the caller's 3 µs of packing, while the helper idles, are a tenth
// of the product, and at 1024³ the packing job's join waits for the
// slower worker before either multiplies. lazyPack instead packs the
// operand in small tasks inside the strips' job, each task the first time
// a strip's macro-tile needs its rows: the first strips, running at once
// on every worker, find the same tile's tasks and share them, and the
// later strips find everything packed. A worker never waits for a task
// another worker is packing: it multiplies the rows packed already first,
// and packs the rows still missing then into a buffer of its own (see
// gemmStep.lazyTile), so that no worker waits for one the operating
// system took the core from. Packing copies, so the packed operand, and
// the product, have the same bits whoever packs which task.
//
// gemmInStrips packs lazily only operands under prepackMinElems, those
// it packed on the caller alone before: 128³ on two workers measured 6%
// faster (144 against 135.5 GFLOP/s, interleaved), while at 256³ and
// 1024³, whose operands prepackParallel shares, lazy packing measured
// 0.5 to 1% slower, within the noise.

// lazyTaskElems is about the elements a task of lazyPack packs: small, so
// that the workers that need one macro-tile's rows at the same moment
// split them evenly (a task is a few hundred nanoseconds, its claim one
// compare-and-swap), and a worker that finds one still being packed packs
// few rows again.
const lazyTaskElems = 1 << 12

// lazyPack is the shared operand of one gemmInStrips call: rows [0, side)
// of src (A, or Bᵀ) over k columns, packed into dst as prepackA (prepackB)
// packs them, in blocks of blk rows (the GEMM's chunks of A or blocks of
// B's columns), K-blocks of kc, and tasks of step rows (whole panels of
// w) within them. It lives in a pool, so that a call allocates nothing
// once warm.
type lazyPack[T float] struct {
	dst                 []T
	src                 matSrc[T]
	side, k, w, blk, kc int
	step, nk, perK      int            // rows per task, K-blocks, tasks per K-block of a full block
	tasks               []atomic.Int32 // taskFree, taskPacking or taskDone
}

// The states of a lazyPack task.
const (
	taskFree int32 = iota
	taskPacking
	taskDone
)

// init sets p up to pack rows [0, side) × k of src into dst in panels of
// w rows, blocked as gemmBlocks blocks the GEMM (blk: its chunks of A's
// rows when src is A, its blocks of B's columns when src is Bᵀ).
func (p *lazyPack[T]) init(dst []T, src matSrc[T], side, k, w, blk, kc int) {
	p.dst, p.src, p.side, p.k, p.w, p.blk, p.kc = dst, src, side, k, w, blk, kc
	p.step = max(1, lazyTaskElems/(kc*w)) * w
	p.nk = (k + kc - 1) / kc
	p.perK = (blk + p.step - 1) / p.step
	n := (side + blk - 1) / blk * p.nk * p.perK
	if cap(p.tasks) < n {
		p.tasks = make([]atomic.Int32, n)
	}
	p.tasks = p.tasks[:n]
	for i := range p.tasks {
		p.tasks[i].Store(taskFree)
	}
}

// claim packs the tasks of rows [r0, r0+rows) of K-block pc (a
// macro-tile's; they lie in one block) that nobody has started, with a
// scratch buffer from bufs when it packs any, and returns the first and
// last of those tasks, and whether all of them are packed (false: another
// worker is packing one).
func (p *lazyPack[T]) claim(r0, rows, pc int, bufs *bufPool[T]) (first, last int, all bool) {
	blk := r0 / p.blk
	base := (blk*p.nk + pc/p.kc) * p.perK
	first = base + (r0-blk*p.blk)/p.step
	last = base + (r0+rows-1-blk*p.blk)/p.step
	all = true
	var tmp *[]T
	for t := first; t <= last; t++ {
		switch st := &p.tasks[t]; {
		case st.Load() == taskDone:
		case st.CompareAndSwap(taskFree, taskPacking):
			if tmp == nil {
				tmp = bufs.get(p.kc)
			}
			p.run(t, *tmp)
			st.Store(taskDone)
		default:
			all = false // another worker packs it
		}
	}
	if tmp != nil {
		bufs.put(tmp)
	}
	return first, last, all
}

// done reports whether task t is packed.
func (p *lazyPack[T]) done(t int) bool { return p.tasks[t].Load() == taskDone }

// rows returns the rows [r0, r1) that task t packs.
func (p *lazyPack[T]) rows(t int) (r0, r1 int) {
	blk, i := t/(p.nk*p.perK), t%(p.nk*p.perK)
	r0 = blk*p.blk + i%p.perK*p.step
	return r0, min(r0+p.step, blk*p.blk+p.blk, p.side)
}

// run packs task t.
func (p *lazyPack[T]) run(t int, tmp []T) {
	blk, i := t/(p.nk*p.perK), t%(p.nk*p.perK)
	pc, r0 := i/p.perK*p.kc, i%p.perK*p.step
	s0 := blk * p.blk
	rows := min(p.blk, p.side-s0)
	kcur := min(p.kc, p.k-pc)
	// the block's panels from s0·k, its K-block's from roundUp(rows, w)·pc
	// within them, panel r0/w of those (as prepackParallel)
	at := s0*p.k + roundUp(rows, p.w)*pc + r0*kcur
	pack(p.dst[at:], p.src, s0+r0, min(p.step, rows-r0), pc, kcur, p.w, tmp)
}

var (
	lazyF32 = sync.Pool{New: func() any { return new(lazyPack[float32]) }}
	lazyF64 = sync.Pool{New: func() any { return new(lazyPack[float64]) }}
)

// lazyOwnTiles makes every tile of a strip take the path of a tile whose
// rows another worker is late packing, and pack every other task's rows
// into a buffer of its own, so that tests check that path's bits.
var lazyOwnTiles = false

// packLazily makes gemmInStrips pack the shared operand inside the
// strips' job (lazyPack); benchmarks and tests turn it off to compare
// with packing it first (prepackParallel).
var packLazily = true
