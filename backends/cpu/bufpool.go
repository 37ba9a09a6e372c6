package cpu

import (
	"math/bits"
	"sync"
)

// bufferPool keeps the memory of freed buffers, by size class, for later
// allocations to reuse. A training step allocates the same sizes every
// step; without the pool each of those allocations is fresh Go memory that
// the runtime must zero (the largest single cost of a small CNN's step) and
// the garbage collector must later find.
//
// Sizes are rounded up to one of four classes per power of two, so a
// reused block wastes at most a fifth of its bytes. Blocks under
// poolMinWords are left to Go's allocator, which is fast for them. The pool
// holds at most limit bytes; a block freed beyond that is dropped for the
// GC.
type bufferPool struct {
	mu     sync.Mutex
	free   map[int][][]uint64 // size class in words → free blocks
	held   int64              // bytes in free
	limit  int64
	hits   int64
	misses int64
}

// poolMinWords is the smallest block the pool keeps: 4 KiB.
const poolMinWords = 512

// PoolStats reports the buffer pool of a CPU backend.
type PoolStats struct {
	HeldBytes  int64 // bytes of freed buffers kept for reuse
	LimitBytes int64 // the most the pool keeps
	Hits       int64 // allocations served from the pool
	Misses     int64 // pooled-size allocations that found no free block
}

// sizeClass rounds a block of w words up to its class: w itself below
// poolMinWords, else the next multiple of an eighth of the power of two at
// or above w (four classes per octave).
func sizeClass(w int) int {
	if w < poolMinWords {
		return w
	}
	e := bits.Len(uint(w - 1)) // 2^(e-1) < w ≤ 2^e
	step := 1 << (e - 3)
	return (w + step - 1) &^ (step - 1)
}

// get returns a block of exactly class words (its contents are left from
// an earlier use), or nil when the pool has none.
func (p *bufferPool) get(class int) []uint64 {
	if class < poolMinWords {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.free[class]
	if len(list) == 0 {
		p.misses++
		return nil
	}
	w := list[len(list)-1]
	list[len(list)-1] = nil
	p.free[class] = list[:len(list)-1]
	p.held -= int64(8 * len(w))
	p.hits++
	return w
}

// put offers a block for reuse; it reports whether the pool kept it.
func (p *bufferPool) put(w []uint64) bool {
	w = w[:cap(w)]
	if len(w) < poolMinWords || sizeClass(len(w)) != len(w) {
		return false
	}
	size := int64(8 * len(w))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held+size > p.limit {
		return false
	}
	if p.free == nil {
		p.free = make(map[int][][]uint64)
	}
	p.free[len(w)] = append(p.free[len(w)], w)
	p.held += size
	return true
}

// empty drops every kept block.
func (p *bufferPool) empty() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free, p.held = nil, 0
}

func (p *bufferPool) stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{HeldBytes: p.held, LimitBytes: p.limit, Hits: p.hits, Misses: p.misses}
}

// defaultPoolLimit is a quarter of physical memory, at most 4 GiB (256 MiB
// where the machine's memory is unknown).
func defaultPoolLimit() int64 {
	m := totalMemory() / 4
	if m <= 0 {
		m = 256 << 20
	}
	return min(m, 4<<30)
}

// SetPoolLimit sets the most bytes of freed buffers b keeps for reuse
// (negative means the default: a quarter of physical memory, at most 4 GiB;
// 0 turns the pool off). Lowering it empties the pool.
func (b *Backend) SetPoolLimit(bytes int64) {
	if bytes < 0 {
		bytes = defaultPoolLimit()
	}
	b.bufs.mu.Lock()
	lower := bytes < b.bufs.limit
	b.bufs.limit = bytes
	b.bufs.mu.Unlock()
	if lower {
		b.bufs.empty()
	}
}

// PoolStats reports b's buffer pool.
func (b *Backend) PoolStats() PoolStats { return b.bufs.stats() }

// EmptyPool drops every buffer the pool keeps, returning their memory to
// the Go runtime (and, in time, to the system).
func (b *Backend) EmptyPool() { b.bufs.empty() }
