package nn_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// Losses are functions of tensors and an options struct whose zero value
// is PyTorch's defaults. Here a multi-label classifier's logits are scored
// with BCEWithLogits, weighting the rare second label's positives, and
// the gradient with respect to the logits is read back (the values are
// PyTorch's).
func ExampleBCEWithLogits() {
	dev := tensor.CPU().Autodiff()
	logits := tensor.FromFloat32s(dev, []float32{2, -1, -3, 0.5}, 2, 2).RequireGrad()
	target := tensor.FromFloat32s(dev, []float32{1, 0, 0, 1}, 2, 2)
	loss := nn.BCEWithLogits(logits, target, nn.BCEWithLogitsOptions{
		PosWeight: tensor.FromFloat32s(dev, []float32{1, 4}),
	})
	fmt.Printf("loss %.4f\n", loss.Item())
	fmt.Printf("gradient %.4f\n", loss.Backward().Get(logits).Float32s())
	// Output:
	// loss 0.5963
	// gradient [-0.0298 0.0672 0.0119 -0.3775]
}

// CTC scores unsegmented label sequences against per-frame
// log-probabilities. With two frames of uniform probabilities over a blank
// and one label, three of the four alignments spell the label, so the loss
// is −log(3/4).
func ExampleCTC() {
	dev := tensor.CPU()
	logProbs := tensor.Zeros(dev, 2, 1, 2).LogSoftmax(2) // [T=2, N=1, C=2]
	targets := tensor.FromInt64s(dev, []int64{1}, 1, 1)  // [N=1, S=1]
	loss := nn.CTC(logProbs, targets, []int{2}, []int{1}, nn.CTCOptions{Reduction: "sum"})
	fmt.Printf("%.4f\n", loss.Item())
	// Output:
	// 0.2877
}
