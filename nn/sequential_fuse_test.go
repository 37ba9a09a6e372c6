package nn_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// A Sequential runs a Conv2d followed by a ReLU as one
// tensor.Conv2dActivation: its output and the gradients of the input and
// both parameters equal, bit for bit, the two layers run one after the
// other, with zero padding and with reflect padding, and a convolution's
// error still names its position in the Sequential.
func TestSequentialConvReLU(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		ad.Seed(3)
		for _, mode := range []string{"zeros", "reflect"} {
			conv := nn.NewConv2d(ad, 3, 8, 3, nn.ConvConfig{Padding: []int{1}, PaddingMode: mode})
			seq := nn.NewSequential(conv, nn.ReLU{}, nn.NewFlatten())
			x := tensor.Randn(ad, 4, 3, 7, 6).RequireGrad()
			fused := seq.Forward(x)
			alone := nn.NewFlatten().Forward(nn.ReLU{}.Forward(conv.Forward(x)))
			a, b := fused.Float64s(), alone.Float64s()
			for i := range a {
				if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
					t.Fatalf("%s: element %d = %v in the Sequential, %v layer by layer", mode, i, a[i], b[i])
				}
			}
			ga, gb := fused.Sum().Backward(), alone.Sum().Backward()
			for i, in := range []*tensor.Tensor{x, conv.Weight.Tensor, conv.Bias.Tensor} {
				a, b := ga.Get(in).Float64s(), gb.Get(in).Float64s()
				for j := range a {
					if math.Float64bits(a[j]) != math.Float64bits(b[j]) {
						t.Fatalf("%s: gradient %d element %d = %v in the Sequential, %v layer by layer", mode, i, j, a[j], b[j])
					}
				}
			}
		}
		seq := nn.NewSequential(nn.ReLU{}, nn.NewConv2d(ad, 3, 8, 5), nn.ReLU{})
		// a convolution too big for its input
		expectPanic(t, func() { seq.Forward(tensor.Randn(ad, 1, 3, 4, 4)) }, tensor.ErrShape, "[Sequential layer 1]")
	})
}
