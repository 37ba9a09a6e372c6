package nn_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// A regression head that predicts a mean and a variance per sample is
// trained with the Gaussian negative log-likelihood; one variance per row
// is shared by the row's outputs.
func ExampleGaussianNLL() {
	dev := tensor.CPU()
	mean := tensor.FromFloat64s(dev, []float64{1, 2, 0.5, -1}, 2, 2)
	target := tensor.FromFloat64s(dev, []float64{1.5, 2, 0, 0}, 2, 2)
	variance := tensor.FromFloat64s(dev, []float64{0.5, 2}, 2)
	loss := nn.GaussianNLL(mean, target, variance, nn.GaussianNLLOptions{Full: true})
	fmt.Printf("%.4f\n", loss.Item())
	// Output:
	// 1.0596
}

// The triplet loss with a distance of one's own: here the L1 distance,
// written with tensor ops so that gradients flow through it.
func ExampleTripletMarginWithDistance() {
	dev := tensor.CPU()
	anchor := tensor.FromFloat64s(dev, []float64{0, 0, 1, 1}, 2, 2)
	positive := tensor.FromFloat64s(dev, []float64{0.1, 0, 1, 1.5}, 2, 2)
	negative := tensor.FromFloat64s(dev, []float64{1, 1, 1, 1.2}, 2, 2)
	l1 := func(a, b *tensor.Tensor) *tensor.Tensor { return a.Sub(b).Abs().Sum(-1) }
	loss := nn.TripletMarginWithDistance(anchor, positive, negative,
		nn.TripletMarginWithDistanceOptions{Distance: l1, Reduction: "none"})
	fmt.Printf("%.2f\n", loss.Float64s())
	// Output:
	// [0.00 1.30]
}
