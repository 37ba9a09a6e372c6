package onnx_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/onnx"
)

// refusedGraph is a chain of nodes from x (FLOAT[2 3]) to y of which
// four are refused: an operator Kiln does not run, a Resize with an
// attribute value it does not support, a Cast to a type it cannot hold
// and an operator of another domain.
func refusedGraph() *onnx.GraphProto {
	return &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{
			node("Relu", []string{"x"}, []string{"a"}),
			node("NoSuchOperator", []string{"a"}, []string{"b"}),
			node("Resize", []string{"b"}, []string{"c"}, &onnx.AttributeProto{Name: "antialias", Type: onnx.AttrInt, I: 1}),
			node("Cast", []string{"c"}, []string{"d"}, intAttr("to", onnx.TypeComplex64)),
			{OpType: "FusedGemm", Domain: "com.microsoft", Name: "fg", Inputs: []string{"d"}, Outputs: []string{"y"}},
		},
		Inputs:  []*onnx.ValueInfoProto{floatValue("x", 2, 3)},
		Outputs: []*onnx.ValueInfoProto{floatValue("y", 2, 3)},
	}
}

// writeModelWith writes a model of graph g importing opsets to a
// temporary file, returning its path.
func writeModelWith(t *testing.T, g *onnx.GraphProto, opsets ...onnx.OperatorSetID) string {
	t.Helper()
	m := &onnx.ModelProto{IRVersion: 8, ProducerName: "kiln-test", Graph: g, OpsetImports: opsets}
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(p, onnx.Encode(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDescribeListsEveryRefusedNode: Describe names each node Load would
// refuse on its own line (index, name, operator, reason), says whether
// Kiln runs the opset, and still ends with Load's own refusal.
func TestDescribeListsEveryRefusedNode(t *testing.T) {
	cases := []struct {
		name   string
		opsets []onnx.OperatorSetID
		want   []string
	}{
		{"opset 13", []onnx.OperatorSetID{{Version: 13}, {Domain: "com.microsoft", Version: 1}}, []string{
			"opset 13: Kiln runs opsets 1 to 21\n",
			"Load refuses 4 nodes:\n",
			`  node 1 "NoSuchOperator_b" (NoSuchOperator): unknown operator: Kiln does not run NoSuchOperator (opset 13)` + "\n",
			`  node 2 "Resize_c" (Resize): unsupported attribute or input: Resize (opset 13) with antialias=1` + "\n",
			`  node 3 "Cast_d" (Cast): unsupported attribute or input: Cast (opset 13) with to=COMPLEX64` + "\n",
			`  node 4 "fg" (FusedGemm): operator FusedGemm of domain com.microsoft: Kiln runs the default ONNX domain only` + "\n",
			"Load refuses it: unsupported ONNX model: 4 unsupported operator(s)",
		}},
		{"opset 0", []onnx.OperatorSetID{{Version: 0}}, []string{
			"opset 0: outside the opsets Kiln runs (1 to 21), so Load refuses it (nodes checked below as opset 21)\n",
			"Load refuses 4 nodes:\n",
			`  node 1 "NoSuchOperator_b" (NoSuchOperator): unknown operator: Kiln does not run NoSuchOperator (opset 21)`,
			`  node 2 "Resize_c" (Resize)`, `  node 3 "Cast_d" (Cast)`, `  node 4 "fg" (FusedGemm)`,
			"Load refuses it: unsupported ONNX model: opset 0: Kiln runs opsets 1 to 21",
		}},
		{"no default domain", []onnx.OperatorSetID{{Domain: "com.microsoft", Version: 1}}, []string{
			"opset: the model imports no opset of the default ONNX domain, so Load refuses it (nodes checked below as opset 21)\n",
			"Load refuses 4 nodes:\n", `  node 2 "Resize_c" (Resize)`,
			"Load refuses it: unsupported ONNX model: the model imports no opset of the default ONNX domain",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := onnx.Describe(writeModelWith(t, refusedGraph(), c.opsets...))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("Describe does not say %q:\n%s", w, d)
				}
			}
			if strings.Contains(d, `"Relu_a"`) {
				t.Errorf("Describe lists the Relu Kiln runs:\n%s", d)
			}
		})
	}
}

// TestDescribeListsRefusalsInSubgraphs: a refused node inside an If's
// branch is listed with its path and its index in the branch.
func TestDescribeListsRefusalsInSubgraphs(t *testing.T) {
	branch := func(op string) *onnx.GraphProto {
		return &onnx.GraphProto{Nodes: []*onnx.NodeProto{node("Relu", []string{"x"}, []string{"r"}), node(op, []string{"r"}, []string{"o"})},
			Outputs: []*onnx.ValueInfoProto{floatValue("o", 2, 3)}}
	}
	g := &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{{OpType: "If", Name: "choose", Inputs: []string{"c"}, Outputs: []string{"y"}, Attributes: []*onnx.AttributeProto{
			{Name: "then_branch", Type: onnx.AttrGraph, G: branch("Relu")},
			{Name: "else_branch", Type: onnx.AttrGraph, G: branch("Unheard")},
		}}},
		Inputs:  []*onnx.ValueInfoProto{floatValue("x", 2, 3), {Name: "c", Type: &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeBool, HasShape: true}}},
		Outputs: []*onnx.ValueInfoProto{floatValue("y", 2, 3)},
	}
	d, err := onnx.Describe(writeModel(t, 13, g))
	if err != nil {
		t.Fatal(err)
	}
	want := `Load refuses 1 node:` + "\n" + `  node 1 "choose/else_branch/Unheard_o" (Unheard): unknown operator: Kiln does not run Unheard (opset 13)` + "\n"
	if !strings.Contains(d, want) {
		t.Errorf("Describe does not say %q:\n%s", want, d)
	}
}

// TestDescribeCapsLongLists: past 50 refused nodes the list ends with a
// count per reason instead of a line per node.
func TestDescribeCapsLongLists(t *testing.T) {
	g := &onnx.GraphProto{Inputs: []*onnx.ValueInfoProto{floatValue("v0", 2)}}
	for i := 0; i < 70; i++ {
		op := "Alpha"
		if i%2 == 1 {
			op = "Beta"
		}
		g.Nodes = append(g.Nodes, node(op, []string{fmt.Sprintf("v%d", i)}, []string{fmt.Sprintf("v%d", i+1)}))
	}
	g.Outputs = []*onnx.ValueInfoProto{floatValue("v70", 2)}
	d, err := onnx.Describe(writeModel(t, 13, g))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Load refuses 70 nodes:\n", `  node 49 "Beta_v50" (Beta)`, "  … and 20 more:\n",
		"    10 × unknown operator: Kiln does not run Alpha (opset 13)\n", "    10 × unknown operator: Kiln does not run Beta (opset 13)\n"} {
		if !strings.Contains(d, w) {
			t.Errorf("Describe does not say %q:\n%s", w, d)
		}
	}
	if strings.Contains(d, `node 50 "`) {
		t.Errorf("Describe lists more than 50 nodes:\n%s", d)
	}
}

// TestDescribeRefusesInitializerTypes: an initializer of a data type
// Kiln has no tensor for is listed, and Describe says Load refuses the
// model although every node is one Kiln runs.
func TestDescribeRefusesInitializerTypes(t *testing.T) {
	g := oneNode("Add", "add", []int64{2}, []string{"z"}, []*onnx.TensorProto{{Name: "z", DataType: onnx.TypeComplex64, Dims: []int64{2}, FloatData: make([]float32, 4)}})
	d, err := onnx.Describe(writeModel(t, 13, g))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Load refuses 1 value:\n", `  initializer "z": unsupported data type COMPLEX64` + "\n", `Load refuses it: initializer "z": `} {
		if !strings.Contains(d, w) {
			t.Errorf("Describe does not say %q:\n%s", w, d)
		}
	}
}

// TestDescribeListsLegacyConversionFailures: for an old opset whose
// conversion fails, Describe lists the conversion's reason and still
// checks every node (as opset 7).
func TestDescribeListsLegacyConversionFailures(t *testing.T) {
	g := &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{node("Upsample", []string{"x"}, []string{"u"},
			&onnx.AttributeProto{Name: "height_scale", Type: onnx.AttrFloat, F: 2},
			&onnx.AttributeProto{Name: "width_scale", Type: onnx.AttrFloat, F: 2}),
			node("NoSuchOperator", []string{"u"}, []string{"y"})},
		Inputs: []*onnx.ValueInfoProto{floatValue("x", 1, 1, 2, 2)}, Outputs: []*onnx.ValueInfoProto{floatValue("y", 1, 1, 4, 4)},
	}
	d, err := onnx.Describe(writeModel(t, 5, g))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"opset 5: Kiln runs opsets 1 to 21 (this one converted to opset 7 on load)\n",
		"Load refuses 1 node and the opset conversion:\n",
		`  converting opset 5: unsupported ONNX model: node "Upsample_u" (Upsample): Upsample-1's height_scale and width_scale` + "\n",
		`  node 1 "NoSuchOperator_y" (NoSuchOperator): unknown operator: Kiln does not run NoSuchOperator (opset 7)` + "\n",
		"Load refuses it: unsupported ONNX model: node \"Upsample_u\""} {
		if !strings.Contains(d, w) {
			t.Errorf("Describe does not say %q:\n%s", w, d)
		}
	}
}

// TestDescribeListsUnsupportedValueKinds: a graph input of a kind Kiln
// does not hold (a map) is listed as a value, beside the refused node.
func TestDescribeListsUnsupportedValueKinds(t *testing.T) {
	g := oneNode("NoSuchOperator", "mystery", []int64{2}, nil, nil)
	g.Inputs = append(g.Inputs, &onnx.ValueInfoProto{Name: "table", Type: &onnx.TypeProto{Kind: "map"}})
	d, err := onnx.Describe(writeModel(t, 13, g))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Load refuses 1 node and 1 value:\n",
		`  node 0 "mystery" (NoSuchOperator): unknown operator`,
		`  value "table": unsupported type: graph value of map type` + "\n"} {
		if !strings.Contains(d, w) {
			t.Errorf("Describe does not say %q:\n%s", w, d)
		}
	}
}
