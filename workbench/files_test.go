package workbench_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
