package onnx_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/onnx"
)

// FuzzDecode feeds the decoder damaged models (seeded with fixture files):
// decoding must never panic and must fail with ErrCorrupt; a model that
// decodes must describe (which infers its shapes) and re-encode to the same
// model. (Loading damaged models onto a device is TestDamagedModelsLoad's
// job: device work inside fuzz workers stalls them.)
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"models/mlp_op13.onnx", "models/lstm_op14.onnx", "ops/resize_op13_linear_sizes.onnx",
		"ops/constantofshape_op9.onnx", "ops/split_op13.onnx", "ops/einsum_op12_batch.onnx", "ops/slice_op13_steps.onnx"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := onnx.Decode(b)
		if err != nil {
			if !errors.Is(err, onnx.ErrCorrupt) {
				t.Fatalf("decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		_ = onnx.DescribeModel(m)
		again, err := onnx.Decode(onnx.Encode(m))
		if err != nil {
			t.Fatalf("re-encoded model does not decode: %v", err)
		}
		if len(again.Graph.Nodes) != len(m.Graph.Nodes) || len(again.Graph.Initializers) != len(m.Graph.Initializers) {
			t.Fatalf("round trip changed the graph")
		}
	})
}
