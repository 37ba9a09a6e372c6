package onnx_test

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// TestResizeModes checks Resize's cubic mode and tf_crop_and_resize's
// extrapolation against values worked out by hand (the conformance suite
// covers the common cases; its crop stays inside the input).
func TestResizeModes(t *testing.T) {
	str := func(name, v string) *onnx.AttributeProto {
		return &onnx.AttributeProto{Name: name, Type: onnx.AttrString, S: []byte(v)}
	}
	cases := []struct {
		name  string
		x     []float32
		shape []int
		roi   []float32
		sizes []int64
		attrs []*onnx.AttributeProto
		want  []float64
	}{
		// x = 1 2 / 3 4; width positions 0, 1, 2: the last lies past the input.
		{"crop extrapolates outside the input", []float32{1, 2, 3, 4}, []int{1, 1, 2, 2}, []float32{0, 0, 0, 0, 1, 1, 1, 2},
			[]int64{1, 1, 2, 3}, []*onnx.AttributeProto{str("mode", "linear"), str("coordinate_transformation_mode", "tf_crop_and_resize"),
				{Name: "extrapolation_value", Type: onnx.AttrFloat, F: 7}},
			[]float64{1, 2, 7, 3, 4, 7}},
		// Positions j/2 over the ramp 0 1 2 3 with A = −0.75: half-way
		// the taps floor−1 … floor+2 weigh (−0.09375, 0.59375, 0.59375,
		// −0.09375), and taps past an edge repeat it, so position 0.5
		// reads (0, 0, 1, 2) → 0.40625 and 3.5 reads (2, 3, 3, 3) → 3.09375.
		{"cubic asymmetric", []float32{0, 1, 2, 3}, []int{1, 1, 1, 4}, nil, []int64{1, 1, 1, 8},
			[]*onnx.AttributeProto{str("mode", "cubic"), str("coordinate_transformation_mode", "asymmetric")},
			[]float64{0, 0.40625, 1, 1.5, 2, 2.59375, 3, 3.09375}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dims := make([]int64, len(c.shape))
			for i, d := range c.shape {
				dims[i] = int64(d)
			}
			out := make([]int64, len(c.sizes))
			copy(out, c.sizes)
			g := &onnx.GraphProto{
				Nodes:  []*onnx.NodeProto{node("Resize", []string{"x", "roi", "", "sizes"}, []string{"y"}, c.attrs...)},
				Inputs: []*onnx.ValueInfoProto{floatValue("x", dims...)},
				Initializers: []*onnx.TensorProto{
					{Name: "roi", DataType: onnx.TypeFloat, Dims: []int64{int64(len(c.roi))}, FloatData: c.roi},
					{Name: "sizes", DataType: onnx.TypeInt64, Dims: []int64{int64(len(c.sizes))}, Int64Data: c.sizes},
				},
				Outputs: []*onnx.ValueInfoProto{floatValue("y", out...)},
			}
			m, err := onnx.Load(writeModel(t, 13, g), tensor.CPU())
			if err != nil {
				t.Fatal(err)
			}
			y, err := m.Run(map[string]*tensor.Tensor{"x": tensor.FromFloat32s(tensor.CPU(), c.x, c.shape...)})
			if err != nil {
				t.Fatal(err)
			}
			got := y["y"].Float64s()
			if fmt.Sprint(y["y"].Shape()) != fmt.Sprint(out) || len(got) != len(c.want) {
				t.Fatalf("shape %v, want %v", y["y"].Shape(), out)
			}
			for i := range got {
				if d := got[i] - c.want[i]; d > 1e-6 || d < -1e-6 {
					t.Errorf("y = %v, want %v", got, c.want)
					break
				}
			}
		})
	}
}
