package onnx_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// floatInput declares a FLOAT input or output of the given shape (a
// negative size is the symbol "batch").
func floatValue(name string, dims ...int64) *onnx.ValueInfoProto {
	t := &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeFloat, HasShape: true, Shape: []onnx.Dim{}}
	for _, d := range dims {
		if d < 0 {
			t.Shape = append(t.Shape, onnx.Dim{Param: "batch"})
		} else {
			t.Shape = append(t.Shape, onnx.Dim{Value: d, HasValue: true})
		}
	}
	return &onnx.ValueInfoProto{Name: name, Type: t}
}

// writeModel encodes a one-graph model at opset into a temporary file.
func writeModel(t *testing.T, opset int64, g *onnx.GraphProto) string {
	t.Helper()
	m := &onnx.ModelProto{IRVersion: 8, ProducerName: "kiln-test", Graph: g,
		OpsetImports: []onnx.OperatorSetID{{Domain: "", Version: opset}}}
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(p, onnx.Encode(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func node(op string, ins, outs []string, attrs ...*onnx.AttributeProto) *onnx.NodeProto {
	return &onnx.NodeProto{OpType: op, Name: op + "_" + outs[0], Inputs: ins, Outputs: outs, Attributes: attrs}
}

func TestUnsupportedOperatorsAreListedAtOnce(t *testing.T) {
	g := &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{
			node("Relu", []string{"x"}, []string{"a"}),
			node("Col2Im", []string{"a"}, []string{"b"}),
			node("Col2Im", []string{"b"}, []string{"c"}),
			{OpType: "FusedGemm", Domain: "com.microsoft", Name: "fg", Inputs: []string{"c"}, Outputs: []string{"d"}},
			node("Resize", []string{"d"}, []string{"e"}, &onnx.AttributeProto{Name: "antialias", Type: onnx.AttrInt, I: 1}),
			node("StringSplit", []string{"e"}, []string{"y"}),
		},
		Inputs:  []*onnx.ValueInfoProto{floatValue("x", 2, 3)},
		Outputs: []*onnx.ValueInfoProto{floatValue("y", 2, 3)},
	}
	_, err := onnx.Load(writeModel(t, 13, g), tensor.CPU())
	if !errors.Is(err, onnx.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
	for _, want := range []string{"4 unsupported operator(s)", "Col2Im (opset 13): 2 node(s): Col2Im_b, Col2Im_c",
		"FusedGemm (domain com.microsoft)", "Resize (opset 13) with antialias=1", "StringSplit (opset 13)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	relu := func() *onnx.GraphProto {
		return &onnx.GraphProto{Nodes: []*onnx.NodeProto{node("Relu", []string{"x"}, []string{"y"})},
			Inputs: []*onnx.ValueInfoProto{floatValue("x", 2)}, Outputs: []*onnx.ValueInfoProto{floatValue("y", 2)}}
	}
	stringInit := relu()
	stringInit.Initializers = []*onnx.TensorProto{{Name: "s", DataType: onnx.TypeString, Dims: []int64{2}, StringData: [][]byte{[]byte("hi")}}}
	stringInit.Nodes = append(stringInit.Nodes, node("Identity", []string{"s"}, []string{"t"}))
	shortRaw := relu()
	shortRaw.Initializers = []*onnx.TensorProto{{Name: "w", DataType: onnx.TypeFloat, Dims: []int64{2, 3}, RawData: make([]byte, 20)}}
	shortRaw.Nodes = append(shortRaw.Nodes, node("Relu", []string{"w"}, []string{"t"}))
	undefined := relu()
	undefined.Nodes[0].Inputs = []string{"nowhere"}
	cycle := relu()
	cycle.Nodes = []*onnx.NodeProto{node("Relu", []string{"b"}, []string{"a"}), node("Relu", []string{"a"}, []string{"b"}), node("Relu", []string{"x"}, []string{"y"})}
	castString := relu()
	castString.Nodes = append(castString.Nodes, node("Cast", []string{"x"}, []string{"s"}, &onnx.AttributeProto{Name: "to", Type: onnx.AttrInt, I: onnx.TypeComplex64}))
	external := relu()
	external.Initializers = []*onnx.TensorProto{{Name: "w", DataType: onnx.TypeFloat, Dims: []int64{2}, DataLocation: onnx.LocationExternal,
		ExternalData: []onnx.StringEntry{{Key: "location", Value: "../outside.bin"}}}}
	missing := relu()
	missing.Initializers = []*onnx.TensorProto{{Name: "w", DataType: onnx.TypeFloat, Dims: []int64{2}, DataLocation: onnx.LocationExternal,
		ExternalData: []onnx.StringEntry{{Key: "location", Value: "absent.bin"}}}}
	cases := []struct {
		name  string
		opset int64
		g     *onnx.GraphProto
		kind  error
		says  string
	}{
		{"opset 0", 0, relu(), onnx.ErrUnsupported, "opset 0"},
		{"string initializer of the wrong length", 13, stringInit, onnx.ErrCorrupt, `tensor "s": 1 strings for shape [2]`},
		{"raw data of the wrong length", 13, shortRaw, onnx.ErrCorrupt, `tensor "w": raw_data holds 20 bytes, FLOAT [2 3] needs 24`},
		{"undefined value", 13, undefined, onnx.ErrCorrupt, `reads "nowhere"`},
		{"cycle", 13, cycle, onnx.ErrCorrupt, "cycle"},
		{"cast to complex", 13, castString, onnx.ErrUnsupported, "Cast (opset 13) with to=COMPLEX64"},
		{"external data outside the directory", 13, external, onnx.ErrCorrupt, "leaves the model's directory"},
		{"missing external file", 13, missing, onnx.ErrCorrupt, `tensor "w": external data`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := onnx.Load(writeModel(t, c.opset, c.g), tensor.CPU())
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v, want %v saying %q", err, c.kind, c.says)
			}
		})
	}
}

func TestTruncatedFilesAreCorrupt(t *testing.T) {
	raw, err := os.ReadFile("testdata/models/mnist_cnn_op13.onnx")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := 0; i < 64; i++ {
		n := len(raw) * i / 64
		p := filepath.Join(dir, "cut.onnx")
		if err := os.WriteFile(p, raw[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := onnx.Load(p, tensor.CPU())
		if !errors.Is(err, onnx.ErrCorrupt) {
			t.Fatalf("cut at %d of %d bytes: err = %v, want ErrCorrupt", n, len(raw), err)
		}
	}
	// A cut inside the weights names the field where decoding stopped.
	_, err = onnx.Decode(raw[:len(raw)/2])
	if err == nil || !strings.Contains(err.Error(), "field graph (7) is truncated") {
		t.Errorf("err = %v, want one naming the graph", err)
	}
}

func TestCorruptBytes(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		says string
	}{
		{"empty", nil, "no graph"},
		{"text", []byte("this is not a model\n"), "model"},
		{"graph as varint", []byte{0x08, 0x08, 0x38, 0x01}, "field graph (7) has wire type 0, want 2"},
		{"bad tag", []byte{0x80}, "bad field tag"},
		{"field number 0", []byte{0x00, 0x01}, "invalid field number"},
		{"length past the end", []byte{0x08, 0x08, 0x3a, 0x7f, 0x00}, "field graph (7) is truncated"},
		{"node without op_type", []byte{0x08, 0x08, 0x3a, 0x04, 0x0a, 0x02, 0x0a, 0x00}, "graph.node[0]: node has no op_type"},
		{"attribute float as varint", []byte{0x08, 0x08, 0x3a, 0x0c, 0x0a, 0x0a, 0x22, 0x01, 'A', 0x2a, 0x05, 0x0a, 0x01, 'f', 0x10, 0x01},
			"graph.node[0].attribute[0](f): field f (2) has wire type 0, want 5"},
		{"negative dims", []byte{0x08, 0x08, 0x3a, 0x0d, 0x2a, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "dims[0] = -1 is negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := onnx.Decode(c.b)
			if !errors.Is(err, onnx.ErrCorrupt) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v, want ErrCorrupt saying %q", err, c.says)
			}
		})
	}
}

// TestDamagedModelsLoad damages fixture files at random: decoding,
// describing and loading never panic (a panic fails the test). Whether
// each damaged file is refused or loads with changed values is not checked
// here; the error cases are in TestLoadRefusesBadAttributes and the
// decoding tests.
func TestDamagedModelsLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"models/mlp_op13.onnx", "models/lstm_op14.onnx", "models/transformer_op13.onnx",
		"ops/resize_op13_linear_sizes.onnx", "ops/constantofshape_op9.onnx", "ops/split_op13.onnx", "ops/slice_op13_steps.onnx"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		for range damageRounds {
			b := append([]byte(nil), raw...)
			for range 1 + r.IntN(3) {
				b[r.IntN(len(b))] = byte(r.IntN(256))
			}
			m, err := onnx.Decode(b)
			if err != nil {
				continue
			}
			_ = onnx.DescribeModel(m)
			if model, err := onnx.FromProto(m, name, tensor.CPU()); err == nil {
				nn.Release(model)
			}
		}
	}
}

func TestRunRefusesBadInputs(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m, err := onnx.Load("testdata/models/mnist_cnn_op13.onnx", dev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(m)
		cases := []struct {
			name   string
			inputs map[string]*tensor.Tensor
			kind   error
			says   string
		}{
			{"missing input", map[string]*tensor.Tensor{}, tensor.ErrArgument, `input "x" is missing`},
			{"unknown input", map[string]*tensor.Tensor{"x": tensor.Zeros(dev, 1, 1, 28, 28), "z": tensor.Zeros(dev, 1)}, tensor.ErrArgument, "unknown inputs [z]"},
			{"wrong dtype", map[string]*tensor.Tensor{"x": tensor.ZerosOf(dev, tensor.Float64, 1, 1, 28, 28)}, tensor.ErrDType, `input "x" is float64, the model wants float32 (FLOAT)`},
			{"wrong rank", map[string]*tensor.Tensor{"x": tensor.Zeros(dev, 1, 28, 28)}, tensor.ErrShape, "the model wants [batch 1 28 28]"},
			{"wrong fixed size", map[string]*tensor.Tensor{"x": tensor.Zeros(dev, 2, 1, 28, 27)}, tensor.ErrShape, "dimension 3 is fixed"},
		}
		for _, c := range cases {
			_, err := m.Run(c.inputs)
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: err = %v, want %v saying %q", c.name, err, c.kind, c.says)
			}
		}
		// A shape error inside the graph names the node.
		g := &onnx.GraphProto{
			Nodes:   []*onnx.NodeProto{node("MatMul", []string{"a", "b"}, []string{"y"})},
			Inputs:  []*onnx.ValueInfoProto{floatValue("a"), floatValue("b")},
			Outputs: []*onnx.ValueInfoProto{floatValue("y")},
		}
		g.Inputs[0].Type.HasShape, g.Inputs[1].Type.HasShape = false, false
		mm, err := onnx.Load(writeModel(t, 13, g), dev)
		if err != nil {
			t.Fatal(err)
		}
		defer nn.Release(mm)
		_, err = mm.Run(map[string]*tensor.Tensor{"a": tensor.Zeros(dev, 2, 3), "b": tensor.Zeros(dev, 4, 5)})
		if !errors.Is(err, tensor.ErrShape) || !strings.Contains(err.Error(), `node "MatMul_y" (MatMul, opset 13)`) {
			t.Errorf("err = %v, want ErrShape naming the node", err)
		}
		err = tensor.Try(func() { mm.Forward(tensor.Zeros(dev, 2, 3)) })
		if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), "2 inputs") {
			t.Errorf("Forward on two inputs: err = %v", err)
		}
	})
}

// damageRounds is how many damaged copies of each file TestDamagedModelsLoad
// tries.
var damageRounds = 100

func init() {
	if os.Getenv("KILN_ONNX_DAMAGE") != "" {
		damageRounds = 5000
	}
}
