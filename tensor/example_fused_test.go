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
