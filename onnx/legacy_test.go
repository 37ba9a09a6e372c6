package onnx_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// Models of opsets 1 to 6 load converted to opset 7: each case builds an
// old-style graph and checks its output against values worked out by
// hand.
func TestLegacyOpsetsAreConverted(t *testing.T) {
	ints := func(name string, v ...int64) *onnx.AttributeProto {
		return &onnx.AttributeProto{Name: name, Type: onnx.AttrInts, Ints: v}
	}
	one := func(name string, v int64) *onnx.AttributeProto {
		return &onnx.AttributeProto{Name: name, Type: onnx.AttrInt, I: v}
	}
	x := []float32{1, 2, 3, 4, 5, 6} // [2, 3]
	cases := []struct {
		name  string
		opset int64
		g     *onnx.GraphProto
		shape []int
		want  []float64
	}{
		{"Add broadcast along axis 0", 6, &onnx.GraphProto{
			Nodes:        []*onnx.NodeProto{node("Add", []string{"x", "b"}, []string{"y"}, one("broadcast", 1), one("axis", 0))},
			Initializers: []*onnx.TensorProto{{Name: "b", DataType: onnx.TypeFloat, Dims: []int64{2}, FloatData: []float32{10, 20}}},
			Inputs:       []*onnx.ValueInfoProto{floatValue("x", 2, 3)}, Outputs: []*onnx.ValueInfoProto{floatValue("y", 2, 3)},
		}, []int{2, 3}, []float64{11, 12, 13, 24, 25, 26}},
		{"Mul trailing broadcast with consumed_inputs", 5, &onnx.GraphProto{
			Nodes:        []*onnx.NodeProto{node("Mul", []string{"x", "b"}, []string{"y"}, one("broadcast", 1), ints("consumed_inputs", 0, 0))},
			Initializers: []*onnx.TensorProto{{Name: "b", DataType: onnx.TypeFloat, Dims: []int64{3}, FloatData: []float32{1, 0, -1}}},
			Inputs:       []*onnx.ValueInfoProto{floatValue("x", 2, 3)}, Outputs: []*onnx.ValueInfoProto{floatValue("y", 2, 3)},
		}, []int{2, 3}, []float64{1, 0, -3, 4, 0, -6}},
		{"Reshape-1 shape attribute", 1, &onnx.GraphProto{
			Nodes:  []*onnx.NodeProto{node("Reshape", []string{"x"}, []string{"y"}, ints("shape", 3, 2))},
			Inputs: []*onnx.ValueInfoProto{floatValue("x", 2, 3)}, Outputs: []*onnx.ValueInfoProto{floatValue("y", 3, 2)},
		}, []int{3, 2}, []float64{1, 2, 3, 4, 5, 6}},
		{"Cast-1 type name and Concat-1 default axis", 1, &onnx.GraphProto{
			Nodes: []*onnx.NodeProto{
				node("Cast", []string{"x"}, []string{"c"}, &onnx.AttributeProto{Name: "to", Type: onnx.AttrString, S: []byte("DOUBLE")}),
				node("Cast", []string{"c"}, []string{"f"}, &onnx.AttributeProto{Name: "to", Type: onnx.AttrString, S: []byte("FLOAT")}),
				node("Concat", []string{"x", "f"}, []string{"y"}),
			},
			Inputs: []*onnx.ValueInfoProto{floatValue("x", 2, 3)}, Outputs: []*onnx.ValueInfoProto{floatValue("y", 2, 6)},
		}, []int{2, 6}, []float64{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}},
		{"Tile-1 tiles and axis inputs", 1, &onnx.GraphProto{
			Nodes: []*onnx.NodeProto{node("Tile", []string{"x", "tiles", "axis"}, []string{"y"})},
			Initializers: []*onnx.TensorProto{{Name: "tiles", DataType: onnx.TypeInt64, Dims: []int64{}, Int64Data: []int64{2}},
				{Name: "axis", DataType: onnx.TypeInt64, Dims: []int64{}, Int64Data: []int64{0}}},
			Inputs: []*onnx.ValueInfoProto{floatValue("x", 2, 3)}, Outputs: []*onnx.ValueInfoProto{floatValue("y", 4, 3)},
		}, []int{4, 3}, []float64{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := onnx.Load(writeModel(t, c.opset, c.g), tensor.CPU())
			if err != nil {
				t.Fatal(err)
			}
			defer nn.Release(m)
			if m.Opset() != 7 {
				t.Errorf("Opset() = %d, want 7 (converted)", m.Opset())
			}
			in := tensor.FromFloat32s(tensor.CPU(), x, 2, 3)
			testutil.AssertValues(t, "y", m.Forward(in), c.shape, c.want, 0, 0)
		})
	}
}

func TestLegacyConversionRefusesWhatItCannotConvert(t *testing.T) {
	g := &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{node("Upsample", []string{"x"}, []string{"y"},
			&onnx.AttributeProto{Name: "height_scale", Type: onnx.AttrFloat, F: 2},
			&onnx.AttributeProto{Name: "width_scale", Type: onnx.AttrFloat, F: 2})},
		Inputs: []*onnx.ValueInfoProto{floatValue("x", 1, 1, 2, 2)}, Outputs: []*onnx.ValueInfoProto{floatValue("y", 1, 1, 4, 4)},
	}
	_, err := onnx.Load(writeModel(t, 1, g), tensor.CPU())
	if !errors.Is(err, onnx.ErrUnsupported) || !strings.Contains(err.Error(), "Upsample-1") {
		t.Fatalf("err = %v, want ErrUnsupported naming Upsample-1", err)
	}
}
