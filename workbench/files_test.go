package workbench_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/workbench"
)

// TestFilesListKindsAndConfinement checks that files.list names what each
// entry is and refuses every way out of the root.
func TestFilesListKindsAndConfinement(t *testing.T) {
	srv, _, root := newServer(t)
	outside := t.TempDir()
	mustWrite := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(filepath.Join(root, "runs", "exp1", "events.jsonl"), "")
	mustWrite(filepath.Join(root, "runs", "exp1", "checkpoints", "step-10", "manifest.json"), "{}")
	mustWrite(filepath.Join(root, "models", "tiny.safetensors"), "12345678")
	mustWrite(filepath.Join(root, "notes.txt"), "hi")
	mustWrite(filepath.Join(outside, "secret.ipynb"), "{}")
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "models"), filepath.Join(root, "inside")); err != nil {
		t.Fatal(err)
	}

	kinds := func(path string) map[string]string {
		t.Helper()
		res := call(t, srv, "files.list", map[string]any{"path": path}).(map[string]any)
		got := map[string]string{}
		for _, e := range res["entries"].([]any) {
			e := e.(map[string]any)
			got[e["name"].(string)] = e["kind"].(string)
		}
		return got
	}
	top := kinds("")
	want := map[string]string{"tiny.ipynb": "notebook", "runs": "dir", "models": "dir", "notes.txt": "file", "inside": "dir"}
	for name, kind := range want {
		if top[name] != kind {
			t.Errorf("root entry %s: kind %q, want %q (all: %v)", name, top[name], kind, top)
		}
	}
	if _, ok := top["escape"]; ok {
		t.Errorf("a symbolic link leading out of the root is listed: %v", top)
	}
	if k := kinds("runs")["exp1"]; k != "run" {
		t.Errorf("runs/exp1: kind %q, want run", k)
	}
	if k := kinds("runs/exp1/checkpoints")["step-10"]; k != "checkpoint" {
		t.Errorf("step-10: kind %q, want checkpoint", k)
	}
	if k := kinds("models")["tiny.safetensors"]; k != "model" {
		t.Errorf("tiny.safetensors: kind %q, want model", k)
	}
	if k := kinds("inside")["tiny.safetensors"]; k != "model" {
		t.Errorf("a link inside the root: kind %q, want model", k)
	}
	res := call(t, srv, "files.list", map[string]any{}).(map[string]any)
	if recent := res["recent"].([]any); len(recent) != 1 || recent[0].(map[string]any)["path"] != "tiny.ipynb" {
		t.Errorf("recent = %v, want tiny.ipynb", recent)
	}

	for _, tc := range []struct {
		name, path, says string
	}{
		{"parent", "..", `".." is not allowed`},
		{"parent inside a path", "runs/../../etc", `".." is not allowed`},
		{"absolute", outside, "paths are relative to the root"},
		{"absolute root", "/", "paths are relative to the root"},
		{"symbolic link out", "escape", "a symbolic link leads out of it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := callErr(srv, "files.list", map[string]any{"path": tc.path})
			if !errors.Is(err, workbench.ErrOutsideRoot) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("files.list %q: error %v, want ErrOutsideRoot saying %q", tc.path, err, tc.says)
			}
		})
	}
	if _, err := callErr(srv, "files.list", map[string]any{"path": "notes.txt"}); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("files.list of a file: %v, want \"not a folder\"", err)
	}
}

// writeONNX writes a one-node model (x [1 4] → op → y) at path.
func writeONNX(t *testing.T, path, op string) {
	t.Helper()
	x := &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeFloat, HasShape: true,
		Shape: []onnx.Dim{{Value: 1, HasValue: true}, {Value: 4, HasValue: true}}}
	m := &onnx.ModelProto{IRVersion: 8, ProducerName: "kiln-test", OpsetImports: []onnx.OperatorSetID{{Version: 13}},
		Graph: &onnx.GraphProto{Name: "g",
			Nodes:   []*onnx.NodeProto{{OpType: op, Name: "n1", Inputs: []string{"x"}, Outputs: []string{"y"}}},
			Inputs:  []*onnx.ValueInfoProto{{Name: "x", Type: x}},
			Outputs: []*onnx.ValueInfoProto{{Name: "y"}}}}
	if err := os.WriteFile(path, onnx.Encode(m), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFilesInspectModels checks that files.inspect gives the report of
// `kiln inspect` for each model format, Load's verdict for ONNX, and clear
// errors for files it cannot describe and paths out of the root.
func TestFilesInspectModels(t *testing.T) {
	srv, _ := newFakeServer(t, workbench.Config{})
	root := call(t, srv, "server.info", nil).(map[string]any)["root"].(string)
	if err := os.MkdirAll(filepath.Join(root, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	dev := tensor.CPU()
	w := tensor.FromFloat32s(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err := store.WriteSafetensors(filepath.Join(root, "models", "w.safetensors"),
		map[string]*tensor.Tensor{"fc.weight": w}, map[string]string{"epoch": "3"}); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteGGUF(filepath.Join(root, "models", "m.gguf"), map[string]any{"general.name": "tiny"},
		[]store.GGUFTensor{{Name: "tok.weight", Shape: []int{2, 4}, Type: store.GGMLF32, Values: make([]float32, 8)}}); err != nil {
		t.Fatal(err)
	}
	writeONNX(t, filepath.Join(root, "relu.onnx"), "Relu")
	writeONNX(t, filepath.Join(root, "mystery.onnx"), "NoSuchOperator")
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	writeONNX(t, filepath.Join(outside, "out.onnx"), "Relu")
	if err := os.Symlink(filepath.Join(outside, "out.onnx"), filepath.Join(root, "link.onnx")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		path, format string
		says         []string
		loads        any
	}{
		{"models/w.safetensors", "safetensors", []string{"file      models/w.safetensors", "epoch = 3", "tensors   1, 6 elements, 24 B of data", "fc.weight", "F32", "[2 3]"}, nil},
		{"models/m.gguf", "gguf", []string{"models/m.gguf: GGUF version 3", "general.name = tiny", "tok.weight", "F32", "[2 4]"}, nil},
		{"relu.onnx", "onnx", []string{"relu.onnx: ONNX model", "opsets: ai.onnx 13", "x: FLOAT[1 4]", "Relu", "Load accepts it."}, true},
		{"mystery.onnx", "onnx", []string{"NoSuchOperator", "(not supported by Kiln)", "Load refuses it: "}, false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			rep := call(t, srv, "files.inspect", map[string]any{"path": tc.path}).(map[string]any)
			if rep["format"] != tc.format || rep["path"] != tc.path {
				t.Errorf("format %v path %v, want %s %s", rep["format"], rep["path"], tc.format, tc.path)
			}
			text, _ := rep["report"].(string)
			for _, s := range tc.says {
				if !strings.Contains(text, s) {
					t.Errorf("report lacks %q:\n%s", s, text)
				}
			}
			if rep["loads"] != tc.loads {
				t.Errorf("loads = %v, want %v", rep["loads"], tc.loads)
			}
			if tc.loads != nil && !strings.HasSuffix(strings.TrimSpace(text), rep["verdict"].(string)) {
				t.Errorf("verdict %q is not the report's last line:\n%s", rep["verdict"], text)
			}
		})
	}

	for _, tc := range []struct {
		name, path, says string
		is               error
	}{
		{"text file", "notes.txt", "notes.txt is not a safetensors, GGUF or ONNX file", workbench.ErrNotModelFile},
		{"folder", "models", "models is a folder, not a model file", nil},
		{"missing", "models/none.onnx", "no such file", os.ErrNotExist},
		{"parent", "../x.onnx", `".." is not allowed`, workbench.ErrOutsideRoot},
		{"absolute", filepath.Join(outside, "out.onnx"), "paths are relative to the root", workbench.ErrOutsideRoot},
		{"link out", "link.onnx", "a symbolic link leads out of it", workbench.ErrOutsideRoot},
		{"missing behind a link out", "escape/none.onnx", "a symbolic link leads out of it", workbench.ErrOutsideRoot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := callErr(srv, "files.inspect", map[string]any{"path": tc.path})
			if err == nil || !strings.Contains(err.Error(), tc.says) || tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("files.inspect %q: error %v, want one saying %q (is %v)", tc.path, err, tc.says, tc.is)
			}
		})
	}
}
