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

// naiveConvGrads returns the convolution's input and weight gradients for
// output gradient dy, written from the definition in float64.
func naiveConvGrads(x, w, dy []float64, g backends.ConvGeometry, o int) (dx, dw []float64) {
	dx, dw = make([]float64, len(x)), make([]float64, len(w))
	for n := range g.N {
		for oc := range o {
			for oh := range g.OutH {
				for ow := range g.OutW {
					d := dy[((n*o+oc)*g.OutH+oh)*g.OutW+ow]
					for c := range g.C {
						for ki := range g.KH {
							for kj := range g.KW {
								h := oh*g.StrideH - g.PadTop + ki*g.DilationH
								v := ow*g.StrideW - g.PadLeft + kj*g.DilationW
								if h < 0 || h >= g.H || v < 0 || v >= g.W {
									continue
								}
								xi, wi := ((n*g.C+c)*g.H+h)*g.W+v, ((oc*g.C+c)*g.KH+ki)*g.KW+kj
								dx[xi] += d * w[wi]
								dw[wi] += d * x[xi]
							}
						}
					}
				}
			}
		}
	}
	return dx, dw
}

// The batch is cut into chunks by how many positions a sample has: few
// (a deep layer) take the whole batch in one parallel GEMM, many take a
// sample or a few per chunk. Both cuts give the definition's values.
func TestFusedConvChunkPlansMatchDefinition(t *testing.T) {
	geometries := []struct {
		name string
		g    backends.ConvGeometry
		o    int
	}{
		{"deep layer, whole batch", backends.ConvGeometry{N: 16, C: 8, H: 4, W: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 4, OutW: 4}, 12},
		{"one position per sample, three big chunks", backends.ConvGeometry{N: 2100, C: 2, H: 2, W: 2, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 1, OutW: 1}, 3},
		{"pointwise strided", backends.ConvGeometry{N: 9, C: 6, H: 6, W: 6, KH: 1, KW: 1, StrideH: 2, StrideW: 2, DilationH: 1, DilationW: 1, OutH: 3, OutW: 3}, 5},
		{"wide image, a sample per chunk", backends.ConvGeometry{N: 3, C: 2, H: 34, W: 34, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 34, OutW: 34}, 3},
		{"valid, whole batch", backends.ConvGeometry{N: 6, C: 3, H: 5, W: 5, KH: 3, KW: 3, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, OutH: 3, OutW: 3}, 4},
	}
	for _, tc := range geometries {
		t.Run(tc.name, func(t *testing.T) {
			g, o := tc.g, tc.o
			for _, workers := range []int{1, 2} {
				be := New(workers)
				x := randView(be, backends.Float64, 1, g.N, g.C, g.H, g.W)
				w := randView(be, backends.Float64, 2, o, g.C, g.KH, g.KW)
				dy := randView(be, backends.Float64, 3, g.N, o, g.OutH, g.OutW)
				out := allocView(be, backends.Float64, g.N, o, g.OutH, g.OutW)
				dx := allocView(be, backends.Float64, g.N, g.C, g.H, g.W)
				dw := allocView(be, backends.Float64, o, g.C, g.KH, g.KW)
				be.Conv2d(out, x, w, g)
				be.Conv2dInputGrad(dx, dy, w, g)
				be.Conv2dWeightGrad(dw, dy, x, g)
				if err := be.Sync(); err != nil {
					t.Fatal(err)
				}
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
						if math.Abs(v-c.want[i]) > 1e-11*math.Max(1, math.Abs(c.want[i])) {
							t.Fatalf("%d workers: %s element %d = %v, want %v", workers, c.what, i, v, c.want[i])
						}
					}
				}
			}
		})
	}
}

// unfoldGeometries are the shapes the unfold/fold tests run: unstrided
// "same" convolutions (the shortcuts), a window larger than the image,
// dilation, uneven padding and a stride.
var unfoldGeometries = []backends.ConvGeometry{
	{N: 3, C: 5, H: 4, W: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 4, OutW: 4},
	{N: 3, C: 2, H: 2, W: 2, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 2, OutW: 2},
	{N: 2, C: 2, H: 1, W: 1, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 1, OutW: 1},
	{N: 2, C: 3, H: 7, W: 5, KH: 5, KW: 3, StrideH: 1, StrideW: 1, PadTop: 2, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 7, OutW: 5},
	{N: 2, C: 3, H: 9, W: 6, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadTop: 2, PadLeft: 2, DilationH: 2, DilationW: 2, OutH: 9, OutW: 6},
	{N: 2, C: 3, H: 9, W: 6, KH: 2, KW: 2, StrideH: 1, StrideW: 1, PadTop: 0, PadLeft: 1, DilationH: 1, DilationW: 3, OutH: 8, OutW: 6},
	{N: 2, C: 2, H: 9, W: 9, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: 1, PadLeft: 1, DilationH: 1, DilationW: 1, OutH: 5, OutW: 5},
}

// The fused kernels' unfolding (with its shortcut for unstrided "same"
// convolutions, one copy per plane) lays out the windows Im2Col unfolds,
// with the samples side by side.
func TestUnfoldChannelsMatchesIm2Col(t *testing.T) {
	for _, g := range unfoldGeometries {
		be := New(1)
		x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
		ck, l := g.C*g.KH*g.KW, g.OutH*g.OutW
		cols := allocView(be, backends.Float32, g.N, ck, l)
		be.Im2Col(cols, x, g)
		got := make([]float32, ck*g.N*l)
		for i := range got {
			got[i] = float32(math.NaN()) // every element must be written
		}
		unfoldChannels(got, buf(x).f32(), g, 0, g.N, 0, g.C)
		want := buf(cols).f32()
		for r := range ck {
			for n := range g.N {
				for p := range l {
					if v, w := got[r*g.N*l+n*l+p], want[(n*ck+r)*l+p]; math.Float32bits(v) != math.Float32bits(w) {
						t.Fatalf("%+v: row %d, sample %d, position %d = %v, Im2Col gives %v", g, r, n, p, v, w)
					}
				}
			}
		}
	}
}

// foldChannels (with its shortcut for unstrided "same" convolutions, one run
// per plane) is unfoldChannels' adjoint: ⟨unfold(x), cols⟩ = ⟨x, fold(cols)⟩
// for random x and cols, and it overwrites its samples.
func TestFoldChunkIsUnfoldsAdjoint(t *testing.T) {
	for _, g := range unfoldGeometries {
		be := New(1)
		ck, l := g.C*g.KH*g.KW, g.OutH*g.OutW
		x := buf(randView(be, backends.Float64, 1, g.N, g.C, g.H, g.W)).f64()
		cols := buf(randView(be, backends.Float64, 2, ck, g.N*l)).f64()
		unfolded := make([]float64, ck*g.N*l)
		unfoldChannels(unfolded, x, g, 0, g.N, 0, g.C)
		var lhs float64
		for i, v := range unfolded {
			lhs += v * cols[i]
		}
		folded := make([]float64, len(x))
		for i := range folded {
			folded[i] = math.NaN() // every element must be written
		}
		foldChannels(folded, cols, g, 0, g.N, 0, g.C)
		var rhs float64
		for i, v := range folded {
			rhs += v * x[i]
		}
		if math.Abs(lhs-rhs) > 1e-12*float64(len(unfolded)) || math.IsNaN(rhs) {
			t.Fatalf("%+v: ⟨unfold(x), cols⟩ = %v, ⟨x, fold(cols)⟩ = %v", g, lhs, rhs)
		}
	}
}
