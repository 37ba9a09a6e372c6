package onnx_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// ints64 is an INT64 initializer.
func ints64(name string, v ...int64) *onnx.TensorProto {
	return &onnx.TensorProto{Name: name, DataType: onnx.TypeInt64, Dims: []int64{int64(len(v))}, Int64Data: v}
}

// floats32 is a FLOAT initializer of the given shape, zero-filled.
func floats32(name string, dims ...int64) *onnx.TensorProto {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	return &onnx.TensorProto{Name: name, DataType: onnx.TypeFloat, Dims: dims, FloatData: make([]float32, n)}
}

func intsAttr(name string, v ...int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttrInts, Ints: v}
}

func intAttr(name string, v int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttrInt, I: v}
}

// oneNode is a graph of one node named name reading x (FLOAT of xDims)
// and the initializers, writing y.
func oneNode(op, name string, xDims []int64, inputs []string, inits []*onnx.TensorProto, attrs ...*onnx.AttributeProto) *onnx.GraphProto {
	return &onnx.GraphProto{
		Nodes:        []*onnx.NodeProto{{OpType: op, Name: name, Inputs: append([]string{"x"}, inputs...), Outputs: []string{"y"}, Attributes: attrs}},
		Initializers: inits,
		Inputs:       []*onnx.ValueInfoProto{floatValue("x", xDims...)},
		Outputs:      []*onnx.ValueInfoProto{{Name: "y"}},
	}
}

// TestLoadRefusesBadAttributes loads one-node models whose attributes
// break the operator's definition: Load fails with ErrCorrupt naming the
// node, the attribute and the value, before anything divides by them.
func TestLoadRefusesBadAttributes(t *testing.T) {
	img := []int64{1, 2, 8, 8}
	conv := func(name string, attrs ...*onnx.AttributeProto) *onnx.GraphProto {
		return oneNode("Conv", name, img, []string{"w"}, []*onnx.TensorProto{floats32("w", 4, 2, 3, 3)}, attrs...)
	}
	split := oneNode("Split", "split", []int64{6, 2}, []string{"s"}, []*onnx.TensorProto{ints64("s", 2, 2)})
	split.Nodes[0].Outputs = []string{"y", "z"}
	cases := []struct {
		name  string
		opset int64
		g     *onnx.GraphProto
		says  string
	}{
		{"zero stride", 13, conv("conv1", intsAttr("strides", 0, 1)), `node "conv1" (Conv): strides[0] = 0, must be positive`},
		{"unnamed node", 13, conv("", intsAttr("strides", 1, 0)), `node #0 (Conv): strides[1] = 0, must be positive`},
		{"negative dilation", 13, conv("conv1", intsAttr("dilations", 1, -1)), `node "conv1" (Conv): dilations[1] = -1, must be positive`},
		{"strides of the wrong length", 13, conv("conv1", intsAttr("strides", 1, 1, 1)), `node "conv1" (Conv): strides has 3 values [1 1 1], want 2`},
		{"pads of the wrong length", 13, conv("conv1", intsAttr("pads", 1, 1, 1)), `node "conv1" (Conv): pads has 3 values [1 1 1], want 4`},
		{"negative pad", 13, conv("conv1", intsAttr("pads", 0, -2, 0, 0)), `node "conv1" (Conv): pads[1] = -2, must be non-negative`},
		{"zero group", 13, conv("conv1", intAttr("group", 0)), `node "conv1" (Conv): group = 0, must be positive`},
		{"group not dividing the channels", 13, conv("conv1", intAttr("group", 3)), `node "conv1" (Conv): group = 3 does not divide the 4 output channels`},
		{"group not matching the input", 13, conv("conv1", intAttr("group", 2)), `node "conv1" (Conv): group = 2: the input's 2 channels are not group × the weight's 2`},
		{"zero kernel", 13, oneNode("MaxPool", "pool", img, nil, nil, intsAttr("kernel_shape", 2, 0)), `node "pool" (MaxPool): kernel_shape[1] = 0, must be positive`},
		{"pool without kernel", 13, oneNode("AveragePool", "pool", img, nil, nil), `node "pool" (AveragePool): kernel_shape is missing`},
		{"softmax axis out of range", 13, oneNode("Softmax", "sm", []int64{2, 3}, nil, nil, intAttr("axis", 2)), `node "sm" (Softmax): axis = 2, out of range for rank 2`},
		{"concat axis out of range", 13, oneNode("Concat", "cat", []int64{2, 3}, nil, nil, intAttr("axis", -3)), `node "cat" (Concat): axis = -3, out of range for rank 2`},
		{"perm repeating an axis", 13, oneNode("Transpose", "tr", []int64{2, 3}, nil, nil, intsAttr("perm", 0, -2)), `node "tr" (Transpose): perm[1] = -2 repeats axis 0`},
		{"perm of the wrong length", 13, oneNode("Transpose", "tr", []int64{2, 3}, nil, nil, intsAttr("perm", 1, 0, 2)), `node "tr" (Transpose): perm [1 0 2] has 3 values, the input's rank is 2`},
		{"reshape overflowing", 13, oneNode("Reshape", "rs", []int64{4}, []string{"s"}, []*onnx.TensorProto{ints64("s", 1<<21, 1<<21, 1<<21)}), `node "rs" (Reshape): shape [2097152 2097152 2097152] has more than 2^32 elements`},
		{"reshape inferring two sizes", 13, oneNode("Reshape", "rs", []int64{4}, []string{"s"}, []*onnx.TensorProto{ints64("s", -1, -1)}), `node "rs" (Reshape): shape[1] = -1 beside shape[0] = -1`},
		{"reshape to another size", 13, oneNode("Reshape", "rs", []int64{4}, []string{"s"}, []*onnx.TensorProto{ints64("s", 3)}), `node "rs" (Reshape): shape [3] holds 3 elements, the input 4`},
		{"expand overflowing", 13, oneNode("Expand", "ex", []int64{1}, []string{"s"}, []*onnx.TensorProto{ints64("s", math.MaxInt64, 2)}), `node "ex" (Expand): shape [9223372036854775807 2] has more than 2^32 elements`},
		{"negative constant shape", 13, &onnx.GraphProto{
			Nodes:        []*onnx.NodeProto{{OpType: "ConstantOfShape", Name: "cs", Inputs: []string{"s"}, Outputs: []string{"y"}}},
			Initializers: []*onnx.TensorProto{ints64("s", 2, -3)}, Outputs: []*onnx.ValueInfoProto{{Name: "y"}}},
			`node "cs" (ConstantOfShape): shape[1] = -3, must not be negative`},
		{"gather index out of range", 13, oneNode("Gather", "ga", []int64{4, 2}, []string{"i"}, []*onnx.TensorProto{ints64("i", 1, 4)}), `node "ga" (Gather): indices[1] = 4, out of range for axis 0 of size 4`},
		{"gather axis out of range", 13, oneNode("Gather", "ga", []int64{4, 2}, []string{"i"}, []*onnx.TensorProto{ints64("i", 1)}, intAttr("axis", 2)), `node "ga" (Gather): axis = 2, out of range for rank 2`},
		{"split sizes not adding up", 13, split, `node "split" (Split): split [2 2] does not add up to the axis (6)`},
		{"unsqueeze axis repeated", 11, oneNode("Unsqueeze", "un", []int64{3}, nil, nil, intsAttr("axes", 0, -3)), `node "un" (Unsqueeze): axes[1] = -3 repeats axis 0`},
		{"squeeze of a wide axis", 13, oneNode("Squeeze", "sq", []int64{3, 1}, []string{"a"}, []*onnx.TensorProto{ints64("a", 0)}), `node "sq" (Squeeze): axes[0] = 0 names a dimension of size 3, not 1`},
		{"reduce axis out of range", 13, oneNode("ReduceMean", "rm", []int64{3, 1}, nil, nil, intsAttr("axes", 5)), `node "rm" (ReduceMean): axes[0] = 5, out of range for rank 2`},
		{"zero slice step", 13, oneNode("Slice", "sl", []int64{6}, []string{"b", "e", "a", "st"}, []*onnx.TensorProto{ints64("b", 0), ints64("e", 4), ints64("a", 0), ints64("st", 0)}), `node "sl" (Slice): steps[0] = 0, must be non-zero`},
		{"negative tile", 13, oneNode("Tile", "ti", []int64{2}, []string{"r"}, []*onnx.TensorProto{ints64("r", -1)}), `node "ti" (Tile): repeats[0] = -1, must be non-negative`},
		{"zero resize scale", 13, oneNode("Resize", "rz", img, []string{"", "sc"}, []*onnx.TensorProto{{Name: "sc", DataType: onnx.TypeFloat, Dims: []int64{4}, FloatData: []float32{1, 1, 0, 2}}}), `node "rz" (Resize): scales[2] = 0, must be positive and finite`},
		{"zero groups", 18, oneNode("GroupNormalization", "gn", img, []string{"s", "b"}, []*onnx.TensorProto{floats32("s", 2), floats32("b", 2)}, intAttr("num_groups", 0)), `node "gn" (GroupNormalization): num_groups = 0, must be positive`},
		{"zero hidden size", 14, oneNode("LSTM", "lstm", []int64{5, 1, 3}, []string{"W", "R"}, []*onnx.TensorProto{floats32("W", 1, 8, 3), floats32("R", 1, 8, 2)}, intAttr("hidden_size", 0)), `node "lstm" (LSTM): hidden_size = 0, must be positive`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := onnx.Load(writeModel(t, c.opset, c.g), tensor.CPU())
			if !errors.Is(err, onnx.ErrCorrupt) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v, want ErrCorrupt saying %q", err, c.says)
			}
		})
	}
}

// TestDescribeRefusesBadAttributes: Describe (what `kiln inspect` prints)
// reports the stride-0 Conv like Load, while DescribeModel and InferShapes
// describe it without panicking, leaving the Conv's output unknown.
func TestDescribeRefusesBadAttributes(t *testing.T) {
	g := oneNode("Conv", "conv1", []int64{1, 1, 8, 8}, []string{"w"}, []*onnx.TensorProto{floats32("w", 1, 1, 3, 3)}, intsAttr("strides", 0, 1))
	path := writeModel(t, 13, g)
	_, err := onnx.Describe(path)
	if !errors.Is(err, onnx.ErrCorrupt) || !strings.Contains(err.Error(), `node "conv1" (Conv): strides[0] = 0, must be positive`) {
		t.Fatalf("err = %v, want ErrCorrupt naming the node and the stride", err)
	}
	m, err := onnx.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := onnx.DescribeModel(m); !strings.Contains(d, "y: ?[…]") {
		t.Errorf("DescribeModel:\n%s\nwant the Conv's output unknown", d)
	}
}

// TestDescribeSaysWhetherLoadAccepts: Describe (what `kiln inspect`
// prints) ends with Load's verdict, checked without reading weights: the
// reason for a model Load refuses, and "Load accepts it." otherwise.
func TestDescribeSaysWhetherLoadAccepts(t *testing.T) {
	refused := writeModel(t, 13, oneNode("NoSuchOperator", "mystery", []int64{1, 4}, nil, nil))
	d, err := onnx.Describe(refused)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d, "Load refuses it: ") || !strings.Contains(d, "NoSuchOperator") {
		t.Errorf("Describe of a model with an unknown operator:\n%s\nwant Load's refusal naming it", d)
	}
	accepted := writeModel(t, 13, oneNode("Relu", "relu", []int64{1, 4}, nil, nil))
	if d, err := onnx.Describe(accepted); err != nil || !strings.HasSuffix(d, "Load accepts it.\n") {
		t.Errorf("Describe of a Relu model = %q, %v; want it to end with Load's acceptance", d, err)
	}
}
