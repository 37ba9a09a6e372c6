package onnx_test

import (
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// exportCase is one model for checkExports.
type exportCase struct {
	name  string
	model nn.Module
	input []int    // one example's shape; the batch dimension goes in front
	ops   []string // ONNX operators the exported graph must hold
}

// checkExports exports each case's model, traced on a batch of 3 in
// evaluation mode, checks the file with onnx.checker where python3-onnx is
// installed (and that it holds the case's operators), loads it back on
// every test device and compares the outputs with the model's for the
// traced batch size and another (5), within rtol and atol. It releases
// the models.
func checkExports(t *testing.T, dev tensor.Device, cases []exportCase, rtol, atol float64) {
	t.Helper()
	checkExportsAt(t, dev, cases, rtol, atol, []int{3, 5})
}

// checkExportsAt is checkExports comparing the outputs for the given batch
// sizes (the first is the traced one).
func checkExportsAt(t *testing.T, dev tensor.Device, cases []exportCase, rtol, atol float64, batches []int) {
	t.Helper()
	checker := pythonONNX(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer nn.Release(c.model)
			path := filepath.Join(t.TempDir(), "model.onnx")
			tensor.Scope(func() {
				if err := onnx.Export(c.model, tensor.Randn(dev, append([]int{batches[0]}, c.input...)...), path); err != nil {
					t.Fatal(err)
				}
			})
			if checker {
				checkONNX(t, path, c.ops)
			}
			nn.Eval(c.model)
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				back, err := onnx.Load(path, dev)
				if err != nil {
					t.Fatal(err)
				}
				defer nn.Release(back)
				for _, n := range batches {
					x := tensor.Randn(tensor.CPU(), append([]int{n}, c.input...)...)
					want := c.model.Forward(x)
					var got *tensor.Tensor
					if err := tensor.Try(func() { got = back.Forward(x.ToDevice(dev)) }); err != nil {
						t.Fatalf("batch %d: %v", n, err)
					}
					testutil.AssertValues(t, "re-imported", got, want.Shape(), want.Float64s(), rtol, atol)
				}
			})
		})
	}
}
