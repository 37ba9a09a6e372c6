package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func maxPool2d(cfg tensor.PoolConfig) nnFixtureFunc {
	return func(in nnIn) nnOut {
		v, i := tensor.MaxPool2d(in.T("x"), cfg)
		return nnOut{"out": v, "indices": i}
	}
}

func avgPool2d(cfg tensor.AvgPoolConfig) nnFixtureFunc {
	return func(in nnIn) nnOut { return nnOut{"out": tensor.AvgPool2d(in.T("x"), cfg)} }
}

func adaptive2d(h, w int) nnFixtureFunc {
	return func(in nnIn) nnOut { return nnOut{"out": tensor.AdaptiveAvgPool2d(in.T("x"), h, w)} }
}

var nnPoolFixtures = map[string]nnFixtureFunc{
	"max_pool2d basic":             maxPool2d(tensor.PoolConfig{Kernel: []int{2}}),
	"max_pool2d stride padding":    maxPool2d(tensor.PoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}}),
	"max_pool2d ceil mode":         maxPool2d(tensor.PoolConfig{Kernel: []int{3}, Stride: []int{2}, CeilMode: true}),
	"max_pool2d ceil mode padding": maxPool2d(tensor.PoolConfig{Kernel: []int{2}, Stride: []int{2}, Padding: []int{1}, CeilMode: true}),
	"max_pool2d dilation":          maxPool2d(tensor.PoolConfig{Kernel: []int{2}, Stride: []int{1}, Dilation: []int{2, 3}}),
	"max_pool2d rectangular":       maxPool2d(tensor.PoolConfig{Kernel: []int{2, 3}, Stride: []int{1, 2}, Padding: []int{1, 1}}),
	"max_pool2d unbatched":         maxPool2d(tensor.PoolConfig{Kernel: []int{3}, Stride: []int{2}}),
	"max_pool1d": func(in nnIn) nnOut {
		v, i := tensor.MaxPool1d(in.T("x"), tensor.PoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}, CeilMode: true})
		return nnOut{"out": v, "indices": i}
	},
	"avg_pool2d basic":                  avgPool2d(tensor.AvgPoolConfig{Kernel: []int{2}}),
	"avg_pool2d padding counts pad":     avgPool2d(tensor.AvgPoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}}),
	"avg_pool2d padding excludes pad":   avgPool2d(tensor.AvgPoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}, ExcludePad: true}),
	"avg_pool2d ceil mode counts pad":   avgPool2d(tensor.AvgPoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}, CeilMode: true}),
	"avg_pool2d ceil mode excludes pad": avgPool2d(tensor.AvgPoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}, CeilMode: true, ExcludePad: true}),
	"avg_pool2d divisor override":       avgPool2d(tensor.AvgPoolConfig{Kernel: []int{2, 3}, Stride: []int{2, 1}, DivisorOverride: 4}),
	"avg_pool1d": func(in nnIn) nnOut {
		return nnOut{"out": tensor.AvgPool1d(in.T("x"), tensor.AvgPoolConfig{Kernel: []int{4}, Stride: []int{3}, Padding: []int{2}, CeilMode: true})}
	},
	"adaptive_avg_pool2d non divisible": adaptive2d(3, 2),
	"adaptive_avg_pool2d larger output": adaptive2d(7, 3),
	"adaptive_avg_pool2d global":        adaptive2d(1, 1),
	"adaptive_avg_pool1d": func(in nnIn) nnOut {
		return nnOut{"out": tensor.AdaptiveAvgPool1d(in.T("x"), 4)}
	},
}

func TestNNPoolFixtures(t *testing.T) { nnRunFixtures(t, nnPoolFixtures) }

// nnDistinct returns a Float64 tensor of distinct values spaced 0.1 apart
// in a scrambled order, so that max pooling has no ties and finite
// differences (step 1e-6) never change which element is the maximum.
func nnDistinct(seed uint64, shape ...int) func(dev tensor.Device) *tensor.Tensor {
	return func(dev tensor.Device) *tensor.Tensor {
		n := 1
		for _, s := range shape {
			n *= s
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = float64((i*7919+int(seed)*104729)%n)/10 - float64(n)/20
		}
		return tensor.FromFloat64s(dev, v, shape...).Reshape(shape...)
	}
}

func TestNNPoolGradients(t *testing.T) {
	maxp := func(cfg tensor.PoolConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { v, _ := tensor.MaxPool2d(in[0], cfg); return v }
	}
	avgp := func(cfg tensor.AvgPoolConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return tensor.AvgPool2d(in[0], cfg) }
	}
	nnRunGradChecks(t, []nnGradCase{
		{"max_pool2d overlapping windows", maxp(tensor.PoolConfig{Kernel: []int{3}, Stride: []int{1}}), nnInputs(nnDistinct(1, 2, 2, 4, 4))},
		{"max_pool2d padding ceil", maxp(tensor.PoolConfig{Kernel: []int{2}, Stride: []int{2}, Padding: []int{1}, CeilMode: true}),
			nnInputs(nnDistinct(2, 1, 2, 5, 4))},
		{"max_pool2d dilation", maxp(tensor.PoolConfig{Kernel: []int{2}, Stride: []int{1}, Dilation: []int{2}}), nnInputs(nnDistinct(3, 1, 2, 4, 5))},
		{"max_pool2d transposed input", func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := tensor.MaxPool2d(in[0].Transpose(1, 3), tensor.PoolConfig{Kernel: []int{2, 1}})
			return v
		}, nnInputs(nnDistinct(4, 1, 3, 4, 2))},
		{"max_pool1d unbatched", func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := tensor.MaxPool1d(in[0], tensor.PoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}})
			return v
		}, nnInputs(nnDistinct(5, 2, 7))},
		{"avg_pool2d counts pad", avgp(tensor.AvgPoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}}), nnInputs(nnRand(1, 1, 2, 5, 5))},
		{"avg_pool2d excludes pad ceil", avgp(tensor.AvgPoolConfig{Kernel: []int{2, 3}, Stride: []int{2}, Padding: []int{1}, CeilMode: true, ExcludePad: true}),
			nnInputs(nnRand(2, 1, 2, 4, 5))},
		{"avg_pool2d divisor override sliced", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.AvgPool2d(in[0].Permute(0, 3, 1, 2), tensor.AvgPoolConfig{Kernel: []int{2}, Stride: []int{1}, DivisorOverride: 3})
		}, nnInputs(nnRand(3, 1, 3, 4, 2))},
		{"avg_pool1d", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.AvgPool1d(in[0], tensor.AvgPoolConfig{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}})
		}, nnInputs(nnRand(4, 2, 2, 6))},
		{"adaptive_avg_pool2d", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.AdaptiveAvgPool2d(in[0], 2, 3) },
			nnInputs(nnRand(5, 1, 2, 5, 4))},
		{"adaptive_avg_pool2d transposed unbatched", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.AdaptiveAvgPool2d(in[0].Transpose(1, 2), 3, 0)
		}, nnInputs(nnRand(6, 2, 4, 5))},
		{"adaptive_avg_pool1d", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.AdaptiveAvgPool1d(in[0], 3) },
			nnInputs(nnRand(7, 2, 2, 7))},
	})
}

// TestNNMaxPoolIndicesSurviveRelease checks that releasing the returned
// indices does not break the backward pass, which keeps its own hold.
func TestNNMaxPoolIndicesSurviveRelease(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.FromFloat64s(dev.Autodiff(), []float64{1, 5, 2, 0, 3, 4, 8, 6, 7}, 1, 1, 3, 3).RequireGrad()
		v, idx := tensor.MaxPool2d(x, tensor.PoolConfig{Kernel: []int{2}, Stride: []int{1}})
		if got := idx.Int64s(); got[0] != 1 || got[1] != 1 || got[2] != 6 || got[3] != 8 {
			t.Errorf("indices %v, want [1 1 6 8]", got)
		}
		idx.Release()
		g := v.Sum().Backward()
		assertValues(t, "grad", g.Get(x), []int{1, 1, 3, 3}, []float64{0, 2, 0, 0, 0, 0, 1, 0, 1}, 0, 0)
	})
}

func TestNNPoolBadInputs(t *testing.T) {
	z := func(dev tensor.Device, shape ...int) *tensor.Tensor { return tensor.Zeros(dev, shape...) }
	nnRunBadInputs(t, []nnBadCase{
		{"max pool no kernel", func(d tensor.Device) { tensor.MaxPool2d(z(d, 1, 1, 4, 4), tensor.PoolConfig{}) },
			tensor.ErrArgument, "tensor.MaxPool2d: Kernel is required"},
		{"max pool padding over half kernel", func(d tensor.Device) {
			tensor.MaxPool2d(z(d, 1, 1, 4, 4), tensor.PoolConfig{Kernel: []int{2}, Padding: []int{2}})
		}, tensor.ErrArgument, "Padding [2] must be at most half of Kernel [2]"},
		{"max pool input too small", func(d tensor.Device) {
			tensor.MaxPool2d(z(d, 1, 1, 2, 4), tensor.PoolConfig{Kernel: []int{3}})
		}, tensor.ErrShape, "tensor.MaxPool2d: input [1 1 2 4] is too small for kernel [3 3]"},
		{"max pool rank", func(d tensor.Device) { tensor.MaxPool2d(z(d, 4, 4), tensor.PoolConfig{Kernel: []int{2}}) },
			tensor.ErrShape, "input [4 4] must be [N, C, H, W] or unbatched [C, H, W]"},
		{"max pool integer input", func(d tensor.Device) {
			tensor.MaxPool2d(tensor.ZerosOf(d, tensor.Int64, 1, 1, 4, 4), tensor.PoolConfig{Kernel: []int{2}})
		}, tensor.ErrDType, "is int64"},
		{"max pool1d two kernel values", func(d tensor.Device) {
			tensor.MaxPool1d(z(d, 1, 1, 4), tensor.PoolConfig{Kernel: []int{2, 2}})
		}, tensor.ErrArgument, "tensor.MaxPool1d: Kernel [2 2]: want one value"},
		{"avg pool zero stride", func(d tensor.Device) {
			tensor.AvgPool2d(z(d, 1, 1, 4, 4), tensor.AvgPoolConfig{Kernel: []int{2}, Stride: []int{0}})
		}, tensor.ErrArgument, "tensor.AvgPool2d: Stride [0]"},
		{"avg pool negative divisor", func(d tensor.Device) {
			tensor.AvgPool2d(z(d, 1, 1, 4, 4), tensor.AvgPoolConfig{Kernel: []int{2}, DivisorOverride: -1})
		}, tensor.ErrArgument, "DivisorOverride -1"},
		{"adaptive rank", func(d tensor.Device) { tensor.AdaptiveAvgPool2d(z(d, 4, 4), 2, 2) },
			tensor.ErrShape, "tensor.AdaptiveAvgPool2d: input [4 4] must be"},
		{"adaptive negative size", func(d tensor.Device) { tensor.AdaptiveAvgPool2d(z(d, 1, 4, 4), -1, 2) },
			tensor.ErrArgument, "output size -1"},
		{"adaptive integer input", func(d tensor.Device) {
			tensor.AdaptiveAvgPool2d(tensor.ZerosOf(d, tensor.Int32, 1, 4, 4), 2, 2)
		}, tensor.ErrDType, "int32"},
	})
}
