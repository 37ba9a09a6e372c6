package tensor_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestNormGradientsAcrossChunks checks the layer and RMS norms'
// gradients against finite differences with more rows than one chunk of
// the fused kernels' parameter-gradient partial sums (32 rows).
func TestNormGradientsAcrossChunks(t *testing.T) {
	nnRunGradChecks(t, []nnGradCase{
		{"layer norm affine", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].LayerNorm([]int{3}, in[1], in[2], 1e-5)
		}, nnInputs(nnRand(1, 2, 35, 3), nnRand(2, 3), nnRand(3, 3))},
		{"rms norm weight", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].RMSNorm([]int{4}, in[1], 1e-6)
		}, nnInputs(nnRand(1, 70, 4), nnRand(2, 4))},
		{"rms norm 2 dims, default eps", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].RMSNorm([]int{2, 3}, in[1], -1)
		}, nnInputs(nnRand(1, 5, 2, 3), nnRand(2, 2, 3))},
		{"rms norm plain, transposed input", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].T().RMSNorm([]int{3}, nil, 1e-5)
		}, nnInputs(nnRand(1, 3, 6))},
	})
}

// TestRMSNormErrors checks RMSNorm's argument errors.
func TestRMSNormErrors(t *testing.T) {
	dev := tensor.CPU()
	x := tensor.Randn(dev, 2, 3)
	for _, c := range []struct {
		name string
		f    func()
		want error
	}{
		{"empty shape", func() { x.RMSNorm(nil, nil, 1e-5) }, tensor.ErrArgument},
		{"wrong trailing shape", func() { x.RMSNorm([]int{4}, nil, 1e-5) }, tensor.ErrShape},
		{"wrong weight", func() { x.RMSNorm([]int{3}, tensor.Ones(dev, 2), 1e-5) }, tensor.ErrShape},
		{"integer input", func() { tensor.FromInt64s(dev, []int64{1, 2}, 2).RMSNorm([]int{2}, nil, 1e-5) }, tensor.ErrDType},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := tensor.Try(c.f); !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
		})
	}
}
