package onnx_test

import (
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// An imported model whose weights changed saves to a file that imports
// with those weights and computes the same outputs.
func TestSaveKeepsCurrentWeights(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m, err := onnx.Load("testdata/models/mlp_op13.onnx", dev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(m)
		for _, p := range nn.Params(m) {
			p.Param.Assign(p.Param.MulScalar(2).AddScalar(0.5))
		}
		path := filepath.Join(t.TempDir(), "tuned.onnx")
		if err := m.Save(path); err != nil {
			t.Fatal(err)
		}
		again, err := onnx.Load(path, dev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(again)
		for _, p := range nn.Params(m) {
			q := again.Params[p.Name]
			if q == nil || !q.AllClose(p.Param.Tensor, 0, 0) {
				t.Fatalf("%s differs after the round trip", p.Name)
			}
		}
		tensor.Scope(func() {
			x := tensor.Randn(dev, 3, 8)
			if !again.Forward(x).AllClose(m.Forward(x), 0, 0) {
				t.Error("the saved model computes other outputs")
			}
		})
		if err := (&onnx.Model{}).Save(path); err == nil {
			t.Error("saving a Model that Load did not make succeeded")
		}
	})
}
