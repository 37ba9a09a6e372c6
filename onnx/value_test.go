package onnx_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// ifModel is a = Abs(x), then If(cond) with a then branch computing a+a
// and an else branch computing -a, both reading the intermediate a from
// the enclosing graph (which must not be released before the If runs).
func ifModel(t *testing.T) string {
	t.Helper()
	branch := func(op, out string) *onnx.GraphProto {
		n := node(op, []string{"a", "a"}, []string{out})
		if op == "Neg" {
			n.Inputs = []string{"a"}
		}
		return &onnx.GraphProto{Nodes: []*onnx.NodeProto{n}, Outputs: []*onnx.ValueInfoProto{floatValue(out, 2)}}
	}
	cond := &onnx.ValueInfoProto{Name: "cond", Type: &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeBool, HasShape: true, Shape: []onnx.Dim{}}}
	g := &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{node("Abs", []string{"x"}, []string{"a"}), node("Neg", []string{"a"}, []string{"unused"}),
			node("If", []string{"cond"}, []string{"y"},
				&onnx.AttributeProto{Name: "then_branch", Type: onnx.AttrGraph, G: branch("Add", "sum")},
				&onnx.AttributeProto{Name: "else_branch", Type: onnx.AttrGraph, G: branch("Neg", "neg")})},
		Inputs:  []*onnx.ValueInfoProto{cond, floatValue("x", 2)},
		Outputs: []*onnx.ValueInfoProto{floatValue("y", 2)},
	}
	return writeModel(t, 13, g)
}

func TestIfRunsTheBranchCondSelects(t *testing.T) {
	m, err := onnx.Load(ifModel(t), tensor.CPU())
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(m)
	for _, tc := range []struct {
		name string
		cond bool
		want []float32
	}{
		{"then branch reads the outer value", true, []float32{2, 4}},
		{"else branch reads the outer value", false, []float32{-1, -2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tensor.Scope(func() {
				c := tensor.FromBools(tensor.CPU(), []bool{tc.cond}).Reshape()
				x := tensor.FromFloat32s(tensor.CPU(), []float32{1, -2}, 2)
				out, err := m.Run(map[string]*tensor.Tensor{"cond": c, "x": x})
				if err != nil {
					t.Fatal(err)
				}
				if got := out["y"].Float32s(); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("y = %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// sequenceModel splits x [3, 2] into a sequence of its rows and returns
// the sequence and its length.
func sequenceModel(t *testing.T) string {
	t.Helper()
	seqType := &onnx.TypeProto{Kind: "sequence", Elem: floatValue("", 1, 2).Type}
	lenType := &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeInt64, HasShape: true, Shape: []onnx.Dim{}}
	g := &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{
			node("SplitToSequence", []string{"x"}, []string{"rows"}),
			node("SequenceLength", []string{"rows"}, []string{"n"}),
		},
		Inputs:  []*onnx.ValueInfoProto{floatValue("x", 3, 2)},
		Outputs: []*onnx.ValueInfoProto{{Name: "rows", Type: seqType}, {Name: "n", Type: lenType}},
	}
	return writeModel(t, 13, g)
}

func TestRunValuesReturnsSequences(t *testing.T) {
	m, err := onnx.Load(sequenceModel(t), tensor.CPU())
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(m)
	tensor.Scope(func() {
		x := tensor.FromFloat32s(tensor.CPU(), []float32{1, 2, 3, 4, 5, 6}, 3, 2)
		out, err := m.RunValues(map[string]onnx.Value{"x": {Tensor: x}})
		if err != nil {
			t.Fatal(err)
		}
		rows := out["rows"]
		if !rows.IsSequence || len(rows.Sequence) != 3 {
			t.Fatalf("rows = %+v, want a sequence of 3", rows)
		}
		if got := rows.Sequence[2].Tensor.Float32s(); !reflect.DeepEqual(got, []float32{5, 6}) {
			t.Errorf("rows[2] = %v, want [5 6]", got)
		}
		if got := out["n"].Tensor.Int64s(); !reflect.DeepEqual(got, []int64{3}) {
			t.Errorf("n = %v, want [3]", got)
		}
		_, err = m.Run(map[string]*tensor.Tensor{"x": x})
		if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), "use RunValues") {
			t.Errorf("Run of a sequence output: err = %v, want ErrArgument pointing at RunValues", err)
		}
	})
}

func TestRunValuesTakesStrings(t *testing.T) {
	strs := func(name string, n int64) *onnx.ValueInfoProto {
		return &onnx.ValueInfoProto{Name: name, Type: &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeString, HasShape: true,
			Shape: []onnx.Dim{{Value: n, HasValue: true}}}}
	}
	g := &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{node("StringNormalizer", []string{"x"}, []string{"y"},
			&onnx.AttributeProto{Name: "case_change_action", Type: onnx.AttrString, S: []byte("UPPER")},
			&onnx.AttributeProto{Name: "stopwords", Type: onnx.AttrStrings, Strings: [][]byte{[]byte("the")}})},
		Inputs:  []*onnx.ValueInfoProto{strs("x", 3)},
		Outputs: []*onnx.ValueInfoProto{strs("y", 2)},
	}
	m, err := onnx.Load(writeModel(t, 13, g), tensor.CPU())
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(m)
	out, err := m.RunValues(map[string]onnx.Value{"x": {Strings: []string{"The", "quick", "fox"}, Shape: []int{3}}})
	if err != nil {
		t.Fatal(err)
	}
	if y := out["y"]; !reflect.DeepEqual(y.Strings, []string{"QUICK", "FOX"}) || !reflect.DeepEqual(y.Shape, []int{2}) {
		t.Errorf("y = %q %v, want [QUICK FOX] [2]", y.Strings, y.Shape)
	}
}

func TestGenerateRefusesRuntimeOnlyGraphs(t *testing.T) {
	for _, tc := range []struct {
		name, path, says string
	}{
		{"sequence output", sequenceModel(t), `graph value "rows" is a sequence`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := onnx.Generate(tc.path, filepath.Join(t.TempDir(), "gen"), onnx.GenerateOptions{})
			if !errors.Is(err, onnx.ErrUnsupported) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v, want ErrUnsupported saying %q", err, tc.says)
			}
		})
	}
}
