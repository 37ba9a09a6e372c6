package onnx_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// ExampleExportFunction exports a cross-entropy loss as a graph of two
// inputs, the logits and the int64 class indices, and runs it back.
func ExampleExportFunction() {
	dev := tensor.CPU()
	dir, _ := os.MkdirTemp("", "kiln-export")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "loss.onnx")
	loss := func(xs []*tensor.Tensor) *tensor.Tensor {
		return nn.CrossEntropy(xs[0], xs[1], nn.CrossEntropyOptions{})
	}
	logits := tensor.FromFloat32s(dev, []float32{2, 0, 0, 0, 3, 0}, 2, 3)
	target := tensor.FromInt64s(dev, []int64{0, 1}, 2)
	err := onnx.ExportFunction(loss, nil, []*tensor.Tensor{logits, target}, path,
		onnx.ExportOptions{InputNames: []string{"logits", "target"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := onnx.Load(path, dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Run(map[string]*tensor.Tensor{"logits": logits, "target": target})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Inputs(), "→", m.Outputs())
	fmt.Printf("%.4f %.4f\n", out["output"].Item(), loss([]*tensor.Tensor{logits, target}).Item())
	// Output:
	// [logits target] → [output]
	// 0.1672 0.1672
}

// ExampleExportFunction_training exports batch normalisation in training
// mode: the graph normalises by the batch's own statistics.
func ExampleExportFunction_training() {
	dev := tensor.CPU()
	dir, _ := os.MkdirTemp("", "kiln-export")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bn.onnx")
	bn := nn.NewBatchNorm1d(dev, 2)
	defer nn.Release(bn)
	forward := func(xs []*tensor.Tensor) *tensor.Tensor { return bn.Forward(xs[0]) }
	x := tensor.FromFloat32s(dev, []float32{1, 10, 3, 20}, 2, 2)
	if err := onnx.ExportFunction(forward, bn, []*tensor.Tensor{x}, path, onnx.ExportOptions{Training: true}); err != nil {
		fmt.Println(err)
		return
	}
	m, err := onnx.Load(path, dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.3f\n", m.Forward(x).Float64s())
	// Output:
	// [-1.000 -1.000 1.000 1.000]
}
