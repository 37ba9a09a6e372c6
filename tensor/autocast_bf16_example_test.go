package tensor_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// On a bfloat16 Autocast view of the CPU, Linear multiplies float32
// tensors as bfloat16 (1.00390625 rounds to 1, 3.015625 stays exact)
// with float32 sums and returns float32, so the ops after it stay in
// float32; the float32 weight gets a float32 gradient.
func ExampleLinear_autocastBF16() {
	dev := tensor.CPU().Autodiff()
	x := tensor.FromFloat32s(dev.Autocast(tensor.BFloat16), []float32{1.00390625, 2}, 1, 2)
	w := tensor.FromFloat32s(dev, []float32{3.015625, 1}, 1, 2).RequireGrad()
	y := tensor.Linear(x, w, nil)
	fmt.Println(y.DType(), y.Float32s())
	fmt.Println(w.Grad(y.Sum().Backward()).Float32s())
	// Output:
	// float32 [5.015625]
	// [1 2]
}
