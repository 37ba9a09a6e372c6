package strict

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kiln-ml/kiln/backends"
)

// quarantineBytes is how much freed memory is kept poisoned before it is
// really returned, so that a stale reference reads NaNs instead of whatever
// was allocated there next.
const quarantineBytes = 64 << 20

// Backend decorates another backend (the CPU's by default) for testing. It
// runs every kernel on its own goroutine, in order, after the call returns
// (as a GPU stream would); it refuses, with a sticky error, any kernel that
// names a freed buffer; it fills freed buffers with poison (NaN for floats,
// 0xA5 bytes otherwise) and keeps them quarantined for a while; and it
// tracks every live buffer with the place that allocated it, so tests can
// find leaks (Mark, LiveSince).
type Backend struct {
	inner backends.Backend

	queue chan func()

	mu         sync.Mutex
	err        error
	live       map[*buffer]struct{}
	quarantine []backends.Buffer
	qBytes     int64
	nextID     atomic.Uint64
	liveBytes  atomic.Int64
	peak       atomic.Int64
	allocs     atomic.Int64
}

// buffer is a strict handle on an inner buffer.
type buffer struct {
	inner backends.Buffer
	id    uint64
	dtype backends.DType
	n     int
	freed atomic.Bool
	site  string // where it was allocated, outside Kiln's internals
}

// Bytes implements backends.Buffer.
func (b *buffer) Bytes() int64 { return b.inner.Bytes() }

// New returns a strict backend wrapping inner.
func New(inner backends.Backend) *Backend {
	s := &Backend{inner: inner, queue: make(chan func(), 1024), live: map[*buffer]struct{}{}}
	go s.run()
	return s
}

func (s *Backend) run() {
	for fn := range s.queue {
		s.exec(fn)
	}
}

// exec runs one queued kernel, turning a panic in it into the sticky error.
func (s *Backend) exec(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			s.fail(fmt.Errorf("strict: kernel panicked: %v", r))
		}
	}()
	fn()
}

func (s *Backend) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// drain waits until every kernel queued so far has run.
func (s *Backend) drain() {
	done := make(chan struct{})
	s.queue <- func() { close(done) }
	<-done
}

// Info implements backends.Backend.
func (s *Backend) Info() backends.DeviceInfo {
	i := s.inner.Info()
	i.Kind, i.Index = "strict", 0
	i.Name = "strict checks over " + i.Name
	return i
}

// Alloc implements backends.Backend.
func (s *Backend) Alloc(dtype backends.DType, n int) (backends.Buffer, error) {
	in, err := s.inner.Alloc(dtype, n)
	if err != nil {
		return nil, err
	}
	b := &buffer{inner: in, id: s.nextID.Add(1), dtype: dtype, n: n, site: callSite()}
	s.mu.Lock()
	s.live[b] = struct{}{}
	s.mu.Unlock()
	l := s.liveBytes.Add(in.Bytes())
	for p := s.peak.Load(); l > p && !s.peak.CompareAndSwap(p, l); p = s.peak.Load() {
	}
	s.allocs.Add(1)
	// Fresh memory is poisoned too: reading it before writing is a bug.
	s.queue <- func() { s.poison(in, dtype, n) }
	return b, nil
}

func (s *Backend) poison(in backends.Buffer, dtype backends.DType, n int) {
	v := backends.View{Buf: in, DType: dtype, Shape: []int{n}, Strides: []int{1}}
	if dtype.IsFloat() {
		s.inner.Fill(v, math.NaN())
	} else {
		s.inner.Fill(v, 0xA5)
	}
}

// Free implements backends.Backend: the buffer is poisoned once queued work
// is done and quarantined before the inner backend gets it back.
func (s *Backend) Free(b backends.Buffer) {
	sb := s.own(b, "free")
	if sb == nil {
		return
	}
	if sb.freed.Swap(true) {
		s.fail(fmt.Errorf("strict: buffer #%d (%d × %s, allocated at %s) freed twice", sb.id, sb.n, sb.dtype, sb.site))
		return
	}
	s.mu.Lock()
	delete(s.live, sb)
	s.mu.Unlock()
	s.liveBytes.Add(-sb.Bytes())
	s.queue <- func() {
		s.poison(sb.inner, sb.dtype, sb.n)
		s.mu.Lock()
		s.quarantine = append(s.quarantine, sb.inner)
		s.qBytes += sb.inner.Bytes()
		var release []backends.Buffer
		for s.qBytes > quarantineBytes && len(s.quarantine) > 0 {
			old := s.quarantine[0]
			s.quarantine = s.quarantine[1:]
			s.qBytes -= old.Bytes()
			release = append(release, old)
		}
		s.mu.Unlock()
		for _, r := range release {
			s.inner.Free(r)
		}
	}
}

// own checks that b is a live strict buffer, recording a sticky error if not.
func (s *Backend) own(b backends.Buffer, op string) *buffer {
	sb, ok := b.(*buffer)
	if !ok {
		s.fail(fmt.Errorf("strict: %s: buffer %T does not belong to this backend", op, b))
		return nil
	}
	return sb
}

// in translates a view onto the inner buffer, failing on a freed one.
func (s *Backend) in(op string, v backends.View) (backends.View, bool) {
	sb := s.own(v.Buf, op)
	if sb == nil {
		return v, false
	}
	if sb.freed.Load() {
		s.fail(fmt.Errorf("strict: %s uses buffer #%d (%d × %s, allocated at %s) after it was freed",
			op, sb.id, sb.n, sb.dtype, sb.site))
		return v, false
	}
	if v.DType != sb.dtype {
		s.fail(fmt.Errorf("strict: %s reads buffer #%d of %s as %s", op, sb.id, sb.dtype, v.DType))
		return v, false
	}
	if err := checkBounds(v, sb.n); err != nil {
		s.fail(fmt.Errorf("strict: %s: buffer #%d: %v", op, sb.id, err))
		return v, false
	}
	v.Buf = sb.inner
	v.Shape = append([]int(nil), v.Shape...)
	v.Strides = append([]int(nil), v.Strides...)
	return v, true
}

// checkBounds verifies that every element v addresses lies inside a buffer of n elements.
func checkBounds(v backends.View, n int) error {
	if len(v.Shape) != len(v.Strides) {
		return fmt.Errorf("view %v has %d dimensions but %d strides", v.Shape, len(v.Shape), len(v.Strides))
	}
	lo, hi := v.Offset, v.Offset
	for i, d := range v.Shape {
		if d == 0 {
			return nil
		}
		if st := v.Strides[i]; st > 0 {
			hi += (d - 1) * st
		} else {
			lo += (d - 1) * st
		}
	}
	if lo < 0 || hi >= n {
		return fmt.Errorf("view %s reaches elements [%d, %d] of a buffer of %d", v, lo, hi, n)
	}
	return nil
}

// enqueue translates views and queues fn with them; nothing runs if any
// view is bad (the error is sticky).
func (s *Backend) enqueue(op string, views []backends.View, fn func(vs []backends.View)) {
	vs := make([]backends.View, len(views))
	for i, v := range views {
		iv, ok := s.in(op, v)
		if !ok {
			return
		}
		vs[i] = iv
	}
	s.queue <- func() { fn(vs) }
}

// Write implements backends.Backend; src is copied before the call returns.
func (s *Backend) Write(b backends.Buffer, off int64, src []byte) {
	sb := s.own(b, "write")
	if sb == nil {
		return
	}
	if sb.freed.Load() {
		s.fail(fmt.Errorf("strict: write to buffer #%d after it was freed", sb.id))
		return
	}
	data := append([]byte(nil), src...)
	s.queue <- func() { s.inner.Write(sb.inner, off, data) }
}

// Read implements backends.Backend.
func (s *Backend) Read(b backends.Buffer, off int64, dst []byte) error {
	sb := s.own(b, "read")
	if sb != nil && sb.freed.Load() {
		s.fail(fmt.Errorf("strict: read of buffer #%d (%d × %s, allocated at %s) after it was freed",
			sb.id, sb.n, sb.dtype, sb.site))
	}
	if err := s.Sync(); err != nil {
		return err
	}
	if err := s.inner.Read(sb.inner, off, dst); err != nil {
		return err
	}
	return s.Sync()
}

// Sync implements backends.Backend.
func (s *Backend) Sync() error {
	s.drain()
	if err := s.inner.Sync(); err != nil {
		s.fail(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.err
	s.err = nil
	return err
}

// ClearError waits for queued work and forgets any failure not yet
// reported (tests that plant failures use it).
func (s *Backend) ClearError() { _ = s.Sync() }

// MemoryStats implements backends.Backend.
func (s *Backend) MemoryStats() backends.MemoryStats {
	s.mu.Lock()
	n := int64(len(s.live))
	q := s.qBytes
	s.mu.Unlock()
	l := s.liveBytes.Load()
	return backends.MemoryStats{LiveBytes: l, PeakBytes: s.peak.Load(), LiveBuffers: n, ReservedBytes: l + q,
		Allocations: s.allocs.Load()}
}

// Mark returns a position in the allocation sequence for LiveSince.
func (s *Backend) Mark() uint64 { return s.nextID.Load() }

// Leak describes a buffer still live.
type Leak struct {
	ID    uint64
	Bytes int64
	DType backends.DType
	Site  string // where it was allocated
}

// String formats the leak for a test failure.
func (l Leak) String() string {
	return fmt.Sprintf("buffer #%d (%d bytes of %s) allocated at %s", l.ID, l.Bytes, l.DType, l.Site)
}

// LiveSince returns the buffers allocated after mark that are still live.
func (s *Backend) LiveSince(mark uint64) []Leak {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Leak
	for b := range s.live {
		if b.id > mark {
			out = append(out, Leak{ID: b.id, Bytes: b.Bytes(), DType: b.dtype, Site: b.site})
		}
	}
	return out
}

// callSite names the first caller outside Kiln's tensor and backend code.
func callSite() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	first := ""
	for {
		f, more := frames.Next()
		if first == "" {
			first = fmt.Sprintf("%s (%s:%d)", f.Function, f.File, f.Line)
		}
		if !strings.Contains(f.Function, "kiln/tensor.") && !strings.Contains(f.Function, "kiln/backends") {
			return fmt.Sprintf("%s (%s:%d)", f.Function, shortFile(f.File), f.Line)
		}
		if !more {
			return first
		}
	}
}

func shortFile(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		if j := strings.LastIndex(p[:i], "/"); j >= 0 {
			return p[j+1:]
		}
	}
	return p
}
