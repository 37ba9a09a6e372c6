package onnx_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// wantFallbacks is the number of nodes, over every fixture, that the
// generated code runs through onnx.Operator instead of tensor calls.
const wantFallbacks = 0

// genDriver is a program that runs every generated package on the
// fixture inputs and prints the outputs as JSON.
const genDriver = `package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
%s)

type runner func(path string, dev tensor.Device, in map[string]*tensor.Tensor) (any, map[string]*tensor.Tensor, error)

// gradModels are checked on an autodiff device too: the gradients of the
// sum of the first output with respect to every Param must match
// onnx.Load's.
var gradModels = []string{"mlp_op13", "mnist_cnn_op13", "resnet_block_op13", "transformer_op13", "lstm_op14", "gru_op13"}

// gradDiff returns the largest difference between the generated model's
// gradients and the runtime's, and how many Params it compared.
func gradDiff(onnxPath string, run runner, weights string, c testutil.FixtureCase) (float64, int, error) {
	dev := tensor.CPU().Autodiff()
	in := map[string]*tensor.Tensor{}
	for k, f := range c {
		if n, ok := strings.CutPrefix(k, "in:"); ok {
			in[n] = f.Tensor(dev)
		}
	}
	gen, out, err := run(weights, dev, in)
	if err != nil {
		return 0, 0, err
	}
	ref, err := onnx.Load(onnxPath, dev)
	if err != nil {
		return 0, 0, err
	}
	refOut, err := ref.Run(in)
	if err != nil {
		return 0, 0, err
	}
	first := ref.Outputs()[0]
	g1, g2 := out[first].Sum().Backward(), refOut[first].Sum().Backward()
	refParams := map[string]*nn.Param{}
	for _, np := range nn.Params(ref) {
		refParams[np.Name] = np.Param
	}
	worst, n := 0.0, 0
	for _, np := range nn.Params(gen) {
		rp := refParams[np.Name]
		if rp == nil {
			return 0, 0, fmt.Errorf("param %%s is not among onnx.Load's", np.Name)
		}
		a, b := g1.Get(np.Param.Tensor), g2.Get(rp.Tensor)
		if (a == nil) != (b == nil) {
			return 0, 0, fmt.Errorf("param %%s: gradient %%v here, %%v from onnx.Load", np.Name, a != nil, b != nil)
		}
		if a == nil {
			continue
		}
		av, bv := a.Float64s(), b.Float64s()
		for i := range av {
			worst = math.Max(worst, math.Abs(av[i]-bv[i]))
		}
		n++
	}
	return worst, n, nil
}

var packages = map[string]runner{
%s}

type result struct {
	Err     string                    ` + "`json:\"err,omitempty\"`" + `
	Outputs map[string]testutil.Fixture ` + "`json:\"outputs\"`" + `
}

func main() {
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var cases map[string]testutil.FixtureCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		panic(err)
	}
	dir := os.Args[2]
	dev := tensor.CPU()
	res := map[string]map[string]any{}
	for _, base := range gradModels {
		d, n, err := gradDiff(os.Args[3]+"/"+base+".onnx", packages[base], dir+"/"+base+"/weights.safetensors", cases[base])
		r := map[string]any{"diff": d, "params": n}
		if err != nil {
			r["err"] = err.Error()
		}
		res["grad:"+base] = r
	}
	for name, c := range cases {
		base, _, _ := strings.Cut(name, "@")
		run := packages[base]
		if run == nil {
			continue
		}
		in := map[string]*tensor.Tensor{}
		for k, f := range c {
			if n, ok := strings.CutPrefix(k, "in:"); ok {
				in[n] = f.Tensor(dev)
			}
		}
		_, out, err := run(dir+"/"+base+"/weights.safetensors", dev, in)
		r := map[string]any{}
		if err != nil {
			r["err"] = err.Error()
		}
		for k, t := range out {
			var data []any
			for _, v := range t.Float64s() {
				switch {
				case math.IsNaN(v):
					data = append(data, "nan")
				case math.IsInf(v, 1):
					data = append(data, "inf")
				case math.IsInf(v, -1):
					data = append(data, "-inf")
				default:
					data = append(data, v)
				}
			}
			r[k] = map[string]any{"shape": t.Shape(), "dtype": t.DType().String(), "data": data}
		}
		res[name] = r
	}
	b, err := json.Marshal(res)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
}
`

// TestGenerateMatchesReference generates a package for every fixture
// model, builds them all into one program with one go build, runs it on
// the fixture inputs and compares the outputs with PyTorch's (or NumPy's).
func TestGenerateMatchesReference(t *testing.T) {
	files, err := filepath.Glob("testdata/*/*.onnx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	// A model whose Reshape reads its target shape from a graph input
	// cannot be translated: that node must fall back to onnx.Operator.
	fallbackModel, fallbackCase := fallbackFixture(t)
	files = append(files, fallbackModel)
	dir, err := os.MkdirTemp(".", "zz_gentest_")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	start := time.Now()
	var imports, entries strings.Builder
	fallbacks := 0
	var fallbackList []string
	for i, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".onnx")
		pkg := fmt.Sprintf("p%d", i)
		res, err := onnx.Generate(f, filepath.Join(dir, base), onnx.GenerateOptions{Package: pkg})
		if err != nil {
			t.Fatalf("Generate %s: %v", f, err)
		}
		if f == fallbackModel {
			if fmt.Sprint(res.Fallbacks) != "[reshape (Reshape) slice (Slice)]" {
				t.Errorf("%s: fallbacks %v, want the Reshape and the Slice", f, res.Fallbacks)
			}
			src, err := os.ReadFile(res.GoFile)
			if err != nil || !strings.Contains(string(src), "Nodes run by onnx.Operator (not translated): reshape (Reshape), slice (Slice).") {
				t.Errorf("%s: the header does not list the fallback (%v)", res.GoFile, err)
			}
		} else {
			fallbacks += len(res.Fallbacks)
		}
		for _, fb := range res.Fallbacks {
			fallbackList = append(fallbackList, base+": "+fb)
		}
		fmt.Fprintf(&imports, "\t%s \"github.com/kiln-ml/kiln/onnx/%s/%s\"\n", pkg, filepath.Base(dir), base)
		fmt.Fprintf(&entries, "\t%q: func(path string, dev tensor.Device, in map[string]*tensor.Tensor) (any, map[string]*tensor.Tensor, error) {\n\t\tm, err := %s.Load(path, dev)\n\t\tif err != nil {\n\t\t\treturn nil, nil, err\n\t\t}\n\t\tout, err := m.Run(in)\n\t\treturn m, out, err\n\t},\n", base, pkg)
	}
	t.Logf("generated %d packages in %v", len(files), time.Since(start))
	main := filepath.Join(dir, "driver")
	if err := os.MkdirAll(main, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(main, "main.go"), fmt.Appendf(nil, genDriver, imports.String(), entries.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	bin := filepath.Join(t.TempDir(), "driver")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, "./"+filepath.ToSlash(main))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the generated packages: %v\n%s", err, out)
	}
	t.Logf("built them in %v", time.Since(start))
	abs, _ := filepath.Abs(dir)
	var stdout, stderr bytes.Buffer
	cases := testutil.LoadFixtures(t, "onnx.json")
	cases["fallback_reshape"] = fallbackCase
	// An input of the wrong shape is an error naming what the model wants.
	bad := testutil.FixtureCase{}
	if err := json.Unmarshal([]byte(`{"in:x": {"shape": [2, 5], "dtype": "float32", "data": [1,2,3,4,5,6,7,8,9,10]}}`), &bad); err != nil {
		t.Fatal(err)
	}
	cases["mlp_op13@badshape"] = bad
	casesFile := filepath.Join(t.TempDir(), "cases.json")
	raw, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(casesFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	models, err := filepath.Abs(filepath.Join("testdata", "models"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, casesFile, abs, models)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("driver: %v\n%s", err, stderr.String())
	}
	var got map[string]map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("driver output: %v", err)
	}
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	dev := tensor.CPU()
	checked := 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r, ok := got[name]
			if !ok {
				t.Fatalf("the driver did not run %s", name)
			}
			if strings.HasSuffix(name, "@badshape") {
				if e := string(r["err"]); !strings.Contains(e, `input \"x\" is float32 [2 5], the model wants float32 [-1 8]`) {
					t.Fatalf("Run on a bad input: error %s", e)
				}
				return
			}
			if e, ok := r["err"]; ok {
				t.Fatalf("Run: %s", e)
			}
			for k, want := range cases[name] {
				out, ok := strings.CutPrefix(k, "out:")
				if !ok {
					continue
				}
				raw, ok := r[out]
				if !ok {
					t.Errorf("output %s missing", out)
					continue
				}
				var f testutil.Fixture
				if err := json.Unmarshal(raw, &f); err != nil {
					t.Fatalf("output %s: %v", out, err)
				}
				testutil.AssertClose(t, out, f.Tensor(dev), want, 1e-4, 1e-4)
				checked++
			}
		})
	}
	for name, raw := range got {
		base, ok := strings.CutPrefix(name, "grad:")
		if !ok {
			continue
		}
		var g struct {
			Diff   float64
			Params int
			Err    string
		}
		if err := json.Unmarshal(raw["diff"], &g.Diff); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		json.Unmarshal(raw["params"], &g.Params)
		json.Unmarshal(raw["err"], &g.Err)
		if g.Err != "" || g.Params == 0 || g.Diff > 1e-4 {
			t.Errorf("gradients of %s on an autodiff device: %d params, largest difference from onnx.Load %g, error %q", base, g.Params, g.Diff, g.Err)
		} else {
			t.Logf("gradients of %s: %d params within %.2g of onnx.Load's", base, g.Params, g.Diff)
		}
	}
	t.Logf("%d outputs of %d cases match; %d fallbacks in the fixtures", checked, len(names), fallbacks)
	if wantFallbacks >= 0 && fallbacks != wantFallbacks {
		t.Errorf("%d fallbacks, want %d:\n%s", fallbacks, wantFallbacks, strings.Join(fallbackList, "\n"))
	} else if wantFallbacks < 0 {
		t.Logf("fallbacks:\n%s", strings.Join(fallbackList, "\n"))
	}
}

// fallbackFixture writes a model with a Reshape to a shape and a Slice to
// an end given as graph inputs (the Slice's start is a Constant, which
// the Operator literal carries), and its expected outputs computed by
// onnx.Load.
func fallbackFixture(t *testing.T) (string, testutil.FixtureCase) {
	g := &onnx.GraphProto{
		Nodes: []*onnx.NodeProto{
			{OpType: "Add", Name: "add", Inputs: []string{"x", "w"}, Outputs: []string{"a"}},
			{OpType: "Reshape", Name: "reshape", Inputs: []string{"a", "s"}, Outputs: []string{"b"}},
			{OpType: "Mul", Name: "mul", Inputs: []string{"b", "b"}, Outputs: []string{"c"}},
			{OpType: "Constant", Name: "start", Outputs: []string{"start"}, Attributes: []*onnx.AttributeProto{
				{Name: "value", Type: onnx.AttrTensor, T: &onnx.TensorProto{Dims: []int64{1}, DataType: onnx.TypeInt64, Int64Data: []int64{1}}}}},
			{OpType: "Slice", Name: "slice", Inputs: []string{"c", "start", "end"}, Outputs: []string{"y"}},
		},
		Initializers: []*onnx.TensorProto{{Name: "w", Dims: []int64{3}, DataType: onnx.TypeFloat, FloatData: []float32{1, -2, 3}}},
		Inputs: []*onnx.ValueInfoProto{floatValue("x", 2, 3), {Name: "s", Type: &onnx.TypeProto{Kind: "tensor",
			ElemType: onnx.TypeInt64, HasShape: true, Shape: []onnx.Dim{{Value: 2, HasValue: true}}}},
			{Name: "end", Type: &onnx.TypeProto{Kind: "tensor", ElemType: onnx.TypeInt64, HasShape: true, Shape: []onnx.Dim{{Value: 1, HasValue: true}}}}},
		Outputs: []*onnx.ValueInfoProto{{Name: "y"}},
	}
	m := &onnx.ModelProto{IRVersion: 8, Graph: g, OpsetImports: []onnx.OperatorSetID{{Version: 13}}}
	path := filepath.Join(t.TempDir(), "fallback_reshape.onnx")
	if err := os.WriteFile(path, onnx.Encode(m), 0o644); err != nil {
		t.Fatal(err)
	}
	x := []float64{0.5, 1, -1, 2, -3, 4}
	c := testutil.FixtureCase{}
	fix := func(v any) testutil.Fixture {
		raw, _ := json.Marshal(v)
		var f testutil.Fixture
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	c["in:x"] = fix(map[string]any{"shape": []int{2, 3}, "dtype": "float32", "data": x})
	c["in:s"] = fix(map[string]any{"shape": []int{2}, "dtype": "int64", "data": []int{3, 2}})
	c["in:end"] = fix(map[string]any{"shape": []int{1}, "dtype": "int64", "data": []int{3}})
	rm, err := onnx.Load(path, tensor.CPU())
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(rm)
	out, err := rm.Run(map[string]*tensor.Tensor{"x": c["in:x"].Tensor(tensor.CPU()), "s": c["in:s"].Tensor(tensor.CPU()), "end": c["in:end"].Tensor(tensor.CPU())})
	if err != nil {
		t.Fatal(err)
	}
	c["out:y"] = fix(map[string]any{"shape": out["y"].Shape(), "dtype": "float32", "data": out["y"].Float64s()})
	return path, c
}
