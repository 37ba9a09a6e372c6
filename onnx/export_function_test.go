package onnx_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// functionCase is one forward function of several inputs for
// checkFunctionExports.
type functionCase struct {
	name   string
	fn     func(xs []*tensor.Tensor) *tensor.Tensor
	model  any                              // holds fn's parameters; may be nil
	inputs func(batch int) []*tensor.Tensor // on the CPU
	ops    []string                         // ONNX operators the graph must hold
	train  bool                             // trace (and compare) in training mode
	opset  int                              // ExportOptions.Opset
}

// checkFunctionExports exports each case with onnx.ExportFunction on the
// inputs of the first batch size, checks the file with onnx.checker (for
// opset 17, the newest Debian's onnx 1.12 knows), loads
// it back on every test device and compares its output with fn's for
// every batch size, within tol (relative and absolute).
func checkFunctionExports(t *testing.T, cases []functionCase, tol float64, batches []int) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.model != nil {
				defer nn.Release(c.model)
			}
			path := filepath.Join(t.TempDir(), "model.onnx")
			tensor.Scope(func() {
				if err := onnx.ExportFunction(c.fn, c.model, c.inputs(batches[0]), path, onnx.ExportOptions{Training: c.train, Opset: c.opset}); err != nil {
					t.Fatal(err)
				}
			})
			if c.opset <= onnx.ExportOpset {
				checkONNX(t, path, c.ops) // Debian's onnx 1.12 checks opsets up to 17
			}
			if c.model != nil && c.train {
				nn.Train(c.model)
			} else if c.model != nil {
				nn.Eval(c.model)
			}
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				back, err := onnx.Load(path, dev)
				if err != nil {
					t.Fatal(err)
				}
				defer nn.Release(back)
				for _, n := range batches {
					xs := c.inputs(n)
					feed := map[string]*tensor.Tensor{}
					names := back.Inputs()
					if len(names) != len(xs) {
						t.Fatalf("the graph has inputs %v for %d examples", names, len(xs))
					}
					for i, x := range xs {
						feed[names[i]] = x.ToDevice(dev)
					}
					var want *tensor.Tensor
					if err := tensor.Try(func() { want = c.fn(xs) }); err != nil {
						t.Fatal(err)
					}
					var got map[string]*tensor.Tensor
					var runErr error
					if err := tensor.Try(func() { got, runErr = back.Run(feed) }); err != nil || runErr != nil {
						t.Fatalf("batch %d: %v %v", n, err, runErr)
					}
					testutil.AssertValues(t, fmt.Sprintf("re-imported, batch %d", n), got["output"], want.Shape(), want.Float64s(), tol, tol)
				}
			})
		})
	}
}
