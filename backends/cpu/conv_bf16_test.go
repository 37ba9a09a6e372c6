package cpu

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// bf16Round64 returns v's elements rounded to bfloat16, as float64.
func bf16Round64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(backends.BFloat16ToFloat32(backends.Float32ToBFloat16(x)))
	}
	return out
}

// TestConvBF16MatchesDefinition runs the three bfloat16 autocast
// convolutions on the bfloat16 GEMM path (convBF16Force), on one and two
// workers, and compares them with the definition in float64 applied to the
// operands rounded to bfloat16: each element within 1e-6 of 1 + the sum of
// its terms' magnitudes (float32 sums of exact products). They must also
// differ from the float32 kernels' results, which the rounding changes by
// far more (~2⁻⁹ relative), and the two worker counts must agree bit for
// bit.
func TestConvBF16MatchesDefinition(t *testing.T) {
	cases := []struct {
		name string
		g    backends.ConvGeometry
		o    int
	}{
		{"3x3 same", backends.ConvGeometry{N: 9, C: 12, H: 7, W: 7, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, OutH: 7, OutW: 7}, 20},
		{"3x3 stride 2", backends.ConvGeometry{N: 5, C: 6, H: 9, W: 8, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, OutH: 5, OutW: 4}, 7},
		{"1x1 stride 2", backends.ConvGeometry{N: 7, C: 16, H: 6, W: 6, KH: 1, KW: 1, StrideH: 2, StrideW: 2, OutH: 3, OutW: 3}, 33},
		{"valid", backends.ConvGeometry{N: 4, C: 3, H: 10, W: 11, KH: 3, KW: 3, StrideH: 1, StrideW: 1, OutH: 8, OutW: 9}, 5},
		{"deep, few positions", backends.ConvGeometry{N: 40, C: 64, H: 2, W: 2, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, OutH: 2, OutW: 2}, 70},
	}
	defer func(v bool) { convBF16Force = v }(convBF16Force)
	convBF16Force = true
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, o := tc.g, tc.o
			g.DilationH, g.DilationW = 1, 1
			var first [][]float32
			for _, workers := range []int{1, 2} {
				be := New(workers)
				x, w, got := checkConvPasses(t, be, g, o, bf16Round64, func(be *Backend, out, dx, dw, x, w, dy backends.View) {
					be.Conv2dBF16(out, x, w, g)
					be.Conv2dInputGradBF16(dx, dy, w, g)
					be.Conv2dWeightGradBF16(dw, dy, x, g)
				})
				out32 := allocView(be, backends.Float32, g.N, o, g.OutH, g.OutW)
				be.Conv2d(out32, x, w, g)
				if err := be.Sync(); err != nil {
					t.Fatal(err)
				}
				differ := 0
				for i, v := range buf(out32).f32() {
					if v != got[0][i] {
						differ++
					}
				}
				if differ < len(got[0])/2 {
					t.Errorf("%d workers: only %d of %d outputs differ from the float32 convolution's", workers, differ, len(got[0]))
				}
				if first == nil {
					first = got
					continue
				}
				for r := range got {
					for i := range got[r] {
						if math.Float32bits(got[r][i]) != math.Float32bits(first[r][i]) {
							t.Fatalf("result %d element %d: %v on 2 workers, %v on 1", r, i, got[r][i], first[r][i])
						}
					}
				}
			}
		})
	}
}

// TestConvBF16Choice checks that the bfloat16 methods are the float32
// kernels, bit for bit, where convBF16Pays is false (here: a layer with
// 16 input channels), and that Float64 views go to the float64 kernels.
func TestConvBF16Choice(t *testing.T) {
	g := backends.ConvGeometry{N: 8, C: 16, H: 6, W: 6, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1,
		DilationH: 1, DilationW: 1, OutH: 6, OutW: 6}
	o := 32
	if convBF16Pays(g, o) {
		t.Fatal("a layer with 16 input channels takes the bfloat16 path")
	}
	for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
		be := New(2)
		x := randView(be, dt, 1, g.N, g.C, g.H, g.W)
		w := randView(be, dt, 2, o, g.C, g.KH, g.KW)
		dy := randView(be, dt, 3, g.N, o, g.OutH, g.OutW)
		views := func() []backends.View {
			return []backends.View{allocView(be, dt, g.N, o, g.OutH, g.OutW), allocView(be, dt, g.N, g.C, g.H, g.W), allocView(be, dt, o, g.C, g.KH, g.KW)}
		}
		a, b := views(), views()
		be.Conv2dBF16(a[0], x, w, g)
		be.Conv2dInputGradBF16(a[1], dy, w, g)
		be.Conv2dWeightGradBF16(a[2], dy, x, g)
		be.Conv2d(b[0], x, w, g)
		be.Conv2dInputGrad(b[1], dy, w, g)
		be.Conv2dWeightGrad(b[2], dy, x, g)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			for j := range buf(a[i]).n {
				if refLoad(buf(a[i]), j) != refLoad(buf(b[i]), j) {
					t.Fatalf("%s result %d element %d differs from the float32 kernels'", dt, i, j)
				}
			}
		}
	}
}
