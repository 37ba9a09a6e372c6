package nn_test

import (
	"math"
	"os"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// BenchmarkGPTTrainStepBF16 sets the GPT-style training step with bfloat16
// autocast (the model built on tensor.CPU().Autocast(tensor.BFloat16): its
// matrix products and Linear layers run the bfloat16 GEMM on their float32
// inputs, forward and backward, into float32 results; every other op,
// the parameters and the optimizer stay float32) against the float32
// step, for each of gptSizes. -count 3 runs each mode three times in a
// row; to alternate them, run the benchmark three times with -count 1 and
// compare the best ms/step of each.
func BenchmarkGPTTrainStepBF16(b *testing.B) {
	for _, c := range gptSizes {
		for _, mode := range []string{"fp32", "bf16"} {
			b.Run(c.name()+"/"+mode, func(b *testing.B) {
				dev := tensor.CPU()
				if mode == "bf16" {
					dev = dev.Autocast(tensor.BFloat16)
				}
				benchmarkGPTOn(b, dev, c)
			})
		}
	}
}

// TestGPTBF16AutocastLoss trains the GPT-style decoder for 100 AdamW steps
// in float32 and with bfloat16 autocast from the same initial weights and
// batches, and checks that the losses after the last step agree within
// 1e-2. It uses a smaller decoder than the benchmark (d=128, 2 layers,
// 64 positions) unless KILN_GPT_BF16_FULL is set (then d=256, 6 layers,
// 256 positions: minutes); -short skips it.
func TestGPTBF16AutocastLoss(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("trains two models for 100 steps; the plain run checks it")
	}
	c := gptConfig{Vocab: 256, Context: 64, Width: 128, Heads: 2, Layers: 2, Batch: 8}
	if os.Getenv("KILN_GPT_BF16_FULL") != "" {
		c = gptSizes[0]
	}
	const steps = 100
	run := func(dev tensor.Device) (first, last float64) {
		tr := newGPTTrainer(dev, c, 1)
		defer tr.release()
		for i := range steps {
			l := tr.step(i)
			if i == 0 {
				first = l
			}
			last = l
		}
		// the loss after the last update
		return first, tr.step(steps)
	}
	f32first, f32 := run(tensor.CPU())
	bf16first, bf16 := run(tensor.CPU().Autocast(tensor.BFloat16))
	t.Logf("loss: float32 %.5f → %.5f, bfloat16 autocast %.5f → %.5f (difference %.2e)", f32first, f32, bf16first, bf16, math.Abs(f32-bf16))
	if !(f32 < f32first-0.5) {
		t.Fatalf("float32 training did not learn: loss %.4f → %.4f", f32first, f32)
	}
	if d := math.Abs(f32 - bf16); !(d <= 1e-2) {
		t.Fatalf("loss after %d steps: bfloat16 autocast %.5f, float32 %.5f: differ by %.3g, want ≤ 1e-2", steps, bf16, f32, d)
	}
}
