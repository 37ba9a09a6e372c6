package onnx

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// controlDriver runs generated packages: each argument is
// "package|weights|inputs|outputs|grad", the inputs and outputs
// safetensors files; with grad (an output's name) it runs on an autodiff
// device and writes the gradients of that output's sum with respect to
// the floating-point inputs instead. Failures are printed, one line each.
const controlDriver = `package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
%s)

type runner func(weights string, dev tensor.Device, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error)

var packages = map[string]runner{
%s}

func main() {
	for _, arg := range os.Args[1:] {
		parts := strings.Split(arg, "|")
		dev := tensor.CPU()
		if parts[4] != "" {
			dev = dev.Autodiff()
		}
		in, _, err := store.ReadSafetensors(parts[2], dev)
		if err == nil {
			var out map[string]*tensor.Tensor
			err = tensor.Try(func() {
				for _, x := range in {
					if parts[4] != "" && x.DType().IsFloat() {
						x.RequireGrad()
					}
				}
			})
			if err == nil {
				out, err = packages[parts[0]](parts[1], dev, in)
			}
			if err == nil && parts[4] != "" {
				grads := map[string]*tensor.Tensor{}
				err = tensor.Try(func() {
					g := out[parts[4]].Sum().Backward()
					for name, x := range in {
						if x.RequiresGrad() {
							grads[name] = g.Get(x)
						}
					}
				})
				out = grads
			}
			if err == nil {
				err = store.WriteSafetensors(parts[3], out, nil)
			}
		}
		if err != nil {
			fmt.Printf("%%s: %%v\n", parts[3], err)
		}
	}
}
`

// Builders of small graphs for the control-flow tests.

func ctlType(et int32, dims ...int64) *TypeProto {
	t := &TypeProto{Kind: "tensor", ElemType: et, HasShape: true, Shape: []Dim{}}
	for _, d := range dims {
		t.Shape = append(t.Shape, Dim{Value: d, HasValue: true})
	}
	return t
}

func ctlValue(name string, et int32, dims ...int64) *ValueInfoProto {
	return &ValueInfoProto{Name: name, Type: ctlType(et, dims...)}
}

func ctlNode(op string, ins, outs []string, attrs ...*AttributeProto) *NodeProto {
	return &NodeProto{OpType: op, Name: op + "_" + outs[0], Inputs: ins, Outputs: outs, Attributes: attrs}
}

func ctlFloats(name string, dims []int64, v ...float32) *TensorProto {
	return &TensorProto{Name: name, DataType: TypeFloat, Dims: dims, FloatData: v}
}

func ctlGraphAttr(name string, g *GraphProto) *AttributeProto {
	return &AttributeProto{Name: name, Type: AttrGraph, G: g}
}

func ctlInts(name string, v ...int64) *AttributeProto {
	return &AttributeProto{Name: name, Type: AttrInts, Ints: v}
}

// ifModel picks between two branches with two outputs each: the then
// branch reads the outer x and the outer initializer w, the else branch
// a constant of its own that is also named w.
func ifModel() *ModelProto {
	then := &GraphProto{Name: "then",
		Nodes: []*NodeProto{ctlNode("Add", []string{"x", "w"}, []string{"t1"}), ctlNode("Relu", []string{"t1"}, []string{"t2"}),
			ctlNode("Identity", []string{"x"}, []string{"t3"})},
		Outputs: []*ValueInfoProto{ctlValue("t2", TypeFloat, 2, 3), ctlValue("t3", TypeFloat, 2, 3)}}
	els := &GraphProto{Name: "else",
		Nodes:        []*NodeProto{ctlNode("Mul", []string{"x", "w"}, []string{"e1"}), ctlNode("Neg", []string{"x"}, []string{"e2"})},
		Initializers: []*TensorProto{ctlFloats("w", nil, -2)}, // hides the outer w
		Outputs:      []*ValueInfoProto{ctlValue("e1", TypeFloat, 2, 3), ctlValue("e2", TypeFloat, 2, 3)}}
	g := &GraphProto{Name: "if_model",
		Nodes: []*NodeProto{{OpType: "If", Name: "choose", Inputs: []string{"c"}, Outputs: []string{"y", "z"},
			Attributes: []*AttributeProto{ctlGraphAttr("then_branch", then), ctlGraphAttr("else_branch", els)}},
			ctlNode("Add", []string{"y", "z"}, []string{"sum"})},
		Initializers: []*TensorProto{ctlFloats("w", []int64{3}, 1, -2, 3)},
		Inputs:       []*ValueInfoProto{ctlValue("x", TypeFloat, 2, 3), ctlValue("c", TypeBool)},
		Outputs:      []*ValueInfoProto{{Name: "y"}, {Name: "sum"}}}
	return &ModelProto{IRVersion: 8, Graph: g, OpsetImports: []OperatorSetID{{Version: 13}}}
}

// loopModel runs a Loop bounded by both a trip count and a condition,
// with a carried value of fixed shape, one that grows each iteration
// (declared in the body with the initial shape), a scan output, and a
// nested If that reads values two scopes out.
func loopModel() *ModelProto {
	inner := func(op string) *GraphProto {
		return &GraphProto{Nodes: []*NodeProto{ctlNode(op, []string{"acc_in", "w"}, []string{op + "_r"})},
			Outputs: []*ValueInfoProto{ctlValue(op+"_r", TypeFloat, 2)}}
	}
	body := &GraphProto{Name: "body",
		Nodes: []*NodeProto{
			ctlNode("Cast", []string{"i"}, []string{"fi"}, &AttributeProto{Name: "to", Type: AttrInt, I: TypeFloat}),
			ctlNode("Add", []string{"acc_in", "fi"}, []string{"a1"}),
			ctlNode("Less", []string{"fi", "one"}, []string{"early"}),
			{OpType: "If", Name: "inner", Inputs: []string{"early"}, Outputs: []string{"a2"},
				Attributes: []*AttributeProto{ctlGraphAttr("then_branch", inner("Add")), ctlGraphAttr("else_branch", inner("Mul"))}},
			ctlNode("Add", []string{"a1", "a2"}, []string{"acc_out"}),
			ctlNode("Concat", []string{"grow_in", "acc_out"}, []string{"grow_out"}, &AttributeProto{Name: "axis", Type: AttrInt, I: 0}),
			ctlNode("Less", []string{"fi", "limit"}, []string{"cond_out"}),
			ctlNode("Sigmoid", []string{"acc_out"}, []string{"scan_out"}),
		},
		Initializers: []*TensorProto{ctlFloats("limit", nil, 2.5), ctlFloats("one", nil, 1)},
		Inputs: []*ValueInfoProto{ctlValue("i", TypeInt64), ctlValue("cond_in", TypeBool),
			ctlValue("acc_in", TypeFloat, 2), ctlValue("grow_in", TypeFloat, 2)},
		Outputs: []*ValueInfoProto{ctlValue("cond_out", TypeBool), ctlValue("acc_out", TypeFloat, 2),
			ctlValue("grow_out", TypeFloat, -1), ctlValue("scan_out", TypeFloat, 2)}}
	body.Outputs[2].Type.Shape[0] = Dim{Param: "n"}
	g := &GraphProto{Name: "loop_model",
		Nodes: []*NodeProto{{OpType: "Loop", Name: "loop", Inputs: []string{"M", "c", "x", "x"}, Outputs: []string{"acc", "grow", "scans"},
			Attributes: []*AttributeProto{ctlGraphAttr("body", body)}}},
		Initializers: []*TensorProto{ctlFloats("w", []int64{2}, 0.5, -1)},
		Inputs:       []*ValueInfoProto{ctlValue("M", TypeInt64), ctlValue("c", TypeBool), ctlValue("x", TypeFloat, 2)},
		Outputs:      []*ValueInfoProto{{Name: "acc"}, {Name: "grow"}, {Name: "scans"}}}
	return &ModelProto{IRVersion: 8, Graph: g, OpsetImports: []OperatorSetID{{Version: 13}}}
}

// scanModel scans two inputs along different axes, one of them
// backwards, into a running sum and two scan outputs, one stacked on
// the last axis and backwards.
func scanModel() *ModelProto {
	body := &GraphProto{Name: "body",
		Nodes: []*NodeProto{ctlNode("Add", []string{"s_in", "xi"}, []string{"s_out"}), ctlNode("Mul", []string{"s_out", "yi"}, []string{"o1"}),
			ctlNode("Tanh", []string{"s_out"}, []string{"o2"})},
		Inputs:  []*ValueInfoProto{ctlValue("s_in", TypeFloat, 2), ctlValue("xi", TypeFloat, 2), ctlValue("yi", TypeFloat, 2)},
		Outputs: []*ValueInfoProto{ctlValue("s_out", TypeFloat, 2), ctlValue("o1", TypeFloat, 2), ctlValue("o2", TypeFloat, 2)}}
	g := &GraphProto{Name: "scan_model",
		Nodes: []*NodeProto{{OpType: "Scan", Name: "scan", Inputs: []string{"s0", "xs", "ys"}, Outputs: []string{"s", "o1s", "o2s"},
			Attributes: []*AttributeProto{ctlGraphAttr("body", body), {Name: "num_scan_inputs", Type: AttrInt, I: 2},
				ctlInts("scan_input_axes", 0, 1), ctlInts("scan_input_directions", 0, 1),
				ctlInts("scan_output_axes", 0, -1), ctlInts("scan_output_directions", 1, 0)}}},
		Inputs:  []*ValueInfoProto{ctlValue("s0", TypeFloat, 2), ctlValue("xs", TypeFloat, 3, 2), ctlValue("ys", TypeFloat, 2, 3)},
		Outputs: []*ValueInfoProto{{Name: "s"}, {Name: "o1s"}, {Name: "o2s"}}}
	return &ModelProto{IRVersion: 8, Graph: g, OpsetImports: []OperatorSetID{{Version: 11}}}
}

// ctlCase is one model the test generates, with its input sets and the
// output whose gradients with respect to the inputs are compared too
// ("" for none).
type ctlCase struct {
	name   string
	path   string
	inputs []map[string]*tensor.Tensor
	grad   string
}

// suiteCtlCases are the node tests of ONNX's suite with If, Loop or Scan
// and tensors only.
var suiteCtlCases = []string{"test_if", "test_loop11", "test_scan9_sum", "test_scan_sum",
	"test_range_float_type_positive_delta_expanded", "test_range_int32_type_negative_delta_expanded"}

// TestGenerateControlFlow generates packages for models with If, Loop
// and Scan (built here, and the suite's node tests), builds them into one
// program, runs it, and compares every output with onnx.Load's on the
// same inputs.
func TestGenerateControlFlow(t *testing.T) {
	dev := tensor.CPU()
	tmp := t.TempDir()
	write := func(name string, m *ModelProto) string {
		p := filepath.Join(tmp, name+".onnx")
		if err := os.WriteFile(p, Encode(m), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f32 := func(shape []int, v ...float32) *tensor.Tensor { return tensor.FromFloat32s(dev, v, shape...) }
	i64 := func(v int64) *tensor.Tensor { return tensor.FromInt64s(dev, []int64{v}).Reshape() }
	boolean := func(v bool) *tensor.Tensor { return tensor.FromBools(dev, []bool{v}).Reshape() }
	x23 := f32([]int{2, 3}, 0.5, -1, 2, -3, 4, 0.25)
	cases := []ctlCase{
		{"if_model", write("if_model", ifModel()), []map[string]*tensor.Tensor{{"x": x23, "c": boolean(true)}, {"x": x23, "c": boolean(false)}}, "sum"},
		{"loop_model", write("loop_model", loopModel()), []map[string]*tensor.Tensor{
			{"M": i64(10), "c": boolean(true), "x": f32([]int{2}, 1, -2)},            // stopped by the condition
			{"M": i64(2), "c": boolean(true), "x": f32([]int{2}, 0.5, 3)}}, "scans"}, // stopped by the trip count
		{"scan_model", write("scan_model", scanModel()), []map[string]*tensor.Tensor{
			{"s0": f32([]int{2}, 1, 2), "xs": f32([]int{3, 2}, 1, 2, 3, 4, 5, 6), "ys": f32([]int{2, 3}, -1, 0.5, 2, 1, -0.5, 3)}}, "o1s"},
	}
	if _, err := os.Stat(conformanceRoot); err == nil {
		for _, name := range suiteCtlCases {
			dir := filepath.Join(conformanceRoot, "node", name)
			path := filepath.Join(dir, "model.onnx")
			mp, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			in := map[string]*tensor.Tensor{}
			for k, v := range mp.Graph.Inputs {
				tp, err := readTensorFileProto(filepath.Join(dir, "test_data_set_0", fmt.Sprintf("input_%d.pb", k)))
				if err != nil {
					t.Fatal(err)
				}
				h, err := tensorHost(tp)
				if err != nil {
					t.Fatal(err)
				}
				in[v.Name] = h.device(dev)
			}
			cases = append(cases, ctlCase{name, path, []map[string]*tensor.Tensor{in}, ""})
		}
	} else {
		t.Logf("ONNX's suite is not installed (%s): testing the built models only", conformanceRoot)
	}
	gen, err := os.MkdirTemp(".", "zz_genctl_")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(gen) })
	var imports, entries strings.Builder
	var args []string
	type want struct {
		name string
		file string
		out  map[string]*tensor.Tensor
	}
	var wants []want
	for i, c := range cases {
		pkg := fmt.Sprintf("p%d", i)
		res, err := Generate(c.path, filepath.Join(gen, c.name), GenerateOptions{Package: pkg})
		if err != nil {
			t.Fatalf("Generate %s: %v", c.name, err)
		}
		if len(res.Fallbacks) > 0 {
			t.Logf("%s: nodes run by onnx.Operator: %v", c.name, res.Fallbacks)
		}
		fmt.Fprintf(&imports, "\t%s \"github.com/kiln-ml/kiln/onnx/%s/%s\"\n", pkg, filepath.Base(gen), c.name)
		fmt.Fprintf(&entries, "\t%q: func(w string, dev tensor.Device, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {\n\t\tm, err := %s.Load(w, dev)\n\t\tif err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t\treturn m.Run(in)\n\t},\n", c.name, pkg)
		ref, err := Load(c.path, dev)
		if err != nil {
			t.Fatal(err)
		}
		for k, in := range c.inputs {
			inFile := filepath.Join(tmp, fmt.Sprintf("%s_%d_in.safetensors", c.name, k))
			if err := store.WriteSafetensors(inFile, in, nil); err != nil {
				t.Fatal(err)
			}
			out, err := ref.Run(in)
			if err != nil {
				t.Fatalf("%s: onnx.Load's Run: %v", c.name, err)
			}
			outFile := filepath.Join(tmp, fmt.Sprintf("%s_%d_out.safetensors", c.name, k))
			args = append(args, strings.Join([]string{c.name, res.Weights, inFile, outFile, ""}, "|"))
			wants = append(wants, want{fmt.Sprintf("%s/%d", c.name, k), outFile, out})
			if c.grad == "" {
				continue
			}
			grads, err := ctlGradients(c.path, in, c.grad)
			if err != nil {
				t.Fatalf("%s: gradients through onnx.Load: %v", c.name, err)
			}
			if len(grads) == 0 {
				t.Fatalf("%s: no input has a gradient", c.name)
			}
			for name, g := range grads {
				if g == nil {
					t.Fatalf("%s: input %s has no gradient through onnx.Load", c.name, name)
				}
			}
			gradFile := filepath.Join(tmp, fmt.Sprintf("%s_%d_grad.safetensors", c.name, k))
			args = append(args, strings.Join([]string{c.name, res.Weights, inFile, gradFile, c.grad}, "|"))
			wants = append(wants, want{fmt.Sprintf("%s/%d/gradients", c.name, k), gradFile, grads})
		}
		t.Cleanup(func() { nn.Release(ref) })
	}
	main := filepath.Join(gen, "driver")
	if err := os.MkdirAll(main, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(main, "main.go"), fmt.Appendf(nil, controlDriver, imports.String(), entries.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "driver")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if out, err := exec.Command("go", "build", "-o", bin, "./"+filepath.ToSlash(main)).CombinedOutput(); err != nil {
		t.Fatalf("go build of the generated packages: %v\n%s", err, out)
	}
	var stdout bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil || stdout.Len() > 0 {
		t.Fatalf("driver: %v\n%s", err, stdout.String())
	}
	for _, w := range wants {
		t.Run(w.name, func(t *testing.T) {
			got, _, err := store.ReadSafetensors(w.file, dev)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(w.out) {
				t.Fatalf("%d outputs, onnx.Load gives %d", len(got), len(w.out))
			}
			for name, ref := range w.out {
				g := got[name]
				if g == nil {
					t.Fatalf("output %s missing", name)
				}
				if g.DType() != ref.DType() || fmt.Sprint(g.Shape()) != fmt.Sprint(ref.Shape()) {
					t.Fatalf("output %s: %v %v, onnx.Load gives %v %v", name, g.DType(), g.Shape(), ref.DType(), ref.Shape())
				}
				a, b := g.Float64s(), ref.Float64s()
				for i := range a {
					if math.Abs(a[i]-b[i]) > 1e-6*(1+math.Abs(b[i])) {
						t.Fatalf("output %s[%d] = %g, onnx.Load gives %g", name, i, a[i], b[i])
					}
				}
			}
		})
	}
}

// ctlGradients runs the model at path through onnx.Load on an autodiff
// device and returns the gradients of output's sum with respect to the
// floating-point inputs in.
func ctlGradients(path string, in map[string]*tensor.Tensor, output string) (map[string]*tensor.Tensor, error) {
	dev := tensor.CPU().Autodiff()
	m, err := Load(path, dev)
	if err != nil {
		return nil, err
	}
	grads := map[string]*tensor.Tensor{}
	err = tensor.Try(func() {
		leaves := map[string]*tensor.Tensor{}
		for name, x := range in {
			v := x.ToDevice(dev)
			if v.DType().IsFloat() {
				v.RequireGrad()
			}
			leaves[name] = v
		}
		out, err := m.Run(leaves)
		if err != nil {
			panic(err)
		}
		g := out[output].Sum().Backward()
		for name, v := range leaves {
			if v.RequiresGrad() {
				grads[name] = g.Get(v)
			}
		}
	})
	return grads, err
}
