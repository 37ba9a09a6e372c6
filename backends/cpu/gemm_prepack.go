package cpu

import "sync"

// A GEMM cut into strips (gemmInStrips) first packs the operand that every
// strip multiplies. Packed on the caller alone, that pass is the serial
// part of the parallel GEMM: for a GPT's weight gradients (A = Xᵀ,
// 256 × 2048 and up) about 5 ms of a 500 ms training step on two threads,
// during which the other worker idles. prepackParallel cuts it into tasks
// of a few micro-panels each, which write disjoint parts of the packed
// buffer, so that the workers share it; packing copies, so the packed
// operand is the same bits however the tasks run.

// prepackRun is one call of prepackParallel, held in a pool so that a call
// allocates nothing. Its tasks go block of blk rows by block, K-block (of
// kc columns) by K-block, step rows (whole panels of w) at a time: perBlock
// tasks in a full block of nk K-blocks, fewer in a shorter last block.
type prepackRun[T float] struct {
	dst                 []T
	src                 matSrc[T]
	side, k, w, blk, kc int
	step, perBlock, nk  int
}

// prepackParallel packs all of A (m×k) as prepackA does, or with packB all
// of B (k×n) as prepackB does, the same bits, in parallel tasks of about
// prepackTaskElems elements.
func prepackParallel[T float](b *Backend, dst []T, kern kernel[T], m, n, k int, A, B matSrc[T], packB bool) {
	side := m
	if packB {
		side = n
	}
	if !prepackShared || side*k < prepackMinElems {
		if packB {
			prepackB(dst, kern, m, n, k, B)
		} else {
			prepackA(dst, kern, m, n, k, A)
		}
		return
	}
	nc, kc, mChunk := gemmBlocks(kern, m, n, k)
	pool := typedPool[T](&prepackF32, &prepackF64)
	r := pool.Get().(*prepackRun[T])
	*r = prepackRun[T]{dst: dst, src: A, side: m, k: k, w: kern.mr, blk: mChunk, kc: kc}
	if packB {
		r.src, r.side, r.w, r.blk = B.t(), n, kern.nr, nc
	}
	r.step = max(1, prepackTaskElems/(kc*r.w)) * r.w
	r.nk = (k + kc - 1) / kc
	r.perBlock = (r.blk + r.step - 1) / r.step * r.nk
	full, last := r.side/r.blk, r.side%r.blk
	tasks := full*r.perBlock + (last+r.step-1)/r.step*r.nk
	b.parallelRun(tasks, 1, r)
	*r = prepackRun[T]{}
	pool.Put(r)
}

func (r *prepackRun[T]) runChunk(lo, hi int) {
	tmp := poolFor[T]().get(r.kc)
	defer poolFor[T]().put(tmp)
	for t := lo; t < hi; t++ {
		s0 := t / r.perBlock * r.blk
		rows := min(r.blk, r.side-s0)
		perK := (rows + r.step - 1) / r.step // tasks per K-block of this block
		i := t % r.perBlock
		pc, r0 := i/perK*r.kc, i%perK*r.step
		kcur := min(r.kc, r.k-pc)
		// the block's panels from s0·k, its K-block's from
		// roundUp(rows, w)·pc within them, panel r0/w of those
		at := s0*r.k + roundUp(rows, r.w)*pc + r0*kcur
		pack(r.dst[at:], r.src, s0+r0, min(r.step, rows-r0), pc, kcur, r.w, *tmp)
	}
}

var (
	prepackF32 = sync.Pool{New: func() any { return new(prepackRun[float32]) }}
	prepackF64 = sync.Pool{New: func() any { return new(prepackRun[float64]) }}
)

// prepackShared enables prepackParallel's tasks; benchmarks turn it off to
// compare with packing on the caller alone (prepackA, prepackB).
var prepackShared = true

// prepackMinElems is the least operand prepackParallel shares: below it
// (a 128³ product's 16K elements) handing out the tasks cost more than
// the packing, 2-worker GEMMs of that size ran 6% slower shared (110
// against 117.5 GFLOP/s, interleaved), while 256³ and 1024³ gained 2–4%.
const prepackMinElems = 4 * prepackTaskElems

// prepackTaskElems is about the elements a task of prepackParallel packs:
// as gemmStep's packing tasks, enough to be worth handing to a helper.
const prepackTaskElems = 1 << 14
