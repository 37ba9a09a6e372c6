package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func gridSampleCase(cfg tensor.GridSampleConfig) signalFunc {
	return func(in map[string]*tensor.Tensor) *tensor.Tensor { return tensor.GridSample(in["x"], in["grid"], cfg) }
}

func signalGridFixtures() map[string]signalFunc {
	table := map[string]signalFunc{
		"grid_sample bilinear far outside": gridSampleCase(tensor.GridSampleConfig{PaddingMode: "reflection"}),
		"grid_sample size one input":       gridSampleCase(tensor.GridSampleConfig{PaddingMode: "border", AlignCorners: true}),
		"affine_grid": func(in map[string]*tensor.Tensor) *tensor.Tensor {
			return tensor.AffineGrid(in["theta"], []int{2, 3, 4, 5}, false)
		},
		"affine_grid align": func(in map[string]*tensor.Tensor) *tensor.Tensor {
			return tensor.AffineGrid(in["theta"], []int{2, 3, 4, 5}, true)
		},
		"affine_grid then grid_sample": func(in map[string]*tensor.Tensor) *tensor.Tensor {
			return tensor.GridSample(in["x"], tensor.AffineGrid(in["theta"], []int{2, 3, 6, 4}, false), tensor.GridSampleConfig{})
		},
	}
	for _, mode := range []string{"bilinear", "nearest", "bicubic"} {
		for _, padding := range []string{"zeros", "border", "reflection"} {
			for _, align := range []bool{false, true} {
				name := "grid_sample " + mode + " " + padding
				if align {
					name += " align"
				}
				table[name] = gridSampleCase(tensor.GridSampleConfig{Mode: mode, PaddingMode: padding, AlignCorners: align})
			}
		}
	}
	return table
}

func TestGridSampleFixtures(t *testing.T) { signalRunFixtures(t, signalGridFixtures()) }

// TestSignalFixturesAllUsed checks that every case of signal.json is
// exercised by some test.
func TestSignalFixturesAllUsed(t *testing.T) {
	used := map[string]bool{}
	for _, table := range []map[string]signalFunc{signalFFTFixtures(), signalSTFTFixtures, signalGridFixtures()} {
		for name := range table {
			used[name] = true
		}
	}
	for name := range loadFixtures(t, "signal.json") {
		if !used[name] {
			t.Errorf("fixture case %q is not checked by any test", name)
		}
	}
}

func TestGridSampleGradients(t *testing.T) {
	if raceEnabled {
		t.Skip("finite differences: the plain run checks them (see race_test.go)")
	}
	grid := func(seed uint64, shape ...int) func(dev tensor.Device) *tensor.Tensor {
		return func(dev tensor.Device) *tensor.Tensor { return randFloat64(dev, seed, -1.2, 1.2, shape...) }
	}
	gs := func(cfg tensor.GridSampleConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return tensor.GridSample(in[0], in[1], cfg) }
	}
	runGradCases(t, []gradCase{
		{"bilinear zeros", gs(tensor.GridSampleConfig{}), nnInputs(nnRand(1, 2, 2, 4, 3), grid(2, 2, 3, 2, 2))},
		{"bilinear border align", gs(tensor.GridSampleConfig{PaddingMode: "border", AlignCorners: true}),
			nnInputs(nnRand(3, 1, 2, 3, 4), grid(4, 1, 2, 3, 2))},
		{"bilinear reflection", gs(tensor.GridSampleConfig{PaddingMode: "reflection"}),
			nnInputs(nnRand(5, 1, 1, 4, 4), grid(6, 1, 3, 3, 2))},
		{"bicubic zeros", gs(tensor.GridSampleConfig{Mode: "bicubic"}), nnInputs(nnRand(7, 1, 2, 4, 5), grid(8, 1, 2, 2, 2))},
		{"bicubic reflection align", gs(tensor.GridSampleConfig{Mode: "bicubic", PaddingMode: "reflection", AlignCorners: true}),
			nnInputs(nnRand(9, 1, 1, 4, 4), grid(10, 1, 2, 3, 2))},
		{"nearest input only", func(in []*tensor.Tensor) *tensor.Tensor {
			g := randFloat64(in[0].Device().Inner(), 12, -1.2, 1.2, 1, 3, 2, 2)
			return tensor.GridSample(in[0], g, tensor.GridSampleConfig{Mode: "nearest"})
		}, nnInputs(nnRand(11, 1, 2, 3, 3))},
		{"permuted input", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.GridSample(in[0].Permute(0, 3, 1, 2), in[1], tensor.GridSampleConfig{})
		}, nnInputs(nnRand(13, 1, 3, 4, 2), grid(14, 1, 2, 2, 2))},
		{"affine grid", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.AffineGrid(in[0], []int{2, 1, 3, 4}, false)
		}, nnInputs(nnRand(15, 2, 2, 3))},
	})
}

func TestGridSampleBadInputs(t *testing.T) {
	x := func(d tensor.Device) *tensor.Tensor { return tensor.Zeros(d, 2, 3, 4, 4) }
	g := func(d tensor.Device) *tensor.Tensor { return tensor.Zeros(d, 2, 5, 5, 2) }
	nnRunBadInputs(t, []nnBadCase{
		{"volume", func(d tensor.Device) {
			tensor.GridSample(tensor.Zeros(d, 1, 1, 2, 2, 2), g(d), tensor.GridSampleConfig{})
		},
			tensor.ErrShape, "tensor.GridSample: input [1 1 2 2 2] must be [N, C, H, W]"},
		{"grid batch", func(d tensor.Device) { tensor.GridSample(x(d), tensor.Zeros(d, 1, 5, 5, 2), tensor.GridSampleConfig{}) },
			tensor.ErrShape, "grid [1 5 5 2] must be [N, Ho, Wo, 2] with the input's N = 2"},
		{"dtype", func(d tensor.Device) {
			tensor.GridSample(x(d), g(d).To(tensor.Float64), tensor.GridSampleConfig{})
		}, tensor.ErrDType, "must share one floating-point dtype"},
		{"mode", func(d tensor.Device) { tensor.GridSample(x(d), g(d), tensor.GridSampleConfig{Mode: "area"}) },
			tensor.ErrArgument, "unknown mode \"area\""},
		{"padding", func(d tensor.Device) { tensor.GridSample(x(d), g(d), tensor.GridSampleConfig{PaddingMode: "wrap"}) },
			tensor.ErrArgument, "unknown padding mode \"wrap\""},
		{"theta shape", func(d tensor.Device) { tensor.AffineGrid(tensor.Zeros(d, 2, 3, 3), []int{2, 1, 4, 4}, false) },
			tensor.ErrShape, "tensor.AffineGrid: theta [2 3 3] must be [N, 2, 3]"},
		{"affine size", func(d tensor.Device) { tensor.AffineGrid(tensor.Zeros(d, 2, 2, 3), []int{3, 1, 4, 4}, false) },
			tensor.ErrShape, "size [3 1 4 4]"},
	})
}

// BenchmarkGridSample times a bilinear GridSample of a [8, 16, 64, 64]
// Float32 input on a 64×64 grid, forward and backward (gradients for the
// input and the grid).
func BenchmarkGridSample(b *testing.B) {
	dev := tensor.CPU().Autodiff()
	tensor.Scope(func() {
		x := tensor.Randn(dev, 8, 16, 64, 64).RequireGrad()
		g := tensor.Rand(dev, 8, 64, 64, 2).MulScalar(2.2).SubScalar(1.1).Detach().RequireGrad()
		for b.Loop() {
			tensor.Scope(func() {
				grads := tensor.GridSample(x, g, tensor.GridSampleConfig{}).Sum().Backward()
				if err := dev.Sync(); err != nil {
					b.Fatal(err)
				}
				grads.Release()
			})
		}
	})
	b.ReportMetric(8*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
