package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestONNXGen(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	model := filepath.Join("..", "..", "onnx", "testdata", "models", "mlp_op13.onnx")
	if err := onnxCommand([]string{"gen", model, "-o", dir, "--package", "mlp"}, &out, &errOut); err != nil {
		t.Fatalf("onnx gen: %v (%s)", err, errOut.String())
	}
	src, err := os.ReadFile(filepath.Join(dir, "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"package mlp", "func (m *Model) Forward(", "tensor.Linear(", "func Load(path string"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("model.go lacks %q", want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "weights.safetensors")); err != nil || fi.Size() == 0 {
		t.Errorf("weights.safetensors: %v", err)
	}
	if !strings.Contains(out.String(), "wrote ") {
		t.Errorf("report %q", out.String())
	}
	for _, bad := range [][]string{{}, {"frob"}, {"gen"}, {"gen", model}, {"gen", "missing.onnx", "-o", dir}} {
		if err := onnxCommand(bad, &out, &errOut); err == nil {
			t.Errorf("onnx %v: no error", bad)
		}
	}
}
