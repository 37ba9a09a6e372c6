package nn_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// A PReLU with one learnable slope per channel: negative inputs are scaled
// by their channel's slope, and the gradient reaches the slopes.
func ExamplePReLU() {
	dev := tensor.CPU().Autodiff()
	prelu := nn.NewPReLU(dev, 2) // two channels, slopes 0.25
	x := tensor.FromFloat32s(dev, []float32{-4, 2, -8, 3}, 1, 2, 2)
	y := prelu.Forward(x)
	fmt.Println(y.Float32s())
	grads := y.Sum().Backward()
	fmt.Println("slope gradients:", prelu.Weight.Grad(grads).Float32s())
	// Output:
	// [-1 2 -2 3]
	// slope gradients: [-4 -8]
}

// The activations PyTorch users reach for beside ReLU, as modules: GLU
// halves the last dimension, gating one half with the sigmoid of the
// other; Hardtanh clamps; Softshrink and Hardshrink zero small values;
// Softmin weights the smallest element most; RReLU uses its mean slope
// once in evaluation mode.
func ExampleGLU() {
	dev := tensor.CPU()
	x := tensor.FromFloat64s(dev, []float64{-2, -0.25, 0.5, 3}, 1, 4)
	show := func(name string, m nn.Module) {
		fmt.Printf("%-11s %.4f\n", name, m.Forward(x).Float64s())
	}
	show("GLU", nn.NewGLU(-1))
	show("Hardtanh", nn.Hardtanh{})
	show("Softshrink", nn.Softshrink{})
	show("Hardshrink", nn.Hardshrink{})
	show("Threshold", nn.NewThreshold(0, -1))
	show("Softmin", nn.NewSoftmin(-1))
	show("Tanhshrink", nn.Tanhshrink{})
	rrelu := nn.NewRReLU(0.1, 0.3)
	nn.Eval(rrelu)
	show("RReLU eval", rrelu)
	// Output:
	// GLU         [-1.2449 -0.2381]
	// Hardtanh    [-1.0000 -0.2500 0.5000 1.0000]
	// Softshrink  [-1.5000 0.0000 0.0000 2.5000]
	// Hardshrink  [-2.0000 0.0000 0.0000 3.0000]
	// Threshold   [-1.0000 -1.0000 0.5000 3.0000]
	// Softmin     [0.7920 0.1376 0.0650 0.0053]
	// Tanhshrink  [-1.0360 -0.0051 0.0379 2.0049]
	// RReLU eval  [-0.4000 -0.0500 0.5000 3.0000]
}
