package tensor_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func TestCoreGradients(t *testing.T) {
	type tc struct {
		name   string
		f      func(in []*tensor.Tensor) *tensor.Tensor
		inputs func(dev tensor.Device) []*tensor.Tensor
	}
	cases := []tc{
		{"add broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Add(in[1]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 3), randFloat64(d, 2, -1, 1, 3)}
			}},
		{"sub broadcast both", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sub(in[1]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 1), randFloat64(d, 2, -1, 1, 1, 3)}
			}},
		{"mul", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Mul(in[1]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 3), randFloat64(d, 2, -1, 1, 2, 3)}
			}},
		{"div", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Div(in[1]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 3), randFloat64(d, 2, 1, 2, 3)}
			}},
		{"matmul", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Matmul(in[1]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 4), randFloat64(d, 2, -1, 1, 4, 2)}
			}},
		{"matmul transposed view", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Matmul(in[1]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 4, 3), randFloat64(d, 2, -1, 1, 4, 2)}
			}},
		{"matmul batched broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Matmul(in[1]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 1, 3, 4), randFloat64(d, 2, -1, 1, 3, 4, 2)}
			}},
		{"matmul vector", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Matmul(in[1]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 4), randFloat64(d, 2, -1, 1, 2, 4, 3)}
			}},
		{"matrix vector", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Matmul(in[1]) },
			func(d tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 4), randFloat64(d, 2, -1, 1, 4)}
			}},
		{"sum dims", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sum(0, 2) },
			func(d tensor.Device) []*tensor.Tensor { return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 3, 4)} }},
		{"mean keep", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].MeanKeep(-1) },
			func(d tensor.Device) []*tensor.Tensor { return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 3)} }},
		{"tanh of permuted", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Permute(2, 0, 1).Tanh() },
			func(d tensor.Device) []*tensor.Tensor { return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 2, 3, 4)} }},
		{"expand reshape", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Unsqueeze(0).Expand(3, -1, -1).Reshape(-1).Sigmoid()
		}, func(d tensor.Device) []*tensor.Tensor { return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 2, 2)} }},
		{"shared input", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Mul(in[0]).Add(in[0]) },
			func(d tensor.Device) []*tensor.Tensor { return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 5)} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				gradCheck(t, dev, c.f, c.inputs(dev)...)
			})
		})
	}
}

func TestUseAfterReleasePanics(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Ones(dev, 3)
		x.Release()
		err := tensor.Try(func() { x.Float32s() })
		if !errors.Is(err, tensor.ErrReleased) {
			t.Fatalf("reading a released tensor: %v, want ErrReleased", err)
		}
	})
}
