package optim_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// Minimise the Rosenbrock function (1 − x)² + 100·(y − x²)² from
// (−1.5, 2) with LBFGS and a strong-Wolfe line search: the closure
// computes the loss, StepClosure differentiates it as often as it needs.
func ExampleLBFGS() {
	dev := tensor.CPU().Autodiff()
	type point struct {
		XY *nn.Param `kiln:"xy"`
	}
	p := &point{XY: nn.NewParam(tensor.FromFloat64s(dev, []float64{-1.5, 2}, 2))}
	loss := func() *tensor.Tensor {
		x, y := p.XY.Narrow(0, 0, 1), p.XY.Narrow(0, 1, 1)
		return x.Neg().AddScalar(1).Square().Add(y.Sub(x.Square()).Square().MulScalar(100)).Sum()
	}
	opt := optim.NewLBFGS(optim.LBFGSConfig{HistorySize: 10, LineSearch: "strong_wolfe",
		ToleranceGrad: 1e-12, ToleranceChange: 1e-15}) // tighter than torch's defaults
	for step := range 3 {
		start := opt.StepClosure(p, loss)
		fmt.Printf("step %d: loss %.3g at the start\n", step, start)
	}
	fmt.Printf("minimum at %.6f\n", p.XY.Float64s())
	// Output:
	// step 0: loss 12.5 at the start
	// step 1: loss 1.31 at the start
	// step 2: loss 8.53e-08 at the start
	// minimum at [1.000000 1.000000]
}

// Train an embedding table with SparseAdam: the rows a batch does not look
// up keep their values and their moments.
func ExampleSparseAdam() {
	dev := tensor.CPU().Autodiff()
	dev.Seed(1)
	type model struct {
		Embed *nn.Embedding `kiln:"embed"`
	}
	m := &model{Embed: nn.NewEmbedding(dev, 4, 2)}
	opt := optim.NewSparseAdam(optim.SparseAdamConfig{LR: 0.1})
	defer opt.ZeroState()
	before := m.Embed.Weight.Float32s()
	ids := tensor.FromInt64s(dev, []int64{0, 2, 2}, 3) // rows 1 and 3 are not looked up
	for range 10 {
		tensor.Scope(func() {
			loss := m.Embed.Forward(ids).Sum()
			opt.Step(m, loss.Backward())
		})
	}
	after := m.Embed.Weight.Float32s()
	for row := range 4 {
		fmt.Printf("row %d moved: %v\n", row, after[2*row] != before[2*row])
	}
	// Output:
	// row 0 moved: true
	// row 1 moved: false
	// row 2 moved: true
	// row 3 moved: false
}

// Fit y = 2x − 1 with Adan, the official implementation's defaults and
// decoupled weight decay applied as a proximal step.
func ExampleAdan() {
	dev := tensor.CPU().Autodiff()
	dev.Seed(1)
	model := nn.NewLinear(dev, 1, 1)
	x := tensor.Randn(dev, 32, 1)
	y := x.MulScalar(2).AddScalar(-1)
	opt := optim.NewAdan(optim.AdanConfig{LR: 0.1, WeightDecay: 1e-4})
	defer opt.ZeroState()
	for range 500 {
		tensor.Scope(func() {
			loss := model.Forward(x).Sub(y).Square().Mean()
			opt.Step(model, loss.Backward())
		})
	}
	fmt.Printf("weight %.2f, bias %.2f\n", model.Weight.Float32s(), model.Bias.Float32s())
	// Output:
	// weight [2.00], bias [-1.00]
}
