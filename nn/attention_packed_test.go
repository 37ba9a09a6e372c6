package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestMultiHeadAttentionPackedMatchesSplit checks that self-attention
// through tensor.PackedSelfAttention (SkipWeights, no dropout, causal or
// no mask) gives the output and the gradients of the input and of every
// parameter that the heads split by Narrow give, batch-first or not,
// batched or not.
func TestMultiHeadAttentionPackedMatchesSplit(t *testing.T) {
	cases := []struct {
		name       string
		batchFirst bool
		causal     bool
		shape      []int
	}{
		{"batch first causal", true, true, []int{3, 70, 24}},
		{"sequence first", false, false, []int{40, 2, 24}},
		{"unbatched causal", false, true, []int{33, 24}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(packed bool) map[string][]float64 {
				old := *nn.PackSelfAttention
				*nn.PackSelfAttention = packed
				defer func() { *nn.PackSelfAttention = old }()
				res := map[string][]float64{}
				tensor.Scope(func() {
					dev := tensor.CPU().Autodiff()
					dev.Seed(7)
					m := nn.NewMultiHeadAttention(dev, 24, 3, nn.MultiHeadAttentionConfig{BatchFirst: c.batchFirst})
					x := tensor.Randn(dev, c.shape...).RequireGrad()
					out, w := m.Forward(x, x, x, nn.AttentionOptions{SkipWeights: true, IsCausal: c.causal})
					if w != nil {
						t.Fatal("weights returned with SkipWeights")
					}
					grads := out.Mul(tensor.Randn(dev.Inner(), out.Shape()...)).Sum().Backward()
					res["out"] = out.Float64s()
					res["x grad"] = grads.Get(x).Float64s()
					for _, p := range nn.Params(m) {
						res[p.Name+" grad"] = grads.Get(p.Param.Tensor).Float64s()
					}
				})
				return res
			}
			split, packed := run(false), run(true)
			if len(split) != len(packed) || len(split) < 6 {
				t.Fatalf("results %d packed, %d split", len(packed), len(split))
			}
			for name, want := range split {
				got := packed[name]
				if len(got) != len(want) {
					t.Fatalf("%s: %d values packed, %d split", name, len(got), len(want))
				}
				for i := range want {
					if d := math.Abs(got[i] - want[i]); !(d <= 1e-5*math.Max(1, math.Abs(want[i]))) {
						t.Fatalf("%s[%d]: packed %v, split %v", name, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// BenchmarkSelfAttentionStep times one GPT layer's self-attention (the
// benchmark GPT's d=256 and d=512 layers: batch 8, 256 positions, causal,
// SkipWeights), projections included, forward and backward, with the heads
// kept in the projection (packed, tensor.PackedSelfAttention) and split
// from it by Narrow (split). -count N runs the two alternately N times.
func BenchmarkSelfAttentionStep(b *testing.B) {
	for _, size := range []struct{ d, heads int }{{256, 4}, {512, 8}} {
		for _, packed := range []bool{true, false} {
			name := fmt.Sprintf("d=%d/split", size.d)
			if packed {
				name = fmt.Sprintf("d=%d/packed", size.d)
			}
			b.Run(name, func(b *testing.B) {
				old := *nn.PackSelfAttention
				*nn.PackSelfAttention = packed
				defer func() { *nn.PackSelfAttention = old }()
				dev := tensor.CPU().Autodiff()
				m := nn.NewMultiHeadAttention(dev, size.d, size.heads, nn.MultiHeadAttentionConfig{BatchFirst: true})
				defer nn.Release(m)
				x := tensor.Randn(dev, 8, 256, size.d).RequireGrad().Keep()
				defer x.Release()
				step := func() {
					tensor.Scope(func() {
						out, _ := m.Forward(x, x, x, nn.AttentionOptions{SkipWeights: true, IsCausal: true})
						out.Sum().Backward()
					})
				}
				step()
				cpu := cpuSeconds()
				b.ResetTimer()
				for range b.N {
					step()
				}
				b.StopTimer()
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e3, "ms/op")
				b.ReportMetric((cpuSeconds()-cpu)/float64(b.N)*1e3, "cpu-ms/op")
			})
		}
	}
}
