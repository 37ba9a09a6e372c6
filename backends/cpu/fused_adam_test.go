package cpu

import (
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// BenchmarkAdamStep235K updates as many float32 parameters as the MNIST
// MLP has, reporting the bytes moved per second (7 arrays of 4 bytes per
// parameter: p, g, m, v read; p, m, v written).
func BenchmarkAdamStep235K(b *testing.B) {
	be := New(0)
	n := 235146
	p, g := randView(be, backends.Float32, 1, n), randView(be, backends.Float32, 2, n)
	m, v := randView(be, backends.Float32, 3, n), randView(be, backends.Float32, 4, n)
	be.Unary(backends.Abs, v, v, 0, 0)
	op, om, ov := allocView(be, backends.Float32, n), allocView(be, backends.Float32, n), allocView(be, backends.Float32, n)
	h := backends.AdamHyper{Decay: 1 - 1e-5, Beta1: 0.9, Beta2: 0.999, InvDenom: -1000, EpsTerm: -1e-5, MovesParam: true}
	b.ResetTimer()
	for range b.N {
		be.AdamStep(op, om, ov, p, g, m, v, h)
	}
	b.ReportMetric(float64(7*4*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkMaxPool2x2 pools the MNIST CNN's first activations (128×16
// planes of 26×26, 2×2 windows, stride 2), reporting input bytes read per
// second.
func BenchmarkMaxPool2x2(b *testing.B) {
	be := New(0)
	g := backends.ConvGeometry{N: 128, C: 16, H: 26, W: 26, KH: 2, KW: 2, StrideH: 2, StrideW: 2,
		DilationH: 1, DilationW: 1, OutH: 13, OutW: 13}
	x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
	out := allocView(be, backends.Float32, g.N, g.C, g.OutH, g.OutW)
	idx := allocView(be, backends.Int64, g.N, g.C, g.OutH, g.OutW)
	b.ResetTimer()
	for range b.N {
		be.MaxPool2d(out, idx, x, g)
	}
	b.ReportMetric(float64(4*g.N*g.C*g.H*g.W)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}
