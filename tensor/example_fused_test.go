package tensor_test

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// A chain of element-wise ops on a fused device runs as one tiled pass
// when its result is read, with the same bits as on the plain CPU.
func ExampleDevice_Fused() {
	gelu := func(x *tensor.Tensor) *tensor.Tensor { // GELU-tanh from primitives
		t := x.Mul(x).MulScalar(0.044715).AddScalar(1).Mul(x).MulScalar(math.Sqrt(2 / math.Pi)).Tanh()
		return t.AddScalar(1).Mul(x).MulScalar(0.5)
	}
	data := []float32{-2, -0.5, 0, 0.5, 2}
	fused := tensor.MustDevice("cpu+fused")
	a := gelu(tensor.FromFloat32s(tensor.CPU(), data, 5)).Float32s()
	b := gelu(tensor.FromFloat32s(fused, data, 5)).Float32s() // the read runs the nine ops
	fmt.Println(fused, fused.IsFused())
	fmt.Printf("%.4f\n", b)
	fmt.Println("same bits:", fmt.Sprint(a) == fmt.Sprint(b))
	// Output:
	// cpu+fused true
	// [-0.0454 -0.1543 0.0000 0.3457 1.9546]
	// same bits: true
}

// LinearActivation is a linear layer and its activation in one call: on
// the CPU the activation runs on each block of rows of the product while
// it is still in cache. Results and gradients are bit for bit those of
// Linear followed by the activation.
func ExampleLinearActivation() {
	dev := tensor.CPU().Autodiff()
	x := tensor.FromFloat32s(dev, []float32{1, -2, 0.5, 3}, 2, 2)
	w := tensor.FromFloat32s(dev, []float32{0.5, -1, 2, 0.25, -0.5, 1}, 3, 2).RequireGrad()
	b := tensor.FromFloat32s(dev, []float32{0.1, 0, -0.2}, 3).RequireGrad()
	y := tensor.LinearActivation(x, w, b, "gelu")
	ref := tensor.Linear(x, w, b).Gelu()
	fmt.Println(y.Shape())
	fmt.Printf("%.4f\n", y.Float32s())
	fmt.Println("same bits as Linear then Gelu:", fmt.Sprint(y.Float32s()) == fmt.Sprint(ref.Float32s()))
	grads := y.Sum().Backward()
	fmt.Printf("dL/db %.4f\n", grads.Get(b).Float32s())
	// Output:
	// [2 3]
	// [2.5879 1.3998 -0.0094 -0.0107 1.6799 2.5363]
	// same bits as Linear then Gelu: true
	// dL/db [1.0031 2.2384 1.0093]
}

// Conv2dActivation is a convolution layer and its activation in one call:
// here a 2×2 kernel over a 3×3 image with a bias, then ReLU, bit for bit
// Conv2d followed by Relu.
func ExampleConv2dActivation() {
	dev := tensor.CPU().Autodiff()
	x := tensor.FromFloat32s(dev, []float32{1, -2, 0.5, 3, 0, -1, 2, 1, -0.5}, 1, 1, 3, 3)
	w := tensor.FromFloat32s(dev, []float32{0.5, -1, 1, 0.25}, 1, 1, 2, 2).RequireGrad()
	b := tensor.FromFloat32s(dev, []float32{-0.5}, 1).RequireGrad()
	y := tensor.Conv2dActivation(x, w, b, tensor.ConvConfig{}, "relu")
	ref := tensor.Conv2d(x, w, b, tensor.ConvConfig{}).Relu()
	fmt.Println(y.Shape())
	fmt.Printf("%.4f\n", y.Float32s())
	fmt.Println("same bits as Conv2d then Relu:", fmt.Sprint(y.Float32s()) == fmt.Sprint(ref.Float32s()))
	grads := y.Sum().Backward()
	fmt.Printf("dL/db %.4f\n", grads.Get(b).Float32s())
	// Output:
	// [1 1 2 2]
	// [5.0000 0.0000 3.2500 1.3750]
	// same bits as Conv2d then Relu: true
	// dL/db [3.0000]
}
