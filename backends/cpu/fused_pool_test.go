package cpu

import (
	"math"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// maxPoolReference pools one plane from the definition: each window's
// elements inside the plane in (ky, kx) order, the first NaN or else the
// first of equal maxima, −Inf at index 0 for a window wholly in the
// padding.
func maxPoolReference(dst []float32, di []int64, src []float32, g backends.ConvGeometry) {
	for oy := range g.OutH {
		for ox := range g.OutW {
			best, at := float32(math.Inf(-1)), -1
		window:
			for ky := range g.KH {
				for kx := range g.KW {
					y, x := oy*g.StrideH-g.PadTop+ky*g.DilationH, ox*g.StrideW-g.PadLeft+kx*g.DilationW
					if y < 0 || y >= g.H || x < 0 || x >= g.W {
						continue
					}
					v := src[y*g.W+x]
					switch {
					case v != v:
						best, at = v, y*g.W+x
						break window
					case at < 0 || v > best:
						best, at = v, y*g.W+x
					}
				}
			}
			dst[oy*g.OutW+ox], di[oy*g.OutW+ox] = best, int64(max(at, 0))
		}
	}
}

// maxPoolPlane and maxPoolPlaneF32 match the definition, values and
// indices, on ResNet-18's
// 3×3 stride-2 pooling, dilated and asymmetric windows, padding wider than
// the window's reach, and planes with ties, NaNs and infinities.
func TestMaxPoolPlaneMatchesDefinition(t *testing.T) {
	for _, g := range []backends.ConvGeometry{
		{H: 32, W: 32, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 16, OutW: 16},
		{H: 9, W: 7, KH: 2, KW: 3, StrideH: 1, StrideW: 2, PadTop: 1, PadLeft: 0, DilationH: 2, DilationW: 2, OutH: 9, OutW: 2},
		{H: 3, W: 4, KH: 2, KW: 2, StrideH: 3, StrideW: 3, PadTop: 3, PadLeft: 4, DilationH: 1, DilationW: 1, OutH: 3, OutW: 4},
		{H: 5, W: 5, KH: 5, KW: 5, StrideH: 1, StrideW: 1, PadTop: 2, PadLeft: 2, DilationH: 1, DilationW: 1, OutH: 5, OutW: 5},
	} {
		src := make([]float32, g.H*g.W)
		for i := range src {
			src[i] = float32((i*7919)%13) - 6 // repeats: ties
		}
		src[len(src)/3] = float32(math.NaN())
		src[len(src)/2] = float32(math.Inf(1))
		src[len(src)/4] = float32(math.Copysign(0, -1)) // ties with +0
		n := g.OutH * g.OutW
		got, want := make([]float32, n), make([]float32, n)
		gi, wi := make([]int64, n), make([]int64, n)
		maxPoolReference(want, wi, src, g)
		for name, pool := range map[string]func([]float32, []int64, []float32, backends.ConvGeometry){
			"maxPoolPlane": maxPoolPlane[float32], "maxPoolPlaneF32": maxPoolPlaneF32} {
			pool(got, gi, src, g)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || gi[i] != wi[i] {
					t.Fatalf("%s %+v: output %d = %v at %d, want %v at %d", name, g, i, got[i], gi[i], want[i], wi[i])
				}
			}
		}
	}
}

// BenchmarkMaxPool3x3 pools ResNet-18's stem activations (32×64 planes of
// 32×32, 3×3 windows, stride 2, padding 1) with the vector kernel
// (vecMaxPool3x3s2, where the CPU has it), maxPoolPlaneF32 and
// maxPoolPlane, in turn, reporting the best ms of each.
func BenchmarkMaxPool3x3(b *testing.B) {
	be := New(1)
	g := backends.ConvGeometry{N: 32, C: 64, H: 32, W: 32, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1,
		DilationH: 1, DilationW: 1, OutH: 16, OutW: 16}
	x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
	out := allocView(be, backends.Float32, g.N, g.C, g.OutH, g.OutW)
	idx := allocView(be, backends.Int64, g.N, g.C, g.OutH, g.OutW)
	defer func() { maxPoolClipped, maxPoolVector = true, true }()
	best := [3]time.Duration{time.Hour, time.Hour, time.Hour}
	for i := 0; b.Loop(); i++ {
		for j := range 3 {
			w := (i + j) % 3
			maxPoolClipped, maxPoolVector = w < 2, w == 0
			t0 := time.Now()
			be.MaxPool2d(out, idx, x, g)
			best[w] = min(best[w], time.Since(t0))
		}
	}
	b.ReportMetric(float64(best[0])/1e6, "vector-ms")
	b.ReportMetric(float64(best[1])/1e6, "clipped-ms")
	b.ReportMetric(float64(best[2])/1e6, "plane-ms")
}
