package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// f32Values decodes a Float32 view's elements, in row-major order.
func f32Values(v backends.View) []float32 {
	raw := rawSnapshot(v)
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// TestMatmulBiasBF16 checks the fused bias epilogue against MatmulBF16
// followed by the float32 addition of the bias, bit for bit: float32 and
// bfloat16 operands, x plain, transposed and strided, w transposed (as
// Linear passes weightᵀ), sizes that are multiples of no tile, K-blocks
// several (the bias added once, after the last), one row, K = 0, serial
// and parallel; and that it refuses what it cannot do.
func TestMatmulBiasBF16(t *testing.T) {
	old := gemmKC
	defer func() { gemmKC = old }()
	for _, c := range []struct {
		m, k, n int
		lay     layout
		dt      backends.DType
		smallKC bool
		threads int
	}{
		{37, 300, 45, contiguous, backends.Float32, false, 1},
		{37, 300, 45, transposed, backends.Float32, false, 2},
		{37, 301, 45, strided, backends.Float32, true, 2},
		{64, 1100, 96, contiguous, backends.Float32, false, 2},
		{1, 33, 70, contiguous, backends.BFloat16, false, 1},
		{29, 65, 31, transposed, backends.BFloat16, true, 2},
		{5, 0, 7, contiguous, backends.Float32, false, 1},
	} {
		t.Run(fmt.Sprintf("m=%d,k=%d,n=%d,%s,%s,smallKC=%v,threads=%d", c.m, c.k, c.n, c.lay, c.dt, c.smallKC, c.threads), func(t *testing.T) {
			gemmKC = old
			if c.smallKC {
				gemmKC = 7
			}
			be := New(c.threads)
			x := makeView(be, c.dt, c.lay, 1, false, c.m, c.k)
			w := makeView(be, c.dt, transposed, 2, false, c.k, c.n)
			bias := randView(be, backends.Float32, 3, c.n)
			got, prod := allocView(be, backends.Float32, c.m, c.n), allocView(be, backends.Float32, c.m, c.n)
			be.Fill(got, float64(math.NaN()))
			be.MatmulBiasBF16(got, x, w, bias)
			be.MatmulBF16(prod, x, w)
			if err := be.Sync(); err != nil {
				t.Fatal(err)
			}
			g, p, bv := f32Values(got), f32Values(prod), f32Values(bias)
			for i := range c.m {
				for j := range c.n {
					if want := p[i*c.n+j] + bv[j]; math.Float32bits(g[i*c.n+j]) != math.Float32bits(want) {
						t.Fatalf("out[%d,%d] = %v, want %v (product %v + bias %v)", i, j, g[i*c.n+j], want, p[i*c.n+j], bv[j])
					}
				}
			}
		})
	}
	f32 := func(be *Backend, shape ...int) backends.View { return allocView(be, backends.Float32, shape...) }
	for _, c := range []struct {
		name  string
		views func(be *Backend) (out, x, w, bias backends.View)
	}{
		{"bias of the wrong length", func(be *Backend) (_, _, _, _ backends.View) {
			return f32(be, 3, 5), f32(be, 3, 4), f32(be, 4, 5), f32(be, 4)
		}},
		{"float64 operands", func(be *Backend) (_, _, _, _ backends.View) {
			return f32(be, 3, 5), allocView(be, backends.Float64, 3, 4), f32(be, 4, 5), f32(be, 5)
		}},
		{"bfloat16 output", func(be *Backend) (_, _, _, _ backends.View) {
			return allocView(be, backends.BFloat16, 3, 5), f32(be, 3, 4), f32(be, 4, 5), f32(be, 5)
		}},
		{"inner dimensions differ", func(be *Backend) (_, _, _, _ backends.View) {
			return f32(be, 3, 5), f32(be, 3, 4), f32(be, 3, 5), f32(be, 5)
		}},
		{"batched", func(be *Backend) (_, _, _, _ backends.View) {
			return f32(be, 2, 3, 5), f32(be, 2, 3, 4), f32(be, 2, 4, 5), f32(be, 5)
		}},
	} {
		be := New(1)
		out, x, w, bias := c.views(be)
		be.MatmulBiasBF16(out, x, w, bias)
		if err := be.Sync(); err == nil {
			t.Errorf("%s: no error", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}
