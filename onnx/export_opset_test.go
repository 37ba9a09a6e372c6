package onnx_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// TestExportOpsets exports functions whose operators changed form after
// opset 17 (the reductions' axes, circular padding, a loss built on
// them) at every opset from 17 to 21, loads each file back and compares
// it with Kiln at two batch sizes. onnx.checker checks the opset-17 files
// only: Debian's onnx 1.12 knows no newer opset. For opsets 18 and up it
// also checks that the reductions carry their axes as an input.
func TestExportOpsets(t *testing.T) {
	reductions := func(v []*tensor.Tensor) *tensor.Tensor {
		x := v[0] // [n, 4, 6]
		r := x.MeanKeep(2).Squeeze(2).Add(x.Max(2)).Add(x.Min(2)).Add(x.Prod(2)).Add(x.LogSumExp(2))
		return r.Add(x.Var(2)).Add(x.Std(2)).Add(x.Mean(1).Sum(1).Unsqueeze(1))
	}
	circular := func(v []*tensor.Tensor) *tensor.Tensor { return v[0].Pad([]int{2, 1}, "circular", 0) }
	huber := func(v []*tensor.Tensor) *tensor.Tensor {
		return nn.Huber(v[0], v[1], nn.HuberOptions{Delta: 0.5, Reduction: "mean"})
	}
	three := func(n int) []*tensor.Tensor { return []*tensor.Tensor{floats(n, 4, 6)} }
	pair := func(n int) []*tensor.Tensor { return []*tensor.Tensor{floats(n, 4), floats(n, 4)} }
	for opset := onnx.ExportOpset; opset <= onnx.MaxExportOpset; opset++ {
		cases := []functionCase{
			{name: fmt.Sprintf("reductions opset %d", opset), fn: reductions, inputs: three, opset: opset,
				ops: []string{"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSumExp"}},
			{name: fmt.Sprintf("Huber opset %d", opset), fn: huber, inputs: pair, opset: opset},
		}
		if opset >= 19 {
			cases = append(cases, functionCase{name: fmt.Sprintf("circular padding opset %d", opset), fn: circular, inputs: three, opset: opset})
		}
		// DFT's axis became an input and GridSample's modes were renamed
		// (linear, cubic) in opset 20: Load reads both forms.
		for _, mode := range []string{"bilinear", "bicubic", "nearest"} {
			cfg := tensor.GridSampleConfig{Mode: mode, PaddingMode: "border"}
			cases = append(cases, functionCase{name: fmt.Sprintf("grid sample %s opset %d", mode, opset),
				fn:     func(v []*tensor.Tensor) *tensor.Tensor { return tensor.GridSample(v[0], v[1], cfg) },
				inputs: func(n int) []*tensor.Tensor { return []*tensor.Tensor{floats(n, 2, 5, 6), floats(n, 3, 4, 2)} },
				opset:  opset, ops: []string{"GridSample"}})
		}
		cases = append(cases, functionCase{name: fmt.Sprintf("fft opset %d", opset),
			fn: func(v []*tensor.Tensor) *tensor.Tensor {
				y := tensor.RFFT(v[0], 0, -1, "ortho")
				return tensor.FFT(y.Transpose(0, 1), 0, 0, "forward")
			},
			inputs: func(n int) []*tensor.Tensor { return []*tensor.Tensor{floats(n, 9)} }, opset: opset, ops: []string{"DFT"}})
		checkFunctionExports(t, cases, 1e-5, []int{3, 5})

		mp, err := onnx.TraceFunction(reductions, nil, three(3), onnx.ExportOptions{Opset: opset})
		if err != nil {
			t.Fatal(err)
		}
		if got := mp.OpsetImports[0].Version; got != int64(opset) {
			t.Errorf("opset %d: the file declares opset %d", opset, got)
		}
		for _, node := range mp.Graph.Nodes {
			if node.OpType == "ReduceSum" || len(node.OpType) < 6 || node.OpType[:6] != "Reduce" {
				continue
			}
			hasAttr := false
			for _, a := range node.Attributes {
				hasAttr = hasAttr || a.Name == "axes"
			}
			if asInput := len(node.Inputs) == 2; asInput == hasAttr || asInput != (opset >= 18) {
				t.Errorf("opset %d: %s has inputs %v and an axes attribute %v", opset, node.OpType, node.Inputs, hasAttr)
			}
		}
	}
}

// TestExportOpsetRefused checks that an opset Export cannot write, and
// circular padding at opset 17, are refused with typed errors.
func TestExportOpsetRefused(t *testing.T) {
	id := func(v []*tensor.Tensor) *tensor.Tensor { return v[0].MulScalar(2) }
	for _, opset := range []int{16, 22} {
		_, err := onnx.TraceFunction(id, nil, []*tensor.Tensor{floats(2, 3)}, onnx.ExportOptions{Opset: opset})
		if !errors.Is(err, tensor.ErrArgument) {
			t.Errorf("opset %d: %v, want ErrArgument", opset, err)
		}
	}
	_, err := onnx.TraceFunction(func(v []*tensor.Tensor) *tensor.Tensor { return v[0].Pad([]int{1, 1}, "circular", 0) }, nil,
		[]*tensor.Tensor{floats(2, 3)}, onnx.ExportOptions{Opset: 18})
	if !errors.Is(err, onnx.ErrExport) {
		t.Errorf("circular padding at opset 18: %v, want ErrExport", err)
	}
}
