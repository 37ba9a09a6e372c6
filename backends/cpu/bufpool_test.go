package cpu

import (
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

func TestSizeClassRoundsUpWithinAFifth(t *testing.T) {
	for _, w := range []int{1, 511, 512, 513, 640, 641, 1000, 1024, 1025, 4097, 1 << 20, 3<<20 + 1} {
		c := sizeClass(w)
		if c < w {
			t.Errorf("sizeClass(%d) = %d, below the request", w, c)
		}
		if w < poolMinWords && c != w {
			t.Errorf("sizeClass(%d) = %d, want small sizes unchanged", w, c)
		}
		if w >= poolMinWords && float64(c) > 1.25*float64(w) {
			t.Errorf("sizeClass(%d) = %d wastes more than a fifth", w, c)
		}
		if sizeClass(c) != c {
			t.Errorf("sizeClass(%d) = %d is not a fixed point", c, sizeClass(c))
		}
	}
}

func TestPoolReusesFreedBuffers(t *testing.T) {
	b := New(1)
	first, _ := b.Alloc(backends.Float32, 10000)
	b.Free(first)
	held := b.PoolStats().HeldBytes
	if held < 40000 {
		t.Fatalf("pool holds %d bytes after freeing 40000", held)
	}
	again, _ := b.Alloc(backends.Float32, 9000) // same size class as 10000
	if s := b.PoolStats(); s.Hits != 1 || s.HeldBytes != 0 {
		t.Fatalf("after reallocating: %+v, want one hit and nothing held", s)
	}
	if got := again.Bytes(); got != 36000 {
		t.Fatalf("reused buffer has %d bytes, want 36000", got)
	}
	if m := b.MemoryStats(); m.LiveBytes != 36000 || m.ReservedBytes != 36000 {
		t.Fatalf("memory stats %+v, want 36000 live and reserved", m)
	}
	b.Free(again)
	if m := b.MemoryStats(); m.LiveBytes != 0 || m.ReservedBytes < 40000 {
		t.Fatalf("memory stats %+v after free, want 0 live and the pool reserved", m)
	}
	b.EmptyPool()
	if m := b.MemoryStats(); m.ReservedBytes != 0 {
		t.Fatalf("reserved %d bytes after EmptyPool", m.ReservedBytes)
	}
}

func TestPoolLimit(t *testing.T) {
	b := New(1)
	b.SetPoolLimit(64 << 10)
	x, _ := b.Alloc(backends.Float64, 6000) // 48000 bytes: kept
	y, _ := b.Alloc(backends.Float64, 6000) // kept only while under 64 KiB
	b.Free(x)
	b.Free(y)
	if held := b.PoolStats().HeldBytes; held == 0 || held > 64<<10 {
		t.Fatalf("pool holds %d bytes with a 64 KiB limit", held)
	}
	b.SetPoolLimit(0)
	z, _ := b.Alloc(backends.Float64, 6000)
	b.Free(z)
	if s := b.PoolStats(); s.HeldBytes != 0 {
		t.Fatalf("pool holds %d bytes with the pool off", s.HeldBytes)
	}
}

// A buffer from the pool holds what its last user left; kernels that
// promise to overwrite their output must not depend on fresh zeroes.
func TestReusedBufferIsOverwrittenByFill(t *testing.T) {
	b := New(1)
	x, _ := b.Alloc(backends.Float32, 4096)
	b.Fill(backends.Contiguous(x, backends.Float32, 4096), 7)
	b.Free(x)
	y, _ := b.Alloc(backends.Float32, 4096)
	b.Fill(backends.Contiguous(y, backends.Float32, 4096), 0)
	for i, v := range y.(*buffer).f32() {
		if v != 0 {
			t.Fatalf("element %d = %v after Fill(0)", i, v)
		}
	}
}
