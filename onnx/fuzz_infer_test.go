package onnx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzInferShapes mutates real models (every committed test model, and the
// stride-0 Conv of issue 17 in testdata/fuzz/FuzzInferShapes): for any
// model that decodes, shape inference, attribute validation and
// DescribeModel must not panic, and a panic that inference recovered (it
// guards each node) is a failure too, since every recovered panic is a
// missing check. Inference runs at the model's opset and at another, so
// that the attribute forms of both sides of opset 13 are reached.
func FuzzInferShapes(f *testing.F) {
	for _, dir := range []string{"models", "ops"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.onnx"))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			raw, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw)
		}
	}
	f.Add(Encode(strideZeroConv()))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil || m.Graph == nil {
			return
		}
		opset, _ := defaultOpset(m)
		other := int64(17)
		if opset >= 13 {
			other = 11
		}
		for _, o := range []int64{opset, other} {
			res := inferGraph(m.Graph, o)
			if res.bug != nil {
				t.Fatalf("opset %d: %v", o, res.bug)
			}
			if res.invalid != nil && (!errors.Is(res.invalid, ErrCorrupt) || !strings.Contains(res.invalid.Error(), "node ")) {
				t.Fatalf("opset %d: validation error %v does not wrap ErrCorrupt naming the node", o, res.invalid)
			}
		}
		_ = DescribeModel(m)
	})
}

// strideZeroConv is issue 17's crafted model: a Conv named "conv1" with
// strides [0 1], which divided by zero in shape inference.
func strideZeroConv() *ModelProto {
	f32 := func(name string, dims ...int64) *ValueInfoProto {
		t := &TypeProto{Kind: "tensor", ElemType: TypeFloat, HasShape: true}
		for _, d := range dims {
			t.Shape = append(t.Shape, Dim{Value: d, HasValue: true})
		}
		return &ValueInfoProto{Name: name, Type: t}
	}
	g := &GraphProto{
		Name: "stride0",
		Nodes: []*NodeProto{{OpType: "Conv", Name: "conv1", Inputs: []string{"x", "w"}, Outputs: []string{"y"},
			Attributes: []*AttributeProto{{Name: "strides", Type: AttrInts, Ints: []int64{0, 1}}}}},
		Initializers: []*TensorProto{{Name: "w", DataType: TypeFloat, Dims: []int64{1, 1, 3, 3}, FloatData: make([]float32, 9)}},
		Inputs:       []*ValueInfoProto{f32("x", 1, 1, 8, 8)},
		Outputs:      []*ValueInfoProto{f32("y", 1, 1, 6, 6)},
	}
	return &ModelProto{IRVersion: 8, ProducerName: "kiln-test", Graph: g, OpsetImports: []OperatorSetID{{Version: 13}}}
}
