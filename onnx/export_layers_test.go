package onnx_test

import (
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// rnnOutput is an nn.Module that runs an RNN and returns its output
// sequence.
type rnnOutput struct{ RNN *nn.RNN }

func (m *rnnOutput) Forward(x *tensor.Tensor) *tensor.Tensor {
	out, _ := m.RNN.Forward(x, nil)
	return out
}

// TestExportLayers exports small models built from the layers of
// nn/conv1d_transpose.go, nn/pool1d.go, nn/instancenorm.go,
// nn/pixelshuffle.go, nn/upsample.go and nn/rnn_plain.go, checks each file
// with onnx.checker where python3-onnx is installed (and that the expected
// ONNX operators are there), and loads it back with onnx.Load: the outputs
// agree with Kiln's for the traced batch size and another.
func TestExportLayers(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(22)
	models := []exportCase{
		{"conv_transpose1d and 1-D pooling", nn.NewSequential(
			nn.NewConvTranspose1d(dev, 2, 4, 3, nn.ConvTransposeConfig{Stride: []int{2}, Padding: []int{1}, OutputPadding: []int{1}}),
			nn.NewMaxPool1d(2),
			nn.NewAvgPool1d(3, tensor.AvgPoolConfig{Stride: []int{1}, Padding: []int{1}, ExcludePad: true}),
			nn.NewConvTranspose1d(dev, 4, 2, 2, nn.ConvTransposeConfig{Groups: 2, Dilation: []int{2}, NoBias: true}),
			nn.NewAdaptiveMaxPool1d(1),
		), []int{2, 6}, []string{"ConvTranspose", "MaxPool", "AveragePool", "GlobalMaxPool"}},
		{"conv_transpose2d", nn.NewSequential(
			nn.NewConvTranspose2d(dev, 2, 3, 3, nn.ConvTransposeConfig{Stride: []int{2}, Padding: []int{1}}),
		), []int{2, 3, 4}, []string{"ConvTranspose"}},
		{"pixel shuffle", nn.NewSequential(
			nn.NewConv2d(dev, 2, 8, 3, nn.ConvConfig{Padding: []int{1}}), nn.NewPixelShuffle(2),
			nn.NewConv2d(dev, 2, 3, 3), nn.NewPixelUnshuffle(2),
		), []int{2, 3, 4}, []string{"DepthToSpace", "Reshape", "Transpose"}},
		{"upsample 2-D", nn.NewSequential(
			nn.NewUpsample(tensor.InterpolateConfig{ScaleFactor: []float64{2}}),
			nn.NewUpsample(tensor.InterpolateConfig{Size: []int{5, 9}, Mode: "bilinear"}),
			nn.NewUpsample(tensor.InterpolateConfig{Size: []int{7, 6}, Mode: "bicubic"}),
			nn.NewUpsample(tensor.InterpolateConfig{Size: []int{4, 11}, Mode: "bicubic", AlignCorners: true}),
			nn.NewUpsample(tensor.InterpolateConfig{Size: []int{6, 5}, Mode: "bilinear", AlignCorners: true}),
			nn.NewUpsample(tensor.InterpolateConfig{Size: []int{5, 7}, Mode: "nearest-exact"}),
		), []int{2, 3, 4}, []string{"Resize"}},
		{"upsample 1-D", nn.NewSequential(
			nn.NewUpsample(tensor.InterpolateConfig{Size: []int{9}, Mode: "linear"}),
			nn.NewUpsample(tensor.InterpolateConfig{Size: []int{13}}),
		), []int{2, 5}, []string{"Resize"}},
		{"instance norm", nn.NewSequential(
			nn.NewConv2d(dev, 2, 3, 3), nn.NewInstanceNorm2d(dev, 3, nn.InstanceNormConfig{Affine: true}),
			nn.NewInstanceNorm2d(dev, 3),
		), []int{2, 5, 5}, []string{"LayerNormalization", "Conv"}},
		{"rnn", &rnnOutput{nn.NewRNN(dev, 3, 4, nn.PlainRNNConfig{Nonlinearity: "relu",
			RNNConfig: nn.RNNConfig{NumLayers: 2, Bidirectional: true, BatchFirst: true}})},
			[]int{5, 3}, []string{"Relu", "Concat"}},
	}
	checkExports(t, dev, models, 1e-5, 1e-5)
}
