//go:build !kiln_nocuda

package cuda

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/internal/sizeclass"
)

// Size classes: powers of two from 512 B to 1 MiB, then multiples of 2 MiB.
// minClass is the smallest block (internal/sizeclass gives the others).
const minClass = 512

// sizeClass rounds a request up to the size of the block that serves it.
func sizeClass(n int64) int64 { return sizeclass.Of(n, minClass) }

// block is one device allocation owned by the allocator.
type block struct {
	ptr    DevicePtr
	size   int64  // size class, the bytes actually reserved
	stream Stream // stream of its last use
	event  Event  // recorded on stream when freed; 0 until then
}

// allocator is a caching allocator over a Driver. Freed blocks are kept in
// per-class free lists. A block is reused at once for the stream it was
// last used on (stream order protects it) and for another stream only once
// the event recorded at its free has completed. It must be used from the
// device thread; its counters may be read from anywhere.
type allocator struct {
	drv  Driver
	free map[int64][]*block

	mu    sync.Mutex // guards stats
	stats backends.MemoryStats
}

func newAllocator(drv Driver) *allocator {
	return &allocator{drv: drv, free: map[int64][]*block{}}
}

// alloc returns a block of at least n bytes for use on stream s. On an
// out-of-memory failure it returns every cached block to the driver and
// tries once more.
func (a *allocator) alloc(n int64, s Stream) (*block, error) {
	size := sizeClass(n)
	if b := a.reuse(size, s); b != nil {
		a.account(b.size, 0)
		return b, nil
	}
	p, err := a.drv.MemAlloc(size)
	if errors.Is(err, backends.ErrOutOfMemory) {
		if eerr := a.emptyCache(); eerr != nil {
			return nil, eerr
		}
		p, err = a.drv.MemAlloc(size)
	}
	if err != nil {
		st := a.memoryStats()
		return nil, fmt.Errorf("cuda: allocate %d bytes (%d live, %d reserved after emptying the cache): %w",
			size, st.LiveBytes, st.ReservedBytes, err)
	}
	a.account(size, size)
	return &block{ptr: p, size: size, stream: s}, nil
}

// reuse takes a cached block of size usable on s, or returns nil.
func (a *allocator) reuse(size int64, s Stream) *block {
	list := a.free[size]
	for i := len(list) - 1; i >= 0; i-- {
		b := list[i]
		if b.stream != s {
			done, err := a.drv.EventDone(b.event)
			if err != nil || !done {
				continue
			}
			// Work queued on s later must not overtake the old use.
			if err := a.drv.StreamWaitEvent(s, b.event); err != nil {
				continue
			}
		}
		a.free[size] = append(list[:i], list[i+1:]...)
		a.releaseEvent(b)
		b.stream = s
		return b
	}
	return nil
}

// release caches b after its last use, queued on stream s.
func (a *allocator) release(b *block, s Stream) {
	b.stream = s
	if e, err := a.drv.EventCreate(); err == nil {
		if a.drv.EventRecord(e, s) == nil {
			b.event = e
		} else {
			_ = a.drv.EventDestroy(e)
		}
	}
	if b.event == 0 {
		// No event: make sure the use is over before the block can move.
		_ = a.drv.StreamSync(s)
	}
	a.free[b.size] = append(a.free[b.size], b)
	a.account(-b.size, 0)
}

func (a *allocator) releaseEvent(b *block) {
	if b.event != 0 {
		_ = a.drv.EventDestroy(b.event)
		b.event = 0
	}
}

// emptyCache waits for the streams of cached blocks and frees them all.
func (a *allocator) emptyCache() error {
	synced := map[Stream]bool{}
	var firstErr error
	for size, list := range a.free {
		for _, b := range list {
			if !synced[b.stream] {
				synced[b.stream] = true
				if err := a.drv.StreamSync(b.stream); err != nil && firstErr == nil {
					firstErr = err
				}
			}
			a.releaseEvent(b)
			if err := a.drv.MemFree(b.ptr); err != nil && firstErr == nil {
				firstErr = err
			}
			a.account(0, -b.size)
		}
		delete(a.free, size)
	}
	return firstErr
}

// account moves the live and reserved byte counters.
func (a *allocator) account(live, reserved int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := &a.stats
	st.LiveBytes += live
	st.ReservedBytes += reserved
	if live > 0 {
		st.LiveBuffers++
		st.Allocations++
	} else if live < 0 {
		st.LiveBuffers--
	}
	if st.LiveBytes > st.PeakBytes {
		st.PeakBytes = st.LiveBytes
	}
}

// memoryStats returns the counters.
func (a *allocator) memoryStats() backends.MemoryStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}
