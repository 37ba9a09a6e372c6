//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// openUnshared creates a device of its own for vulkan:0, outside Open's
// table (which the package's other tests and package tensor share), so
// that closing it leaves theirs alone; it skips without a device.
func openUnshared(t *testing.T) *Backend {
	t.Helper()
	ps, err := physicalDevices()
	if err != nil || len(ps) == 0 {
		t.Skipf("no Vulkan device: %v", err)
	}
	b, err := newBackend(0, ps[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCloseReleasesTheDevice checks that Close waits for queued work,
// returns the error it recorded, gives every byte back (live buffers and
// the cache included) and leaves a backend on which every call fails with
// ErrClosed rather than touching freed memory.
func TestCloseReleasesTheDevice(t *testing.T) {
	if raceEnabled {
		t.Skip("long; the plain run checks it (the race detector cannot see into the driver)")
	}
	dev := openUnshared(t)
	x, err := dev.Alloc(backends.Int64, 1024)
	if err != nil {
		t.Fatal(err)
	}
	cached, _ := dev.Alloc(backends.Float32, 1<<16)
	dev.Free(cached)
	xv := backends.Contiguous(x, backends.Int64, 1024)
	dev.Fill(xv, 3)
	dev.BinaryScalar(backends.FloorDiv, xv, xv, 0, false) // queued, unsynced: an integer division by zero
	if st := dev.MemoryStats(); st.LiveBytes != 8192 || st.ReservedBytes < 8192+4<<16 {
		t.Fatalf("before Close: %+v", st)
	}
	if err := dev.Close(); !errors.Is(err, backends.ErrDivideByZero) {
		t.Fatalf("Close = %v, want the queued work's ErrDivideByZero", err)
	}
	if st := dev.MemoryStats(); st.LiveBytes != 0 || st.LiveBuffers != 0 || st.ReservedBytes != 0 {
		t.Errorf("after Close: %+v, want no live or reserved bytes", st)
	}
	if _, err := dev.Alloc(backends.Float32, 4); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close = %v, want ErrClosed", err)
	}
	if err := dev.Read(x, 0, make([]byte, 8)); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
	dev.Write(x, 0, make([]byte, 8))
	dev.Fill(xv, 1)
	dev.Unary(backends.Exp, xv, xv, 0, 0)
	dev.Binary(backends.Rem, xv, xv, xv) // runs on the host when the kind has no shader: must not either
	dev.EmptyCache()
	if err := dev.Sync(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "vulkan:0") {
		t.Errorf("Sync after Close = %v, want ErrClosed naming vulkan:0", err)
	}
	if err := dev.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("the closed error is not sticky: %v", err)
	}
	dev.Free(x)
	if err := dev.Close(); err != nil {
		t.Errorf("a second Close = %v, want nil", err)
	}
}

// TestCloseReturnsMemoryToTheProcess opens, fills and closes devices in a
// loop: lavapipe's device memory is the process's, so a leak of the 32 MiB
// each holds would show in the resident set.
func TestCloseReturnsMemoryToTheProcess(t *testing.T) {
	if raceEnabled {
		t.Skip("long; the plain run checks it (the race detector cannot see into the driver)")
	}
	const bytes = 32 << 20
	cycle := func() {
		dev := openUnshared(t)
		buf, err := dev.Alloc(backends.Float32, bytes/4)
		if err != nil {
			t.Fatal(err)
		}
		dev.Fill(backends.Contiguous(buf, backends.Float32, bytes/4), 1) // touch every page
		if err := dev.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := dev.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cycle() // the driver's one-time state (shader cache, threads) is not a leak
	before := residentBytes(t)
	const cycles = 8
	for range cycles {
		cycle()
	}
	grew := residentBytes(t) - before
	t.Logf("resident set grew %d MiB over %d devices of 32 MiB each", grew>>20, cycles)
	if grew > bytes*cycles/2 {
		t.Errorf("the resident set grew %d MiB over %d open/fill/close cycles: device memory leaks", grew>>20, cycles)
	}
}

// residentBytes returns the process's resident set size, from /proc, or
// skips where there is none.
func residentBytes(t *testing.T) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(raw))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}
