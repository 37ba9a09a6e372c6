package nn_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// A 1-D encoder-decoder for signals: strided convolutions and pooling
// down, a transposed convolution and an Upsample back up, instance norm
// between.
func ExampleConvTranspose1d() {
	dev := tensor.CPU()
	model := nn.NewSequential(
		nn.NewConv1d(dev, 2, 8, 3, nn.ConvConfig{Padding: []int{1}}),
		nn.NewInstanceNorm1d(dev, 8, nn.InstanceNormConfig{Affine: true}),
		nn.ReLU{},
		nn.NewMaxPool1d(2),
		nn.NewConvTranspose1d(dev, 8, 4, 4, nn.ConvTransposeConfig{Stride: []int{2}, Padding: []int{1}}),
		nn.NewUpsample(tensor.InterpolateConfig{ScaleFactor: []float64{2}, Mode: "linear"}),
		nn.NewAdaptiveAvgPool1d(10),
	)
	x := tensor.Randn(dev, 3, 2, 16)
	fmt.Println(model.Forward(x).Shape())
	for _, np := range nn.Params(model) {
		fmt.Println(np.Name, np.Param.Shape())
	}
	// Output:
	// [3 4 10]
	// 0.weight [8 2 3]
	// 0.bias [8]
	// 1.weight [8]
	// 1.bias [8]
	// 4.weight [8 4 4]
	// 4.bias [4]
}

// A super-resolution head: a convolution makes r² channels per output
// channel and PixelShuffle moves them into an r-times larger image;
// PixelUnshuffle undoes it exactly.
func ExamplePixelShuffle() {
	dev := tensor.CPU()
	head := nn.NewSequential(
		nn.NewConv2d(dev, 3, 3*4, 3, nn.ConvConfig{Padding: []int{1}}),
		nn.NewPixelShuffle(2),
	)
	x := tensor.Randn(dev, 1, 3, 8, 8)
	y := head.Forward(x)
	fmt.Println(y.Shape())
	back := nn.NewPixelUnshuffle(2).Forward(y)
	fmt.Println(back.Shape())
	// Output:
	// [1 3 16 16]
	// [1 12 8 8]
}

// Unfold cuts an image into its 2×2 patches (one column each), and Fold
// puts them back, summing where patches overlap: with stride 2 they do
// not, so the round trip gives the image back.
func ExampleUnfold() {
	dev := tensor.CPU()
	x := tensor.FromFloat32s(dev, []float32{
		1, 2, 3, 4,
		5, 6, 7, 8,
		9, 10, 11, 12,
		13, 14, 15, 16}, 1, 1, 4, 4)
	cols := nn.NewUnfold(2, tensor.FoldConfig{Stride: []int{2}}).Forward(x)
	fmt.Println(cols.Shape())
	fmt.Println(cols.Select(0, 0).Select(1, 0).Float32s()) // the top-left patch
	img := nn.NewFold([]int{4, 4}, 2, tensor.FoldConfig{Stride: []int{2}}).Forward(cols)
	fmt.Println(img.Float32s())
	// Output:
	// [1 4 4]
	// [1 2 5 6]
	// [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16]
}

// A plain recurrent network over a batch of sequences: the output at
// every step and the final state of each layer.
func ExampleRNN() {
	dev := tensor.CPU()
	rnn := nn.NewRNN(dev, 5, 8, nn.PlainRNNConfig{Nonlinearity: "relu",
		RNNConfig: nn.RNNConfig{NumLayers: 2, BatchFirst: true}})
	out, hn := rnn.Forward(tensor.Randn(dev, 4, 7, 5), nil) // [N, T, F]
	fmt.Println(out.Shape(), hn.Shape())
	// Output:
	// [4 7 8] [2 4 8]
}

// A deformable convolution whose offsets and modulation mask are
// predicted from the input by ordinary convolutions, as in DCNv2. With
// those predictors at zero the offsets are zero and the mask ½.
func ExampleDeformConv2d() {
	dev := tensor.CPU()
	const k = 3
	offsets := nn.NewConv2d(dev, 4, 2*k*k, k, nn.ConvConfig{Padding: []int{1}, WeightInit: nn.Zeros{}, BiasInit: nn.Zeros{}})
	masks := nn.NewConv2d(dev, 4, k*k, k, nn.ConvConfig{Padding: []int{1}, WeightInit: nn.Zeros{}, BiasInit: nn.Zeros{}})
	deform := nn.NewDeformConv2d(dev, 4, 6, k, nn.DeformConvConfig{Padding: []int{1}})
	x := tensor.Randn(dev, 2, 4, 9, 9)
	y := deform.Forward(x, offsets.Forward(x), masks.Forward(x).Sigmoid())
	fmt.Println(y.Shape(), deform.OffsetChannels(1))
	// Output:
	// [2 6 9 9] 18
}
