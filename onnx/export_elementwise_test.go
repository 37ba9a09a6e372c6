package onnx_test

import (
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// trigModel applies one element-wise op of tensor/trig.go to a squashed
// input, so that every op sees its domain ((−1, 1) for asin, acos, atanh;
// (1, 3) for acosh).
type trigModel struct {
	op func(*tensor.Tensor) *tensor.Tensor
	// shift moves the squashed input (tanh(x)·0.9) to the op's domain.
	shift float64
}

func (m *trigModel) Forward(x *tensor.Tensor) *tensor.Tensor {
	return m.op(x.Tanh().MulScalar(0.9).AddScalar(m.shift))
}

// TestExportTrig exports each inverse and hyperbolic trigonometric op,
// loads the file back and compares outputs, for the traced batch size and
// another.
func TestExportTrig(t *testing.T) {
	ops := []struct {
		name  string
		op    func(*tensor.Tensor) *tensor.Tensor
		shift float64
	}{
		{"asin", (*tensor.Tensor).Asin, 0}, {"acos", (*tensor.Tensor).Acos, 0},
		{"atan", (*tensor.Tensor).Atan, 0}, {"sinh", (*tensor.Tensor).Sinh, 0},
		{"cosh", (*tensor.Tensor).Cosh, 0}, {"asinh", (*tensor.Tensor).Asinh, 0},
		{"acosh", (*tensor.Tensor).Acosh, 2}, {"atanh", (*tensor.Tensor).Atanh, 0},
	}
	for _, c := range ops {
		t.Run(c.name, func(t *testing.T) {
			model := &trigModel{op: c.op, shift: c.shift}
			path := filepath.Join(t.TempDir(), c.name+".onnx")
			dev := tensor.CPU()
			tensor.Scope(func() {
				if err := onnx.Export(model, tensor.Randn(dev, 2, 5), path); err != nil {
					t.Fatal(err)
				}
			})
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				back, err := onnx.Load(path, dev)
				if err != nil {
					t.Fatal(err)
				}
				defer nn.Release(back)
				for _, n := range []int{2, 3} {
					x := tensor.Randn(dev, n, 5)
					want := model.Forward(x).Float64s()
					testutil.AssertValues(t, c.name, back.Forward(x), []int{n, 5}, want, 2e-6, 2e-6)
				}
			})
		})
	}
}
