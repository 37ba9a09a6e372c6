package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/kiln-ml/kiln/backends"
)

// Backend is the pure-Go CPU backend. It runs kernels synchronously on the
// calling goroutine and a shared worker pool, which satisfies the
// asynchronous contract trivially: work is complete when a method returns.
type Backend struct {
	workers int // read through Workers; changed only by SetWorkers

	mu      sync.Mutex
	err     error // sticky
	live    atomic.Int64
	peak    atomic.Int64
	buffers atomic.Int64
	allocs  atomic.Int64
}

// New returns a CPU backend that uses up to workers goroutines per kernel
// (0 means runtime.GOMAXPROCS(0)).
func New(workers int) *Backend {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &Backend{workers: workers}
}

// Workers returns the number of goroutines kernels are split across.
func (b *Backend) Workers() int { return b.workers }

// SetWorkers changes the number of goroutines kernels are split across
// (0 means runtime.GOMAXPROCS(0)). Results do not depend on it; call it
// only while no kernel runs.
func (b *Backend) SetWorkers(n int) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	b.workers = n
}

// Info implements backends.Backend.
func (b *Backend) Info() backends.DeviceInfo {
	return backends.DeviceInfo{Kind: "cpu", Name: cpuName(), MemoryBytes: totalMemory(), Cores: runtime.NumCPU(),
		Detail: fmt.Sprintf("%d worker goroutines", b.workers)}
}

// Alloc implements backends.Backend.
func (b *Backend) Alloc(dtype backends.DType, n int) (backends.Buffer, error) {
	if n < 0 || !dtype.Valid() {
		return nil, fmt.Errorf("cpu: alloc %d elements of %s", n, dtype)
	}
	buf := newBuffer(dtype, n)
	live := b.live.Add(buf.Bytes())
	for {
		p := b.peak.Load()
		if live <= p || b.peak.CompareAndSwap(p, live) {
			break
		}
	}
	b.buffers.Add(1)
	b.allocs.Add(1)
	return buf, nil
}

// Free implements backends.Backend.
func (b *Backend) Free(buf backends.Buffer) {
	cb := buf.(*buffer)
	b.live.Add(-cb.Bytes())
	b.buffers.Add(-1)
	cb.words, cb.bytes, cb.n = nil, nil, 0
}

// Write implements backends.Backend.
func (b *Backend) Write(buf backends.Buffer, off int64, src []byte) {
	copy(buf.(*buffer).bytes[off:], src)
}

// Read implements backends.Backend.
func (b *Backend) Read(buf backends.Buffer, off int64, dst []byte) error {
	copy(dst, buf.(*buffer).bytes[off:])
	return b.Sync()
}

// Sync implements backends.Backend. It returns the first failure since the
// last Sync or Read and forgets it, so each failure is reported once.
func (b *Backend) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.err
	b.err = nil
	return err
}

// fail records the first error; later ones are dropped (the first is the cause).
func (b *Backend) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
	}
}

// MemoryStats implements backends.Backend.
func (b *Backend) MemoryStats() backends.MemoryStats {
	live := b.live.Load()
	return backends.MemoryStats{LiveBytes: live, PeakBytes: b.peak.Load(), LiveBuffers: b.buffers.Load(),
		ReservedBytes: live, Allocations: b.allocs.Load()}
}

func buf(v backends.View) *buffer { return v.Buf.(*buffer) }

// parallel splits [0, n) into chunks of at least grain and runs fn on them
// across the workers. Chunk boundaries depend only on n and grain, never on
// the worker count, so any per-chunk arithmetic is reproducible.
func (b *Backend) parallel(n, grain int, fn func(lo, hi int)) {
	if grain < 1 {
		grain = 1
	}
	chunks := (n + grain - 1) / grain
	if chunks <= 1 || b.workers == 1 {
		for lo := 0; lo < n; lo += grain {
			fn(lo, min(lo+grain, n))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	w := min(b.workers, chunks)
	wg.Add(w)
	for range w {
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				lo := c * grain
				fn(lo, min(lo+grain, n))
			}
		}()
	}
	wg.Wait()
}
