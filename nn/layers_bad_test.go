package nn_test

import (
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestLayerBadInput checks that each layer refuses inputs of the wrong
// rank, size or dtype with a *tensor.Error naming the layer, what it
// expected and what it got.
func TestLayerBadInput(t *testing.T) {
	z := func(dev tensor.Device, shape ...int) *tensor.Tensor { return tensor.Zeros(dev, shape...) }
	shape := tensor.ErrShape
	runBadInputs(t, []badInput{
		{"linear wrong features", "nn.Linear", shape, []string{"[..., 4]", "[2 3]"},
			func(dev tensor.Device) { nn.NewLinear(dev, 4, 2).Forward(z(dev, 2, 3)) }},
		{"linear scalar", "nn.Linear", shape, []string{"[..., 4]", "[]"},
			func(dev tensor.Device) { nn.NewLinear(dev, 4, 2).Forward(z(dev)) }},
		{"layer norm wrong trailing shape", "nn.LayerNorm", shape, []string{"[..., 2 3]", "[4 3 2]"},
			func(dev tensor.Device) { nn.NewLayerNorm(dev, []int{2, 3}).Forward(z(dev, 4, 3, 2)) }},
		{"bilinear wrong second features", "nn.Bilinear", shape, []string{"[..., 3] and [..., 4]", "[5 3] and [5 2]"},
			func(dev tensor.Device) { nn.NewBilinear(dev, 3, 4, 2).Forward(z(dev, 5, 3), z(dev, 5, 2)) }},
		{"bilinear different batches", "nn.Bilinear", shape, []string{"equal leading", "[5 3] and [4 4]"},
			func(dev tensor.Device) { nn.NewBilinear(dev, 3, 4, 2).Forward(z(dev, 5, 3), z(dev, 4, 4)) }},
		{"embedding float indices", "nn.Embedding", tensor.ErrDType, []string{"integer", "[2 3] float32"},
			func(dev tensor.Device) { nn.NewEmbedding(dev, 5, 2).Forward(z(dev, 2, 3)) }},
		{"conv2d wrong channels", "nn.Conv2d", shape, []string{"[N, 3, H, W] or [3, H, W]", "[2 4 8 8]"},
			func(dev tensor.Device) { nn.NewConv2d(dev, 3, 8, 3).Forward(z(dev, 2, 4, 8, 8)) }},
		{"conv2d wrong rank", "nn.Conv2d", shape, []string{"[N, 3, H, W]", "[3 8]"},
			func(dev tensor.Device) { nn.NewConv2d(dev, 3, 8, 3).Forward(z(dev, 3, 8)) }},
		{"conv2d grouped wrong channels", "nn.Conv2d", shape, []string{"[N, 4, H, W]", "[1 2 5 5]"},
			func(dev tensor.Device) {
				nn.NewConv2d(dev, 4, 4, 3, nn.ConvConfig{Groups: 2}).Forward(z(dev, 1, 2, 5, 5))
			}},
		{"conv1d wrong channels", "nn.Conv1d", shape, []string{"[N, 2, L] or [2, L]", "[1 3 9]"},
			func(dev tensor.Device) { nn.NewConv1d(dev, 2, 3, 3).Forward(z(dev, 1, 3, 9)) }},
		{"conv1d image input", "nn.Conv1d", shape, []string{"[N, 2, L]", "[1 2 4 4]"},
			func(dev tensor.Device) { nn.NewConv1d(dev, 2, 3, 3).Forward(z(dev, 1, 2, 4, 4)) }},
		{"conv transpose wrong channels", "nn.ConvTranspose2d", shape, []string{"[N, 3, H, W]", "[1 2 4 4]"},
			func(dev tensor.Device) { nn.NewConvTranspose2d(dev, 3, 2, 3).Forward(z(dev, 1, 2, 4, 4)) }},
		{"max pool wrong rank", "nn.MaxPool2d", shape, []string{"[N, C, H, W] or [C, H, W]", "[4 4]"},
			func(dev tensor.Device) { nn.NewMaxPool2d(2).Forward(z(dev, 4, 4)) }},
		{"avg pool wrong rank", "nn.AvgPool2d", shape, []string{"[N, C, H, W]", "[1 1 1 4 4]"},
			func(dev tensor.Device) { nn.NewAvgPool2d(2).Forward(z(dev, 1, 1, 1, 4, 4)) }},
		{"adaptive pool wrong rank", "nn.AdaptiveAvgPool2d", shape, []string{"[N, C, H, W]", "[6]"},
			func(dev tensor.Device) { nn.NewAdaptiveAvgPool2d(2, 2).Forward(z(dev, 6)) }},
		{"batch norm 1d wrong channels", "nn.BatchNorm1d", shape, []string{"[N, 3] or [N, 3, L]", "[4 2]"},
			func(dev tensor.Device) { nn.NewBatchNorm1d(dev, 3).Forward(z(dev, 4, 2)) }},
		{"batch norm 1d image", "nn.BatchNorm1d", shape, []string{"[N, 3]", "[4 3 2 2]"},
			func(dev tensor.Device) { nn.NewBatchNorm1d(dev, 3).Forward(z(dev, 4, 3, 2, 2)) }},
		{"batch norm 1d one value per channel", "nn.BatchNorm1d", shape, []string{"more than 1 value", "[1 3]"},
			func(dev tensor.Device) { nn.NewBatchNorm1d(dev, 3).Forward(z(dev, 1, 3)) }},
		{"batch norm 2d wrong rank", "nn.BatchNorm2d", shape, []string{"[N, 3, H, W]", "[4 3 5]"},
			func(dev tensor.Device) { nn.NewBatchNorm2d(dev, 3).Forward(z(dev, 4, 3, 5)) }},
		{"batch norm 2d wrong channels", "nn.BatchNorm2d", shape, []string{"[N, 3, H, W]", "[4 1 5 5]"},
			func(dev tensor.Device) { nn.NewBatchNorm2d(dev, 3).Forward(z(dev, 4, 1, 5, 5)) }},
		{"batch norm integer input", "nn.BatchNorm2d", tensor.ErrDType, []string{"floating-point", "int64"},
			func(dev tensor.Device) {
				nn.NewBatchNorm2d(dev, 1).Forward(tensor.ZerosOf(dev, tensor.Int64, 2, 1, 2, 2))
			}},
		{"group norm wrong channels", "nn.GroupNorm", shape, []string{"[N, 4, …]", "[2 6 3]"},
			func(dev tensor.Device) { nn.NewGroupNorm(dev, 2, 4).Forward(z(dev, 2, 6, 3)) }},
		{"group norm vector", "nn.GroupNorm", shape, []string{"[N, 4, …]", "[4]"},
			func(dev tensor.Device) { nn.NewGroupNorm(dev, 2, 4).Forward(z(dev, 4)) }},
		{"rms norm wrong trailing shape", "nn.RMSNorm", shape, []string{"[..., 8]", "[2 4]"},
			func(dev tensor.Device) { nn.NewRMSNorm(dev, []int{8}).Forward(z(dev, 2, 4)) }},
		{"dropout2d wrong rank", "nn.Dropout2d", shape, []string{"[N, C, H, W] or [C, H, W]", "[8 4]"},
			func(dev tensor.Device) { nn.NewDropout2d(0.5).Forward(z(dev, 8, 4)) }},
		{"flatten too few dimensions", "nn.Flatten", shape, []string{"dimensions 1 to -1", "[5]"},
			func(dev tensor.Device) { nn.NewFlatten().Forward(z(dev, 5)) }},
		{"flatten reversed", "nn.Flatten", shape, []string{"dimensions 2 to 1", "[2 3 4]"},
			func(dev tensor.Device) { nn.NewFlatten(2, 1).Forward(z(dev, 2, 3, 4)) }},
		{"softmax missing dimension", "nn.Softmax", shape, []string{"dimension 2", "[3 4]"},
			func(dev tensor.Device) { nn.NewSoftmax(2).Forward(z(dev, 3, 4)) }},
		{"log softmax missing dimension", "nn.LogSoftmax", shape, []string{"dimension -3", "[3 4]"},
			func(dev tensor.Device) { nn.NewLogSoftmax(-3).Forward(z(dev, 3, 4)) }},
		{"gelu unknown approximation", "nn.GELU", tensor.ErrArgument, []string{`"sigmoid"`},
			func(dev tensor.Device) { nn.GELU{Approximate: "sigmoid"}.Forward(z(dev, 3)) }},
		{"sequential names the failing layer", "nn.Linear", shape, []string{"[..., 10]", "[Sequential layer 2]"},
			func(dev tensor.Device) {
				nn.NewSequential(nn.NewLinear(dev, 4, 8), nn.ReLU{}, nn.NewLinear(dev, 10, 2)).Forward(z(dev, 3, 4))
			}},
	})
}

// TestLayerBadConfig checks the constructors' argument checks.
func TestLayerBadConfig(t *testing.T) {
	arg := tensor.ErrArgument
	runBadInputs(t, []badInput{
		{"linear zero features", "nn.NewLinear", arg, []string{"in=0"},
			func(dev tensor.Device) { nn.NewLinear(dev, 0, 2) }},
		{"conv groups do not divide", "nn.NewConv2d", arg, []string{"Groups 2", "channels 3"},
			func(dev tensor.Device) { nn.NewConv2d(dev, 3, 4, 3, nn.ConvConfig{Groups: 2}) }},
		{"conv same with stride", "nn.NewConv2d", arg, []string{"Same needs stride 1"},
			func(dev tensor.Device) { nn.NewConv2d(dev, 3, 4, 3, nn.ConvConfig{Same: true, Stride: []int{2}}) }},
		{"conv same with padding", "nn.NewConv1d", arg, []string{"Same with Padding"},
			func(dev tensor.Device) { nn.NewConv1d(dev, 3, 4, 3, nn.ConvConfig{Same: true, Padding: []int{1}}) }},
		{"conv bad padding mode", "nn.NewConv2d", arg, []string{`"mirror"`},
			func(dev tensor.Device) { nn.NewConv2d(dev, 3, 4, 3, nn.ConvConfig{PaddingMode: "mirror"}) }},
		{"conv stride list too long", "nn.NewConv2d", arg, []string{"Stride [1 2 3]", "1 or 2 values"},
			func(dev tensor.Device) { nn.NewConv2d(dev, 3, 4, 3, nn.ConvConfig{Stride: []int{1, 2, 3}}) }},
		{"conv zero kernel", "nn.NewConv2d", arg, []string{"kernel size"},
			func(dev tensor.Device) { nn.NewConv2d(dev, 3, 4, 0) }},
		{"conv transpose output padding", "nn.NewConvTranspose2d", arg, []string{"OutputPadding [2 2]"},
			func(dev tensor.Device) {
				nn.NewConvTranspose2d(dev, 3, 4, 3, nn.ConvTransposeConfig{Stride: []int{2}, OutputPadding: []int{2}})
			}},
		{"max pool padding over half kernel", "nn.NewMaxPool2d", arg, []string{"at most half"},
			func(tensor.Device) { nn.NewMaxPool2d(2, tensor.PoolConfig{Padding: []int{2}}) }},
		{"avg pool zero kernel", "nn.NewAvgPool2d", arg, []string{"kernel size"},
			func(tensor.Device) { nn.NewAvgPool2d(0) }},
		{"adaptive pool negative size", "nn.NewAdaptiveAvgPool2d", arg, []string{"-1"},
			func(tensor.Device) { nn.NewAdaptiveAvgPool2d(-1, 2) }},
		{"batch norm zero features", "nn.NewBatchNorm2d", arg, []string{"features"},
			func(dev tensor.Device) { nn.NewBatchNorm2d(dev, 0) }},
		{"batch norm momentum over 1", "nn.NewBatchNorm1d", arg, []string{"Momentum 2"},
			func(dev tensor.Device) { nn.NewBatchNorm1d(dev, 2, nn.BatchNormConfig{Momentum: 2}) }},
		{"group norm groups do not divide", "nn.NewGroupNorm", arg, []string{"groups 3", "channels 4"},
			func(dev tensor.Device) { nn.NewGroupNorm(dev, 3, 4) }},
		{"rms norm empty shape", "nn.NewRMSNorm", arg, []string{"shape []"},
			func(dev tensor.Device) { nn.NewRMSNorm(dev, nil) }},
		{"embedding padding out of range", "nn.NewEmbedding", arg, []string{"padding index 5", "[-5, 5)"},
			func(dev tensor.Device) { nn.NewEmbedding(dev, 5, 2, nn.EmbeddingConfig{Padded: true, PaddingIndex: 5}) }},
		{"bilinear zero features", "nn.NewBilinear", arg, []string{"in2=0"},
			func(dev tensor.Device) { nn.NewBilinear(dev, 2, 0, 3) }},
		{"dropout probability 1", "nn.NewDropout", arg, []string{"1 outside [0, 1)"},
			func(tensor.Device) { nn.NewDropout(1) }},
		{"dropout2d negative probability", "nn.NewDropout2d", arg, []string{"-0.1"},
			func(tensor.Device) { nn.NewDropout2d(-0.1) }},
		{"flatten three dims", "nn.NewFlatten", arg, []string{"at most 2"},
			func(tensor.Device) { nn.NewFlatten(0, 1, 2) }},
		{"gelu unknown approximation", "nn.NewGELU", arg, []string{`"fast"`},
			func(tensor.Device) { nn.NewGELU("fast") }},
		{"sequential nil layer", "nn.NewSequential", arg, []string{"layer 1"},
			func(tensor.Device) { nn.NewSequential(nn.ReLU{}, (*nn.Linear)(nil)) }},
		{"truncated normal empty interval", "nn.TruncatedNormal", arg, []string{"A=1 B=1"},
			func(dev tensor.Device) { nn.TruncatedNormal{A: 1, B: 1}.Init(dev, []int{3}, 3, 3) }},
		{"orthogonal vector", "nn.Orthogonal", arg, []string{"[5]"},
			func(dev tensor.Device) { nn.Orthogonal{}.Init(dev, []int{5}, 5, 5) }},
	})
}
