package onnx_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// The layers whose Forward takes more than a tensor, wrapped as Modules.
type lstmModel struct{ LSTM *nn.LSTM }

func (m *lstmModel) Forward(x *tensor.Tensor) *tensor.Tensor {
	y, _, _ := m.LSTM.Forward(x, nil, nil)
	return y
}

type gruModel struct{ GRU *nn.GRU }

func (m *gruModel) Forward(x *tensor.Tensor) *tensor.Tensor { y, _ := m.GRU.Forward(x, nil); return y }

type attentionModel struct{ Attention *nn.MultiHeadAttention }

func (m *attentionModel) Forward(x *tensor.Tensor) *tensor.Tensor {
	// A causal mask built in Forward (true takes part).
	l := x.Shape()[1]
	keep := make([]bool, l*l)
	for i := range l {
		for j := 0; j <= i; j++ {
			keep[i*l+j] = true
		}
	}
	mask := tensor.FromBools(x.Device().Inner(), keep, l, l)
	y, _ := m.Attention.Forward(x, x, x, nn.AttentionOptions{AttentionMask: mask})
	return y
}

// constantModel multiplies by a constant its Forward builds: it is written
// as an initializer.
type constantModel struct{}

func (constantModel) Forward(x *tensor.Tensor) *tensor.Tensor {
	return x.Mul(tensor.Full(x.Device().Inner(), 1.5, x.Shape()[1:]...))
}

// TestExportLayersWithConstants exports the layers whose Forward builds tensors outside
// the parameters (batch norm's reshaped running statistics, the recurrent
// layers' zero initial states, attention's masks, positional tables) and
// the transformer stacks, checks each file with onnx.checker where
// python3-onnx is installed, imports it back and compares the outputs in
// evaluation mode. Recurrent layers are unrolled over the traced length,
// as torch.onnx.export does without dynamic axes.
func TestExportLayersWithConstants(t *testing.T) {
	dev := tensor.CPU().Autodiff()
	dev.Seed(11)
	bn := nn.NewBatchNorm2d(dev, 3)
	// Running statistics that are not the initial zeros and ones.
	nn.Train(bn)
	tensor.Scope(func() { bn.Forward(tensor.Randn(dev, 4, 3, 5, 5).MulScalar(2).AddScalar(1)) })
	encoder := nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, BatchFirst: true}), 2, nil)
	cases := []struct {
		name  string
		model nn.Module
		shape []int
	}{
		{"BatchNorm2d with running statistics", bn, []int{2, 3, 4, 5}},
		{"BatchNorm1d", nn.NewBatchNorm1d(dev, 3), []int{2, 3, 5}},
		{"GroupNorm", nn.NewGroupNorm(dev, 3, 6), []int{2, 6, 4}},
		{"LSTM", &lstmModel{nn.NewLSTM(dev, 4, 5)}, []int{3, 2, 4}},
		{"LSTM two layers batch first", &lstmModel{nn.NewLSTM(dev, 4, 5, nn.RNNConfig{NumLayers: 2, BatchFirst: true})}, []int{2, 3, 4}},
		{"GRU", &gruModel{nn.NewGRU(dev, 4, 5)}, []int{3, 2, 4}},
		{"MultiHeadAttention causal", &attentionModel{nn.NewMultiHeadAttention(dev, 8, 2, nn.MultiHeadAttentionConfig{BatchFirst: true})}, []int{2, 3, 8}},
		{"TransformerEncoderLayer", nn.NewTransformerEncoderLayer(dev, 8, 2, nn.TransformerLayerConfig{DimFeedforward: 16, BatchFirst: true}), []int{2, 3, 8}},
		{"TransformerEncoder", encoder, []int{2, 3, 8}},
		{"SwiGLU", nn.NewSwiGLU(dev, 8, 16), []int{2, 3, 8}},
		{"PositionalEncoding", nn.NewPositionalEncoding(8), []int{2, 3, 8}},
		{"RotaryEncoding", nn.NewRotaryEncoding(8), []int{2, 3, 8}},
		{"a constant built in Forward", constantModel{}, []int{2, 3}},
	}
	dir := t.TempDir()
	var paths []string
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer nn.Release(c.model)
			path := filepath.Join(dir, fmt.Sprintf("layer%d.onnx", i))
			tensor.Scope(func() {
				if err := onnx.Export(c.model, tensor.Randn(tensor.CPU(), c.shape...), path); err != nil {
					t.Fatal(err)
				}
			})
			paths = append(paths, path)
			back, err := onnx.Load(path, tensor.CPU())
			if err != nil {
				t.Fatal(err)
			}
			defer nn.Release(back)
			nn.Eval(c.model)
			tensor.Scope(func() {
				x := tensor.Randn(tensor.CPU(), c.shape...)
				want := c.model.Forward(x.ToDevice(dev))
				got := back.Forward(x)
				testutil.AssertValues(t, "re-imported", got, want.Shape(), want.Float64s(), 1e-5, 1e-5)
			})
		})
	}
	if len(paths) > 0 && pythonONNX(t) {
		for _, p := range paths {
			checkModel(t, p)
		}
	}
}
