package nn_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// Affine is a model written from tensor ops: y = x·Weightᵀ + Bias.
type Affine struct {
	Weight *nn.Param
	Bias   *nn.Param `kiln:"bias"`
}

// TwoLayer stacks two Affine layers.
type TwoLayer struct{ L1, L2 *Affine }

func (a *Affine) Forward(x *tensor.Tensor) *tensor.Tensor {
	return x.Matmul(a.Weight.T()).Add(a.Bias.Tensor)
}

// Two affine layers: their parameters' names and count, a gradient step,
// and a state dict round trip into a fresh model.
func Example() {
	dev := tensor.CPU().Autodiff()
	dev.Seed(1)
	newModel := func() *TwoLayer {
		return &TwoLayer{
			L1: &Affine{Weight: nn.NewParam(tensor.Randn(dev, 4, 3)), Bias: nn.NewParam(tensor.Zeros(dev, 4))},
			L2: &Affine{Weight: nn.NewParam(tensor.Randn(dev, 2, 4)), Bias: nn.NewParam(tensor.Zeros(dev, 2))},
		}
	}
	model := newModel()
	for _, np := range nn.Params(model) {
		fmt.Println(np.Name, np.Param.Shape())
	}
	fmt.Println("parameters:", nn.NumParams(model))

	x := tensor.Randn(dev, 8, 3)
	loss := model.L2.Forward(model.L1.Forward(x).Tanh()).Square().Mean()
	grads := loss.Backward()
	for _, np := range nn.TrainableParams(model) {
		np.Param.Assign(np.Param.Detach().Sub(grads.Get(np.Param.Tensor).MulScalar(0.1)))
	}

	fresh := newModel()
	if _, _, err := nn.LoadStateDict(fresh, nn.StateDict(model)); err != nil {
		fmt.Println(err)
	}
	same := fresh.L2.Forward(fresh.L1.Forward(x).Tanh()).AllClose(model.L2.Forward(model.L1.Forward(x).Tanh()), 0, 0)
	fmt.Println("fresh model computes the same:", same)
	// Output:
	// L1.Weight [4 3]
	// L1.bias [4]
	// L2.Weight [2 4]
	// L2.bias [2]
	// parameters: 26
	// fresh model computes the same: true
}
