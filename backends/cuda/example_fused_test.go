//go:build !kiln_nocuda

package cuda_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// On a GPU behind the fusing decorator ("+fused"), a chain of element-wise
// ops is recorded and, at the next sync point, handed to the backend's
// RunGroup as one group: it runs as one kernel that NVRTC compiled for the
// chain's structure, with the intermediates in registers. (Not run as a
// test: it needs a GPU.)
func ExampleBackend_RunGroup() {
	dev, err := tensor.ParseDevice("cuda:0+fused")
	if err != nil {
		fmt.Println("no GPU:", err)
		return
	}
	x := tensor.FromFloat32s(dev, []float32{-1, 0, 1, 2}, 4)
	y := x.MulScalar(2).Relu().AddScalar(1) // three ops, one kernel
	fmt.Println(y.Float32s())
}
