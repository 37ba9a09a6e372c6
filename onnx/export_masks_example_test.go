package onnx_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// ExampleTraceFunction_masks traces the negative log-likelihood with an
// ignored class at opset 18: the mask of the ignored positions and the
// class indices it gathers are computed by the graph from the target
// input, and the file declares the opset asked for.
func ExampleTraceFunction_masks() {
	dev := tensor.CPU()
	ignore := 1
	loss := func(xs []*tensor.Tensor) *tensor.Tensor {
		return nn.NLL(xs[0], xs[1], nn.NLLOptions{IgnoreIndex: &ignore})
	}
	logProbs := tensor.FromFloat32s(dev, []float32{-0.1, -2, -3, -2, -0.2, -3}, 2, 3).LogSoftmax(1)
	target := tensor.FromInt64s(dev, []int64{0, 1}, 2)
	mp, err := onnx.TraceFunction(loss, nil, []*tensor.Tensor{logProbs, target}, onnx.ExportOptions{Opset: 18})
	if err != nil {
		fmt.Println(err)
		return
	}
	seen := map[string]bool{}
	for _, n := range mp.Graph.Nodes {
		seen[n.OpType] = true
	}
	fmt.Println("opset", mp.OpsetImports[0].Version)
	fmt.Println("Equal", seen["Equal"], "Where", seen["Where"], "GatherElements", seen["GatherElements"])
	// Output:
	// opset 18
	// Equal true Where true GatherElements true
}
