package tensor_test

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// setFloat32s overwrites raw (little-endian float32s) with vs.
func setFloat32s(raw []byte, vs ...float32) {
	for i, v := range vs {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
}

func TestHoldBytes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		dev        string
		make       func(base *tensor.Tensor) *tensor.Tensor // the view held, of base = [0 1 2 3 4 5] as [2 3]
		wantShared bool
		wantBase   []float32 // base after writing 10, 11, … to the held bytes and Store
	}{
		{"contiguous CPU tensor shares its storage", "cpu",
			func(b *tensor.Tensor) *tensor.Tensor { return b }, true, []float32{10, 11, 12, 13, 14, 15}},
		{"contiguous view with an offset shares its storage", "cpu",
			func(b *tensor.Tensor) *tensor.Tensor { return b.Narrow(0, 1, 1) }, true, []float32{0, 1, 2, 10, 11, 12}},
		{"strided view is a copy stored back", "cpu",
			func(b *tensor.Tensor) *tensor.Tensor { return b.Transpose(0, 1) }, false, []float32{10, 12, 14, 11, 13, 15}},
		{"device without host buffers is a copy stored back", "strict",
			func(b *tensor.Tensor) *tensor.Tensor { return b }, false, []float32{10, 11, 12, 13, 14, 15}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tensor.FromFloat32s(tensor.MustDevice(tc.dev), []float32{0, 1, 2, 3, 4, 5}, 2, 3)
			defer base.Release()
			x := tc.make(base)
			want := x.Float32s()
			h := x.HoldBytes()
			defer h.Release()
			if h.Shared() != tc.wantShared {
				t.Errorf("Shared() = %v, want %v", h.Shared(), tc.wantShared)
			}
			raw := h.Bytes()
			if len(raw) != 4*len(want) {
				t.Fatalf("%d bytes for %d elements", len(raw), len(want))
			}
			for i, w := range want {
				if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != w {
					t.Fatalf("byte view element %d = %v, want %v (row-major %v)", i, got, w, want)
				}
			}
			vs := make([]float32, len(want))
			for i := range vs {
				vs[i] = float32(10 + i)
			}
			setFloat32s(raw, vs...)
			if !tc.wantShared && !slices.Equal(base.Float32s(), []float32{0, 1, 2, 3, 4, 5}) {
				t.Errorf("a copy changed the tensor before Store: %v", base.Float32s())
			}
			h.Store()
			if got := base.Float32s(); !slices.Equal(got, tc.wantBase) {
				t.Errorf("after Store: %v, want %v", got, tc.wantBase)
			}
		})
	}
}

// TestHoldBytesKeepsStorage: a tensor released during a hold keeps its
// memory until the hold ends, so that C code never writes freed memory.
func TestHoldBytesKeepsStorage(t *testing.T) {
	dev := tensor.CPU()
	before := dev.MemoryStats().LiveBytes
	x := tensor.Ones(dev, 1024)
	h := x.HoldBytes()
	x.Release()
	if live := dev.MemoryStats().LiveBytes - before; live != 4096 {
		t.Errorf("released during a hold: %d live bytes, want 4096", live)
	}
	setFloat32s(h.Bytes(), 7) // still ours to write
	if err := tensor.Try(h.Store); !errors.Is(err, tensor.ErrReleased) {
		t.Errorf("Store into a released tensor: %v, want ErrReleased", err)
	}
	h.Release()
	h.Release() // harmless
	if live := dev.MemoryStats().LiveBytes - before; live != 0 {
		t.Errorf("after the hold: %d live bytes, want 0", live)
	}
	if err := tensor.Try(h.Store); !errors.Is(err, tensor.ErrReleased) {
		t.Errorf("Store after Release: %v, want ErrReleased", err)
	}
	if err := tensor.Try(func() { x.HoldBytes() }); !errors.Is(err, tensor.ErrReleased) {
		t.Errorf("HoldBytes of a released tensor: %v, want ErrReleased", err)
	}
}

// TestHoldBytesEmpty: a tensor without elements holds no bytes.
func TestHoldBytesEmpty(t *testing.T) {
	x := tensor.Zeros(tensor.CPU(), 0, 3)
	defer x.Release()
	h := x.HoldBytes()
	if len(h.Bytes()) != 0 {
		t.Errorf("%d bytes", len(h.Bytes()))
	}
	h.Store()
	h.Release()
}
