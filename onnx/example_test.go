package onnx_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// ExampleLoad loads an MLP exported by PyTorch and runs it on a batch of 3.
func ExampleLoad() {
	dev := tensor.CPU()
	m, err := onnx.Load("testdata/models/mlp_op13.onnx", dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nn.Release(m)
	for _, p := range nn.Params(m) {
		fmt.Println(p.Name, p.Param.Shape())
	}
	y := m.Forward(tensor.Ones(dev, 3, 8))
	fmt.Println(m.Inputs(), "→", m.Outputs(), y.Shape())
	// Output:
	// fc1.bias [16]
	// fc1.weight [16 8]
	// fc2.bias [4]
	// fc2.weight [4 16]
	// [x] → [y] [3 4]
}
