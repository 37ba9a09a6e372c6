package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzInspectONNX runs `kiln inspect` (as inspectCommand) on mutated ONNX
// files, seeded with the onnx package's test models and the stride-0 Conv
// of issue 17: it must print a description or fail with an error, never
// panic.
func FuzzInspectONNX(f *testing.F) {
	for _, name := range []string{"models/mlp_op13.onnx", "models/mnist_cnn_op13.onnx", "models/transformer_op13.onnx",
		"models/convs_op11.onnx", "models/indexing_op13.onnx", "ops/resize_op13_linear_sizes.onnx", "ops/split_op13.onnx"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "onnx", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	raw, err := os.ReadFile(strideZeroONNX(f, f.TempDir()))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "fuzz.onnx")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		err := inspectCommand([]string{p}, &stdout, &stderr)
		if err != nil && !strings.HasPrefix(err.Error(), "inspect: ") {
			t.Fatalf("error %q does not say it comes from inspect", err)
		}
		if err == nil && !strings.Contains(stdout.String(), "ONNX model") {
			t.Fatalf("no description printed:\n%s", stdout.String())
		}
	})
}
