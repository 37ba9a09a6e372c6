package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestHalfTypesAcceptedEverywhere runs a sweep of ops on float16 and
// bfloat16 inputs and compares them with the same ops in float32: every
// backend must accept the half types (the CPU computes them in float32) and
// keep the dtype of the result.
func TestHalfTypesAcceptedEverywhere(t *testing.T) {
	ops := []struct {
		name string
		f    func(x, y *tensor.Tensor) *tensor.Tensor
	}{
		{"add", func(x, y *tensor.Tensor) *tensor.Tensor { return x.Add(y) }},
		{"mul scalar", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.MulScalar(1.5) }},
		{"div", func(x, y *tensor.Tensor) *tensor.Tensor { return x.Div(y.AddScalar(3)) }},
		{"exp", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Exp() }},
		{"gelu", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Gelu() }},
		{"sum", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Sum(1) }},
		{"mean", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Mean() }},
		{"max", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Max(0) }},
		{"matmul", func(x, y *tensor.Tensor) *tensor.Tensor { return x.Matmul(y.T()) }},
		{"softmax", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Softmax(-1) }},
		{"log softmax", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.LogSoftmax(-1) }},
		{"layer norm", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.LayerNorm([]int{4}, nil, nil, 1e-5) }},
		{"transpose contiguous", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.T().Contiguous() }},
		{"cat", func(x, y *tensor.Tensor) *tensor.Tensor { return tensor.Cat([]*tensor.Tensor{x, y}, 0) }},
		{"where", func(x, y *tensor.Tensor) *tensor.Tensor { return tensor.Where(x.Gt(y), x, y) }},
		{"cumsum", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Cumsum(1) }},
		{"sort", func(x, _ *tensor.Tensor) *tensor.Tensor { v, _ := x.Sort(1, false); return v }},
		{"conv2d", func(x, y *tensor.Tensor) *tensor.Tensor {
			return tensor.Conv2d(x.Reshape(1, 1, 3, 4), y.Reshape(3, 1, 2, 2).Narrow(0, 0, 1), nil, tensor.ConvConfig{})
		}},
	}
	for _, half := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		for _, op := range ops {
			t.Run(half.String()+"/"+op.name, func(t *testing.T) {
				forEachDevice(t, func(t *testing.T, dev tensor.Device) {
					x32 := tensor.FromFloat32s(dev, []float32{-1.5, -0.75, 0, 0.5, 1, 1.25, 2, -2, 0.25, 3, -0.5, 0.125}, 3, 4)
					y32 := tensor.FromFloat32s(dev, []float32{0.5, 1, -1, 2, 0.25, -0.5, 1.5, 0, 1, -2, 0.75, 2.5}, 3, 4)
					// Round the inputs to the half type first, so both runs see the same values.
					xh, yh := x32.To(half), y32.To(half)
					want := op.f(xh.To(tensor.Float32), yh.To(tensor.Float32))
					got := op.f(xh, yh)
					if got.DType() != half {
						t.Fatalf("result dtype %s, want %s", got.DType(), half)
					}
					tol := 1e-2 // bfloat16 keeps 8 bits of mantissa
					if half == tensor.Float16 {
						tol = 2e-3
					}
					if !got.To(tensor.Float32).AllClose(want, tol, tol) {
						t.Fatalf("%s result\n%v\nfloat32 result\n%v", half, got, want)
					}
				})
			})
		}
	}
}
