package optim_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// Fit a linear layer to y = x·[1.5, −2, 0.5] + 0.3 with AdamW (no weight
// decay on the bias) and a cosine learning-rate schedule.
func Example() {
	dev := tensor.CPU().Autodiff()
	dev.Seed(1)
	model := nn.NewLinear(dev, 3, 1)
	x := tensor.Randn(dev, 64, 3)
	y := x.Matmul(tensor.FromFloat32s(dev, []float32{1.5, -2, 0.5}, 3, 1)).AddScalar(0.3)

	opt := optim.NewAdamW(optim.AdamWConfig{
		LR:     0.1,
		Groups: []optim.ParamGroup{{Pattern: "bias", WeightDecay: optim.Float(0)}},
	})
	defer opt.ZeroState() // frees the moments' memory now rather than at garbage collection
	sched := optim.NewScheduler(opt, optim.NewCosineAnnealingLR(0.1, 300, 0.001))
	for step := range 300 {
		tensor.Scope(func() { // frees each step's activations and gradients
			loss := model.Forward(x).Sub(y).Square().Mean()
			if step%100 == 0 {
				fmt.Printf("step %3d: loss %.4f, lr %.4f\n", step, loss.Item(), opt.LR())
			}
			opt.Step(model, loss.Backward())
		})
		sched.Step()
	}
	fmt.Printf("weight %.2f, bias %.2f\n", model.Weight.Float32s(), model.Bias.Float32s())
	// Output:
	// step   0: loss 9.2771, lr 0.1000
	// step 100: loss 0.0000, lr 0.0753
	// step 200: loss 0.0001, lr 0.0257
	// weight [1.50 -1.99 0.50], bias [0.30]
}
