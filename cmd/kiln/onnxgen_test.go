package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/onnx"
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

// TestONNXGenControlFlow: `kiln onnx gen` writes an If as a Go if
// statement on the condition's value with each branch's nodes inside it,
// and refuses, naming the node inside the branch, a subgraph that builds
// a sequence (which generated code cannot hold).
func TestONNXGenControlFlow(t *testing.T) {
	f32 := func(name string) *onnx.ValueInfoProto {
		return &onnx.ValueInfoProto{Name: name, Type: &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeFloat, HasShape: true,
			Shape: []onnx.Dim{{Value: 3, HasValue: true}}}}
	}
	branch := func(op string) *onnx.GraphProto {
		return &onnx.GraphProto{Nodes: []*onnx.NodeProto{{OpType: op, Name: "branch_" + op, Inputs: []string{"x"}, Outputs: []string{op + "_out"}}},
			Outputs: []*onnx.ValueInfoProto{f32(op + "_out")}}
	}
	write := func(name string, then, els *onnx.GraphProto) string {
		m := &onnx.ModelProto{IRVersion: 8, OpsetImports: []onnx.OperatorSetID{{Version: 13}}, Graph: &onnx.GraphProto{
			Nodes: []*onnx.NodeProto{{OpType: "If", Name: "choose", Inputs: []string{"c"}, Outputs: []string{"y"}, Attributes: []*onnx.AttributeProto{
				{Name: "then_branch", Type: onnx.AttrGraph, G: then}, {Name: "else_branch", Type: onnx.AttrGraph, G: els}}}},
			Inputs:  []*onnx.ValueInfoProto{f32("x"), {Name: "c", Type: &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeBool, HasShape: true}}},
			Outputs: []*onnx.ValueInfoProto{{Name: "y"}}}}
		p := filepath.Join(t.TempDir(), name+".onnx")
		if err := os.WriteFile(p, onnx.Encode(m), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := runMain([]string{"onnx", "gen", write("if", branch("Relu"), branch("Neg")), "-o", dir, "--package", "choose"}, &out, &errOut); code != 0 {
		t.Fatalf("kiln onnx gen exited %d: %s", code, errOut.String())
	}
	src, err := os.ReadFile(filepath.Join(dir, "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"// choose: If\n", "if c.Item() != 0 {\n", "// branch_Relu: Relu\n", "x.Relu()", "} else {\n", "// branch_Neg: Neg\n", "x.Neg()"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("model.go lacks %q:\n%s", want, src)
		}
	}
	seq := branch("Relu")
	seq.Nodes = []*onnx.NodeProto{{OpType: "SequenceConstruct", Name: "pack", Inputs: []string{"x"}, Outputs: []string{"Relu_out"}}}
	seq.Outputs = []*onnx.ValueInfoProto{{Name: "Relu_out", Type: &onnx.TypeProto{Kind: "sequence"}}}
	errOut.Reset()
	if code := runMain([]string{"onnx", "gen", write("seq", seq, seq), "-o", t.TempDir()}, &out, &errOut); code == 0 ||
		!strings.Contains(errOut.String(), `"choose" (If) then_branch: graph value "Relu_out" is a sequence`) {
		t.Errorf("kiln onnx gen of a branch making a sequence: exit %d, %s", code, errOut.String())
	}
}
