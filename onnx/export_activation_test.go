package onnx_test

import (
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestExportActivations exports small models using every activation of
// nn/activation_extra.go (PReLU with one slope, per channel on a matrix and
// per channel on images, Hardtanh, Threshold, Softshrink, Hardshrink,
// Softmin, GLU, Tanhshrink and RReLU, in evaluation mode as Export traces),
// checks each file with onnx.checker where python3-onnx is installed, and
// loads it back with onnx.Load: the outputs agree with Kiln's for the
// traced batch size and another.
func TestExportActivations(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(11)
	models := []exportCase{
		{"dense", nn.NewSequential(
			nn.NewLinear(dev, 4, 8), nn.NewPReLU(dev, 8), nn.NewHardtanh(-0.5, 0.8), nn.NewThreshold(0.1, -0.3),
			nn.NewLinear(dev, 8, 8), nn.NewSoftshrink(0.2), nn.NewLinear(dev, 8, 8), nn.NewHardshrink(0.1),
			nn.NewLinear(dev, 8, 8), nn.NewPReLU(dev, 1), nn.Tanhshrink{}, nn.NewRReLU(0.1, 0.3),
			nn.NewGLU(-1), nn.NewSoftmin(1),
		), []int{4}, []string{"PRelu", "Clip", "Where", "Shrink", "Tanh", "LeakyRelu", "Sigmoid", "Softmax"}},
		{"conv", nn.NewSequential(
			nn.NewConv2d(dev, 2, 4, 3), nn.NewPReLU(dev, 4), nn.NewGLU(1), nn.NewPReLU(dev, 1), nn.Hardtanh{},
		), []int{2, 5, 5}, []string{"Conv", "PRelu", "Reshape", "Slice", "Clip"}},
	}
	checkExports(t, dev, models, 1e-5, 1e-6)
}
