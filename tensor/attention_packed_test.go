package tensor_test

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestPackedSelfAttentionGradients checks qkv's gradient against finite
// differences on every test device, causal or not, batched or not.
func TestPackedSelfAttentionGradients(t *testing.T) {
	packed := func(heads int, cfg tensor.AttentionConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return tensor.PackedSelfAttention(in[0], heads, cfg) }
	}
	qkv := func(seed uint64, shape ...int) func(dev tensor.Device) []*tensor.Tensor {
		return func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(dev, seed, -1, 1, shape...)}
		}
	}
	runGradCases(t, []gradCase{
		{"causal two heads", packed(2, tensor.AttentionConfig{Causal: true}), qkv(1, 2, 5, 3*2*3)},
		{"not causal scaled", packed(1, tensor.AttentionConfig{Scale: 0.7}), qkv(2, 1, 4, 3*4)},
		{"unbatched causal", packed(3, tensor.AttentionConfig{Causal: true}), qkv(3, 6, 3*3*2)},
	})
}

// ExamplePackedSelfAttention runs causal self-attention over a projection
// of 3 positions into 2 heads of 1 feature: each position's query, key
// and value, head by head.
func ExamplePackedSelfAttention() {
	dev := tensor.CPU()
	qkv := tensor.FromFloat64s(dev, []float64{
		// q₀ q₁  k₀ k₁  v₀ v₁
		1, 0, 1, 0, 1, 2,
		0, 1, 0, 1, 3, 4,
		1, 1, 1, 1, 5, 6,
	}, 1, 3, 6)
	out := tensor.PackedSelfAttention(qkv, 2, tensor.AttentionConfig{Causal: true})
	fmt.Println(out.Shape())
	for i, v := range out.Float64s() {
		if i%2 == 0 {
			fmt.Printf("%.4f ", v)
		} else {
			fmt.Printf("%.4f\n", v)
		}
	}
	// Output:
	// [1 3 2]
	// 1.0000 2.0000
	// 2.0000 3.4621
	// 3.0000 4.5339
}
