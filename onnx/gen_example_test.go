package onnx_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/kiln-ml/kiln/onnx"
)

// Generate writes a Go package running the model: here, PyTorch's export
// of a two-layer MLP. From a //go:generate line the same is
// `kiln onnx gen mlp.onnx -o . --package mlp`.
func ExampleGenerate() {
	dir, err := os.MkdirTemp("", "mlp")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	res, err := onnx.Generate("testdata/models/mlp_op13.onnx", dir, onnx.GenerateOptions{Package: "mlp"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Nodes, "nodes,", len(res.Fallbacks), "fallbacks")
	src, err := os.ReadFile(res.GoFile)
	if err != nil {
		panic(err)
	}
	_, body, _ := strings.Cut(string(src), "func (m *Model) Compute")
	body, _, _ = strings.Cut(body, "\n}\n")
	fmt.Println("func (m *Model) Compute" + body + "\n}")
	// Output:
	// 3 nodes, 0 fallbacks
	// func (m *Model) Compute(x *tensor.Tensor) (out0 *tensor.Tensor) {
	// 	checkInput("x", x, tensor.Float32, -1, 8)
	// 	// /fc1/Gemm: Gemm
	// 	fc1Gemm := tensor.Linear(x, m.Fc1Weight.Tensor, m.Fc1Bias.Tensor)
	// 	// /Relu: Relu
	// 	relu := fc1Gemm.Relu()
	// 	// /fc2/Gemm: Gemm
	// 	y := tensor.Linear(relu, m.Fc2Weight.Tensor, m.Fc2Bias.Tensor)
	// 	return y
	// }
}
