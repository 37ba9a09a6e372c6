package cpu

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// withConvTaps runs f with convTapsMode set to mode ("", "off" or "force").
func withConvTaps(t testing.TB, mode string, f func()) { withMode(&convTapsMode, mode, f) }

// withMode runs f with the test switch *sw set to mode, and restores it.
func withMode(sw *string, mode string, f func()) {
	old := *sw
	defer func() { *sw = old }()
	*sw = mode
	f()
}

// convTapsGeometries cover the tap path's cases: ResNet-18's small maps
// (same padding, stride 1 and 2, pointwise stride 2), odd sizes whose
// stride phases are uneven, dilation, asymmetric padding, taps that read
// only padding, and a 1×1 map.
var convTapsGeometries = []struct {
	name string
	g    backends.ConvGeometry
	o    int
}{
	{"2x2 same", backends.ConvGeometry{N: 7, C: 9, H: 2, W: 2, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, OutH: 2, OutW: 2}, 13},
	{"4x4 same", backends.ConvGeometry{N: 5, C: 8, H: 4, W: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, OutH: 4, OutW: 4}, 6},
	{"4x4 stride 2", backends.ConvGeometry{N: 6, C: 7, H: 4, W: 4, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, OutH: 2, OutW: 2}, 11},
	{"odd stride 2", backends.ConvGeometry{N: 3, C: 5, H: 7, W: 9, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, OutH: 4, OutW: 5}, 4},
	{"pointwise stride 2", backends.ConvGeometry{N: 5, C: 6, H: 5, W: 4, KH: 1, KW: 1, StrideH: 2, StrideW: 2, OutH: 3, OutW: 2}, 9},
	{"dilated, asymmetric, strides 1 and 2", backends.ConvGeometry{N: 4, C: 3, H: 9, W: 10, KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadTop: 2, PadLeft: 0, DilationH: 2, DilationW: 3, OutH: 9, OutW: 4}, 5},
	{"padding wider than the window's reach", backends.ConvGeometry{N: 2, C: 2, H: 4, W: 3, KH: 2, KW: 2, StrideH: 1, StrideW: 1, PadTop: 2, PadLeft: 3, OutH: 7, OutW: 8}, 3},
	{"1x1 map, 3x3 window", backends.ConvGeometry{N: 3, C: 4, H: 1, W: 1, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, OutH: 1, OutW: 1}, 5},
}

// The tap path's float32 output and gradients match the definition
// (float64) to within float32 rounding of the sums of |terms|.
func TestConvTapsMatchesDefinition(t *testing.T) {
	for _, tc := range convTapsGeometries {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g
			g.DilationH, g.DilationW = max(g.DilationH, 1), max(g.DilationW, 1)
			withConvDirect(t, "off", func() {
				withConvTaps(t, "force", func() { checkConvFloat32(t, g, tc.o) })
			})
		})
	}
}

// In float64 the tap path matches the definition to 1e-12.
func TestConvTapsFloat64MatchesDefinition(t *testing.T) {
	for _, tc := range convTapsGeometries {
		t.Run(tc.name, func(t *testing.T) {
			g, o := tc.g, tc.o
			g.DilationH, g.DilationW = max(g.DilationH, 1), max(g.DilationW, 1)
			be := New(2)
			x := randView(be, backends.Float64, 1, g.N, g.C, g.H, g.W)
			w := randView(be, backends.Float64, 2, o, g.C, g.KH, g.KW)
			dy := randView(be, backends.Float64, 3, g.N, o, g.OutH, g.OutW)
			out := allocView(be, backends.Float64, g.N, o, g.OutH, g.OutW)
			dx := allocView(be, backends.Float64, g.N, g.C, g.H, g.W)
			dw := allocView(be, backends.Float64, o, g.C, g.KH, g.KW)
			withConvTaps(t, "force", func() {
				be.Conv2d(out, x, w, g)
				be.Conv2dInputGrad(dx, dy, w, g)
				be.Conv2dWeightGrad(dw, dy, x, g)
			})
			wantDx, wantDw := naiveConvGrads(buf(x).f64(), buf(w).f64(), buf(dy).f64(), g, o)
			for _, c := range []struct {
				what      string
				got, want []float64
			}{
				{"output", buf(out).f64(), naiveConv(buf(x).f64(), buf(w).f64(), g, o)},
				{"input gradient", buf(dx).f64(), wantDx},
				{"weight gradient", buf(dw).f64(), wantDw},
			} {
				for i, v := range c.got {
					if math.Abs(v-c.want[i]) > 1e-12*math.Max(1, math.Abs(c.want[i])) {
						t.Fatalf("%s element %d = %v, want %v", c.what, i, v, c.want[i])
					}
				}
			}
		})
	}
}

// The tap path's sums run over taps, then channels, whatever the number of
// workers (which share pieces of columns): 1, 2 and 3 workers give the
// same bits.
func TestConvTapsIndependentOfWorkers(t *testing.T) {
	g := backends.ConvGeometry{N: 33, C: 70, H: 4, W: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1,
		DilationH: 1, DilationW: 1, OutH: 4, OutW: 4}
	o := 50
	withConvTaps(t, "force", func() {
		run := func(workers int) [][]float32 {
			be := New(workers)
			x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
			w := randView(be, backends.Float32, 2, o, g.C, g.KH, g.KW)
			dy := randView(be, backends.Float32, 3, g.N, o, g.OutH, g.OutW)
			out := allocView(be, backends.Float32, g.N, o, g.OutH, g.OutW)
			dx := allocView(be, backends.Float32, g.N, g.C, g.H, g.W)
			dw := allocView(be, backends.Float32, o, g.C, g.KH, g.KW)
			be.Conv2d(out, x, w, g)
			be.Conv2dInputGrad(dx, dy, w, g)
			be.Conv2dWeightGrad(dw, dy, x, g)
			return [][]float32{buf(out).f32(), buf(dx).f32(), buf(dw).f32()}
		}
		one := run(1)
		for _, workers := range []int{2, 3} {
			got := run(workers)
			for r, name := range []string{"output", "input gradient", "weight gradient"} {
				for i := range got[r] {
					if math.Float32bits(got[r][i]) != math.Float32bits(one[r][i]) {
						t.Fatalf("%d workers: %s element %d = %v, %v with one", workers, name, i, got[r][i], one[r][i])
					}
				}
			}
		}
	})
}

// On the machines that take it, the gradients of ResNet-18's stride-1
// 2×2 and 4×4 layers and the weight gradients of its 8×8 ones and of its
// strided layers onto 4×4 and 2×2 take the tap path; its strided layer onto
// 8×8, its 16×16 ones, pointwise ones, MNIST's valid convolutions and
// forward passes do not.
func TestConvTapsChoice(t *testing.T) {
	if !convDirectKernels {
		t.Skip("the tap path is chosen only on AVX2 machines without AVX-512")
	}
	for _, c := range []struct {
		h, k, stride, pad int
		input, weight     bool
	}{
		{2, 3, 1, 1, true, true}, {4, 3, 1, 1, true, true}, {4, 3, 2, 1, false, true}, {8, 3, 2, 1, false, true},
		{8, 3, 1, 1, false, true}, {16, 3, 2, 1, false, false}, {16, 3, 1, 1, false, false}, {13, 3, 1, 0, false, false},
		{4, 1, 2, 0, false, false},
	} {
		out := (c.h+2*c.pad-c.k)/c.stride + 1
		g := backends.ConvGeometry{N: 32, C: 64, H: c.h, W: c.h, KH: c.k, KW: c.k, StrideH: c.stride, StrideW: c.stride,
			PadTop: c.pad, PadLeft: c.pad, DilationH: 1, DilationW: 1, OutH: out, OutW: out}
		if useConvTaps(g, convForwardPass) {
			t.Errorf("%+v: the forward pass takes the tap path", c)
		}
		if got := useConvTaps(g, convInputPass); got != c.input {
			t.Errorf("%+v: input gradient on the tap path %v (use %.2f), want %v", c, got, convTapsUse(g), c.input)
		}
		if got := useConvTaps(g, convWeightPass); got != c.weight {
			t.Errorf("%+v: weight gradient on the tap path %v (use %.2f), want %v", c, got, convTapsUse(g), c.weight)
		}
	}
}
