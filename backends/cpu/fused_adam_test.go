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
