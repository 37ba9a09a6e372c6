package tensor_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// Vulkan opens a Vulkan GPU (or Mesa's lavapipe, a software Vulkan device).
// The same code runs on any device, so a program falls back to the CPU
// where there is no Vulkan; results agree within rounding.
func ExampleVulkan() {
	dev, err := tensor.Vulkan(0)
	if err != nil {
		dev = tensor.CPU() // no Vulkan device here: err says what is missing
	}
	x := tensor.Arange(dev, 0, 6, 1).Reshape(2, 3).To(tensor.Float32)
	y := x.Mul(x).Sum()
	fmt.Println(y.Item())
	// Output:
	// 55
}
