package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestFusedAttentionGradients checks the fused attention's gradients
// against finite differences on sizes that span several tiles (64 queries
// and 64 keys each), with the masks the fused kernels handle themselves:
// causal, boolean (some queries seeing no key of a tile), key padding and
// a constant float mask.
func TestFusedAttentionGradients(t *testing.T) {
	sdpa := func(cfg tensor.AttentionConfig, mask func(dev tensor.Device) *tensor.Tensor) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor {
			var m *tensor.Tensor
			if mask != nil {
				m = mask(in[0].Device().Inner())
			}
			return tensor.ScaledDotProductAttention(in[0], in[1], in[2], m, cfg)
		}
	}
	pattern := func(shape []int, keep func(i int) bool) func(dev tensor.Device) *tensor.Tensor {
		return func(dev tensor.Device) *tensor.Tensor {
			n := 1
			for _, s := range shape {
				n *= s
			}
			v := make([]bool, n)
			for i := range v {
				v[i] = keep(i)
			}
			return tensor.FromBools(dev, v, shape...)
		}
	}
	nnRunGradChecks(t, []nnGradCase{
		{"causal two tiles", sdpa(tensor.AttentionConfig{Causal: true}, nil),
			nnInputs(nnRand(1, 1, 70, 3), nnRand(2, 1, 70, 3), nnRand(3, 1, 70, 2))},
		{"bool mask across tiles", sdpa(tensor.AttentionConfig{Scale: 0.8}, pattern([]int{66, 67}, func(i int) bool { return i%7 != 3 && i%67 != 66 })),
			nnInputs(nnRand(1, 66, 2), nnRand(2, 67, 2), nnRand(3, 67, 2))},
		{"key padding", sdpa(tensor.AttentionConfig{}, pattern([]int{2, 1, 1, 68}, func(i int) bool { return i%68 < 40+20*(i/68) })),
			nnInputs(nnRand(1, 2, 1, 5, 2), nnRand(2, 2, 1, 68, 2), nnRand(3, 2, 1, 68, 2))},
		{"constant float mask", sdpa(tensor.AttentionConfig{}, func(dev tensor.Device) *tensor.Tensor {
			return randFloat64(dev, 9, -3, 1, 3, 66)
		}), nnInputs(nnRand(1, 3, 2), nnRand(2, 66, 2), nnRand(3, 66, 3))},
	})
}
