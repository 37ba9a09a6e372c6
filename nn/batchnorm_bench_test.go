package nn_test

import (
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// BenchmarkBatchNorm2dStep times BatchNorm2d followed by ReLU, forward in
// training mode and backward, on ResNet-18's first stage activations
// ([32, 64, 16, 16] float32); it reports elements/s. The "reference" case
// is the layer's earlier composition (normalise, then scale and shift
// separately, the variance taken apart from the centring), timed in the
// same run for comparison.
func BenchmarkBatchNorm2dStep(b *testing.B) {
	for _, impl := range []string{"layer", "reference"} {
		b.Run(impl, func(b *testing.B) {
			dev := tensor.CPU().Autodiff()
			dev.Seed(1)
			bn := nn.NewBatchNorm2d(dev, 64)
			defer nn.Release(bn)
			x := tensor.Randn(dev, 32, 64, 16, 16).RequireGrad().Keep()
			defer x.Release()
			forward := bn.Forward
			if impl == "reference" {
				forward = func(x *tensor.Tensor) *tensor.Tensor {
					mean := x.MeanKeep(0, 2, 3)
					variance := x.VarCorrection(0, true, 0, 2, 3)
					y := x.Sub(mean).Mul(variance.AddScalar(1e-5).Rsqrt())
					return y.Mul(bn.Weight.Reshape(1, 64, 1, 1)).Add(bn.Bias.Reshape(1, 64, 1, 1))
				}
			}
			step := func() {
				tensor.Scope(func() {
					y := forward(x).Relu()
					y.Sum().Backward().Get(x).Sum().Item()
				})
			}
			step()
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64(x.NumElements())*float64(b.N)/b.Elapsed().Seconds(), "elements/s")
		})
	}
}
