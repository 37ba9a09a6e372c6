package onnx_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// The fixtures come from testdata/gen_onnx.py: real models and operator
// families exported by PyTorch 1.13 at opsets 7 to 17, single-operator
// graphs with NumPy references, and their inputs and expected outputs in
// testdata/onnx.json.

// fixtureModel returns the model file of a fixture case ("name@tag" runs
// name's file on other inputs).
func fixtureModel(t testing.TB, name string) string {
	base, _, _ := strings.Cut(name, "@")
	for _, dir := range []string{"models", "ops", "external"} {
		p := filepath.Join("testdata", dir, base+".onnx")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("case %s: no model file for %s", name, base)
	return ""
}

// runCase loads the case's model on dev, runs it and compares every output
// with PyTorch's (or NumPy's) within tol.
func runCase(t *testing.T, dev tensor.Device, name string, c testutil.FixtureCase, tol float64) {
	m, err := onnx.Load(fixtureModel(t, name), dev)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	defer nn.Release(m)
	inputs := map[string]*tensor.Tensor{}
	for k, f := range c {
		if in, ok := strings.CutPrefix(k, "in:"); ok {
			inputs[in] = f.Tensor(dev)
		}
	}
	got, err := m.Run(inputs)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	n := 0
	for k, want := range c {
		out, ok := strings.CutPrefix(k, "out:")
		if !ok {
			continue
		}
		n++
		g, ok := got[out]
		if !ok {
			t.Errorf("output %s missing (have %v)", out, m.Outputs())
			continue
		}
		if g.DType().String() != want.DType && !(want.DType == "float64" && g.DType() == tensor.Float32) {
			t.Errorf("output %s is %s, want %s", out, g.DType(), want.DType)
		}
		testutil.AssertClose(t, out, g, want, tol, tol)
	}
	if n != len(got) {
		t.Errorf("%d outputs checked, the model has %d", n, len(got))
	}
	checkInferred(t, m, got)
}

// checkInferred compares the inferred types of the outputs with what the
// run produced: fixed dimensions must be equal, and each symbol must stand
// for one size throughout the run. Every output's rank and every
// dimension must be inferred (as a number or a symbol).
func checkInferred(t *testing.T, m *onnx.Model, got map[string]*tensor.Tensor) {
	t.Helper()
	// Infer from the inputs alone: what the file declares about other
	// values is dropped.
	g := *m.Proto().Graph
	g.ValueInfo = nil
	g.Outputs = nil
	for _, o := range m.Proto().Graph.Outputs {
		g.Outputs = append(g.Outputs, &onnx.ValueInfoProto{Name: o.Name})
	}
	types := onnx.InferShapes(&g, int64(m.Opset()))
	bound := map[string]int{}
	for name, g := range got {
		vt := types[name]
		if !vt.RankKnown {
			t.Errorf("output %s: rank not inferred", name)
			continue
		}
		shape := g.Shape()
		if len(vt.Shape) != len(shape) {
			t.Errorf("output %s: inferred %v, got shape %v", name, vt, shape)
			continue
		}
		for i, d := range vt.Shape {
			switch {
			case d.HasValue:
				if int(d.Value) != shape[i] {
					t.Errorf("output %s: inferred %v, got shape %v", name, vt, shape)
				}
			case d.Param != "":
				if b, ok := bound[d.Param]; ok && b != shape[i] {
					t.Errorf("output %s: symbol %s is %d here and %d elsewhere", name, d.Param, shape[i], b)
				}
				bound[d.Param] = shape[i]
			default:
				t.Errorf("output %s: dimension %d not inferred (%v; got shape %v)", name, i, vt, shape)
			}
		}
		if et := onnx.DataTypeName(vt.ElemType); vt.ElemType == 0 || !strings.EqualFold(strings.TrimSuffix(et, "EAN"), strings.TrimSuffix(strings.ToUpper(g.DType().String()), "EAN")) && !(et == "FLOAT" && g.DType() == tensor.Float32) && !(et == "DOUBLE" && g.DType() == tensor.Float64) {
			t.Errorf("output %s: inferred element type %s, got %s", name, et, g.DType())
		}
	}
}

func TestFixturesMatchReference(t *testing.T) {
	cases := testutil.LoadFixtures(t, "onnx.json")
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				runCase(t, dev, name, cases[name], 1e-4)
			})
		})
	}
}
