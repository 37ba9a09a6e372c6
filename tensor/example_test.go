package tensor_test

import (
	"errors"
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
	flat := true // no growth (tensors other code left to the GC may be freed meanwhile)
	for _, b := range live {
		flat = flat && b <= live[0]
	}
	fmt.Printf("loss below 0.01: %v, memory flat: %v\n", loss < 0.01, flat)
	// Output: loss below 0.01: true, memory flat: true
}

// Errors in tensor ops are panics carrying a *tensor.Error; Try turns them
// into ordinary errors that name the op and the shapes.
func ExampleTry() {
	dev := tensor.CPU()
	a, b := tensor.Ones(dev, 2, 3), tensor.Ones(dev, 2, 3)
	err := tensor.Try(func() { a.Matmul(b) })
	fmt.Println(err)
	fmt.Println(errors.Is(err, tensor.ErrShape))
	// Output:
	// tensor.Matmul: cannot multiply [2 3] by [2 3]: inner dimensions 3 and 2 differ
	// true
}

// Backward returns the gradients of every leaf that requires them.
func ExampleTensor_Backward() {
	dev := tensor.CPU().Autodiff()
	x := tensor.FromFloat32s(dev, []float32{1, 2, 3}).RequireGrad()
	y := x.Square().Sum() // y = Σ x², dy/dx = 2x
	grads := y.Backward()
	fmt.Println(x.Grad(grads).Float32s())
	// Output: [2 4 6]
}

// Printing follows PyTorch's format.
func ExampleTensor_String() {
	dev := tensor.CPU()
	fmt.Println(tensor.Arange(dev, 0, 6, 1).Reshape(2, 3).To(tensor.Float32).DivScalar(4))
	// Output:
	// tensor([[0.0000, 0.2500, 0.5000],
	//         [0.7500, 1.0000, 1.2500]], shape=[2 3], dtype=float32, device=cpu)
}

// ParseDevice accepts the names KILN_DEVICE uses; Autodiff is a view.
func ExampleParseDevice() {
	dev, err := tensor.ParseDevice("cpu")
	if err != nil {
		panic(err)
	}
	fmt.Println(dev, dev.Autodiff(), dev.Autodiff().IsAutodiff())
	_, err = tensor.ParseDevice("tpu:0")
	fmt.Println(errors.Is(err, tensor.ErrNoDevice))
	// Output:
	// cpu cpu+autodiff true
	// true
}
