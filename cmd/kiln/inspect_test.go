package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/modelfile"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

func TestInspectCommand(t *testing.T) {
	dir := t.TempDir()
	run := runLayout(t)
	ckpt := filepath.Join(run, "checkpoints", "epoch-2")

	file := filepath.Join(dir, "w.safetensors")
	tensor.Scope(func() {
		dev := tensor.CPU()
		err := store.WriteSafetensors(file, map[string]*tensor.Tensor{
			"enc.weight": tensor.Zeros(dev, 4, 3),
			"enc.count":  tensor.ScalarOf(dev, tensor.Int64, 3),
			"mask":       tensor.Zeros(dev, 2, 2).To(tensor.Bool),
		}, map[string]string{"format": "pt", "note": "hi"})
		if err != nil {
			t.Fatal(err)
		}
	})
	raw, _ := os.ReadFile(file)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	u16Header := `{"small":{"dtype":"U16","shape":[3],"data_offsets":[0,6]}}`
	u16 := write("u16.safetensors", append(append([]byte{byte(len(u16Header)), 0, 0, 0, 0, 0, 0, 0}, u16Header...), 1, 0, 2, 0, 3, 0))

	cases := []struct {
		name    string
		args    []string
		says    []string // in the output, in order
		errSays string
		errIs   error
	}{
		{"safetensors file", []string{file}, []string{
			"file      " + file, "metadata  format = pt", "note = hi", "tensors   3, 17 elements",
			"NAME", "DTYPE", "SHAPE", "SIZE",
			"enc.count", "I64", "[]", "8 B",
			"enc.weight", "F32", "[4 3]", "48 B",
			"mask", "BOOL", "[2 2]", "4 B"}, "", nil},
		{"a dtype Kiln cannot hold", []string{u16}, []string{"small", "U16 (not readable by Kiln)", "[3]"}, "", nil},
		{"checkpoint directory", []string{ckpt}, []string{
			"checkpoint  " + ckpt, "kiln-checkpoint v1", "epoch       2", "step        200",
			"metrics     accuracy=0.75  valid_loss=0.1667\n", `config      {"lr":0.01}`,
			"model.safetensors", "sha256 ", "optimizer.safetensors", "state.json",
			"model:", "tensors   7", "BN.running_mean", "F32", "[4]", "L1.weight", "[4 3]",
			"optimizer:", "L1.weight/exp_avg"}, "", nil},
		{"run directory", []string{run}, []string{"checkpoint  " + filepath.Join(run, "checkpoints", "epoch-10"), "chosen as   the run's newest checkpoint by name", "epoch       10"}, "", nil},
		{"missing file", []string{filepath.Join(dir, "nope.safetensors")}, nil, "nope.safetensors", os.ErrNotExist},
		{"truncated file", []string{write("trunc.safetensors", raw[:len(raw)-3])}, nil, "trunc.safetensors", store.ErrCorrupt},
		{"text", []string{write("notes.txt", []byte("just some notes, not tensors"))}, nil,
			`notes.txt is not a safetensors, GGUF or ONNX file (or a run or checkpoint directory): it starts with the text "just some notes,"`, errNotModelFile},
		{"a README", []string{write("README.md", []byte("# Kiln\n\nKiln is a deep-learning framework\n"))}, nil,
			"README.md is not a safetensors, GGUF or ONNX file", errNotModelFile},
		{"empty file", []string{write("empty", nil)}, nil, "empty is not a safetensors, GGUF or ONNX file (or a run or checkpoint directory): it is empty", errNotModelFile},
		{"random bytes", []string{write("random.bin", []byte{0xef, 0x0b, 0x1c, 0xbb, 0xbb, 0x6a, 0xa6, 0xd1, 0x00, 0x7f, 0x13, 0x42})}, nil,
			"random.bin is not a safetensors, GGUF or ONNX file (or a run or checkpoint directory): it starts with the bytes ef 0b 1c bb bb 6a a6 d1", errNotModelFile},
		// A file named for a format gets that reader's error.
		{"empty safetensors file", []string{write("empty.safetensors", nil)}, nil, "shorter than the 8-byte header length", store.ErrCorrupt},
		{"safetensors with a bogus header length", []string{write("bogus.safetensors", []byte("# Kiln\n\nKiln is a"))}, nil, "header length", store.ErrCorrupt},
		{"safetensors without its name", []string{write("weights.bin", raw)}, []string{"file      ", "weights.bin", "tensors   3"}, "", nil},
		{"truncated safetensors header", []string{write("cut.bin", raw[:20])}, nil, "cut.bin", store.ErrCorrupt},
		{"plain directory", []string{dir}, nil, "neither a checkpoint directory", nil},
		{"no argument", nil, nil, "want one file or directory, got 0", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := inspectCommand(tc.args, &stdout, &stderr)
			if tc.errSays != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSays) || (tc.errIs != nil && !errors.Is(err, tc.errIs)) {
					t.Fatalf("err = %v, want one saying %q (wrapping %v)", err, tc.errSays, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := stdout.String()
			rest := out
			for _, s := range tc.says {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", s, out)
				}
				rest = rest[i+len(s):]
			}
		})
	}
}

// TestInspectCorruptCheckpoint damages each file of a checkpoint in turn:
// inspect refuses it, naming the file.
func TestInspectCorruptCheckpoint(t *testing.T) {
	for _, name := range []string{"model.safetensors", "optimizer.safetensors", "state.json", "manifest.json"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			saveCheckpoint(t, dir, 1, 1)
			p := filepath.Join(dir, name)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
			var stdout, stderr bytes.Buffer
			err := inspectCommand([]string{dir}, &stdout, &stderr)
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), name) {
				t.Errorf("err = %v, want ErrCorrupt naming %s", err, name)
			}
		})
	}
}

func TestInspectJSON(t *testing.T) {
	run := runLayout(t)
	ckpt := filepath.Join(run, "checkpoints", "epoch-9")
	var stdout, stderr bytes.Buffer
	if err := inspectCommand([]string{"--json", ckpt}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var rep checkpointReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if rep.Epoch != 9 || rep.Step != 900 || rep.Metrics["accuracy"] != 0.75 || len(rep.Files) != 3 || len(rep.Model.Tensors) != 7 || rep.Model.Tensors[0].Name != "BN.bias" {
		t.Errorf("report %+v", rep)
	}

	// A safetensors file, with flags after the path.
	stdout.Reset()
	out := filepath.Join(t.TempDir(), "m.safetensors")
	if err := exportCommand([]string{ckpt, "-o", out}, &bytes.Buffer{}, &stderr); err != nil {
		t.Fatal(err)
	}
	if err := inspectCommand([]string{out, "-json"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var file modelfile.SafetensorsReport
	if err := json.Unmarshal(stdout.Bytes(), &file); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if file.Metadata["kiln.epoch"] != "9" || len(file.Tensors) != 7 || file.Tensors[6].Name != "L1.weight" || file.Tensors[6].DType != "F32" || file.Elements != 4*4+1+4+4*3 {
		t.Errorf("report %+v", file)
	}
}

// strideZeroONNX writes issue 17's crafted model, a Conv "conv1" with
// strides [0 1], into dir.
func strideZeroONNX(t testing.TB, dir string) string {
	f32 := func(name string, dims ...int64) *onnx.ValueInfoProto {
		ty := &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeFloat, HasShape: true}
		for _, d := range dims {
			ty.Shape = append(ty.Shape, onnx.Dim{Value: d, HasValue: true})
		}
		return &onnx.ValueInfoProto{Name: name, Type: ty}
	}
	m := &onnx.ModelProto{IRVersion: 8, ProducerName: "kiln-test", OpsetImports: []onnx.OperatorSetID{{Version: 13}},
		Graph: &onnx.GraphProto{
			Nodes: []*onnx.NodeProto{{OpType: "Conv", Name: "conv1", Inputs: []string{"x", "w"}, Outputs: []string{"y"},
				Attributes: []*onnx.AttributeProto{{Name: "strides", Type: onnx.AttrInts, Ints: []int64{0, 1}}}}},
			Initializers: []*onnx.TensorProto{{Name: "w", DataType: onnx.TypeFloat, Dims: []int64{1, 1, 3, 3}, FloatData: make([]float32, 9)}},
			Inputs:       []*onnx.ValueInfoProto{f32("x", 1, 1, 8, 8)},
			Outputs:      []*onnx.ValueInfoProto{f32("y", 1, 1, 6, 6)},
		}}
	p := filepath.Join(dir, "stride0.onnx")
	if err := os.WriteFile(p, onnx.Encode(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestInspectBadONNXAttributes: `kiln inspect` on a Conv with a zero
// stride (which used to divide by zero) fails with an error naming the
// node and the attribute, in text and JSON modes, printing nothing.
func TestInspectBadONNXAttributes(t *testing.T) {
	p := strideZeroONNX(t, t.TempDir())
	for _, args := range [][]string{{p}, {"--json", p}} {
		var stdout, stderr bytes.Buffer
		err := inspectCommand(args, &stdout, &stderr)
		if !errors.Is(err, onnx.ErrCorrupt) || !strings.Contains(err.Error(), `inspect: onnx: describe `+p+`: corrupt ONNX file: node "conv1" (Conv): strides[0] = 0, must be positive`) {
			t.Errorf("%v: err = %v, want ErrCorrupt naming the node and the stride", args, err)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: printed %q", args, stdout.String())
		}
	}
}

// Metric values print to 4 significant digits, whole numbers up to a
// billion in full, times in seconds as durations.
func TestFormatMetric(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"valid_loss", 0.16666666666666666, "0.1667"},
		{"accuracy", 0.75, "0.75"},
		{"accuracy", 1.0, "1"},
		{"loss", 1.234567e-7, "1.235e-07"},
		{"samples_per_second", 12345.678, "12346"},
		{"tokens", 3.2e12, "3.2e+12"},
		{"loss", -2.5, "-2.5"},
		{"loss", "nan", "nan"},
		{"elapsed_s", 12.3456, "12.35s"},
		{"epoch_time", 3725.4, "1h2m5s"},
		{"step_seconds", 0.00123456, "1.235ms"},
		{"elapsed_s", 0.0, "0s"},
		{"elapsed_s", 1e300, "1e+300s"},
	} {
		if got := formatMetric(c.name, c.v); got != c.want {
			t.Errorf("formatMetric(%q, %v) = %q, want %q", c.name, c.v, got, c.want)
		}
	}
}

// A file's format comes from its content, whatever its name; a damaged
// file whose content still says its format gets that reader's error.
func TestInspectRecognisesContent(t *testing.T) {
	dir := t.TempDir()
	model, err := os.ReadFile(filepath.Join("..", "..", "onnx", "testdata", "models", "mlp_op13.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	gguf := filepath.Join(dir, "weights.dat")
	if err := store.WriteGGUF(gguf, map[string]any{"general.name": "t"}, []store.GGUFTensor{{Name: "w", Shape: []int{2}, Type: store.GGMLF32, Values: []float32{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	ggufBytes, _ := os.ReadFile(gguf)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	for _, c := range []struct {
		name, path string
		says       string // in the output, or the error when errIs is set
		errIs      error
	}{
		{"ONNX", write("model.bin", model), "model.bin: ONNX model", nil},
		{"truncated ONNX", write("cut-model.bin", model[:len(model)/2]), "onnx: read ", onnx.ErrCorrupt},
		{"GGUF", gguf, "weights.dat: GGUF version 3", nil},
		{"truncated GGUF", write("cut.dat", ggufBytes[:40]), "cut.dat", store.ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := inspectCommand([]string{c.path}, &stdout, &stderr)
			if c.errIs != nil {
				if !errors.Is(err, c.errIs) || !strings.Contains(err.Error(), c.says) {
					t.Errorf("err = %v, want %v saying %q", err, c.errIs, c.says)
				}
				return
			}
			if err != nil || !strings.Contains(stdout.String(), c.says) {
				t.Errorf("err = %v, output:\n%s", err, stdout.String())
			}
		})
	}
}

// TestInspectListsRefusedONNXNodes: `kiln inspect` (through runMain, as
// the shell runs it) on a model Load refuses lists every refused node
// with its index, name, operator and reason, says the opset is one Kiln
// runs, and ends with Load's refusal; the JSON description says the same.
func TestInspectListsRefusedONNXNodes(t *testing.T) {
	f32 := &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeFloat, HasShape: true, Shape: []onnx.Dim{{Value: 2, HasValue: true}}}
	m := &onnx.ModelProto{IRVersion: 8, ProducerName: "kiln-test",
		OpsetImports: []onnx.OperatorSetID{{Version: 13}, {Domain: "com.microsoft", Version: 1}},
		Graph: &onnx.GraphProto{
			Nodes: []*onnx.NodeProto{
				{OpType: "Relu", Name: "relu", Inputs: []string{"x"}, Outputs: []string{"a"}},
				{OpType: "NoSuchOperator", Name: "mystery", Inputs: []string{"a"}, Outputs: []string{"b"}},
				{OpType: "Resize", Name: "smooth", Inputs: []string{"b"}, Outputs: []string{"c"},
					Attributes: []*onnx.AttributeProto{{Name: "antialias", Type: onnx.AttrInt, I: 1}}},
				{OpType: "FusedGemm", Domain: "com.microsoft", Name: "fused", Inputs: []string{"c"}, Outputs: []string{"y"}},
			},
			Inputs:  []*onnx.ValueInfoProto{{Name: "x", Type: f32}},
			Outputs: []*onnx.ValueInfoProto{{Name: "y", Type: f32}},
		}}
	p := filepath.Join(t.TempDir(), "refused.onnx")
	if err := os.WriteFile(p, onnx.Encode(m), 0o644); err != nil {
		t.Fatal(err)
	}
	says := []string{
		"opset 13: Kiln runs opsets 1 to 21\n",
		"Load refuses 3 nodes:\n",
		`  node 1 "mystery" (NoSuchOperator): unknown operator: Kiln does not run NoSuchOperator (opset 13)` + "\n",
		`  node 2 "smooth" (Resize): unsupported attribute or input: Resize (opset 13) with antialias=1` + "\n",
		`  node 3 "fused" (FusedGemm): operator FusedGemm of domain com.microsoft: Kiln runs the default ONNX domain only` + "\n",
		"Load refuses it: unsupported ONNX model: 3 unsupported operator(s)",
	}
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"inspect", p}, &stdout, &stderr); code != 0 {
		t.Fatalf("kiln inspect exited %d: %s", code, stderr.String())
	}
	text := stdout.String()
	at := 0
	for _, w := range says {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("kiln inspect does not say %q (after byte %d):\n%s", w, at, text)
		}
		at += i + len(w)
	}
	stdout.Reset()
	if code := runMain([]string{"inspect", "--json", p}, &stdout, &stderr); code != 0 {
		t.Fatalf("kiln inspect --json exited %d: %s", code, stderr.String())
	}
	var rep onnxReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, w := range says {
		if !strings.Contains(rep.Description, w) {
			t.Errorf("kiln inspect --json's description does not say %q:\n%s", w, rep.Description)
		}
	}
}
