package nn_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestBatchNormFusedAndComposedLayers trains two BatchNorm2d layers on the
// same float32 batches: one with float32 parameters (the fused kernels) and
// one with float64 parameters (the composition, as the dtypes differ).
// Outputs, gradients and running statistics agree within float32
// rounding, and the strict device finds no buffer misused or leaked.
func TestBatchNormFusedAndComposedLayers(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		fused := nn.NewBatchNorm2d(ad, 3)
		composed := nn.NewBatchNorm2d(ad, 3, nn.BatchNormConfig{DType: tensor.Float64})
		defer nn.Release(fused)
		defer nn.Release(composed)
		ad.Seed(7)
		for step := range 3 {
			tensor.Scope(func() {
				x := tensor.Randn(ad, 4, 3, 5, 3).MulScalar(2).AddScalar(float64(step)).RequireGrad()
				g := tensor.Randn(ad, 4, 3, 5, 3)
				var outs [2][]*tensor.Tensor
				for i, layer := range []*nn.BatchNorm2d{fused, composed} {
					y := layer.Forward(x)
					grads := y.Mul(g).Sum().Backward()
					outs[i] = []*tensor.Tensor{y, grads.Get(x), grads.Get(layer.Weight.Tensor), grads.Get(layer.Bias.Tensor),
						layer.RunningMean.Tensor, layer.RunningVar.Tensor}
				}
				for k := range outs[0] {
					a, b := outs[0][k].Float64s(), outs[1][k].Float64s()
					for j := range a {
						if math.Abs(a[j]-b[j]) > 2e-5*math.Max(1, math.Abs(b[j])) {
							t.Fatalf("step %d result %d element %d: fused %v, composed %v", step, k, j, a[j], b[j])
						}
					}
				}
			})
		}
	})
}
