package cpu

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/kiln-ml/kiln/backends"
)

// Backend is the pure-Go CPU backend. It runs kernels synchronously on the
// calling goroutine and a shared worker pool, which satisfies the
// asynchronous contract trivially: work is complete when a method returns.
type Backend struct {
	workers int   // read through Workers; changed only by SetWorkers
	pool    *pool // workers-1 persistent helper goroutines

	mu      sync.Mutex
	err     error // sticky
	live    atomic.Int64
	peak    atomic.Int64
	buffers atomic.Int64
	allocs  atomic.Int64
	bufs    bufferPool // freed memory kept for reuse
}

// New returns a CPU backend that uses up to workers goroutines per kernel
// (0 means the default: the KILN_CPU_THREADS environment variable when it
// holds a positive number, else runtime.GOMAXPROCS(0)).
func New(workers int) *Backend {
	if workers <= 0 {
		workers = defaultWorkers()
	}
	b := &Backend{workers: workers, pool: newPool(workers)}
	b.bufs.limit = defaultPoolLimit()
	// The helpers hold only the pool, so an unreachable Backend is collected
	// and its helpers stopped.
	runtime.AddCleanup(b, (*pool).stop, b.pool)
	return b
}

// defaultWorkers is KILN_CPU_THREADS when that is a positive number, else
// runtime.GOMAXPROCS(0).
func defaultWorkers() int {
	if n, err := strconv.Atoi(os.Getenv("KILN_CPU_THREADS")); err == nil && n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// Workers returns the number of goroutines kernels are split across (the
// caller plus Workers()-1 persistent helpers).
func (b *Backend) Workers() int { return b.workers }

// SetWorkers changes the number of goroutines kernels are split across
// (0 means the default, as for New), replacing the helper goroutines.
// Results do not depend on it, bit for bit; call it only while no kernel
// runs.
func (b *Backend) SetWorkers(n int) {
	if n <= 0 {
		n = defaultWorkers()
	}
	if n == b.workers {
		return
	}
	old := b.pool
	b.workers, b.pool = n, newPool(n)
	runtime.AddCleanup(b, (*pool).stop, b.pool)
	old.stop()
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
	if n > math.MaxInt/8/dtype.Size() || int64(n)*int64(dtype.Size()) > totalMemory() && totalMemory() > 0 {
		return nil, fmt.Errorf("cpu: alloc %d elements of %s: more than the machine's memory (%d bytes): %w",
			n, dtype, totalMemory(), backends.ErrOutOfMemory)
	}
	var buf *buffer
	words := (n*dtype.Size() + 7) / 8
	if w := b.bufs.get(sizeClass(words)); w != nil {
		buf = wrapWords(w[:words], dtype, n)
	} else if class := sizeClass(words); class != words {
		buf = wrapWords(make([]uint64, words, class), dtype, n)
	} else {
		buf = newBuffer(dtype, n)
	}
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
	if cb.words != nil {
		b.bufs.put(cb.words)
	}
	cb.words, cb.bytes, cb.n = nil, nil, 0
}

// Write implements backends.Backend. A write reaching outside buf is
// refused with the sticky error.
func (b *Backend) Write(buf backends.Buffer, off int64, src []byte) {
	bb, err := byteRange("write", buf, off, len(src))
	if err != nil {
		b.fail(err)
		return
	}
	copy(bb.bytes[off:], src)
}

// Read implements backends.Backend. A read reaching outside buf is an
// error.
func (b *Backend) Read(buf backends.Buffer, off int64, dst []byte) error {
	bb, err := byteRange("read", buf, off, len(dst))
	if err != nil {
		return err
	}
	copy(dst, bb.bytes[off:])
	return b.Sync()
}

// byteRange checks that buf is a CPU buffer holding bytes [off, off+n).
func byteRange(op string, buf backends.Buffer, off int64, n int) (*buffer, error) {
	bb, ok := buf.(*buffer)
	if !ok || bb == nil {
		return nil, fmt.Errorf("cpu: %s: buffer %T is not a CPU buffer", op, buf)
	}
	if size := int64(len(bb.bytes)); off < 0 || off > size || int64(n) > size-off {
		return nil, fmt.Errorf("cpu: %s of %d bytes at offset %d of a buffer of %d bytes (%d %s elements)",
			op, n, off, size, bb.n, bb.dtype)
	}
	return bb, nil
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
		ReservedBytes: live + b.bufs.stats().HeldBytes, Allocations: b.allocs.Load()}
}

func buf(v backends.View) *buffer { return v.Buf.(*buffer) }
