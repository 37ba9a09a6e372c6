package nn_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// The layer fixtures (testdata/gen_layers.py) hold, per case, a PyTorch
// module's state dict (sd.<key>), its inputs (x0, x1), its output (out) and
// the gradients (grad.x0, grad.<key>) of Σ out·w, w[i] = ((37·i) mod 19 −
// 9)/9. A fixture test loads the state dict into the Kiln layer, which must
// accept every key and leave none missing, runs the layer in float32 and
// in float64, and compares output and gradients.

// fixtureCase says how to build and run the Kiln layer of one fixture.
type fixtureCase struct {
	name    string // the fixture's key
	build   func(dev tensor.Device, dtype tensor.DType) any
	forward func(m any, in []*tensor.Tensor) *tensor.Tensor // nil: m.(nn.Module).Forward(in[0])
	dtypes  []tensor.DType                                  // nil: Float32 and Float64
	// loose64, when set, is the float64 tolerance, for references that
	// PyTorch computes with float32 constants even in float64.
	loose64 float64
}

// tolerances returns the relative and absolute tolerances for dtype: the
// references are float64 computations, so float32 runs differ by rounding.
func tolerances(dtype tensor.DType) (rtol, atol float64) {
	if dtype == tensor.Float64 {
		return 1e-9, 1e-10
	}
	return 1e-5, 1e-5
}

// lossWeights returns the fixtures' loss weights for n outputs.
func lossWeights(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = float64((37*i)%19-9) / 9
	}
	return w
}

// fixtureInput builds a fixture input on the autodiff device ad: float
// inputs in dtype, requiring gradients; integer inputs as they are.
func fixtureInput(ad tensor.Device, f testutil.Fixture, dtype tensor.DType) *tensor.Tensor {
	if f.DType != "float64" && f.DType != "float32" {
		return f.Tensor(ad)
	}
	x := tensor.FromFloat64s(ad, f.Float64s(), f.Shape...).Reshape(f.Shape...)
	if dtype != tensor.Float64 {
		x = x.To(dtype)
	}
	return x.RequireGrad()
}

// stateDict returns the fixture's tensors whose keys start with prefix,
// keyed without it, on dev.
func stateDict(dev tensor.Device, c testutil.FixtureCase, prefix string) map[string]*tensor.Tensor {
	sd := map[string]*tensor.Tensor{}
	for k, f := range c {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			sd[name] = f.Tensor(dev)
		}
	}
	return sd
}

// loadFixtureState loads the fixture's state dict into m, failing the test
// unless every key fits.
func loadFixtureState(t *testing.T, m any, c testutil.FixtureCase, prefix string, dev tensor.Device) {
	t.Helper()
	if _, _, err := nn.LoadStateDict(m, stateDict(dev, c, prefix)); err != nil {
		t.Fatalf("load state dict: %v", err)
	}
}

// fixtureStep runs m on the fixture's inputs (keys prefix+"x0", …),
// compares the output with prefix+"out" and the gradients with
// prefix+"grad.…", and returns the output.
func fixtureStep(t *testing.T, ad tensor.Device, m any, fc fixtureCase, c testutil.FixtureCase, prefix string,
	dtype tensor.DType) {
	t.Helper()
	rtol, atol := tolerances(dtype)
	if dtype == tensor.Float64 && fc.loose64 > 0 {
		rtol, atol = fc.loose64, fc.loose64
	}
	var in []*tensor.Tensor
	for i := 0; ; i++ {
		f, ok := c[fmt.Sprintf("%sx%d", prefix, i)]
		if !ok {
			break
		}
		in = append(in, fixtureInput(ad, f, dtype))
	}
	var out *tensor.Tensor
	if fc.forward != nil {
		out = fc.forward(m, in)
	} else {
		out = m.(nn.Module).Forward(in[0])
	}
	if out.DType() != dtype {
		t.Errorf("output dtype %s, want %s", out.DType(), dtype)
	}
	testutil.AssertClose(t, prefix+"out", out, c[prefix+"out"], rtol, atol)
	w := tensor.FromFloat64s(ad, lossWeights(out.NumElements()), out.Shape()...).Reshape(out.Shape()...)
	grads := out.To(tensor.Float64).Mul(w).Sum().Backward()
	defer grads.Release()
	for i, x := range in {
		key := fmt.Sprintf("%sgrad.x%d", prefix, i)
		want, ok := c[key]
		if !ok {
			continue
		}
		g := grads.Get(x)
		if g == nil {
			t.Errorf("%s: no gradient", key)
			continue
		}
		testutil.AssertClose(t, key, g, want, rtol, atol)
	}
	for _, np := range nn.Params(m) {
		key := prefix + "grad." + np.Name
		want, ok := c[key]
		if !ok {
			t.Errorf("parameter %s has no reference gradient %s", np.Name, key)
			continue
		}
		g := grads.Get(np.Param.Tensor)
		if g == nil {
			t.Errorf("%s: no gradient", key)
			continue
		}
		testutil.AssertClose(t, key, g, want, rtol, atol)
	}
}

// runFixtureCases runs each case of the fixture file on every test device
// and dtype, and fails when the file holds cases no test ran (other than
// those whose names start with one of elsewhere, which other tests run).
func runFixtureCases(t *testing.T, file string, cases []fixtureCase, elsewhere ...string) {
	t.Helper()
	fixtures := testutil.LoadFixtures(t, file)
	used := map[string]bool{}
	for _, fc := range cases {
		c, ok := fixtures[fc.name]
		if !ok {
			t.Errorf("%s: no fixture %q", file, fc.name)
			continue
		}
		used[fc.name] = true
		dtypes := fc.dtypes
		if dtypes == nil {
			dtypes = []tensor.DType{tensor.Float32, tensor.Float64}
		}
		t.Run(fc.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				forEachDType(t, dtypes, func(t *testing.T, dt tensor.DType) {
					ad := dev.Autodiff()
					m := fc.build(ad, dt)
					loadFixtureState(t, m, c, "sd.", dev)
					fixtureStep(t, ad, m, fc, c, "", dt)
				})
			})
		})
	}
	var unused []string
	for name := range fixtures {
		other := false
		for _, p := range elsewhere {
			other = other || strings.HasPrefix(name, p)
		}
		if !used[name] && !other {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("%s: cases without a test: %s", file, strings.Join(unused, ", "))
	}
}

// forEachDType runs fn as a subtest per dtype. A subtest runs on a
// goroutine of its own, outside the Scope of ForEachDevice, so each gets a
// Scope here.
func forEachDType(t *testing.T, dtypes []tensor.DType, fn func(t *testing.T, dt tensor.DType)) {
	t.Helper()
	for _, dt := range dtypes {
		t.Run(dt.String(), func(t *testing.T) {
			tensor.Scope(func() { fn(t, dt) })
		})
	}
}

// badInput is one bad call: it must panic with a *tensor.Error of kind
// whose Op is op and whose message holds every want string.
type badInput struct {
	name string
	op   string
	kind error
	want []string
	call func(dev tensor.Device)
}

func runBadInputs(t *testing.T, cases []badInput) {
	t.Helper()
	for _, bc := range cases {
		t.Run(bc.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				err := tensor.Try(func() { bc.call(dev) })
				var te *tensor.Error
				if !errors.As(err, &te) {
					t.Fatalf("got %v, want a *tensor.Error", err)
				}
				if te.Op != bc.op || !errors.Is(err, bc.kind) {
					t.Fatalf("got %q (op %q), want op %q and kind %v", err, te.Op, bc.op, bc.kind)
				}
				for _, w := range bc.want {
					if !strings.Contains(te.Msg, w) {
						t.Errorf("message %q does not mention %q", te.Msg, w)
					}
				}
			})
		})
	}
}
