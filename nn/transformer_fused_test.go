package nn_test

import (
	"slices"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/internal/benchpair"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// BenchmarkGPTTrainStepFusedFFN times the GPT benchmark's training step
// (BenchmarkGPTTrainStep, one model) with the feed-forward blocks' first
// linear layer and GELU fused (tensor.LinearActivation) and not,
// alternately in every iteration (which goes first alternating too), so
// that both meet the same machine, and reports the best and the median
// step of each, and the ratio of the medians (unfused ÷ fused: above 1,
// fusing gains).
func BenchmarkGPTTrainStepFusedFFN(b *testing.B) {
	defer nn.SetFuseFeedForward(true)()
	for _, c := range gptSizes {
		b.Run(c.name(), func(b *testing.B) {
			tr := newGPTTrainer(tensor.CPU(), c, 1)
			defer tr.release()
			step := 0
			run := func(fused bool) time.Duration {
				nn.SetFuseFeedForward(fused)
				start := time.Now()
				tr.step(step)
				step++
				return time.Since(start)
			}
			benchpair.Run(b, "fused", "unfused", 2, run)
		})
	}
}

// TestTransformerFusedFeedForward requires encoder and decoder layers to
// give the same outputs and parameter gradients, bit for bit, with the
// feed-forward block's first layer and activation fused and not, for both
// activations.
func TestTransformerFusedFeedForward(t *testing.T) {
	defer nn.SetFuseFeedForward(true)()
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		for _, act := range []string{"relu", "gelu"} {
			cfg := nn.TransformerLayerConfig{DimFeedforward: 24, NoDropout: true, Activation: act, BatchFirst: true}
			enc := nn.NewTransformerEncoderLayer(ad, 16, 2, cfg)
			dec := nn.NewTransformerDecoderLayer(ad, 16, 2, cfg)
			x := testutil.RandFloat64(ad, 1, -2, 2, 3, 5, 16).To(tensor.Float32)
			mem := testutil.RandFloat64(ad, 2, -2, 2, 3, 4, 16).To(tensor.Float32)
			g := testutil.RandFloat64(ad, 3, -1, 1, 3, 5, 16).To(tensor.Float32)
			for _, m := range []struct {
				name    string
				module  any
				forward func() *tensor.Tensor
			}{
				{"encoder", enc, func() *tensor.Tensor { return enc.Forward(x) }},
				{"decoder", dec, func() *tensor.Tensor { return dec.Forward(x, mem) }},
			} {
				var outs [2][]float32
				var grads [2][][]float32
				for i, fused := range []bool{true, false} {
					nn.SetFuseFeedForward(fused)
					y := m.forward()
					outs[i] = y.Float32s()
					gs := y.BackwardWith(g)
					for _, p := range nn.Params(m.module) {
						grads[i] = append(grads[i], gs.Get(p.Param.Tensor).Float32s())
					}
				}
				if !slices.Equal(outs[0], outs[1]) {
					t.Errorf("%s %s: outputs differ", act, m.name)
				}
				for j := range grads[0] {
					if !slices.Equal(grads[0][j], grads[1][j]) {
						t.Errorf("%s %s: gradient of %s differs", act, m.name, nn.Params(m.module)[j].Name)
					}
				}
			}
		}
	})
}
