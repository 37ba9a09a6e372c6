package tensor_test

import (
	"errors"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// actFunc is an op under test applied to tensors built from fixture inputs.
type actFunc func(in []*tensor.Tensor) *tensor.Tensor

// actRun builds the fixture inputs inNames on dev's autodiff view (float
// inputs require gradients), applies f and compares the output with c["y"].
// It then seeds Backward with c["gw"] (ones when the case has none) and
// compares the gradient of input i with c[gradNames[i]] where that name is
// not empty. Inputs are converted to dtype when it is a float type other
// than Float64.
func actRun(t *testing.T, dev tensor.Device, c fixtureCase, inNames, gradNames []string, f actFunc, dtype tensor.DType, rtol, atol float64) {
	t.Helper()
	ad := dev.Autodiff()
	in := make([]*tensor.Tensor, len(inNames))
	for i, name := range inNames {
		fx, ok := c[name]
		if !ok {
			t.Fatalf("fixture has no %q", name)
		}
		x := fx.Tensor(ad)
		if x.DType().IsFloat() {
			if dtype != tensor.Float64 {
				x = x.To(dtype)
			}
			x.RequireGrad()
		}
		in[i] = x
	}
	y := f(in)
	if y.DType() != dtype {
		t.Errorf("output dtype %s, want %s", y.DType(), dtype)
	}
	assertClose(t, "output", y, c["y"], rtol, atol)
	if gradNames == nil || !y.RequiresGrad() {
		if gradNames != nil {
			t.Errorf("output does not require gradients")
		}
		return
	}
	var grads *tensor.Gradients
	if gw, ok := c["gw"]; ok {
		grads = y.BackwardWith(gw.Tensor(dev).To(dtype))
	} else {
		grads = y.Backward()
	}
	for i, name := range gradNames {
		if name == "" {
			continue
		}
		g := grads.Get(in[i])
		if g == nil {
			t.Errorf("%s: no gradient", name)
			continue
		}
		assertClose(t, name, g, c[name], rtol, atol)
	}
}

// actCases returns the fixture cases whose names start with prefix, sorted.
func actCases(all map[string]fixtureCase, prefix string) []string {
	var names []string
	for n := range all {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// actActivations maps the fixture names of gen_act.py to the methods.
var actActivations = map[string]func(x *tensor.Tensor) *tensor.Tensor{
	"relu":            (*tensor.Tensor).Relu,
	"leaky_relu_0.01": func(x *tensor.Tensor) *tensor.Tensor { return x.LeakyRelu(0.01) },
	"leaky_relu_0.2":  func(x *tensor.Tensor) *tensor.Tensor { return x.LeakyRelu(0.2) },
	"relu6":           (*tensor.Tensor).Relu6,
	"elu_1":           func(x *tensor.Tensor) *tensor.Tensor { return x.Elu(1) },
	"elu_0.5":         func(x *tensor.Tensor) *tensor.Tensor { return x.Elu(0.5) },
	"selu":            (*tensor.Tensor).Selu,
	"celu_1":          func(x *tensor.Tensor) *tensor.Tensor { return x.Celu(1) },
	"celu_2":          func(x *tensor.Tensor) *tensor.Tensor { return x.Celu(2) },
	"gelu":            (*tensor.Tensor).Gelu,
	"gelu_tanh":       (*tensor.Tensor).GeluTanh,
	"sigmoid":         (*tensor.Tensor).Sigmoid,
	"log_sigmoid":     (*tensor.Tensor).LogSigmoid,
	"hard_sigmoid":    (*tensor.Tensor).HardSigmoid,
	"silu":            (*tensor.Tensor).Silu,
	"hard_swish":      (*tensor.Tensor).HardSwish,
	"mish":            (*tensor.Tensor).Mish,
	"softplus_1_20":   func(x *tensor.Tensor) *tensor.Tensor { return x.Softplus(1, 20) },
	"softplus_2_10":   func(x *tensor.Tensor) *tensor.Tensor { return x.Softplus(2, 10) },
	"softplus_0.5_5":  func(x *tensor.Tensor) *tensor.Tensor { return x.Softplus(0.5, 5) },
	"softsign":        (*tensor.Tensor).Softsign,
	"tanh":            (*tensor.Tensor).Tanh,
}

// TestActivationFixtures compares every activation and its derivative with
// PyTorch over a grid of negative, zero, kink and large inputs, in Float64
// (tightly) and Float32.
func TestActivationFixtures(t *testing.T) {
	all := loadFixtures(t, "act.json")
	names := actCases(all, "act/")
	if len(names) != len(actActivations) {
		t.Errorf("%d activation fixtures for %d activations", len(names), len(actActivations))
	}
	for _, name := range names {
		f := actActivations[strings.TrimPrefix(name, "act/")]
		if f == nil {
			t.Errorf("%s: no activation for this fixture", name)
			continue
		}
		c := all[name]
		op := func(in []*tensor.Tensor) *tensor.Tensor { return f(in[0]) }
		rtol := 1e-12
		if name == "act/hard_sigmoid" {
			rtol = 1e-7 // PyTorch's backward multiplies by 1/6 rounded to float32, even in float64
		}
		t.Run(name+"/float64", func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				actRun(t, dev, c, []string{"x"}, []string{"dx"}, op, tensor.Float64, rtol, 1e-14)
			})
		})
		t.Run(name+"/float32", func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				actRun(t, dev, c, []string{"x"}, []string{"dx"}, op, tensor.Float32, 2e-6, 1e-6)
			})
		})
	}
}

// actKinks lists, per unary op and parameters, the points where F is not
// differentiable (or jumps), and the domain to test.
type actDerivCase struct {
	op     backends.UnaryOp
	p0, p1 float64
	lo, hi float64   // domain
	kinks  []float64 // points F is not differentiable at
	steps  bool      // F is piecewise constant (jumps at every integer or half-integer)
}

// TestActivationDerivativeTable checks every DF of the shared op table
// against central differences of its F, across the domain and close to
// (but not on) each kink.
func TestActivationDerivativeTable(t *testing.T) {
	cases := []actDerivCase{
		{op: backends.Neg, lo: -50, hi: 50},
		{op: backends.Abs, lo: -50, hi: 50, kinks: []float64{0}},
		{op: backends.Sign, lo: -50, hi: 50, kinks: []float64{0}},
		{op: backends.Exp, lo: -30, hi: 30},
		{op: backends.Log, lo: 1e-3, hi: 1e3},
		{op: backends.Log1p, lo: -0.999, hi: 1e3},
		{op: backends.Sqrt, lo: 1e-3, hi: 1e3},
		{op: backends.Rsqrt, lo: 1e-2, hi: 1e3},
		{op: backends.Square, lo: -50, hi: 50},
		{op: backends.Recip, lo: 0.05, hi: 50},
		{op: backends.Erf, lo: -6, hi: 6},
		{op: backends.Sin, lo: -20, hi: 20},
		{op: backends.Cos, lo: -20, hi: 20},
		{op: backends.Tan, lo: -1.5, hi: 1.5},
		{op: backends.Tanh, lo: -30, hi: 30},
		{op: backends.Floor, lo: -5, hi: 5, steps: true},
		{op: backends.Ceil, lo: -5, hi: 5, steps: true},
		{op: backends.Round, lo: -5, hi: 5, steps: true},
		{op: backends.Relu, lo: -100, hi: 100, kinks: []float64{0}},
		{op: backends.LeakyRelu, p0: 0.01, lo: -100, hi: 100, kinks: []float64{0}},
		{op: backends.LeakyRelu, p0: -0.3, lo: -100, hi: 100, kinks: []float64{0}},
		{op: backends.Relu6, lo: -100, hi: 100, kinks: []float64{0, 6}},
		{op: backends.Elu, p0: 1, lo: -50, hi: 50, kinks: []float64{0}},
		{op: backends.Elu, p0: 0.3, lo: -50, hi: 50, kinks: []float64{0}},
		{op: backends.Selu, lo: -50, hi: 50, kinks: []float64{0}},
		{op: backends.Celu, p0: 1, lo: -50, hi: 50},
		{op: backends.Celu, p0: 2.5, lo: -50, hi: 50},
		{op: backends.Celu, p0: 0.4, lo: -50, hi: 50, kinks: []float64{0}},
		{op: backends.Gelu, lo: -40, hi: 40},
		{op: backends.GeluTanh, lo: -40, hi: 40},
		{op: backends.Sigmoid, lo: -40, hi: 40},
		{op: backends.LogSigmoid, lo: -700, hi: 700},
		{op: backends.HardSigmoid, lo: -100, hi: 100, kinks: []float64{-3, 3}},
		{op: backends.Silu, lo: -700, hi: 700},
		{op: backends.HardSwish, lo: -100, hi: 100, kinks: []float64{-3, 3}},
		{op: backends.Mish, lo: -700, hi: 700},
		{op: backends.Softplus, p0: 1, p1: 20, lo: -700, hi: 700, kinks: []float64{20}},
		{op: backends.Softplus, p0: 2, p1: 10, lo: -300, hi: 300, kinks: []float64{5}},
		{op: backends.Softplus, p0: 0.5, p1: 5, lo: -300, hi: 300, kinks: []float64{10}},
		{op: backends.Softsign, lo: -1e3, hi: 1e3, kinks: []float64{0}},
		{op: backends.Clamp, p0: -1, p1: 2, lo: -10, hi: 10, kinks: []float64{-1, 2}},
		{op: backends.PowConst, p0: 3, lo: -10, hi: 10},
		{op: backends.PowConst, p0: 0.5, lo: 1e-2, hi: 100},
		{op: backends.PowConst, p0: -2, lo: 0.1, hi: 100},
		{op: backends.PowConst, p0: 0, lo: -10, hi: 10},
		// Inverse and hyperbolic trigonometry, inside their domains and
		// away from the infinite slopes at the domains' ends.
		{op: backends.Asin, lo: -0.99, hi: 0.99},
		{op: backends.Acos, lo: -0.99, hi: 0.99},
		{op: backends.Atan, lo: -10, hi: 10},
		{op: backends.Sinh, lo: -10, hi: 10},
		{op: backends.Cosh, lo: -10, hi: 10},
		{op: backends.Asinh, lo: -10, hi: 10},
		{op: backends.Acosh, lo: 1.01, hi: 10},
		{op: backends.Atanh, lo: -0.99, hi: 0.99},
	}
	covered := map[backends.UnaryOp]bool{}
	for _, c := range cases {
		covered[c.op] = true
		def := backends.UnaryOps[c.op]
		// Points: a uniform grid over the domain plus each kink's
		// neighbourhood on both sides.
		var xs []float64
		for i := 0; i <= 400; i++ {
			xs = append(xs, c.lo+(c.hi-c.lo)*float64(i)/400)
		}
		for _, k := range append([]float64{0}, c.kinks...) {
			for _, d := range []float64{1e-4, 1e-3, 1e-2, 0.1, 0.5, 1} {
				xs = append(xs, k-d, k+d)
			}
		}
		bad := 0
		for _, x := range xs {
			if x < c.lo || x > c.hi {
				continue
			}
			h := 1e-6 * math.Max(1, math.Abs(x))
			near := false
			for _, k := range c.kinks {
				near = near || math.Abs(x-k) <= 2*h
			}
			if c.steps && math.Abs(x*2-math.Round(x*2)) <= 4*h {
				near = true // floor/ceil/round jump at (half-)integers
			}
			if near {
				continue
			}
			num := (def.F(x+h, c.p0, c.p1) - def.F(x-h, c.p0, c.p1)) / (2 * h)
			got := def.DF(x, c.p0, c.p1)
			if math.Abs(num-got) > 1e-6*math.Max(1, math.Abs(num)) || math.IsNaN(got) {
				if bad < 3 {
					t.Errorf("%s(p0=%v p1=%v) at %v: DF %v, finite difference %v", def.Name, c.p0, c.p1, x, got, num)
				}
				bad++
			}
		}
	}
	for op := backends.UnaryOp(0); op.String() != "unary?"; op++ {
		if def := backends.UnaryOps[op]; !def.Predicate && !covered[op] {
			t.Errorf("%s: no derivative check", def.Name)
		}
	}
}

// TestActivationGradients checks the backward of every activation by finite
// differences, on contiguous, transposed, permuted and broadcast inputs.
func TestActivationGradients(t *testing.T) {
	views := []struct {
		name  string
		shape []int
		view  func(x *tensor.Tensor) *tensor.Tensor
	}{
		{"contiguous", []int{2, 3}, func(x *tensor.Tensor) *tensor.Tensor { return x }},
		{"transposed", []int{3, 4}, func(x *tensor.Tensor) *tensor.Tensor { return x.T() }},
		{"permuted", []int{2, 3, 2}, func(x *tensor.Tensor) *tensor.Tensor { return x.Permute(2, 0, 1) }},
		{"expanded", []int{3}, func(x *tensor.Tensor) *tensor.Tensor { return x.Unsqueeze(0).Expand(2, -1) }},
	}
	var names []string
	for n := range actActivations {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := actActivations[name]
		for i, v := range views {
			t.Run(name+"/"+v.name, func(t *testing.T) {
				forEachDevice(t, func(t *testing.T, dev tensor.Device) {
					// Values in [-7, 7] cover every piece of every activation;
					// a fixed seed keeps them away from the kinks.
					x := randFloat64(dev, uint64(10+i), -7, 7, v.shape...)
					gradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor { return f(v.view(in[0])) }, x)
				})
			})
		}
	}
}

// TestActivationGraph checks that an activation records one named node.
func TestActivationGraph(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Ones(dev.Autodiff(), 3).RequireGrad()
		for _, c := range []struct {
			y  *tensor.Tensor
			op string
		}{
			{x.LeakyRelu(0.1), "leaky_relu"}, {x.Gelu(), "gelu"}, {x.GeluTanh(), "gelu_tanh"},
			{x.Softplus(2, 10), "softplus"}, {x.HardSwish(), "hard_swish"}, {x.Mish(), "mish"},
		} {
			n := c.y.Node()
			if n == nil || n.Op != c.op || len(n.Inputs) != 1 || n.Inputs[0] != x.Node() {
				t.Errorf("%s: node %+v, want one %q node on the leaf", c.op, n, c.op)
			}
		}
	})
}

// TestActivationDTypes checks the result dtypes: floats keep theirs, Relu
// keeps integers, other activations compute integers in Float32.
func TestActivationDTypes(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		i := tensor.FromInt64s(dev, []int64{-2, 0, 3})
		if r := i.Relu(); r.DType() != tensor.Int64 || !slices.Equal(r.Int64s(), []int64{0, 0, 3}) {
			t.Errorf("Relu of int64: %s %v", r.DType(), r.Int64s())
		}
		if r := i.Silu(); r.DType() != tensor.Float32 {
			t.Errorf("Silu of int64: %s, want float32", r.DType())
		}
		h := tensor.FromFloat32s(dev, []float32{-1, 0.5, 2}).To(tensor.BFloat16)
		r := h.Gelu()
		if r.DType() != tensor.BFloat16 {
			t.Errorf("Gelu of bfloat16: %s", r.DType())
		}
		assertValues(t, "bfloat16 gelu", r, []int{3}, []float64{-0.158655, 0.345731, 1.954500}, 1e-2, 1e-3)
	})
}

// TestActivationBadInput checks the parameters activations reject.
func TestActivationBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Ones(dev, 2)
		released := tensor.Ones(dev, 2)
		released.Release()
		cases := []struct {
			name string
			call func()
			kind error
			op   string
		}{
			{"celu alpha 0", func() { x.Celu(0) }, tensor.ErrArgument, "tensor.Celu"},
			{"softplus beta 0", func() { x.Softplus(0, 20) }, tensor.ErrArgument, "tensor.Softplus"},
			{"released input", func() { released.Mish() }, tensor.ErrReleased, "tensor.Mish"},
		}
		for _, c := range cases {
			actExpectError(t, c.name, c.call, c.kind, c.op)
		}
	})
}

// actExpectError fails unless call panics with a *tensor.Error of kind whose
// message starts with op and contains every string in want.
func actExpectError(t *testing.T, name string, call func(), kind error, op string, want ...string) {
	t.Helper()
	err := tensor.Try(call)
	if err == nil {
		t.Errorf("%s: no error", name)
		return
	}
	var te *tensor.Error
	if !errors.As(err, &te) || !errors.Is(err, kind) {
		t.Errorf("%s: error %v is not a *tensor.Error of kind %v", name, err, kind)
		return
	}
	if te.Op != op {
		t.Errorf("%s: error names op %q, want %q (%v)", name, te.Op, op, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not mention %q", name, err, w)
		}
	}
}

// TestActivationDerivativeExtremes checks that no activation's derivative
// turns into NaN for huge finite inputs, where a formula can multiply a
// saturated 0 by an overflowed ∞.
func TestActivationDerivativeExtremes(t *testing.T) {
	params := map[backends.UnaryOp][2]float64{
		backends.LeakyRelu: {0.01, 0}, backends.Elu: {1, 0}, backends.Celu: {1, 0}, backends.Softplus: {1, 20},
	}
	for op := backends.Relu; op <= backends.Softsign; op++ {
		def, p := backends.UnaryOps[op], params[op]
		for _, x := range []float64{-1e300, -1e20, -1e10, 1e10, 1e20, 1e300} {
			if d := def.DF(x, p[0], p[1]); math.IsNaN(d) || math.IsInf(d, 0) {
				t.Errorf("%s'(%g) = %v", def.Name, x, d)
			}
		}
	}
}
