package fusion_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// trainSteps is how many AdamW steps each model takes on each device.
const trainSteps = 50

// model is what the training comparison needs of a network: a loss for
// batch i, and its parameters for the optimizer.
type model interface {
	loss(dev tensor.Device, i int) *tensor.Tensor
	module() nn.Module
}

// mlp is the MNIST MLP (784-256-128-10, ReLU) of nn's MNIST test, fed
// seeded synthetic 28×28 images whose class is a fixed function of the
// pixels, so that the loss falls.
type mlp struct{ m nn.Module }

func newMLP(dev tensor.Device) model {
	return &mlp{nn.NewSequential(
		nn.NewLinear(dev, 784, 256), nn.ReLU{},
		nn.NewLinear(dev, 256, 128), nn.ReLU{},
		nn.NewLinear(dev, 128, 10),
	)}
}

func (m *mlp) module() nn.Module { return m.m }

func (m *mlp) loss(dev tensor.Device, i int) *tensor.Tensor {
	x, y := imageBatch(dev, i, 64, []int{64, 784})
	return nn.CrossEntropy(m.m.Forward(x), y, nn.CrossEntropyOptions{})
}

// cnn is the MNIST CNN of nn's MNIST test: conv 1→16 3×3, ReLU, max-pool
// 2, conv 16→32 3×3, ReLU, max-pool 2, flatten, linear 800→10.
type cnn struct{ m nn.Module }

func newCNN(dev tensor.Device) model {
	return &cnn{nn.NewSequential(
		nn.NewConv2d(dev, 1, 16, 3), nn.ReLU{}, nn.NewMaxPool2d(2),
		nn.NewConv2d(dev, 16, 32, 3), nn.ReLU{}, nn.NewMaxPool2d(2),
		nn.NewFlatten(),
		nn.NewLinear(dev, 800, 10),
	)}
}

func (m *cnn) module() nn.Module { return m.m }

func (m *cnn) loss(dev tensor.Device, i int) *tensor.Tensor {
	x, y := imageBatch(dev, i, 32, []int{32, 1, 28, 28})
	return nn.CrossEntropy(m.m.Forward(x), y, nn.CrossEntropyOptions{})
}

// imageBatch returns batch i of n synthetic images of the given shape and
// their labels (the quadrant of the image holding the most mass, plus 4
// when the image's mean is positive, so 8 of the 10 classes occur).
func imageBatch(dev tensor.Device, i, n int, shape []int) (*tensor.Tensor, *tensor.Tensor) {
	r := rand.New(rand.NewPCG(uint64(i), 99))
	px := make([]float32, n*784)
	labels := make([]int64, n)
	for k := range n {
		img := px[k*784 : (k+1)*784]
		var quad [4]float64
		var sum float64
		for p := range img {
			v := float32(r.NormFloat64())
			img[p] = v
			quad[(p/28/14)*2+(p%28)/14] += float64(v)
			sum += float64(v)
		}
		best := 0
		for q := range quad {
			if quad[q] > quad[best] {
				best = q
			}
		}
		labels[k] = int64(best)
		if sum > 0 {
			labels[k] += 4
		}
	}
	return tensor.FromFloat32s(dev, px, shape...), tensor.FromInt64s(dev.Inner(), labels, n)
}

// transformer is a small language model: an embedding, two pre-norm
// encoder layers with GELU and dropout, causal attention, and a linear
// head, trained to predict the next token of a seeded sequence.
type transformer struct {
	emb    *nn.Embedding
	layers []*nn.TransformerEncoderLayer
	head   *nn.Linear
}

const (
	tfVocab   = 32
	tfContext = 24
	tfWidth   = 32
	tfBatch   = 4
)

func newTransformer(dev tensor.Device) model {
	m := &transformer{emb: nn.NewEmbedding(dev, tfVocab, tfWidth), head: nn.NewLinear(dev, tfWidth, tfVocab)}
	for range 2 {
		m.layers = append(m.layers, nn.NewTransformerEncoderLayer(dev, tfWidth, 4, nn.TransformerLayerConfig{
			DimFeedforward: 64, Activation: "gelu", BatchFirst: true, NormFirst: true}))
	}
	return m
}

func (m *transformer) module() nn.Module {
	mods := []nn.Module{m.emb}
	for _, l := range m.layers {
		mods = append(mods, l)
	}
	return nn.NewSequential(append(mods, m.head)...)
}

func (m *transformer) loss(dev tensor.Device, i int) *tensor.Tensor {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	in := make([]int64, tfBatch*(tfContext+1))
	for k := range in {
		// a sequence with structure: each token is the previous plus a
		// small step, so the next token is predictable
		if k%(tfContext+1) == 0 {
			in[k] = int64(r.IntN(tfVocab))
		} else {
			in[k] = (in[k-1] + int64(1+r.IntN(2))) % tfVocab
		}
	}
	x := make([]int64, 0, tfBatch*tfContext)
	y := make([]int64, 0, tfBatch*tfContext)
	for b := range tfBatch {
		row := in[b*(tfContext+1) : (b+1)*(tfContext+1)]
		x, y = append(x, row[:tfContext]...), append(y, row[1:]...)
	}
	h := m.emb.Forward(tensor.FromInt64s(dev.Inner(), x, tfBatch, tfContext))
	for _, l := range m.layers {
		h = l.ForwardMasked(h, nn.EncoderMasks{IsCausal: true})
	}
	logits := m.head.Forward(h).Reshape(tfBatch*tfContext, tfVocab)
	return nn.CrossEntropy(logits, tensor.FromInt64s(dev.Inner(), y, tfBatch*tfContext), nn.CrossEntropyOptions{})
}

// losses trains a fresh model made by build on dev for trainSteps AdamW
// steps from seed 3 and returns the loss of every step.
func losses(t *testing.T, dev tensor.Device, build func(tensor.Device) model) []float64 {
	dev = dev.Autodiff()
	dev.Seed(3)
	m := build(dev)
	mod := m.module()
	defer nn.Release(mod)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
	defer opt.ZeroState()
	out := make([]float64, trainSteps)
	for i := range out {
		tensor.Scope(func() {
			l := m.loss(dev, i)
			opt.Step(mod, l.Backward())
			out[i] = l.Item()
		})
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTrainingMatchesUnfused trains the MNIST MLP, the MNIST CNN and a
// small transformer for 50 steps on the CPU and on its fused twin, from
// the same seed, and requires the loss curves to agree within 1e-5 (they
// agree exactly: fusion does not change a bit).
func TestTrainingMatchesUnfused(t *testing.T) {
	if raceEnabled {
		t.Skip("three trainings compared number for number; the plain run checks them (the race run keeps the reduction and tile tests, which use several threads)")
	}
	cases := []struct {
		name  string
		build func(tensor.Device) model
	}{
		{"MNIST MLP", newMLP},
		{"MNIST CNN", newCNN},
		{"transformer", newTransformer},
	}
	plain := tensor.CPU()
	fused := plain.Fused()
	fb := fusedBackend(t, fused)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := fb.Stats()
			want := losses(t, plain, tc.build)
			got := losses(t, fused, tc.build)
			after := fb.Stats()
			worst := 0.0
			for i := range want {
				worst = max(worst, math.Abs(want[i]-got[i]))
				if math.IsNaN(got[i]) || math.Abs(want[i]-got[i]) > 1e-5 {
					t.Fatalf("step %d: loss %.7f fused, %.7f unfused", i, got[i], want[i])
				}
			}
			if want[len(want)-1] >= want[0] {
				t.Errorf("the loss did not fall: %.4f → %.4f", want[0], want[len(want)-1])
			}
			groups, ops := after.Groups-before.Groups, after.Ops-before.Ops
			t.Logf("loss %.5f → %.5f in %d steps; largest difference %.1e; %d fused groups of %.1f ops on average, "+
				"%d intermediates kept in tiles, %d reduction tails", want[0], want[len(want)-1], trainSteps, worst, groups,
				float64(ops)/float64(max(groups, 1)), after.Scratch-before.Scratch, after.Reductions-before.Reductions)
			if groups == 0 {
				t.Error("nothing was fused")
			}
		})
	}
}
