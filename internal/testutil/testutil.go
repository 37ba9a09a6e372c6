package testutil

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	_ "github.com/kiln-ml/kiln/backends/remote" // KILN_TEST_DEVICES=remote://HOST:PORT/DEVICE runs the suites against `kiln serve`
	"github.com/kiln-ml/kiln/backends/strict"
	"github.com/kiln-ml/kiln/tensor"
)

// Devices returns the devices every test runs on: the CPU and the
// strict backend (asynchronous, poisoning, leak-tracking), plus each device
// named in KILN_TEST_DEVICES (comma-separated, e.g. "cuda:0", which make
// gpu-check sets, or "remote://127.0.0.1:PORT/cpu:0" for a `kiln serve`).
// A device there that cannot be opened panics with the reason, so a GPU
// run never passes by silently testing the CPU only.
func Devices() []tensor.Device {
	devs := []tensor.Device{tensor.CPU(), tensor.MustDevice("strict")}
	for _, name := range strings.Split(os.Getenv("KILN_TEST_DEVICES"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			devs = append(devs, tensor.MustDevice(name))
		}
	}
	return devs
}

// ForEachDevice runs fn as a subtest on every test device. Each run is
// wrapped in a Scope; on the strict device the test then fails if any
// buffer allocated during fn is still live or if the device reports an
// error (use after free, bad view, out-of-range index).
func ForEachDevice(t *testing.T, fn func(t *testing.T, dev tensor.Device)) {
	t.Helper()
	for _, dev := range Devices() {
		t.Run(dev.String(), func(t *testing.T) {
			isStrict := dev.Kind() == "strict"
			var mark uint64
			if isStrict {
				strict.Default().ClearError()
				mark = strict.Default().Mark()
			}
			tensor.Scope(func() { fn(t, dev) })
			if err := dev.Sync(); err != nil {
				t.Fatalf("device error after test: %v", err)
			}
			if isStrict && !t.Failed() {
				for _, l := range strict.Default().LiveSince(mark) {
					t.Errorf("leaked %s", l)
				}
			}
		})
	}
}

// Fixture is one tensor in a fixture file written by testdata/*.py.
type Fixture struct {
	Shape []int           `json:"shape"`
	DType string          `json:"dtype"`
	Data  []fixtureNumber `json:"data"`
}

// fixtureNumber decodes a JSON number or the strings "nan", "inf", "-inf".
type fixtureNumber float64

func (n *fixtureNumber) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "nan":
			*n = fixtureNumber(math.NaN())
		case "inf":
			*n = fixtureNumber(math.Inf(1))
		case "-inf":
			*n = fixtureNumber(math.Inf(-1))
		default:
			return fmt.Errorf("bad number %q", s)
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = fixtureNumber(f)
	return nil
}

// Float64s returns the values.
func (f Fixture) Float64s() []float64 {
	out := make([]float64, len(f.Data))
	for i, v := range f.Data {
		out[i] = float64(v)
	}
	return out
}

// Tensor builds the fixture on dev with its own dtype (int64, int16, int8,
// bool and float64; any other dtype name gives float32).
func (f Fixture) Tensor(dev tensor.Device) *tensor.Tensor {
	shape := f.Shape
	if shape == nil {
		shape = []int{}
	}
	v := f.Float64s()
	switch f.DType {
	case "int64":
		ints := make([]int64, len(v))
		for i, x := range v {
			ints[i] = int64(x)
		}
		return tensor.FromInt64s(dev, ints, shape...).Reshape(shape...)
	case "int16":
		ints := make([]int16, len(v))
		for i, x := range v {
			ints[i] = int16(x)
		}
		return tensor.FromInt16s(dev, ints, shape...).Reshape(shape...)
	case "int8":
		ints := make([]int8, len(v))
		for i, x := range v {
			ints[i] = int8(x)
		}
		return tensor.FromInt8s(dev, ints, shape...).Reshape(shape...)
	case "bool":
		bs := make([]bool, len(v))
		for i, x := range v {
			bs[i] = x != 0
		}
		return tensor.FromBools(dev, bs, shape...).Reshape(shape...)
	case "float64":
		return tensor.FromFloat64s(dev, v, shape...).Reshape(shape...)
	}
	fs := make([]float32, len(v))
	for i, x := range v {
		fs[i] = float32(x)
	}
	return tensor.FromFloat32s(dev, fs, shape...).Reshape(shape...)
}

// FixtureCase maps names (inputs and expected outputs) to tensors.
type FixtureCase map[string]Fixture

// LoadFixtures reads testdata/name: {"case": {"tensor": {...}}}.
func LoadFixtures(t testing.TB, name string) map[string]FixtureCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("fixture %s: %v (regenerate with /usr/bin/python3 testdata/gen_*.py)", name, err)
	}
	var cases map[string]FixtureCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return cases
}

// AssertClose fails unless got has want's shape and its values are within
// atol + rtol·|want| (NaN matches NaN, infinities must match exactly).
func AssertClose(t *testing.T, what string, got *tensor.Tensor, want Fixture, rtol, atol float64) {
	t.Helper()
	shape := want.Shape
	if shape == nil {
		shape = []int{}
	}
	AssertValues(t, what, got, shape, want.Float64s(), rtol, atol)
}

// AssertValues fails unless got has the given shape and values.
func AssertValues(t *testing.T, what string, got *tensor.Tensor, shape []int, want []float64, rtol, atol float64) {
	t.Helper()
	gs := got.Shape()
	if fmt.Sprint(gs) != fmt.Sprint(shape) {
		t.Errorf("%s: shape %v, want %v", what, gs, shape)
		return
	}
	g := got.Float64s()
	bad := 0
	for i := range want {
		w, v := want[i], g[i]
		ok := false
		switch {
		case math.IsNaN(w):
			ok = math.IsNaN(v)
		case math.IsInf(w, 0):
			ok = v == w
		default:
			ok = math.Abs(v-w) <= atol+rtol*math.Abs(w)
		}
		if !ok {
			if bad < 5 {
				t.Errorf("%s: element %d = %v, want %v", what, i, v, w)
			}
			bad++
		}
	}
	if bad >= 5 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(want))
	}
}

// GradCheck compares the gradients Backward computes for f with central
// finite differences in float64. Float inputs (converted to Float64) are
// differentiated; other inputs (indices, masks) are passed through. The
// loss is Σ f(x)·w with fixed random weights w, so every output element
// contributes differently. f may build views (transposes, slices,
// broadcasts) of its inputs to check gradients through them.
func GradCheck(t *testing.T, dev tensor.Device, f func(in []*tensor.Tensor) *tensor.Tensor, inputs ...*tensor.Tensor) {
	t.Helper()
	const eps, rtol, atol = 1e-6, 1e-4, 1e-6
	ad := dev.Autodiff()
	host := make([][]float64, len(inputs))
	for i, in := range inputs {
		host[i] = in.Float64s()
	}
	build := func(d tensor.Device, i int, vals []float64) *tensor.Tensor {
		in := inputs[i]
		if !in.DType().IsFloat() {
			return in.ToDevice(d)
		}
		return tensor.FromFloat64s(d, vals, in.Shape()...).Reshape(in.Shape()...)
	}
	xs := make([]*tensor.Tensor, len(inputs))
	for i := range inputs {
		xs[i] = build(ad, i, host[i])
		if inputs[i].DType().IsFloat() {
			xs[i].RequireGrad()
		}
	}
	out := f(xs)
	rng := rand.New(rand.NewPCG(7, 7))
	w := make([]float64, out.NumElements())
	for i := range w {
		w[i] = rng.Float64()*2 - 1
	}
	wt := tensor.FromFloat64s(ad, w, out.Shape()...).Reshape(out.Shape()...)
	loss := out.To(tensor.Float64).Mul(wt).Sum()
	grads := loss.Backward()
	lossAt := func(i int, vals []float64) float64 {
		var l float64
		tensor.Scope(func() {
			in := make([]*tensor.Tensor, len(inputs))
			for k := range inputs {
				v := host[k]
				if k == i {
					v = vals
				}
				in[k] = build(dev, k, v)
			}
			o := f(in).Float64s()
			for j := range o {
				l += o[j] * w[j]
			}
		})
		return l
	}
	for i, in := range inputs {
		if !in.DType().IsFloat() {
			continue
		}
		g := grads.Get(xs[i])
		if g == nil {
			t.Errorf("input %d: no gradient", i)
			continue
		}
		if fmt.Sprint(g.Shape()) != fmt.Sprint(in.Shape()) {
			t.Errorf("input %d: gradient shape %v, want %v", i, g.Shape(), in.Shape())
			continue
		}
		analytic := g.Float64s()
		bad := 0
		for j := range host[i] {
			v := append([]float64(nil), host[i]...)
			v[j] = host[i][j] + eps
			lp := lossAt(i, v)
			v[j] = host[i][j] - eps
			lm := lossAt(i, v)
			num := (lp - lm) / (2 * eps)
			if math.Abs(num-analytic[j]) > atol+rtol*math.Abs(num) && math.Abs(num-analytic[j]) > 1e-5 {
				if bad < 5 {
					t.Errorf("input %d element %d: gradient %v, finite difference %v", i, j, analytic[j], num)
				}
				bad++
			}
		}
	}
}

// RandFloat64 returns a Float64 tensor of uniform values in [lo, hi) from
// a fixed seed, for gradient checks.
func RandFloat64(dev tensor.Device, seed uint64, lo, hi float64, shape ...int) *tensor.Tensor {
	rng := rand.New(rand.NewPCG(seed, 1))
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float64()
	}
	return tensor.FromFloat64s(dev, v, shape...).Reshape(shape...)
}

// GradCase is one table entry for RunGradCases: f applied to inputs built on dev.
type GradCase struct {
	Name   string
	F      func(in []*tensor.Tensor) *tensor.Tensor
	Inputs func(dev tensor.Device) []*tensor.Tensor
}

// RunGradCases runs GradCheck for each case on every test device.
func RunGradCases(t *testing.T, cases []GradCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				GradCheck(t, dev, c.F, c.Inputs(dev)...)
			})
		})
	}
}

// faultDriver serves one private backend under a kind of its own.
type faultDriver struct {
	kind string
	b    backends.Backend
}

func (d faultDriver) Kind() string                       { return d.kind }
func (faultDriver) Priority() int                        { return -100 }
func (faultDriver) Enumerate() []backends.DeviceInfo     { return nil } // never listed, never the default
func (d faultDriver) Open(int) (backends.Backend, error) { return d.b, nil }

var faultDevices atomic.Int64

// FreshDevices returns a new CPU device and a new strict device, each over
// a backend of its own, for tests that plant device failures: whatever such
// a test leaves behind (an unreported failure, a poisoned buffer) cannot
// reach the shared devices other tests use.
func FreshDevices(t testing.TB) []tensor.Device {
	t.Helper()
	var out []tensor.Device
	for _, b := range []backends.Backend{cpu.New(1), strict.New(cpu.New(1))} {
		kind := fmt.Sprintf("test-fault-%d", faultDevices.Add(1))
		backends.Register(faultDriver{kind: kind, b: b})
		dev, err := tensor.Open(kind, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dev)
	}
	return out
}
