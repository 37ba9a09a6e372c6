package tensor_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// A two-layer perceptron written by hand from tensors learns XOR-like data:
// gradients come from Backward, each step runs inside a Scope so its
// temporaries are released, and live memory stays flat.
func Example_xor() {
	dev := tensor.CPU().Autodiff()
	dev.Seed(42)
	x := tensor.FromFloat32s(dev, []float32{0, 0, 0, 1, 1, 0, 1, 1}, 4, 2)
	y := tensor.FromFloat32s(dev, []float32{0, 1, 1, 0}, 4, 1)
	w1, b1 := tensor.Randn(dev, 2, 16).RequireGrad(), tensor.Zeros(dev, 16).RequireGrad()
	w2, b2 := tensor.Randn(dev, 16, 1).RequireGrad(), tensor.Zeros(dev, 1).RequireGrad()
	var loss float64
	var live []int64
	for step := range 1000 {
		tensor.Scope(func() {
			h := x.Matmul(w1).Add(b1).Tanh()
			l := h.Matmul(w2).Add(b2).Sigmoid().Sub(y).Square().Mean()
			grads := l.Backward()
			for _, p := range []*tensor.Tensor{w1, b1, w2, b2} {
				p.Assign(p.Detach().Sub(grads.Get(p).MulScalar(1.0)))
			}
			loss = l.Item()
		})
		if step%100 == 0 {
			live = append(live, dev.MemoryStats().LiveBytes)
		}
	}
	flat := true
	for _, b := range live {
		flat = flat && b == live[0]
	}
	fmt.Printf("loss below 0.01: %v, memory flat: %v\n", loss < 0.01, flat)
	// Output: loss below 0.01: true, memory flat: true
}
