package nn_test

import (
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// BenchmarkLSTMTrainStep times forward and backward through a 2-layer
// LSTM over 64 steps (batch 16, 64 features), reporting sequences/s.
func BenchmarkLSTMTrainStep(b *testing.B) {
	dev := tensor.CPU().Autodiff()
	l := nn.NewLSTM(dev, 64, 64, nn.RNNConfig{NumLayers: 2})
	x := tensor.Randn(dev, 64, 16, 64)
	b.ResetTimer()
	for range b.N {
		tensor.Scope(func() {
			out, _, _ := l.Forward(x, nil, nil)
			out.Square().Mean().Backward()
		})
	}
	b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "sequences/s")
}

// BenchmarkTransformerEncoderTrainStep times forward and backward through
// a 2-layer encoder (width 128, 4 heads, 64 positions, batch 8).
func BenchmarkTransformerEncoderTrainStep(b *testing.B) {
	dev := tensor.CPU().Autodiff()
	e := nn.NewTransformerEncoder(nn.NewTransformerEncoderLayer(dev, 128, 4,
		nn.TransformerLayerConfig{DimFeedforward: 512, BatchFirst: true}), 2, nil)
	x := tensor.Randn(dev, 8, 64, 128)
	b.ResetTimer()
	for range b.N {
		tensor.Scope(func() {
			e.ForwardMasked(x, nn.EncoderMasks{IsCausal: true}).Square().Mean().Backward()
		})
	}
	b.ReportMetric(float64(8*b.N)/b.Elapsed().Seconds(), "sequences/s")
}
