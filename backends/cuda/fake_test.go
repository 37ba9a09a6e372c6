//go:build !kiln_nocuda && linux

package cuda

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// fakeDriver is a Driver in Go: memory is host memory, streams complete at
// once unless held, and every call records the OS thread it ran on.
type fakeDriver struct {
	mu       sync.Mutex
	limit    int64 // bytes of "device" memory; 0 = unlimited
	used     int64
	next     DevicePtr
	mem      map[DevicePtr][]byte
	mallocs  int
	frees    int
	threads  map[int]int // OS thread id → calls
	launches []string
	events   map[Event]bool // recorded and done?
	pending  map[Stream]bool
	nextEv   Event
	funcs    map[Function]string
	waits    int
}

func newFakeDriver(limit int64) *fakeDriver {
	return &fakeDriver{limit: limit, next: 0x1000, mem: map[DevicePtr][]byte{}, threads: map[int]int{},
		events: map[Event]bool{}, pending: map[Stream]bool{}, funcs: map[Function]string{}}
}

func (f *fakeDriver) seen() {
	f.threads[syscall.Gettid()]++
}

func (f *fakeDriver) DeviceCount() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	return 1, nil
}

func (f *fakeDriver) Props(int) (Props, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	return Props{Name: "Fake GPU", TotalMemory: f.limit, SMCount: 4, Major: 9, Minor: 0, DriverVer: 12040}, nil
}

func (f *fakeDriver) Init(int) error { f.mu.Lock(); defer f.mu.Unlock(); f.seen(); return nil }

func (f *fakeDriver) MemGetInfo() (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	return f.limit - f.used, f.limit, nil
}

func (f *fakeDriver) MemAlloc(n int64) (DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	if f.limit > 0 && f.used+n > f.limit {
		return 0, fmt.Errorf("fake: cuMemAlloc %d: %w", n, backends.ErrOutOfMemory)
	}
	p := f.next
	f.next += DevicePtr(n)
	f.mem[p] = make([]byte, n)
	f.used += n
	f.mallocs++
	return p, nil
}

func (f *fakeDriver) MemFree(p DevicePtr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	b, ok := f.mem[p]
	if !ok {
		return fmt.Errorf("fake: free of unknown pointer %#x", p)
	}
	f.used -= int64(len(b))
	delete(f.mem, p)
	f.frees++
	return nil
}

// at finds the allocation holding p.
func (f *fakeDriver) at(p DevicePtr, n int) ([]byte, error) {
	for base, b := range f.mem {
		if p >= base && int(p-base)+n <= len(b) {
			return b[p-base : int(p-base)+n], nil
		}
	}
	return nil, fmt.Errorf("fake: %d bytes at %#x are not allocated", n, p)
}

func (f *fakeDriver) CopyHtoD(dst DevicePtr, src []byte, _ Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	b, err := f.at(dst, len(src))
	if err == nil {
		copy(b, src)
	}
	return err
}

func (f *fakeDriver) CopyDtoH(dst []byte, src DevicePtr, _ Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	b, err := f.at(src, len(dst))
	if err == nil {
		copy(dst, b)
	}
	return err
}

func (f *fakeDriver) StreamCreate() (Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	return 7, nil
}

// StreamSync completes the stream: its events are done.
func (f *fakeDriver) StreamSync(s Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	delete(f.pending, s)
	for e := range f.events {
		f.events[e] = true
	}
	return nil
}

func (f *fakeDriver) EventCreate() (Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	f.nextEv++
	f.events[f.nextEv] = false
	return f.nextEv, nil
}

// EventRecord completes at once unless the stream is held busy.
func (f *fakeDriver) EventRecord(e Event, s Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	f.events[e] = !f.pending[s]
	return nil
}

func (f *fakeDriver) EventDone(e Event) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	return f.events[e], nil
}

func (f *fakeDriver) EventDestroy(e Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	delete(f.events, e)
	return nil
}

func (f *fakeDriver) StreamWaitEvent(Stream, Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	f.waits++
	return nil
}

func (f *fakeDriver) ModuleLoad([]byte) (Module, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	return 1, nil
}

func (f *fakeDriver) ModuleFunction(_ Module, name string) (Function, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	fn := Function(len(f.funcs) + 1)
	f.funcs[fn] = name
	return fn, nil
}

func (f *fakeDriver) Launch(fn Function, _, _ [3]uint32, _ uint32, _ Stream, params []unsafe.Pointer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen()
	f.launches = append(f.launches, f.funcs[fn])
	return nil
}

// hold marks stream s busy: events recorded on it stay pending until StreamSync.
func (f *fakeDriver) hold(s Stream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending[s] = true
}
