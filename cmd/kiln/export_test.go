package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// testNet is the model the tests checkpoint and export.
type testNet struct {
	L1 *nn.Linear
	BN *nn.BatchNorm1d
}

func newTestNet(seed uint64) *testNet {
	dev := tensor.CPU()
	dev.Seed(seed)
	return &testNet{L1: nn.NewLinear(dev, 3, 4), BN: nn.NewBatchNorm1d(dev, 4)}
}

// saveCheckpoint writes a checkpoint of a testNet drawn from seed at dir.
func saveCheckpoint(t *testing.T, dir string, seed uint64, epoch int) *testNet {
	t.Helper()
	m := newTestNet(seed)
	var err error
	tensor.Scope(func() {
		err = store.SaveCheckpoint(dir, store.Checkpoint{
			Model:     nn.StateDict(m),
			Optimizer: map[string]*tensor.Tensor{"L1.weight/exp_avg": tensor.Zeros(tensor.CPU(), 4, 3)},
			Epoch:     epoch,
			Step:      epoch * 100,
			Metrics:   map[string]float64{"valid_loss": 0.5 / float64(epoch+1), "accuracy": 0.75},
			Config:    []byte(`{"lr":0.01}`),
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameWeights reports whether two models hold the same values.
func sameWeights(a, b any) bool {
	same := true
	tensor.Scope(func() {
		sa, sb := nn.StateDict(a), nn.StateDict(b)
		for k, v := range sa {
			if w, ok := sb[k]; !ok || !bytes.Equal(v.Bytes(), w.Bytes()) {
				same = false
			}
		}
	})
	return same
}

// runLayout builds a run directory with checkpoints epoch-2, epoch-9 and
// epoch-10 (seeds 2, 9, 10) and returns it.
func runLayout(t *testing.T) string {
	run := t.TempDir()
	os.Mkdir(filepath.Join(run, "checkpoints"), 0o755)
	for _, e := range []int{2, 9, 10} {
		saveCheckpoint(t, filepath.Join(run, "checkpoints", "epoch-"+strconv.Itoa(e)), uint64(e), e)
	}
	return run
}

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func TestResolveCheckpoint(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, run string) string // returns the path to resolve
		want    string                                // checkpoint dir relative to the run, "" for an error
		how     string
		errSays string
	}{
		{"a checkpoint directory", func(t *testing.T, run string) string { return filepath.Join(run, "checkpoints", "epoch-2") },
			"checkpoints/epoch-2", "checkpoint", ""},
		{"newest by name, numbers compared as numbers", func(t *testing.T, run string) string { return run },
			"checkpoints/epoch-10", "newest", ""},
		{"hidden leftovers are ignored", func(t *testing.T, run string) string {
			saveCheckpoint(t, filepath.Join(run, "checkpoints", ".epoch-99.tmp-1"), 99, 99)
			return run
		}, "checkpoints/epoch-10", "newest", ""},
		{"best pointer file", func(t *testing.T, run string) string {
			os.WriteFile(filepath.Join(run, "checkpoints", "best"), []byte("epoch-9\n"), 0o644)
			os.WriteFile(filepath.Join(run, "checkpoints", "last"), []byte("epoch-10\n"), 0o644)
			return run
		}, "checkpoints/epoch-9", "best", ""},
		{"last pointer when there is no best", func(t *testing.T, run string) string {
			os.WriteFile(filepath.Join(run, "checkpoints", "last"), []byte("epoch-2"), 0o644)
			return run
		}, "checkpoints/epoch-2", "last", ""},
		{"pointer relative to the run directory", func(t *testing.T, run string) string {
			os.WriteFile(filepath.Join(run, "checkpoints", "best"), []byte("checkpoints/epoch-9"), 0o644)
			return run
		}, "checkpoints/epoch-9", "best", ""},
		{"absolute pointer", func(t *testing.T, run string) string {
			os.WriteFile(filepath.Join(run, "checkpoints", "best"), []byte(filepath.Join(run, "checkpoints", "epoch-2")), 0o644)
			return run
		}, "checkpoints/epoch-2", "best", ""},
		{"best as a symbolic link", func(t *testing.T, run string) string {
			if err := os.Symlink("epoch-9", filepath.Join(run, "checkpoints", "best")); err != nil {
				t.Skip(err)
			}
			return run
		}, "checkpoints/best", "best", ""},
		{"pointer to a missing checkpoint", func(t *testing.T, run string) string {
			os.WriteFile(filepath.Join(run, "checkpoints", "best"), []byte("epoch-7"), 0o644)
			return run
		}, "", "", `checkpoints/best in ` + `RUN names "epoch-7", which is not a checkpoint directory`},
		{"empty pointer", func(t *testing.T, run string) string {
			os.WriteFile(filepath.Join(run, "checkpoints", "last"), nil, 0o644)
			return run
		}, "", "", "checkpoints/last in RUN is empty"},
		{"broken link", func(t *testing.T, run string) string {
			if err := os.Symlink("gone", filepath.Join(run, "checkpoints", "best")); err != nil {
				t.Skip(err)
			}
			return run
		}, "", "", "broken link"},
		{"run without checkpoints", func(t *testing.T, run string) string {
			other := filepath.Join(run, "other")
			os.MkdirAll(filepath.Join(other, "checkpoints", "not-one"), 0o755)
			return other
		}, "", "", "has no checkpoints"},
		{"missing path", func(t *testing.T, run string) string { return filepath.Join(run, "missing") },
			"", "", "no such file"},
		{"a plain directory", func(t *testing.T, run string) string {
			d := filepath.Join(run, "plain")
			os.Mkdir(d, 0o755)
			return d
		}, "", "", "neither a checkpoint directory (no manifest.json) nor a run directory"},
		{"a file", func(t *testing.T, run string) string {
			return filepath.Join(run, "checkpoints", "epoch-2", "manifest.json")
		},
			"", "", "is a file"},
	}
	run := runLayout(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each case works on its own copy of the run's pointers.
			ck := filepath.Join(run, "checkpoints")
			for _, p := range []string{"best", "last", ".epoch-99.tmp-1"} {
				os.RemoveAll(filepath.Join(ck, p))
			}
			path := tc.setup(t, run)
			dir, how, err := resolveCheckpoint(path)
			if tc.want == "" {
				want := strings.ReplaceAll(tc.errSays, "RUN", run)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("resolveCheckpoint(%s) = %q, %v; want an error saying %q", path, dir, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(run, tc.want); filepath.Clean(dir) != want {
				t.Errorf("resolved %s, want %s", dir, want)
			}
			if !strings.Contains(how, tc.how) {
				t.Errorf("how = %q, want it to say %q", how, tc.how)
			}
		})
	}
}

func TestExportCommand(t *testing.T) {
	run := runLayout(t)
	os.WriteFile(filepath.Join(run, "checkpoints", "best"), []byte("epoch-9"), 0o644)
	damaged := filepath.Join(t.TempDir(), "damaged")
	saveCheckpoint(t, damaged, 4, 4)
	p := filepath.Join(damaged, "model.safetensors")
	b, _ := os.ReadFile(p)
	b[len(b)-2] ^= 0x10
	os.WriteFile(p, b, 0o644)

	out := t.TempDir()
	cases := []struct {
		name      string
		args      []string
		seed      uint64 // the checkpoint the file must hold; 0 for an error
		epoch     string
		errSays   string
		errIs     error
		wantNoOut string // a file that must not exist after the command
	}{
		{"run directory uses the best checkpoint", []string{run, "--format", "safetensors", "-o", filepath.Join(out, "best.safetensors")}, 9, "9", "", nil, ""},
		{"flags before the directory", []string{"-o", filepath.Join(out, "ckpt.safetensors"), filepath.Join(run, "checkpoints", "epoch-2")}, 2, "2", "", nil, ""},
		{"format is case-insensitive and defaults to safetensors", []string{filepath.Join(run, "checkpoints", "epoch-10"), "-format=SafeTensors", "-o", filepath.Join(out, "ten.safetensors")}, 10, "10", "", nil, ""},
		{"onnx needs the graph", []string{run, "--format", "onnx", "-o", filepath.Join(out, "m.onnx")}, 0, "", "--model GRAPH.onnx", nil, filepath.Join(out, "m.onnx")},
		{"onnx graph that does not fit", []string{run, "--format", "onnx", "--model", filepath.Join("..", "..", "onnx", "testdata", "models", "mlp_op13.onnx"), "-o", filepath.Join(out, "m.onnx")}, 0, "", "do not fit", nil, filepath.Join(out, "m.onnx")},
		{"unknown gguf type", []string{run, "--format", "gguf", "--gguf-type", "q2_k", "-o", filepath.Join(out, "m.gguf")}, 0, "", `--gguf-type "q2_k"`, nil, filepath.Join(out, "m.gguf")},
		{"unknown format", []string{run, "--format", "pickle", "-o", filepath.Join(out, "m.pt")}, 0, "", `unknown format "pickle"`, nil, filepath.Join(out, "m.pt")},
		{"output is required", []string{run}, 0, "", "an output file is required", nil, ""},
		{"one source only", []string{run, run, "-o", filepath.Join(out, "x.safetensors")}, 0, "", "got 2 arguments", nil, filepath.Join(out, "x.safetensors")},
		{"missing source", []string{filepath.Join(out, "nope"), "-o", filepath.Join(out, "y.safetensors")}, 0, "", "nope", os.ErrNotExist, filepath.Join(out, "y.safetensors")},
		{"corrupt checkpoint", []string{damaged, "-o", filepath.Join(out, "z.safetensors")}, 0, "", "model.safetensors", store.ErrCorrupt, filepath.Join(out, "z.safetensors")},
		{"output is the checkpoint's own model file", []string{filepath.Join(run, "checkpoints", "epoch-2"), "-o", filepath.Join(run, "checkpoints", "epoch-2", "model.safetensors")}, 0, "", "would break the checkpoint", nil, ""},
		{"output is a directory", []string{run, "-o", out}, 0, "", "is a directory", nil, ""},
		{"unknown flag", []string{run, "-x"}, 0, "", "flag provided but not defined", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := exportCommand(tc.args, &stdout, &stderr)
			if tc.seed == 0 {
				if err == nil || !strings.Contains(err.Error(), tc.errSays) || (tc.errIs != nil && !errors.Is(err, tc.errIs)) {
					t.Fatalf("err = %v, want one saying %q (wrapping %v)", err, tc.errSays, tc.errIs)
				}
				if tc.wantNoOut != "" {
					if _, err := os.Stat(tc.wantNoOut); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("a failed export wrote %s", tc.wantNoOut)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\nstderr: %s", err, stderr.String())
			}
			file := tc.args[slices.Index(tc.args, "-o")+1]
			if !strings.Contains(stdout.String(), "exported") || !strings.Contains(stdout.String(), file) {
				t.Errorf("report %q does not say what it wrote", stdout.String())
			}
			got := newTestNet(1000)
			if err := store.LoadModel(got, file); err != nil {
				t.Fatal(err)
			}
			if !sameWeights(got, newTestNet(tc.seed)) {
				t.Errorf("exported weights are not those of the checkpoint drawn from seed %d", tc.seed)
			}
			f, err := store.OpenSafetensors(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			md := f.Metadata()
			if md["format"] != "pt" || md["kiln.epoch"] != tc.epoch || md["kiln.step"] != tc.epoch+"00" || !filepath.IsAbs(md["kiln.source"]) ||
				!strings.Contains(md["kiln.metrics"], `"accuracy":0.75`) {
				t.Errorf("metadata %v", md)
			}
			if len(f.Names()) != 7 {
				t.Errorf("exported %v, want the model's 7 tensors only", f.Names())
			}
		})
	}
}

func TestParseInterleaved(t *testing.T) {
	cases := []struct {
		args []string
		pos  []string
		o    string
	}{
		{[]string{"a", "-o", "x"}, []string{"a"}, "x"},
		{[]string{"-o", "x", "a", "b"}, []string{"a", "b"}, "x"},
		{[]string{"a", "--", "-o", "x"}, []string{"a", "-o", "x"}, ""},
		{nil, nil, ""},
	}
	for _, tc := range cases {
		fs := newFlagSet()
		o := fs.String("o", "", "")
		pos, err := parseInterleaved(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *o != tc.o {
			t.Errorf("parseInterleaved(%q) = %q, -o %q, %v; want %q, -o %q", tc.args, pos, *o, err, tc.pos, tc.o)
		}
	}
}

func TestNaturalLess(t *testing.T) {
	names := []string{"epoch-10", "epoch-9", "epoch-010a", "best", "epoch-2", "step-100", "epoch-10b", "epoch-1"}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case naturalLess(a, b):
			return -1
		case naturalLess(b, a):
			return 1
		}
		return 0
	})
	want := []string{"best", "epoch-1", "epoch-2", "epoch-9", "epoch-10", "epoch-010a", "epoch-10b", "step-100"}
	if !slices.Equal(names, want) {
		t.Errorf("sorted %v, want %v", names, want)
	}
}

// -h asks main for the command's help (which TestHelpForEveryCommand
// checks): the command prints nothing itself.
func TestHelpIsNotAnError(t *testing.T) {
	for name, cmd := range map[string]func([]string, io.Writer, io.Writer) error{"export": exportCommand, "inspect": inspectCommand} {
		var stdout, stderr bytes.Buffer
		if err := cmd([]string{"-h"}, &stdout, &stderr); !errors.Is(err, errHelp) || stdout.Len()+stderr.Len() > 0 {
			t.Errorf("%s -h: err = %v, printed %q %q", name, err, stdout.String(), stderr.String())
		}
	}
}

func TestExportGGUF(t *testing.T) {
	run := runLayout(t)
	os.WriteFile(filepath.Join(run, "checkpoints", "best"), []byte("epoch-9"), 0o644)
	out := filepath.Join(t.TempDir(), "m.gguf")
	var stdout, stderr bytes.Buffer
	if err := exportCommand([]string{run, "--format", "gguf", "--gguf-type", "f16", "-o", out}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	f, err := store.OpenGGUF(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["kiln.epoch"] != "9" {
		t.Errorf("metadata %v", f.Metadata)
	}
	w, ok := f.Info("L1.weight")
	if !ok || w.Type != store.GGMLF16 || fmt.Sprint(w.Shape) != "[4 3]" {
		t.Fatalf("L1.weight: %+v", w)
	}
	// The GGUF loads into the model it came from, within float16 rounding.
	want, got := newTestNet(9), newTestNet(1)
	if err := store.LoadModel(got, out); err != nil {
		t.Fatal(err)
	}
	if !got.L1.Weight.AllClose(want.L1.Weight.Tensor, 1e-3, 1e-3) {
		t.Error("the exported GGUF holds other weights")
	}
}

func TestInspectGGUFAndONNX(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := store.WriteGGUF(path, map[string]any{"general.architecture": "llama"}, []store.GGUFTensor{
		{Name: "tok_embd.weight", Shape: []int{2, 32}, Type: store.GGMLQ8_0, Values: make([]float32, 64)},
	}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := inspectCommand([]string{path}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GGUF version 3", "general.architecture = llama", "tok_embd.weight", "Q8_0", "[2 32]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := inspectCommand([]string{"--json", path}, &out, &errOut); err != nil || !strings.Contains(out.String(), `"type": "Q8_0"`) {
		t.Errorf("inspect --json: %v\n%s", err, out.String())
	}
	out.Reset()
	model := filepath.Join("..", "..", "onnx", "testdata", "models", "mlp_op17.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("no ONNX fixture: %v", err)
	}
	if err := inspectCommand([]string{model}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ONNX model") || !strings.Contains(out.String(), "Gemm") && !strings.Contains(out.String(), "MatMul") {
		t.Errorf("inspect of an ONNX model:\n%s", out.String())
	}
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00\xff"), 0o644)
	if err := inspectCommand([]string{bad}, &out, &errOut); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("a truncated GGUF: %v", err)
	}
}

func TestExportONNXWritesCheckpointWeights(t *testing.T) {
	graph := filepath.Join("..", "..", "onnx", "testdata", "models", "mlp_op13.onnx")
	m, err := onnx.Load(graph, tensor.CPU())
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(m)
	for _, p := range nn.Params(m) {
		p.Param.Assign(p.Param.MulScalar(-1))
	}
	ck := filepath.Join(t.TempDir(), "ck")
	tensor.Scope(func() { err = store.SaveCheckpoint(ck, store.Checkpoint{Model: nn.StateDict(m), Epoch: 1, Step: 5}) })
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "tuned.onnx")
	var stdout, stderr bytes.Buffer
	if err := exportCommand([]string{ck, "--format", "onnx", "--model", graph, "-o", out}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	got, err := onnx.Load(out, tensor.CPU())
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(got)
	if !sameWeights(got, m) {
		t.Error("the exported ONNX file holds other weights than the checkpoint")
	}
}
