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
	"github.com/kiln-ml/kiln/tensor"
%s)

type runner func(path string, dev tensor.Device, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error)

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
		out, err := run(dir+"/"+base+"/weights.safetensors", dev, in)
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
	if testing.Short() {
		t.Skip("builds every generated package (about a minute on 2 cores)")
	}
	files, err := filepath.Glob("testdata/*/*.onnx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
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
		fallbacks += len(res.Fallbacks)
		for _, fb := range res.Fallbacks {
			fallbackList = append(fallbackList, base+": "+fb)
		}
		fmt.Fprintf(&imports, "\t%s \"github.com/kiln-ml/kiln/onnx/%s/%s\"\n", pkg, filepath.Base(dir), base)
		fmt.Fprintf(&entries, "\t%q: func(path string, dev tensor.Device, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {\n\t\tm, err := %s.Load(path, dev)\n\t\tif err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t\treturn m.Run(in)\n\t},\n", base, pkg)
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
	cmd := exec.Command(bin, filepath.Join("testdata", "onnx.json"), abs)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("driver: %v\n%s", err, stderr.String())
	}
	var got map[string]map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("driver output: %v", err)
	}
	cases := testutil.LoadFixtures(t, "onnx.json")
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
	t.Logf("%d outputs of %d cases match; %d fallbacks", checked, len(names), fallbacks)
	if wantFallbacks >= 0 && fallbacks != wantFallbacks {
		t.Errorf("%d fallbacks, want %d:\n%s", fallbacks, wantFallbacks, strings.Join(fallbackList, "\n"))
	} else if wantFallbacks < 0 {
		t.Logf("fallbacks:\n%s", strings.Join(fallbackList, "\n"))
	}
}
