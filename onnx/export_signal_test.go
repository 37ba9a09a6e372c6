package onnx_test

import (
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// spatialTransformer predicts a sampling grid from its input with a
// convolution and resamples the input on it, as a spatial transformer
// network does.
type spatialTransformer struct {
	Conv *nn.Conv2d
	cfg  tensor.GridSampleConfig
}

func (m *spatialTransformer) Forward(x *tensor.Tensor) *tensor.Tensor {
	grid := m.Conv.Forward(x).Tanh().MulScalar(1.2).Permute(0, 2, 3, 1)
	return tensor.GridSample(x, grid, m.cfg)
}

// spectrum runs a chain of FFTs over a real [N, L] input.
type spectrum struct{}

func (spectrum) Forward(x *tensor.Tensor) *tensor.Tensor {
	y := tensor.RFFT(x, 0, -1, "ortho")          // [N, L/2+1, 2]
	y = tensor.FFT(y, 12, -1, "forward")         // padded to 12
	y = tensor.IFFT(y.Transpose(0, 1), 0, 0, "") // along the batch-free axis 0 of [12, N, 2]
	return tensor.IFFT(y, 7, 1, "ortho").Transpose(0, 1)
}

// TestExportSignal exports GridSample (every mode and padding mode) and the
// FFTs, checks the files with onnx.checker where python3-onnx is installed,
// and loads them back with onnx.Load: outputs agree with Kiln's for the
// traced batch size and another.
func TestExportSignal(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(5)
	var models []exportCase
	for _, mode := range []string{"bilinear", "nearest", "bicubic"} {
		for _, padding := range []string{"zeros", "border", "reflection"} {
			cfg := tensor.GridSampleConfig{Mode: mode, PaddingMode: padding, AlignCorners: padding == "border"}
			models = append(models, exportCase{"grid_sample " + mode + " " + padding,
				&spatialTransformer{Conv: nn.NewConv2d(dev, 3, 2, 3, nn.ConvConfig{Padding: []int{1}}), cfg: cfg},
				[]int{3, 5, 6}, []string{"GridSample", "Conv"}})
		}
	}
	models = append(models, exportCase{"fft", spectrum{}, []int{10}, []string{"DFT", "Unsqueeze", "Mul"}})
	checkExports(t, dev, models, 1e-4, 1e-4)
}
