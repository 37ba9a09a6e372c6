package nn_test

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// actExtraModule returns the module for a case of testdata/act2.json
// (written by gen_act2.py; "act2/op/variant", the options in the
// variant) built on dev, or nil for an unknown case. PReLU gets the
// fixture's weight.
func actExtraModule(t *testing.T, name string, c testutil.FixtureCase, dev tensor.Device) nn.Module {
	t.Helper()
	parts := strings.SplitN(strings.TrimPrefix(name, "act2/"), "/", 2)
	op, variant := parts[0], parts[1]
	nums := func() []float64 {
		var out []float64
		for _, p := range strings.Split(variant, "_") {
			v, err := strconv.ParseFloat(p, 64)
			if err != nil {
				t.Fatalf("%s: variant %q: %v", name, variant, err)
			}
			out = append(out, v)
		}
		return out
	}
	special := variant == "nan" || variant == "empty" || variant == "grid" || variant == "large" || variant == "default"
	switch op {
	case "hardtanh":
		if special {
			return nn.Hardtanh{}
		}
		p := nums()
		return nn.NewHardtanh(p[0], p[1])
	case "threshold":
		if special {
			return nn.NewThreshold(0.5, -3)
		}
		p := nums()
		return nn.NewThreshold(p[0], p[1])
	case "softshrink", "hardshrink":
		lambda := 0.0 // the zero value's 0.5
		if !special {
			lambda = nums()[0]
			if lambda == 0 {
				return nil // a zero Lambda means the default: tested in package tensor
			}
		}
		if op == "softshrink" {
			return nn.NewSoftshrink(lambda)
		}
		return nn.NewHardshrink(lambda)
	case "tanhshrink":
		return nn.Tanhshrink{}
	case "softmin", "glu":
		dim := 1
		switch {
		case variant == "large":
			dim = 0
		case !special:
			dim = int(nums()[0])
		}
		if op == "softmin" {
			return nn.NewSoftmin(dim)
		}
		return nn.NewGLU(dim)
	case "prelu":
		w := c["w"]
		p := nn.NewPReLU(dev, len(w.Data), nn.PReLUConfig{DType: tensor.Float64})
		p.Weight.Set(w.Tensor(dev))
		return p
	case "rrelu_eval":
		r := &nn.RReLU{}
		if !special {
			p := nums()
			r = nn.NewRReLU(p[0], p[1])
		}
		nn.Eval(r)
		return r
	}
	t.Fatalf("%s: no module for this fixture", name)
	return nil
}

// TestActivationExtraModules runs each activation module on the PyTorch
// fixtures of gen_act2.py and compares the output and the gradients of
// Σ y·gw for the input and PReLU's weight.
func TestActivationExtraModules(t *testing.T) {
	all := testutil.LoadFixtures(t, "act2.json")
	var names []string
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c := all[name]
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				ad := dev.Autodiff()
				m := actExtraModule(t, name, c, ad)
				if m == nil {
					t.Skip("default-valued parameter")
				}
				x := c["x"].Tensor(ad).RequireGrad()
				y := m.Forward(x)
				testutil.AssertClose(t, "output", y, c["y"], 1e-12, 1e-14)
				g := y.BackwardWith(c["gw"].Tensor(ad))
				testutil.AssertClose(t, "input gradient", g.Get(x), c["dx"], 1e-12, 1e-14)
				if p, ok := m.(*nn.PReLU); ok {
					testutil.AssertClose(t, "weight gradient", g.Get(p.Weight.Tensor), c["dw"], 1e-12, 1e-14)
					nn.Release(p)
				}
			})
		})
	}
}

// TestActivationExtraDefaults checks the zero values and constructors
// against PyTorch's defaults.
func TestActivationExtraDefaults(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.FromFloat64s(dev, []float64{-2, -0.75, -0.25, 0, 0.25, 0.75, 2}, 1, 7)
		check := func(name string, m nn.Module, want []float64) {
			t.Helper()
			testutil.AssertValues(t, name, m.Forward(x), []int{1, 7}, want, 0, 1e-12)
		}
		check("Hardtanh{}", nn.Hardtanh{}, []float64{-1, -0.75, -0.25, 0, 0.25, 0.75, 1})
		check("Softshrink{}", nn.Softshrink{}, []float64{-1.5, -0.25, 0, 0, 0, 0.25, 1.5})
		check("Hardshrink{}", nn.Hardshrink{}, []float64{-2, -0.75, 0, 0, 0, 0.75, 2})
		check("Threshold{}", nn.Threshold{}, []float64{0, 0, 0, 0, 0.25, 0.75, 2})
		r := &nn.RReLU{}
		nn.Eval(r)
		s := (1.0/8 + 1.0/3) / 2
		check("RReLU{} eval", r, []float64{-2 * s, -0.75 * s, -0.25 * s, 0, 0.25, 0.75, 2})
		p := nn.NewPReLU(dev, 1, nn.PReLUConfig{DType: tensor.Float64})
		check("NewPReLU", p, []float64{-0.5, -0.1875, -0.0625, 0, 0.25, 0.75, 2})
		nn.Release(p)
		zero := 0.0
		p = nn.NewPReLU(dev, 1, nn.PReLUConfig{Init: &zero, DType: tensor.Float64})
		check("NewPReLU init 0", p, []float64{0, 0, 0, 0, 0.25, 0.75, 2})
		nn.Release(p)
	})
}

// TestRReLUModes checks that RReLU draws slopes in training mode and uses
// the fixed mean slope after nn.Eval, reachable inside a Sequential.
func TestRReLUModes(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		r := nn.NewRReLU(0.2, 0.6)
		model := nn.NewSequential(nn.Identity{}, r)
		x := tensor.Full(dev, -1, 1000).To(tensor.Float64)
		y := model.Forward(x).Float64s()
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range y {
			lo, hi = min(lo, -v), max(hi, -v)
		}
		if lo < 0.2 || hi >= 0.6 || hi-lo < 0.3 {
			t.Errorf("training slopes span [%v, %v], want most of [0.2, 0.6)", lo, hi)
		}
		nn.Eval(&model)
		for i, v := range model.Forward(x).Float64s() {
			if math.Abs(v+0.4) > 1e-12 {
				t.Fatalf("eval element %d = %v, want -0.4", i, v)
			}
		}
	})
}

// TestPReLUState checks PReLU's parameter: its state-dict name and shape,
// and the lines of a summary.
func TestPReLUState(t *testing.T) {
	dev := tensor.CPU()
	p := nn.NewPReLU(dev, 3)
	defer nn.Release(p)
	names := []string{}
	for _, np := range nn.Params(p) {
		names = append(names, fmt.Sprintf("%s:%v", np.Name, np.Param.Shape()))
	}
	if !slices.Equal(names, []string{"weight:[3]"}) {
		t.Errorf("params %v, want [weight:[3]]", names)
	}
	sum := nn.Summary(nn.NewSequential(nn.NewLinear(dev, 4, 3), p, nn.NewGLU(-1), nn.Tanhshrink{}), nn.SummaryOptions{}).String()
	for _, want := range []string{"nn.PReLU", "nn.GLU", "nn.Tanhshrink"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %s:\n%s", want, sum)
		}
	}
}

// TestActivationExtraBadInput checks the modules' errors: they name the
// module (or the tensor op it calls) and the kind of mistake.
func TestActivationExtraBadInput(t *testing.T) {
	dev := tensor.CPU()
	p := nn.NewPReLU(dev, 3)
	defer nn.Release(p)
	cases := []struct {
		name string
		kind error
		f    func()
	}{
		{"NewPReLU zero", tensor.ErrArgument, func() { nn.NewPReLU(dev, 0) }},
		{"PReLU channels", tensor.ErrShape, func() { p.Forward(tensor.Zeros(dev, 2, 4)) }},
		{"PReLU vector", tensor.ErrShape, func() { p.Forward(tensor.Zeros(dev, 3)) }},
		{"PReLU dtype", tensor.ErrDType, func() { p.Forward(tensor.Zeros(dev, 2, 3).To(tensor.Float64)) }},
		{"NewHardtanh", tensor.ErrArgument, func() { nn.NewHardtanh(1, -1) }},
		{"Hardtanh", tensor.ErrArgument, func() { nn.Hardtanh{Min: 1, Max: -1}.Forward(tensor.Zeros(dev, 2)) }},
		{"NewRReLU", tensor.ErrArgument, func() { nn.NewRReLU(0.5, 0.1) }},
		{"GLU odd", tensor.ErrShape, func() { nn.NewGLU(-1).Forward(tensor.Zeros(dev, 2, 3)) }},
		{"GLU dim", tensor.ErrShape, func() { nn.NewGLU(2).Forward(tensor.Zeros(dev, 2, 4)) }},
		{"Softmin dim", tensor.ErrShape, func() { nn.NewSoftmin(-3).Forward(tensor.Zeros(dev, 2, 4)) }},
		{"Softshrink negative", tensor.ErrArgument, func() { nn.NewSoftshrink(-1).Forward(tensor.Zeros(dev, 2)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mustPanic(t, c.f)
			if !isTensorError(err, c.kind) {
				t.Errorf("error %v, want a *tensor.Error wrapping %v", err, c.kind)
			}
		})
	}
}
