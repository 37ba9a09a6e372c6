//go:build !kiln_nocuda

package cuda_test

import (
	"errors"
	"fmt"

	"github.com/kiln-ml/kiln/backends/cuda"
	"github.com/kiln-ml/kiln/tensor"
)

// Use the GPU when there is one, else say why not and stay on the CPU. (Not
// run as a test: its output depends on the machine.)
func ExampleAvailable() {
	dev := tensor.CPU()
	if err := cuda.Available(); err != nil {
		if errors.Is(err, cuda.ErrNoDriver) {
			fmt.Println("no NVIDIA driver:", err)
		} else {
			fmt.Println("CUDA unusable:", err)
		}
	} else if gpu, err := tensor.Cuda(0); err == nil {
		dev = gpu
	}
	x := tensor.Ones(dev, 2, 2)
	fmt.Println(x.Matmul(x))
}
