//go:build !kiln_nocuda && linux

package cuda

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

func TestSizeClasses(t *testing.T) {
	for _, tc := range []struct{ n, want int64 }{
		{1, 512}, {512, 512}, {513, 1024}, {1000, 1024}, {1 << 20, 1 << 20},
		{1<<20 + 1, 2 << 20}, {3 << 20, 4 << 20}, {5<<20 + 7, 6 << 20},
	} {
		if got := sizeClass(tc.n); got != tc.want {
			t.Errorf("sizeClass(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestAllocatorReusesOnSameStream(t *testing.T) {
	f := newFakeDriver(0)
	a := newAllocator(f)
	b1, _ := a.alloc(1000, 7)
	a.release(b1, 7)
	b2, err := a.alloc(900, 7)
	if err != nil || b2.ptr != b1.ptr || f.mallocs != 1 {
		t.Fatalf("same-class request on the same stream got %#x (want %#x), %d mallocs, %v", b2.ptr, b1.ptr, f.mallocs, err)
	}
	st := a.memoryStats()
	if st.LiveBytes != 1024 || st.ReservedBytes != 1024 || st.LiveBuffers != 1 || st.Allocations != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestAllocatorWaitsForOtherStreams(t *testing.T) {
	f := newFakeDriver(0)
	a := newAllocator(f)
	b1, _ := a.alloc(4096, 7)
	f.hold(7) // the kernel using b1 is still running
	a.release(b1, 7)
	b2, _ := a.alloc(4096, 8)
	if b2.ptr == b1.ptr {
		t.Fatal("block reused on another stream before its last use finished")
	}
	if err := f.StreamSync(7); err != nil {
		t.Fatal(err)
	}
	b3, _ := a.alloc(4096, 8)
	if b3.ptr != b1.ptr {
		t.Fatal("finished block not reused on another stream")
	}
	if f.waits != 1 {
		t.Errorf("stream 8 did not wait on the block's event (%d waits)", f.waits)
	}
}

func TestAllocatorMemoryFlatOverEpochs(t *testing.T) {
	f := newFakeDriver(0)
	a := newAllocator(f)
	sizes := []int64{784 * 4 * 64, 128 * 4, 128 * 784 * 4, 10 * 4, 64 * 10 * 4, 3 << 20, 1}
	var reserved []int64
	for epoch := 0; epoch < 5; epoch++ {
		for step := 0; step < 50; step++ {
			var live []*block
			for i, s := range sizes {
				b, err := a.alloc(s+int64(step%3), 7)
				if err != nil {
					t.Fatal(err)
				}
				live = append(live, b)
				if i%2 == 1 { // free some mid-step, as activations are
					a.release(live[0], 7)
					live = live[1:]
				}
			}
			for _, b := range live {
				a.release(b, 7)
			}
		}
		st := a.memoryStats()
		if st.LiveBytes != 0 || st.LiveBuffers != 0 {
			t.Fatalf("epoch %d: %d bytes in %d buffers still live", epoch, st.LiveBytes, st.LiveBuffers)
		}
		reserved = append(reserved, st.ReservedBytes)
	}
	for i := 1; i < len(reserved); i++ {
		if reserved[i] != reserved[0] {
			t.Fatalf("reserved memory grows epoch over epoch: %v", reserved)
		}
	}
	if f.used != reserved[0] {
		t.Errorf("driver holds %d bytes, allocator says %d", f.used, reserved[0])
	}
}

func TestAllocatorEmptiesCacheOnOutOfMemory(t *testing.T) {
	f := newFakeDriver(5 << 20)
	a := newAllocator(f)
	big, err := a.alloc(4<<20, 7)
	if err != nil {
		t.Fatal(err)
	}
	a.release(big, 7) // cached, still reserved from the driver
	small, err := a.alloc(2<<20, 7)
	if err != nil {
		t.Fatalf("allocation failed instead of emptying the cache: %v", err)
	}
	if f.frees != 1 || a.memoryStats().ReservedBytes != 2<<20 {
		t.Errorf("cache not emptied: %d frees, %+v", f.frees, a.memoryStats())
	}
	_, err = a.alloc(4<<20, 7)
	if !errors.Is(err, backends.ErrOutOfMemory) {
		t.Fatalf("err = %v, want ErrOutOfMemory", err)
	}
	a.release(small, 7)
	if err := a.emptyCache(); err != nil || f.used != 0 {
		t.Fatalf("emptyCache left %d bytes (%v)", f.used, err)
	}
}
