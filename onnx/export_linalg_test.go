package onnx_test

import (
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// linalgModel maps x [batch, 12] through a Linear layer to [batch, 3, 4],
// takes Tril(1), Triu(-1) of the result and the determinants of its square
// 3×3 Gram matrices, and adds them up through an einsum.
type linalgModel struct {
	Proj *nn.Linear
}

func (m *linalgModel) Forward(x *tensor.Tensor) *tensor.Tensor {
	h := m.Proj.Forward(x).Reshape(-1, 3, 4)
	gram := tensor.Einsum("bij,bkj->bik", h, h)
	det := gram.Det().Unsqueeze(-1).Unsqueeze(-1)
	return h.Tril(1).Add(h.Triu(-1)).Mul(det)
}

// TestExportLinalg exports a model using Tril, Triu, Det and Einsum, checks
// the file with onnx.checker where python3-onnx is installed, and loads it
// back: the outputs agree with Kiln's for the traced batch size and
// another.
func TestExportLinalg(t *testing.T) {
	dev := tensor.CPU()
	dev.Seed(5)
	model := &linalgModel{Proj: nn.NewLinear(dev, 6, 12)}
	defer nn.Release(model)
	path := filepath.Join(t.TempDir(), "linalg.onnx")
	tensor.Scope(func() {
		if err := onnx.Export(model, tensor.Randn(dev, 2, 6), path); err != nil {
			t.Fatal(err)
		}
	})
	checkONNX(t, path, []string{"Trilu", "Det", "MatMul"})
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		back, err := onnx.Load(path, dev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(back)
		for _, n := range []int{2, 5} {
			x := tensor.Randn(tensor.CPU(), n, 6)
			want := model.Forward(x)
			got := back.Forward(x.ToDevice(dev))
			testutil.AssertValues(t, "re-imported", got, want.Shape(), want.Float64s(), 1e-4, 1e-5)
		}
	})
}
