package onnx_test

import (
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// TestInt8Int16Initializers loads INT8 (raw_data) and INT16 (int32_data)
// initializers as Int8 and Int16 tensors, and adds an INT8 input to the
// INT8 one with int8 wraparound (127 + 1 = -128), as onnxruntime does.
func TestInt8Int16Initializers(t *testing.T) {
	i8 := []int8{-128, -1, 0, 1, 127, 100}
	raw := make([]byte, len(i8))
	for i, v := range i8 {
		raw[i] = byte(v)
	}
	intValue := func(name string, et int32, n int64) *onnx.ValueInfoProto {
		return &onnx.ValueInfoProto{Name: name, Type: &onnx.TypeProto{Kind: "tensor", ElemType: et, HasShape: true,
			Shape: []onnx.Dim{{Value: n, HasValue: true}}}}
	}
	g := &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{
			node("Add", []string{"x", "w8"}, []string{"y8"}),
			node("Identity", []string{"w16"}, []string{"y16"}),
		},
		Initializers: []*onnx.TensorProto{
			{Name: "w8", DataType: onnx.TypeInt8, Dims: []int64{6}, RawData: raw},
			{Name: "w16", DataType: onnx.TypeInt16, Dims: []int64{4}, Int32Data: []int32{-32768, -300, 255, 32767}},
		},
		Inputs:  []*onnx.ValueInfoProto{intValue("x", onnx.TypeInt8, 6)},
		Outputs: []*onnx.ValueInfoProto{intValue("y8", onnx.TypeInt8, 6), intValue("y16", onnx.TypeInt16, 4)},
	}
	path := writeModel(t, 13, g)
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m, err := onnx.Load(path, dev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(m)
		x := tensor.FromInt8s(dev, []int8{0, 0, 0, 0, 1, 100}, 6)
		defer x.Release()
		out, err := m.Run(map[string]*tensor.Tensor{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			for _, o := range out {
				o.Release()
			}
		}()
		for name, want := range map[string]struct {
			dt   tensor.DType
			vals []int64
		}{
			"y8":  {tensor.Int8, []int64{-128, -1, 0, 1, -128, -56}},
			"y16": {tensor.Int16, []int64{-32768, -300, 255, 32767}},
		} {
			got := out[name]
			if got == nil {
				t.Errorf("%s: missing", name)
				continue
			}
			if got.DType() != want.dt || !slices.Equal(got.Int64s(), want.vals) {
				t.Errorf("%s = %s %v, want %s %v", name, got.DType(), got.Int64s(), want.dt, want.vals)
			}
		}
	})
}
