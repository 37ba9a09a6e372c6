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

// fnModel applies f to its input, with an optional layer holding the
// parameters f uses.
type fnModel struct {
	Layer nn.Module
	f     func(m *fnModel, x *tensor.Tensor) *tensor.Tensor
}

func (m *fnModel) Forward(x *tensor.Tensor) *tensor.Tensor { return m.f(m, x) }

// TestExportCoreOps exports a model applying each of tensor's core ops that
// ONNX composes (export_core.go), checks the file with onnx.checker where
// python3-onnx is installed, imports it back and compares the outputs, for
// the traced batch size and another where the op keeps the batch symbolic.
func TestExportCoreOps(t *testing.T) {
	adev := tensor.CPU().Autodiff()
	adev.Seed(5)
	type exportCase struct {
		name  string
		shape []int // input; the first dimension is the batch
		layer nn.Module
		f     func(m *fnModel, x *tensor.Tensor) *tensor.Tensor
		batch bool // the exported graph runs on another batch size too
	}
	cases := []exportCase{
		{name: "amax", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Max(-1) }, batch: true},
		{name: "amin keep", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.MinKeep(1, 2) }, batch: true},
		{name: "prod", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Prod(1) }, batch: true},
		{name: "logsumexp", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.LogSumExp(-1) }, batch: true},
		{name: "max_dim", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { v, _ := x.MaxDim(1, true); return v }, batch: true},
		{name: "min_dim", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { v, _ := x.MinDim(-1, false); return v }, batch: true},
		{name: "var", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Var(-1) }, batch: true},
		{name: "std correction 0 keep", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return x.StdCorrection(0, true, 1, 2)
		}, batch: true},
		{name: "cumsum", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Cumsum(-1) }, batch: true},
		{name: "dot", shape: []int{6}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Dot(x.MulScalar(2)) }},
		{name: "scalar_pow", shape: []int{2, 3}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return tensor.ScalarPow(2, x) }, batch: true},
		{name: "remainder", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return x.MulScalar(5).Rem(x.Flip(-1).AddScalar(0.1))
		}, batch: true},
		{name: "remainder_scalar", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.MulScalar(5).RemScalar(-1.5) }, batch: true},
		{name: "flip", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Flip(1, -1) }, batch: true},
		{name: "roll", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Roll(-5, -1) }, batch: true},
		{name: "repeat with a new dimension", shape: []int{2, 3}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Repeat(2, 1, 3) }},
		{name: "stack", shape: []int{2, 3}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.Stack([]*tensor.Tensor{x, x.Neg()}, -1)
		}, batch: true},
		{name: "pad constant", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return x.Pad([]int{1, 2, 0, 1}, "constant", 0.5)
		}, batch: true},
		{name: "pad reflect", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Pad([]int{2, 1}, "reflect", 0) }, batch: true},
		{name: "pad replicate crop", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return x.Pad([]int{-1, 2}, "replicate", 0)
		}, batch: true},
		{name: "sort", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { v, _ := x.Sort(-1, false); return v }, batch: true},
		{name: "sort descending", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { v, _ := x.Sort(1, true); return v }, batch: true},
		{name: "topk", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { v, _ := x.TopK(2, -1, true); return v }, batch: true},
		{name: "topk smallest", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { v, _ := x.TopK(2, 1, false); return v }, batch: true},
		{name: "gelu_tanh", shape: []int{2, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.MulScalar(3).GeluTanh() }, batch: true},
		{name: "log_sigmoid", shape: []int{2, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.MulScalar(3).LogSigmoid() }, batch: true},
		{name: "mish", shape: []int{2, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.MulScalar(3).Mish() }, batch: true},
		{name: "softplus beta 2 threshold 1", shape: []int{2, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return x.MulScalar(3).Softplus(2, 1)
		}, batch: true},
		{name: "matmul of a transpose with negative dims", shape: []int{2, 3, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return x.Matmul(x.Transpose(-1, -2))
		}, batch: true},
		{name: "pow scalar", shape: []int{2, 3}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor { return x.Abs().PowScalar(1.5) }, batch: true},
		{name: "rms_norm", shape: []int{2, 3, 4}, layer: nn.NewRMSNorm(adev, []int{4}), f: func(m *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return m.Layer.Forward(x)
		}, batch: true},
		{name: "conv_transpose2d", shape: []int{2, 3, 5, 4}, layer: nn.NewConvTranspose2d(adev, 3, 2, 3, nn.ConvTransposeConfig{Stride: []int{2, 1}, Padding: []int{1, 0}, OutputPadding: []int{1, 0}}),
			f: func(m *fnModel, x *tensor.Tensor) *tensor.Tensor { return m.Layer.Forward(x) }, batch: true},
		{name: "adaptive_avg_pool2d", shape: []int{2, 3, 4, 6}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.AdaptiveAvgPool2d(x, 2, 3)
		}, batch: true},
		{name: "adaptive_avg_pool1d global", shape: []int{2, 3, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.AdaptiveAvgPool1d(x, 1)
		}, batch: true},
		{name: "interpolate nearest", shape: []int{2, 3, 4, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.Interpolate(x, tensor.InterpolateConfig{Size: []int{7, 3}})
		}, batch: true},
		{name: "interpolate nearest-exact", shape: []int{2, 3, 4, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.Interpolate(x, tensor.InterpolateConfig{Size: []int{7, 3}, Mode: "nearest-exact"})
		}, batch: true},
		{name: "interpolate bilinear", shape: []int{2, 3, 4, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.Interpolate(x, tensor.InterpolateConfig{Size: []int{7, 3}, Mode: "bilinear"})
		}, batch: true},
		{name: "interpolate bilinear align corners", shape: []int{2, 3, 4, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.Interpolate(x, tensor.InterpolateConfig{Size: []int{8, 9}, Mode: "bilinear", AlignCorners: true})
		}, batch: true},
		{name: "interpolate linear", shape: []int{2, 3, 5}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.Interpolate(x, tensor.InterpolateConfig{Size: []int{8}, Mode: "linear"})
		}, batch: true},
		{name: "attention", shape: []int{2, 2, 5, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.ScaledDotProductAttention(x, x.MulScalar(0.5), x.Neg(), nil, tensor.AttentionConfig{})
		}, batch: true},
		{name: "attention causal", shape: []int{2, 2, 5, 4}, f: func(_ *fnModel, x *tensor.Tensor) *tensor.Tensor {
			return tensor.ScaledDotProductAttention(x, x.MulScalar(0.5), x.Neg(), nil, tensor.AttentionConfig{Causal: true})
		}, batch: true},
	}
	var paths []string
	dir := t.TempDir()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &fnModel{Layer: c.layer, f: c.f}
			if c.layer != nil {
				defer nn.Release(c.layer)
			}
			path := filepath.Join(dir, fmt.Sprintf("case%d.onnx", i))
			tensor.Scope(func() {
				x := tensor.Randn(tensor.CPU(), c.shape...)
				if err := onnx.Export(m, x, path); err != nil {
					t.Fatal(err)
				}
			})
			paths = append(paths, path)
			back, err := onnx.Load(path, tensor.CPU())
			if err != nil {
				t.Fatal(err)
			}
			defer nn.Release(back)
			batches := []int{c.shape[0]}
			if c.batch {
				batches = append(batches, c.shape[0]+1)
			}
			for _, b := range batches {
				tensor.Scope(func() {
					shape := append([]int{b}, c.shape[1:]...)
					x := tensor.Randn(tensor.CPU(), shape...)
					want := m.Forward(x)
					got := back.Forward(x)
					testutil.AssertValues(t, "re-imported", got, want.Shape(), want.Float64s(), 1e-5, 1e-5)
				})
			}
		})
	}
	if len(paths) > 0 && pythonONNX(t) {
		for _, p := range paths {
			checkModel(t, p)
		}
	}
}
