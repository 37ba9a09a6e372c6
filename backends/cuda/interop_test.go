//go:build !kiln_nocuda && linux

package cuda

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

func TestDevicePointer(t *testing.T) {
	f := newFakeDriver(0)
	b := newFakeBackend(t, f)
	other := newFakeBackend(t, newFakeDriver(0))
	buf, err := b.Alloc(backends.Float32, 10)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.Alloc(backends.Float32, 10)
	if err != nil {
		t.Fatal(err)
	}
	freed, err := b.Alloc(backends.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	b.Free(freed)

	ptr, n, err := b.DevicePointer(buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != 40 {
		t.Errorf("size %d bytes, want 40", n)
	}
	f.mu.Lock()
	_, err = f.at(DevicePtr(ptr), 40)
	f.mu.Unlock()
	if err != nil {
		t.Errorf("the address is not the allocation: %v", err)
	}
	for _, tc := range []struct {
		name string
		buf  backends.Buffer
		want string
	}{
		{"another device's buffer", foreign, "does not belong"},
		{"a freed buffer", freed, "was freed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := b.DevicePointer(tc.buf); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// Work queued before Submit has reached the stream when f runs, f runs on
// the device's thread, and its error comes back.
func TestSubmitRunsInStreamOrderOnTheDeviceThread(t *testing.T) {
	f := newFakeDriver(0)
	b := newFakeBackend(t, f)
	buf, err := b.Alloc(backends.Uint8, 4)
	if err != nil {
		t.Fatal(err)
	}
	ptr, _, err := b.DevicePointer(buf)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(buf, 0, []byte{1, 2, 3, 4}) // queued, not yet run
	var seen []byte
	var stream uintptr
	var tid int
	err = b.Submit(func(s uintptr) error {
		stream, tid = s, syscall.Gettid()
		f.mu.Lock()
		defer f.mu.Unlock()
		mem, err := f.at(DevicePtr(ptr), 4)
		seen = append([]byte(nil), mem...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seen, []byte{1, 2, 3, 4}) {
		t.Errorf("f saw %v, want the queued write [1 2 3 4]", seen)
	}
	if stream != uintptr(b.stream) {
		t.Errorf("stream %#x, want the backend's %#x", stream, b.stream)
	}
	f.mu.Lock()
	_, onThread := f.threads[tid]
	f.mu.Unlock()
	if !onThread {
		t.Errorf("f ran on OS thread %d, not the device thread", tid)
	}
	boom := errors.New("boom")
	if err := b.Submit(func(uintptr) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Submit returned %v, want f's error", err)
	}
}
