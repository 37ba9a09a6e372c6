//go:build !kiln_nocuda && linux

package cuda

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// failingDriver fails the next launch.
type failingDriver struct {
	*fakeDriver
	failNext bool
}

func (d *failingDriver) Launch(fn Function, g, b [3]uint32, s uint32, st Stream, p []unsafe.Pointer) error {
	if d.failNext {
		d.failNext = false
		return errors.New("fake: launch failed")
	}
	return d.fakeDriver.Launch(fn, g, b, s, st, p)
}

func newFakeBackend(t *testing.T, drv Driver) *Backend {
	t.Helper()
	b, err := newBackend(drv, &fakeCompiler{major: 12, minor: 4}, 0, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func TestEveryDriverCallRunsOnOneOSThread(t *testing.T) {
	f := newFakeDriver(0)
	b := newFakeBackend(t, f)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				buf, err := b.Alloc(backends.Float32, 64+g)
				if err != nil {
					errs <- err
					return
				}
				want := bytes.Repeat([]byte{byte(g), byte(i)}, 2*(64+g))
				b.Write(buf, 0, want)
				b.Fill(backends.Contiguous(buf, backends.Float32, 64+g), 0) // a launch (a no-op in the fake)
				got := make([]byte, len(want))
				if err := b.Read(buf, 0, got); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, want) {
					errs <- errors.New("read back other data than written")
					return
				}
				b.Free(buf)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.threads) != 1 {
		t.Fatalf("driver calls ran on %d OS threads (%v), want 1", len(f.threads), f.threads)
	}
	if len(f.launches) != 16*20 || f.launches[0] != "kiln_fill_f32" {
		t.Errorf("%d launches, first %q", len(f.launches), f.launches[0])
	}
}

func TestDeviceErrorsAreReportedOnce(t *testing.T) {
	d := &failingDriver{fakeDriver: newFakeDriver(0)}
	b := newFakeBackend(t, d)
	buf, err := b.Alloc(backends.Float32, 4)
	if err != nil {
		t.Fatal(err)
	}
	d.failNext = true
	b.Fill(backends.Contiguous(buf, backends.Float32, 4), 1)
	if err := b.Sync(); err == nil || !strings.Contains(err.Error(), "launch failed") {
		t.Fatalf("Sync = %v, want the launch failure", err)
	}
	if err := b.Sync(); err != nil {
		t.Fatalf("second Sync = %v, want nil (reported once)", err)
	}
	// A kernel's index-out-of-range flag surfaces at the next Sync, once.
	d.mu.Lock()
	flag, _ := d.at(b.errFlag.ptr, 4)
	flag[0] = 1
	d.mu.Unlock()
	if err := b.Sync(); err == nil || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("Sync = %v, want the index error", err)
	}
	if err := b.Sync(); err != nil {
		t.Fatalf("flag not cleared: %v", err)
	}
	// Views beyond the kernels' rank limit are an error, not a crash.
	shape := make([]int, maxDims+1)
	for i := range shape {
		shape[i] = 1
	}
	b.Fill(backends.Contiguous(buf, backends.Float32, shape...), 0)
	if err := b.Sync(); err == nil || !strings.Contains(err.Error(), "rank") {
		t.Fatalf("Sync = %v, want the rank error", err)
	}
}

func TestBackendInfoAndStats(t *testing.T) {
	b := newFakeBackend(t, newFakeDriver(1<<30))
	info := b.Info()
	if info.String() != "cuda:0" || info.Name != "Fake GPU" || !strings.Contains(info.Detail, "9.0") {
		t.Errorf("info %+v", info)
	}
	buf, _ := b.Alloc(backends.Float64, 100)
	if st := b.MemoryStats(); st.LiveBytes != 1024+512 { // 800 B → 1 KiB, plus the error flag
		t.Errorf("stats %+v", st)
	}
	b.Free(buf)
	if err := b.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	if m := b.DeviceMetrics(); m["gpu_alloc_reserved_mib"] != 512.0/(1<<20) {
		t.Errorf("metrics %v", m)
	}
}
