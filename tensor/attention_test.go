package tensor_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func attention(cfg tensor.AttentionConfig) nnFixtureFunc {
	return func(in nnIn) nnOut {
		return nnOut{"out": tensor.ScaledDotProductAttention(in.T("q"), in.T("k"), in.T("v"), in.Opt("mask"), cfg)}
	}
}

var nnAttentionFixtures = map[string]nnFixtureFunc{
	"attention plain":                 attention(tensor.AttentionConfig{}),
	"attention bool mask":             attention(tensor.AttentionConfig{}),
	"attention float mask":            attention(tensor.AttentionConfig{}),
	"attention causal":                attention(tensor.AttentionConfig{Causal: true}),
	"attention causal square":         attention(tensor.AttentionConfig{Causal: true}),
	"attention broadcast batch scale": attention(tensor.AttentionConfig{Scale: 0.3}),
	"attention key padding mask":      attention(tensor.AttentionConfig{}),
}

func TestNNAttentionFixtures(t *testing.T) { nnRunFixtures(t, nnAttentionFixtures) }

func TestNNAttentionGradients(t *testing.T) {
	sdpa := func(cfg tensor.AttentionConfig) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor {
			var mask *tensor.Tensor
			if len(in) > 3 {
				mask = in[3]
			}
			return tensor.ScaledDotProductAttention(in[0], in[1], in[2], mask, cfg)
		}
	}
	boolMask := func(shape []int, v ...bool) func(dev tensor.Device) *tensor.Tensor {
		return func(dev tensor.Device) *tensor.Tensor { return tensor.FromBools(dev, v, shape...) }
	}
	nnRunGradChecks(t, []nnGradCase{
		{"plain heads", sdpa(tensor.AttentionConfig{}), nnInputs(nnRand(1, 2, 2, 3, 4), nnRand(2, 2, 2, 4, 4), nnRand(3, 2, 2, 4, 3))},
		{"bool mask broadcast", sdpa(tensor.AttentionConfig{}), nnInputs(nnRand(1, 2, 3, 2), nnRand(2, 2, 4, 2), nnRand(3, 2, 4, 2),
			boolMask([]int{3, 4}, true, false, true, true, false, true, true, false, true, true, true, false))},
		{"float mask with gradient", sdpa(tensor.AttentionConfig{}), nnInputs(nnRand(1, 2, 3, 2), nnRand(2, 2, 4, 2), nnRand(3, 2, 4, 2),
			nnRand(4, 1, 3, 4))},
		{"causal custom scale", sdpa(tensor.AttentionConfig{Causal: true, Scale: 0.7}),
			nnInputs(nnRand(1, 1, 4, 3), nnRand(2, 1, 5, 3), nnRand(3, 1, 5, 2))},
		{"broadcast batch", sdpa(tensor.AttentionConfig{}), nnInputs(nnRand(1, 2, 2, 3, 2), nnRand(2, 2, 1, 4, 2), nnRand(3, 4, 2))},
		{"transposed heads", func(in []*tensor.Tensor) *tensor.Tensor {
			// [B, L, H, D] → [B, H, L, D], the usual layout after a projection
			q, k, v := in[0].Transpose(1, 2), in[1].Transpose(1, 2), in[2].Transpose(1, 2)
			return tensor.ScaledDotProductAttention(q, k, v, nil, tensor.AttentionConfig{Causal: true})
		}, nnInputs(nnRand(1, 1, 3, 2, 2), nnRand(2, 1, 3, 2, 2), nnRand(3, 1, 3, 2, 2))},
	})
}

// TestNNAttentionIsOneNode checks the op records a single named node whose
// inputs are q, k, v (and the mask when given).
func TestNNAttentionIsOneNode(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		q := tensor.Randn(ad, 2, 3, 4).RequireGrad()
		out := tensor.ScaledDotProductAttention(q, tensor.Randn(ad, 2, 5, 4), tensor.Randn(ad, 2, 5, 4), nil, tensor.AttentionConfig{})
		n := out.Node()
		if n == nil || n.Op != "scaled_dot_product_attention" || len(n.Inputs) != 3 {
			t.Fatalf("node %+v", n)
		}
		if s, _ := n.Attrs["scale"].(float64); math.Abs(s-0.5) > 1e-12 {
			t.Errorf("scale attribute %v, want 1/√4", n.Attrs["scale"])
		}
	})
}

// TestNNAttentionFullyMaskedRowIsNaN documents PyTorch's reference
// behaviour for a query that may attend to no key.
func TestNNAttentionFullyMaskedRowIsNaN(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		q, k, v := tensor.Ones(dev, 2, 2), tensor.Ones(dev, 3, 2), tensor.Ones(dev, 3, 2)
		mask := tensor.FromBools(dev, []bool{true, false, true, false, false, false}, 2, 3)
		got := tensor.ScaledDotProductAttention(q, k, v, mask, tensor.AttentionConfig{}).Float64s()
		if got[0] != 1 || got[1] != 1 || !math.IsNaN(got[2]) || !math.IsNaN(got[3]) {
			t.Errorf("got %v, want [1 1 NaN NaN]", got)
		}
	})
}

func TestNNAttentionBadInputs(t *testing.T) {
	z := func(d tensor.Device, shape ...int) *tensor.Tensor { return tensor.Zeros(d, shape...) }
	sdpa := func(q, k, v, m *tensor.Tensor, cfg tensor.AttentionConfig) {
		tensor.ScaledDotProductAttention(q, k, v, m, cfg)
	}
	nnRunBadInputs(t, []nnBadCase{
		{"head dim mismatch", func(d tensor.Device) {
			sdpa(z(d, 2, 3, 4), z(d, 2, 5, 3), z(d, 2, 5, 4), nil, tensor.AttentionConfig{})
		},
			tensor.ErrShape, "tensor.ScaledDotProductAttention: q [2 3 4] and k [2 5 3] differ in their last dimension"},
		{"length mismatch", func(d tensor.Device) { sdpa(z(d, 3, 4), z(d, 5, 4), z(d, 6, 4), nil, tensor.AttentionConfig{}) },
			tensor.ErrShape, "k [5 4] and v [6 4] differ in sequence length"},
		{"batch mismatch", func(d tensor.Device) {
			sdpa(z(d, 2, 3, 4), z(d, 3, 5, 4), z(d, 3, 5, 4), nil, tensor.AttentionConfig{})
		},
			tensor.ErrShape, "batch dimensions of q and k do not broadcast (q [2 3 4], k [3 5 4], v [3 5 4])"},
		{"rank 1", func(d tensor.Device) { sdpa(z(d, 4), z(d, 5, 4), z(d, 5, 4), nil, tensor.AttentionConfig{}) },
			tensor.ErrShape, "at least 2 dimensions"},
		{"mask shape", func(d tensor.Device) { sdpa(z(d, 3, 4), z(d, 5, 4), z(d, 5, 4), z(d, 3, 4), tensor.AttentionConfig{}) },
			tensor.ErrShape, "mask [3 4] does not broadcast to the attention scores [3 5]"},
		{"mask dtype", func(d tensor.Device) {
			sdpa(z(d, 3, 4), z(d, 5, 4), z(d, 5, 4), tensor.ZerosOf(d, tensor.Int64, 3, 5), tensor.AttentionConfig{})
		}, tensor.ErrDType, "mask is int64"},
		{"mixed dtypes", func(d tensor.Device) {
			sdpa(z(d, 3, 4), tensor.ZerosOf(d, tensor.Float64, 5, 4), z(d, 5, 4), nil, tensor.AttentionConfig{})
		}, tensor.ErrDType, "got float32, float64 and float32"},
		{"mask with causal", func(d tensor.Device) {
			sdpa(z(d, 3, 4), z(d, 5, 4), z(d, 5, 4), z(d, 3, 5), tensor.AttentionConfig{Causal: true})
		}, tensor.ErrArgument, "cannot be combined with Causal"},
		{"dropout", func(d tensor.Device) {
			sdpa(z(d, 3, 4), z(d, 5, 4), z(d, 5, 4), nil, tensor.AttentionConfig{DropoutP: 0.1})
		}, tensor.ErrArgument, "DropoutP 0.1: dropout inside attention is not supported"},
		{"nil key", func(d tensor.Device) { sdpa(z(d, 3, 4), nil, z(d, 5, 4), nil, tensor.AttentionConfig{}) },
			tensor.ErrArgument, "nil tensor"},
	})
}
