package nn_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// gptConfig sizes a GPT-style decoder (token and position embeddings,
// pre-norm causal self-attention, GELU MLP, a final layer norm and a
// linear head). scripts/gpt_bench.py builds the same model in PyTorch.
type gptConfig struct {
	Vocab, Context, Width, Heads, Layers, Batch int
}

// gptSizes are the benchmark's sizes, both with 256 positions, a
// vocabulary of 1024, batch 8 and 64 features per head: d = 256 with 6
// layers and 4 heads, and d = 512 with 8 layers and 8 heads.
var gptSizes = []gptConfig{
	{Vocab: 1024, Context: 256, Width: 256, Heads: 4, Layers: 6, Batch: 8},
	{Vocab: 1024, Context: 256, Width: 512, Heads: 8, Layers: 8, Batch: 8},
}

// name is the sub-benchmark's name of c, "d=256,L=6".
func (c gptConfig) name() string { return fmt.Sprintf("d=%d,L=%d", c.Width, c.Layers) }

// flops returns the floating-point operations of the matrix products a
// training step of c needs, two a multiply-add: the linear layers' (12·d²
// multiply-adds a token a layer, the head's d·vocab) forward and both
// gradients, and attention's six products (Q·Kᵀ and P·V forward; dV, dP,
// dQ and dK backward) over the causal half, T(T+1)/2 query-key pairs a
// sequence. An implementation that recomputes the probabilities in the
// backward pass does more; the element-wise work is not counted.
func (c gptConfig) flops() float64 {
	tokens, w := float64(c.Batch*c.Context), float64(c.Width)
	linear := 3 * 2 * tokens * (float64(c.Layers)*12*w*w + w*float64(c.Vocab))
	pairs := float64(c.Batch) * float64(c.Context*(c.Context+1)/2)
	attention := 6 * 2 * pairs * w * float64(c.Layers)
	return linear + attention
}

// gpt is the decoder. Its encoder layers are PyTorch's
// TransformerEncoderLayer with norm_first, GELU, no dropout and a causal
// mask, which is what a GPT block is.
type gpt struct {
	Tok     *nn.Embedding          `kiln:"tok"`
	Pos     *nn.Embedding          `kiln:"pos"`
	Encoder *nn.TransformerEncoder `kiln:"encoder"`
	Norm    *nn.LayerNorm          `kiln:"norm"`
	Head    *nn.Linear             `kiln:"head"`
}

func newGPT(dev tensor.Device, c gptConfig) *gpt {
	layer := nn.NewTransformerEncoderLayer(dev, c.Width, c.Heads, nn.TransformerLayerConfig{
		DimFeedforward: 4 * c.Width, NoDropout: true, Activation: "gelu", BatchFirst: true, NormFirst: true})
	return &gpt{
		Tok:     nn.NewEmbedding(dev, c.Vocab, c.Width, nn.EmbeddingConfig{WeightInit: nn.Normal{Std: 0.02}}),
		Pos:     nn.NewEmbedding(dev, c.Context, c.Width, nn.EmbeddingConfig{WeightInit: nn.Normal{Std: 0.02}}),
		Encoder: nn.NewTransformerEncoder(layer, c.Layers, nil),
		Norm:    nn.NewLayerNorm(dev, []int{c.Width}),
		Head:    nn.NewLinear(dev, c.Width, c.Vocab),
	}
}

// loss returns the mean next-token cross-entropy of tokens [B, T] against
// targets [B, T].
func (m *gpt) loss(tokens, targets *tensor.Tensor) *tensor.Tensor {
	b, t := tokens.Dim(0), tokens.Dim(1)
	pos := tensor.ArangeOf(tokens.Device().Inner(), tensor.Int64, 0, float64(t), 1)
	x := m.Tok.Forward(tokens).Add(m.Pos.Forward(pos))
	x = m.Encoder.ForwardMasked(x, nn.EncoderMasks{IsCausal: true})
	logits := m.Head.Forward(m.Norm.Forward(x))
	return nn.CrossEntropy(logits.Reshape(b*t, -1), targets.Reshape(b*t), nn.CrossEntropyOptions{})
}

// gptBatch returns batch number step of the synthetic task both
// benchmarks train on: sequences whose first two tokens come from an LCG
// and whose others are one more than the token two places before them
// (modulo the vocabulary), so that predicting them needs attention.
// inputs and targets are [B, T], targets shifted by one.
func gptBatch(c gptConfig, step int) (inputs, targets []int64) {
	state := uint64(step)*2654435761 + 12345
	next := func() int64 {
		state = (state*6364136223846793005 + 1442695040888963407) & (1<<63 - 1)
		return int64(state>>33) % int64(c.Vocab)
	}
	for range c.Batch {
		seq := make([]int64, c.Context+1)
		seq[0], seq[1] = next(), next()
		for i := 2; i < len(seq); i++ {
			seq[i] = (seq[i-2] + 1) % int64(c.Vocab)
		}
		inputs = append(inputs, seq[:c.Context]...)
		targets = append(targets, seq[1:]...)
	}
	return inputs, targets
}

// gptTrainer runs AdamW training steps of a gpt on dev.
type gptTrainer struct {
	c     gptConfig
	dev   tensor.Device
	model *gpt
	opt   *optim.AdamW
}

func newGPTTrainer(dev tensor.Device, c gptConfig, seed uint64) *gptTrainer {
	dev = dev.Autodiff()
	dev.Seed(seed)
	return &gptTrainer{c: c, dev: dev, model: newGPT(dev, c), opt: optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})}
}

// step trains on batch number i and returns the loss before the update.
func (g *gptTrainer) step(i int) float64 {
	var loss float64
	tensor.Scope(func() {
		in, tg := gptBatch(g.c, i)
		x := tensor.FromInt64s(g.dev.Inner(), in, g.c.Batch, g.c.Context)
		y := tensor.FromInt64s(g.dev.Inner(), tg, g.c.Batch, g.c.Context)
		l := g.model.loss(x, y)
		g.opt.Step(g.model, l.Backward())
		loss = l.Item()
	})
	return loss
}

func (g *gptTrainer) release() {
	g.opt.ZeroState()
	nn.Release(g.model)
}

// BenchmarkGPTTrainStep times AdamW training steps of the GPT-style
// decoder at each of gptSizes (sub-benchmarks d=256,L=6 and d=512,L=8;
// forward, backward and update, each step in a Scope), reporting ms/step,
// the process's CPU time per step (cpu-ms/step), tokens/s, the rate of
// the products the step needs (GFLOP/s, see gptConfig.flops), and per step
// the heap bytes allocated and garbage collections. KILN_GPT_STEPS, when
// set, also logs the loss of that many steps from a fresh model (the loss
// curve scripts/gpt_bench.py compares with PyTorch's).
func BenchmarkGPTTrainStep(b *testing.B) {
	for _, c := range gptSizes {
		b.Run(c.name(), func(b *testing.B) { benchmarkGPT(b, c) })
	}
}

func benchmarkGPT(b *testing.B, c gptConfig) { benchmarkGPTOn(b, tensor.CPU(), c) }

// benchmarkGPTOn is benchmarkGPT with the model on dev (an Autocast view
// in BenchmarkGPTTrainStepBF16).
func benchmarkGPTOn(b *testing.B, dev tensor.Device, c gptConfig) {
	tr := newGPTTrainer(dev, c, 1)
	defer tr.release()
	if n, _ := strconv.Atoi(os.Getenv("KILN_GPT_STEPS")); n > 0 {
		for i := range n {
			b.Logf("step %d loss %.6f", i, tr.step(i))
		}
	}
	for i := range 2 { // warm up: optimizer state, pools
		tr.step(i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu := cpuSeconds()
	b.ResetTimer()
	for i := range b.N {
		tr.step(i)
	}
	b.StopTimer()
	cpu = cpuSeconds() - cpu
	runtime.ReadMemStats(&after)
	n := float64(b.N)
	b.ReportMetric(b.Elapsed().Seconds()/n*1e3, "ms/step")
	b.ReportMetric(cpu/n*1e3, "cpu-ms/step")
	b.ReportMetric(n*float64(c.Batch*c.Context)/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(n*c.flops()/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n/1e6, "heap-MB/step")
	b.ReportMetric(float64(after.NumGC-before.NumGC)/n, "gc/step")
}

// TestGPTFLOPs checks the product count BenchmarkGPTTrainStep reports its
// GFLOP/s against the counts worked out by hand for both sizes: linear
// layers 6·2048·(L·12·d² + d·1024), attention 12·8·(256·257/2)·d·L.
func TestGPTFLOPs(t *testing.T) {
	for i, want := range []float64{61203283968 + 4850712576, 315680096256 + 12935233536} {
		if got := gptSizes[i].flops(); got != want {
			t.Errorf("%s: %.0f flops a step, want %.0f", gptSizes[i].name(), got, want)
		}
	}
}
