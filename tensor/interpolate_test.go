package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func interpolate(cfg tensor.InterpolateConfig) nnFixtureFunc {
	return func(in nnIn) nnOut { return nnOut{"out": tensor.Interpolate(in.T("x"), cfg)} }
}

var nnInterpolateFixtures = map[string]nnFixtureFunc{
	"nearest size up":                 interpolate(tensor.InterpolateConfig{Size: []int{8, 7}}),
	"nearest scale 2":                 interpolate(tensor.InterpolateConfig{ScaleFactor: []float64{2}, Mode: "nearest"}),
	"nearest size down":               interpolate(tensor.InterpolateConfig{Size: []int{3, 5}}),
	"nearest scale factor 1.3":        interpolate(tensor.InterpolateConfig{ScaleFactor: []float64{1.3}}),
	"nearest scale factor recomputed": interpolate(tensor.InterpolateConfig{ScaleFactor: []float64{1.3}, RecomputeScaleFactor: true}),
	"nearest-exact size":              interpolate(tensor.InterpolateConfig{Size: []int{8, 3}, Mode: "nearest-exact"}),
	"bilinear up":                     interpolate(tensor.InterpolateConfig{Size: []int{7, 9}, Mode: "bilinear"}),
	"bilinear up align corners":       interpolate(tensor.InterpolateConfig{Size: []int{7, 9}, Mode: "bilinear", AlignCorners: true}),
	"bilinear down":                   interpolate(tensor.InterpolateConfig{Size: []int{4, 3}, Mode: "bilinear"}),
	"bilinear down align corners":     interpolate(tensor.InterpolateConfig{Size: []int{4, 1}, Mode: "bilinear", AlignCorners: true}),
	"bilinear scale factor":           interpolate(tensor.InterpolateConfig{ScaleFactor: []float64{1.7, 0.6}, Mode: "bilinear"}),
	"linear align corners":            interpolate(tensor.InterpolateConfig{Size: []int{10}, Mode: "linear", AlignCorners: true}),
	"nearest 1d":                      interpolate(tensor.InterpolateConfig{Size: []int{4}}),
}

func TestNNInterpolateFixtures(t *testing.T) { nnRunFixtures(t, nnInterpolateFixtures) }

func TestNNInterpolateGradients(t *testing.T) {
	interp := func(cfg tensor.InterpolateConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Interpolate(in[0], cfg) }
	}
	nnRunGradChecks(t, []nnGradCase{
		{"nearest up", interp(tensor.InterpolateConfig{Size: []int{5, 4}}), nnInputs(nnRand(1, 1, 2, 3, 3))},
		{"nearest down scale", interp(tensor.InterpolateConfig{ScaleFactor: []float64{0.5, 0.7}}), nnInputs(nnRand(2, 1, 1, 5, 6))},
		{"nearest-exact", interp(tensor.InterpolateConfig{Size: []int{4, 2}, Mode: "nearest-exact"}), nnInputs(nnRand(3, 1, 2, 3, 5))},
		{"bilinear up", interp(tensor.InterpolateConfig{Size: []int{5, 4}, Mode: "bilinear"}), nnInputs(nnRand(4, 2, 1, 3, 3))},
		{"bilinear align corners down", interp(tensor.InterpolateConfig{Size: []int{3, 2}, Mode: "bilinear", AlignCorners: true}),
			nnInputs(nnRand(5, 1, 2, 5, 4))},
		{"bilinear permuted input", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Interpolate(in[0].Permute(0, 3, 1, 2), tensor.InterpolateConfig{ScaleFactor: []float64{1.5}, Mode: "bilinear"})
		}, nnInputs(nnRand(6, 1, 3, 2, 2))},
		{"linear", interp(tensor.InterpolateConfig{Size: []int{7}, Mode: "linear"}), nnInputs(nnRand(7, 2, 2, 4))},
	})
}

func TestNNInterpolateBadInputs(t *testing.T) {
	x := func(d tensor.Device) *tensor.Tensor { return tensor.Zeros(d, 1, 2, 4, 4) }
	nnRunBadInputs(t, []nnBadCase{
		{"no size", func(d tensor.Device) { tensor.Interpolate(x(d), tensor.InterpolateConfig{}) },
			tensor.ErrArgument, "tensor.Interpolate: give Size or ScaleFactor"},
		{"size and scale", func(d tensor.Device) {
			tensor.Interpolate(x(d), tensor.InterpolateConfig{Size: []int{2}, ScaleFactor: []float64{2}})
		}, tensor.ErrArgument, "not both"},
		{"unknown mode", func(d tensor.Device) {
			tensor.Interpolate(x(d), tensor.InterpolateConfig{Size: []int{2}, Mode: "area"})
		}, tensor.ErrArgument, "unknown mode \"area\""},
		{"bilinear on 3-D input", func(d tensor.Device) {
			tensor.Interpolate(tensor.Zeros(d, 1, 2, 4), tensor.InterpolateConfig{Size: []int{2}, Mode: "bilinear"})
		}, tensor.ErrArgument, "mode \"bilinear\" needs a 4-D input, got [1 2 4]"},
		{"align corners with nearest", func(d tensor.Device) {
			tensor.Interpolate(x(d), tensor.InterpolateConfig{Size: []int{2}, AlignCorners: true})
		}, tensor.ErrArgument, "AlignCorners only applies to linear modes"},
		{"rank 2", func(d tensor.Device) {
			tensor.Interpolate(tensor.Zeros(d, 4, 4), tensor.InterpolateConfig{Size: []int{2}})
		},
			tensor.ErrShape, "input [4 4] must be [N, C, L] or [N, C, H, W]"},
		{"three sizes", func(d tensor.Device) { tensor.Interpolate(x(d), tensor.InterpolateConfig{Size: []int{2, 2, 2}}) },
			tensor.ErrArgument, "Size [2 2 2]: want 1 or 2 values for input [1 2 4 4]"},
		{"zero size", func(d tensor.Device) { tensor.Interpolate(x(d), tensor.InterpolateConfig{Size: []int{0, 2}}) },
			tensor.ErrArgument, "sizes must be positive"},
		{"negative scale", func(d tensor.Device) { tensor.Interpolate(x(d), tensor.InterpolateConfig{ScaleFactor: []float64{-1}}) },
			tensor.ErrArgument, "factors must be positive"},
		{"scale to nothing", func(d tensor.Device) { tensor.Interpolate(x(d), tensor.InterpolateConfig{ScaleFactor: []float64{0.1}}) },
			tensor.ErrArgument, "gives an empty output"},
		{"integer input", func(d tensor.Device) {
			tensor.Interpolate(tensor.ZerosOf(d, tensor.Int64, 1, 1, 2, 2), tensor.InterpolateConfig{Size: []int{4}})
		}, tensor.ErrDType, "int64"},
	})
}
