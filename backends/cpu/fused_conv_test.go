package cpu

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// naiveConv is the convolution written from its definition, in float64.
func naiveConv(x, w []float64, g backends.ConvGeometry, o int) []float64 {
	out := make([]float64, g.N*o*g.OutH*g.OutW)
	for n := range g.N {
		for oc := range o {
			for oh := range g.OutH {
				for ow := range g.OutW {
					s := 0.0
					for c := range g.C {
						for ki := range g.KH {
							for kj := range g.KW {
								h := oh*g.StrideH - g.PadTop + ki*g.DilationH
								v := ow*g.StrideW - g.PadLeft + kj*g.DilationW
								if h < 0 || h >= g.H || v < 0 || v >= g.W {
									continue
								}
								s += x[((n*g.C+c)*g.H+h)*g.W+v] * w[((oc*g.C+c)*g.KH+ki)*g.KW+kj]
							}
						}
					}
					out[((n*o+oc)*g.OutH+oh)*g.OutW+ow] = s
				}
			}
		}
	}
	return out
}

var fusedConvGeometries = []backends.ConvGeometry{
	{N: 19, C: 3, H: 9, W: 8, KH: 3, KW: 3, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, OutH: 7, OutW: 6},
	{N: 5, C: 2, H: 9, W: 9, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 5, OutW: 5},
	{N: 9, C: 2, H: 10, W: 9, KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadTop: 2, PadLeft: 0, DilationH: 2, DilationW: 3, OutH: 10, OutW: 3},
}

func TestFusedConvMatchesDefinition(t *testing.T) {
	for _, g := range fusedConvGeometries {
		be, o := New(2), 4
		x := randView(be, backends.Float64, 1, g.N, g.C, g.H, g.W)
		w := randView(be, backends.Float64, 2, o, g.C, g.KH, g.KW)
		out := allocView(be, backends.Float64, g.N, o, g.OutH, g.OutW)
		be.Conv2d(out, x, w, g)
		want := naiveConv(buf(x).f64(), buf(w).f64(), g, o)
		for i, v := range buf(out).f64() {
			if math.Abs(v-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("%+v: element %d = %v, want %v", g, i, v, want[i])
			}
		}
	}
}

// The gradients sum over the batch chunk by chunk; chunks depend only on
// the shapes, so any number of workers gives the same bits.
func TestFusedConvGradientsIndependentOfWorkers(t *testing.T) {
	for _, g := range fusedConvGeometries {
		o := 4
		run := func(workers int) (dx, dw []float32) {
			be := New(workers)
			x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
			w := randView(be, backends.Float32, 2, o, g.C, g.KH, g.KW)
			dy := randView(be, backends.Float32, 3, g.N, o, g.OutH, g.OutW)
			dxv := allocView(be, backends.Float32, g.N, g.C, g.H, g.W)
			dwv := allocView(be, backends.Float32, o, g.C, g.KH, g.KW)
			be.Conv2dInputGrad(dxv, dy, w, g)
			be.Conv2dWeightGrad(dwv, dy, x, g)
			return buf(dxv).f32(), buf(dwv).f32()
		}
		dx1, dw1 := run(1)
		for _, workers := range []int{2, 3} {
			dx, dw := run(workers)
			for i := range dx {
				if math.Float32bits(dx[i]) != math.Float32bits(dx1[i]) {
					t.Fatalf("%d workers: input gradient %d = %v, %v with one", workers, i, dx[i], dx1[i])
				}
			}
			for i := range dw {
				if math.Float32bits(dw[i]) != math.Float32bits(dw1[i]) {
					t.Fatalf("%d workers: weight gradient %d = %v, %v with one", workers, i, dw[i], dw1[i])
				}
			}
		}
	}
}
