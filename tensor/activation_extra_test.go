package tensor_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// The fixtures of activation_extra.go live beside the nn modules that wrap
// them: nn/testdata/act2.json, written by nn/testdata/gen_act2.py.
const extraActFixtures = "../../nn/testdata/act2.json"

// extraActParams parses a fixture variant such as "-2_0.5" into numbers.
func extraActParams(t *testing.T, variant string) []float64 {
	t.Helper()
	var out []float64
	for _, p := range strings.Split(variant, "_") {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			t.Fatalf("variant %q: %v", variant, err)
		}
		out = append(out, v)
	}
	return out
}

// extraActCase returns the op for fixture case name ("act2/op/variant") and
// whether it takes a weight input; it fails the test for an unknown case.
func extraActCase(t *testing.T, name string) (f actFunc, weighted bool) {
	t.Helper()
	parts := strings.SplitN(strings.TrimPrefix(name, "act2/"), "/", 2)
	op, variant := parts[0], parts[1]
	numeric := func() []float64 { return extraActParams(t, variant) }
	switch op {
	case "hardtanh":
		lo, hi := -1.0, 1.0
		if variant != "nan" && variant != "empty" {
			p := numeric()
			lo, hi = p[0], p[1]
		}
		return func(in []*tensor.Tensor) *tensor.Tensor { return in[0].HardTanh(lo, hi) }, false
	case "threshold":
		th, v := 0.5, -3.0
		if variant != "nan" {
			p := numeric()
			th, v = p[0], p[1]
		}
		return func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Threshold(th, v) }, false
	case "softshrink", "hardshrink":
		lambda := 0.5
		if variant != "nan" {
			lambda = numeric()[0]
		}
		if op == "softshrink" {
			return func(in []*tensor.Tensor) *tensor.Tensor { return in[0].SoftShrink(lambda) }, false
		}
		return func(in []*tensor.Tensor) *tensor.Tensor { return in[0].HardShrink(lambda) }, false
	case "tanhshrink":
		return func(in []*tensor.Tensor) *tensor.Tensor { return in[0].TanhShrink() }, false
	case "softmin", "glu":
		dim := 1
		switch variant {
		case "large":
			dim = 0
		case "empty":
		default:
			dim = int(numeric()[0])
		}
		if op == "softmin" {
			return func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Softmin(dim) }, false
		}
		return func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Glu(dim) }, false
	case "prelu":
		return func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Prelu(in[1]) }, true
	case "rrelu_eval":
		p := []float64{1.0 / 8, 1.0 / 3}
		if variant != "default" {
			p = numeric()
		}
		return func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Rrelu(p[0], p[1], false) }, false
	}
	t.Fatalf("%s: no op for this fixture", name)
	return nil, false
}

// extraStrided returns a view of x with x's shape and values whose layout
// is not contiguous (the transpose of a transposed copy), so that the ops
// meet strided inputs; tensors of rank below 2 are returned as they are.
func extraStrided(x *tensor.Tensor) *tensor.Tensor {
	if x.Dims() < 2 {
		return x
	}
	return x.Transpose(0, 1).Contiguous().Transpose(0, 1)
}

// TestActivationExtraFixtures compares each op of activation_extra.go and
// its gradients with PyTorch 1.13: in Float64 (tightly), in Float32, and on
// non-contiguous views of the inputs; kinks are hit exactly.
func TestActivationExtraFixtures(t *testing.T) {
	all := loadFixtures(t, extraActFixtures)
	names := actCases(all, "act2/")
	if len(names) < 38 {
		t.Fatalf("only %d fixtures in %s", len(names), extraActFixtures)
	}
	for _, name := range names {
		c := all[name]
		f, weighted := extraActCase(t, name)
		inNames, gradNames := []string{"x"}, []string{"dx"}
		if weighted {
			inNames, gradNames = []string{"x", "w"}, []string{"dx", "dw"}
		}
		strided := func(in []*tensor.Tensor) *tensor.Tensor {
			return f([]*tensor.Tensor{extraStrided(in[0]), in[len(in)-1]}[:len(in)])
		}
		t.Run(name+"/float64", func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				actRun(t, dev, c, inNames, gradNames, f, tensor.Float64, 1e-12, 1e-14)
			})
		})
		t.Run(name+"/float32", func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				actRun(t, dev, c, inNames, gradNames, f, tensor.Float32, 2e-6, 1e-6)
			})
		})
		t.Run(name+"/strided", func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				actRun(t, dev, c, inNames, gradNames, strided, tensor.Float64, 1e-12, 1e-14)
			})
		})
	}
}

// TestActivationExtraGradients checks the gradients against central finite
// differences at random points (off the kinks), including views.
func TestActivationExtraGradients(t *testing.T) {
	one := func(seed uint64, shape ...int) func(dev tensor.Device) []*tensor.Tensor {
		return func(dev tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(dev, seed, -3, 3, shape...)}
		}
	}
	runGradCases(t, []gradCase{
		{"HardTanh", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].HardTanh(-1.2, 0.7) }, one(1, 3, 4)},
		{"Threshold", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Threshold(0.3, -2) }, one(2, 3, 4)},
		{"SoftShrink", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].SoftShrink(0.8) }, one(3, 3, 4)},
		{"HardShrink", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].HardShrink(0.8) }, one(4, 3, 4)},
		{"TanhShrink", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].TanhShrink() }, one(5, 3, 4)},
		{"Softmin/transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Softmin(-1) }, one(6, 3, 4)},
		{"Glu/sliced", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Slice(1, 0, 8, 2).Glu(1) }, one(7, 3, 8)},
		{"Prelu/channels", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Prelu(in[1]) },
			func(dev tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(dev, 8, -3, 3, 2, 3, 4), randFloat64(dev, 9, -1, 1, 3)}
			}},
		{"Prelu/single/transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Prelu(in[1]) },
			func(dev tensor.Device) []*tensor.Tensor {
				return []*tensor.Tensor{randFloat64(dev, 10, -3, 3, 4, 3), randFloat64(dev, 11, -1, 1, 1)}
			}},
		{"Rrelu/eval", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Rrelu(0.1, 0.3, false) }, one(12, 3, 4)},
	})
}

// TestRreluTraining checks Rrelu in training mode: positive inputs pass
// through, each negative input gets its own slope drawn uniformly from
// [lower, upper) (checked by the bounds, mean and variance of 20000
// draws), the gradient uses the very slopes of the forward pass, and
// Device.Seed makes the draws repeatable.
func TestRreluTraining(t *testing.T) {
	const n, lower, upper = 20000, 0.1, 0.4
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = -0.5 - float64(i%7)
			if i%5 == 0 {
				vals[i] = 1 + float64(i%3)
			}
		}
		x := tensor.FromFloat64s(ad, vals, n).RequireGrad()
		dev.Seed(42)
		y := x.Rrelu(lower, upper, true)
		grads := y.Backward()
		ys, gs := y.Float64s(), grads.Get(x).Float64s()
		var sum, sumSq float64
		neg := 0
		for i, v := range vals {
			if v > 0 {
				if ys[i] != v || gs[i] != 1 {
					t.Fatalf("element %d: x %v gives y %v, gradient %v; want x and 1", i, v, ys[i], gs[i])
				}
				continue
			}
			a := ys[i] / v
			if a < lower || a >= upper+1e-15 {
				t.Fatalf("element %d: slope %v outside [%v, %v)", i, a, lower, upper)
			}
			if math.Abs(gs[i]-a) > 1e-12 {
				t.Fatalf("element %d: gradient %v, but the forward slope was %v", i, gs[i], a)
			}
			sum += a
			sumSq += a * a
			neg++
		}
		mean := sum / float64(neg)
		variance := sumSq/float64(neg) - mean*mean
		if math.Abs(mean-(lower+upper)/2) > 0.005 {
			t.Errorf("mean slope %v, want %v", mean, (lower+upper)/2)
		}
		if want := (upper - lower) * (upper - lower) / 12; math.Abs(variance-want) > 0.1*want {
			t.Errorf("slope variance %v, want %v", variance, want)
		}
		dev.Seed(42)
		again := x.Rrelu(lower, upper, true).Float64s()
		for i := range again {
			if again[i] != ys[i] {
				t.Fatalf("element %d differs after reseeding: %v vs %v", i, again[i], ys[i])
			}
		}
		f32 := x.To(tensor.Float32).Rrelu(lower, upper, true)
		if f32.DType() != tensor.Float32 {
			t.Errorf("float32 input gives %s", f32.DType())
		}
	})
}

// TestActivationExtraDTypes checks that integer inputs of the element-wise
// ops are computed in Float32 and that float dtypes are kept.
func TestActivationExtraDTypes(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ints := tensor.FromInt64s(dev, []int64{-3, -1, 0, 2, 5})
		for name, f := range map[string]func(x *tensor.Tensor) *tensor.Tensor{
			"HardTanh":   func(x *tensor.Tensor) *tensor.Tensor { return x.HardTanh(-2, 2) },
			"Threshold":  func(x *tensor.Tensor) *tensor.Tensor { return x.Threshold(1, 7) },
			"SoftShrink": func(x *tensor.Tensor) *tensor.Tensor { return x.SoftShrink(1) },
			"HardShrink": func(x *tensor.Tensor) *tensor.Tensor { return x.HardShrink(1) },
			"Rrelu":      func(x *tensor.Tensor) *tensor.Tensor { return x.Rrelu(0.5, 0.5, true) },
		} {
			y := f(ints)
			if y.DType() != tensor.Float32 {
				t.Errorf("%s of Int64 gives %s, want Float32", name, y.DType())
			}
			want := map[string][]float64{
				"HardTanh": {-2, -1, 0, 2, 2}, "Threshold": {7, 7, 7, 2, 5}, "SoftShrink": {-2, 0, 0, 1, 4},
				"HardShrink": {-3, 0, 0, 2, 5}, "Rrelu": {-1.5, -0.5, 0, 2, 5},
			}[name]
			assertValues(t, name, y, []int{5}, want, 0, 1e-6)
			for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
				if got := f(ints.To(dt)).DType(); got != dt {
					t.Errorf("%s of %s gives %s", name, dt, got)
				}
			}
		}
	})
}

// TestSoftShrinkNaN documents the one departure from PyTorch 1.13: NaN
// stays NaN (PyTorch's kernel gives 0).
func TestSoftShrinkNaN(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		y := tensor.FromFloat64s(dev, []float64{math.NaN(), 2}).SoftShrink(0.5).Float64s()
		if !math.IsNaN(y[0]) || y[1] != 1.5 {
			t.Errorf("SoftShrink(NaN, 2) = %v", y)
		}
	})
}

// TestActivationExtraBadInput checks that bad arguments panic with a
// *tensor.Error naming the op and the kind of mistake.
func TestActivationExtraBadInput(t *testing.T) {
	dev := tensor.CPU()
	x := tensor.Zeros(dev, 2, 3, 4)
	ints := tensor.FromInt64s(dev, []int64{1, 2}, 1, 2)
	cases := []struct {
		name, op, msg string
		kind          error
		f             func()
	}{
		{"HardTanh min > max", "tensor.HardTanh", "greater than max", tensor.ErrArgument, func() { x.HardTanh(2, 1) }},
		{"HardTanh NaN", "tensor.HardTanh", "NaN", tensor.ErrArgument, func() { x.HardTanh(math.NaN(), 1) }},
		{"Threshold NaN", "tensor.Threshold", "NaN", tensor.ErrArgument, func() { x.Threshold(math.NaN(), 1) }},
		{"SoftShrink negative", "tensor.SoftShrink", "at least 0", tensor.ErrArgument, func() { x.SoftShrink(-1) }},
		{"HardShrink NaN", "tensor.HardShrink", "NaN", tensor.ErrArgument, func() { x.HardShrink(math.NaN()) }},
		{"Softmin integer", "tensor.Softmin", "int64", tensor.ErrDType, func() { ints.Softmin(1) }},
		{"Softmin dim", "tensor.Softmin", "out of range", tensor.ErrArgument, func() { x.Softmin(3) }},
		{"Glu odd", "tensor.Glu", "even size", tensor.ErrShape, func() { x.Glu(1) }},
		{"Glu 0-d", "tensor.Glu", "0-d", tensor.ErrShape, func() { tensor.Scalar(dev, 1).Glu(0) }},
		{"Glu dim", "tensor.Glu", "out of range", tensor.ErrArgument, func() { x.Glu(-4) }},
		{"Glu integer", "tensor.Glu", "int64", tensor.ErrDType, func() { ints.Glu(1) }},
		{"Prelu channels", "tensor.Prelu", "3 channels", tensor.ErrShape, func() { x.Prelu(tensor.Zeros(dev, 4)) }},
		{"Prelu vector channels", "tensor.Prelu", "one slope", tensor.ErrShape, func() { tensor.Zeros(dev, 3).Prelu(tensor.Zeros(dev, 3)) }},
		{"Prelu dtype", "tensor.Prelu", "float64", tensor.ErrDType, func() { x.Prelu(tensor.Zeros(dev, 3).To(tensor.Float64)) }},
		{"Prelu integer", "tensor.Prelu", "float dtype", tensor.ErrDType, func() { ints.Prelu(tensor.Zeros(dev, 1)) }},
		{"Prelu nil weight", "tensor.Prelu", "nil", tensor.ErrArgument, func() { x.Prelu(nil) }},
		{"Rrelu bounds", "tensor.Rrelu", "lower ≤ upper", tensor.ErrArgument, func() { x.Rrelu(0.5, 0.1, true) }},
		{"Rrelu infinite", "tensor.Rrelu", "finite", tensor.ErrArgument, func() { x.Rrelu(0, math.Inf(1), false) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tensor.Try(c.f)
			var te *tensor.Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v, want a *tensor.Error", err)
			}
			if te.Op != c.op || !errors.Is(err, c.kind) || !strings.Contains(te.Msg, c.msg) {
				t.Errorf("error %v (op %q), want op %q, %v, message with %q", err, te.Op, c.op, c.kind, c.msg)
			}
		})
	}
}

// TestActivationExtraGraph checks the graph node each op records, which
// the ONNX exporter translates by name.
func TestActivationExtraGraph(t *testing.T) {
	ad := tensor.CPU().Autodiff()
	x := tensor.Zeros(ad, 2, 4).RequireGrad()
	for want, y := range map[string]*tensor.Tensor{
		"hardtanh":   x.HardTanh(-1, 1),
		"threshold":  x.Threshold(0, 1),
		"softshrink": x.SoftShrink(0.5),
		"hardshrink": x.HardShrink(0.5),
		"prelu":      x.Prelu(tensor.Zeros(ad, 4).RequireGrad()),
		"rrelu":      x.Rrelu(0.1, 0.2, true),
		"leaky_relu": x.Rrelu(0.1, 0.2, false),
		"softmax":    x.Softmin(1),
		"mul":        x.Glu(1),
		"sub":        x.TanhShrink(),
	} {
		if got := y.Node().Op; got != want {
			t.Errorf("node %q, want %q", got, want)
		}
	}
}

// BenchmarkPreluForwardBackward measures PReLU with per-channel slopes on
// a [32, 64, 32, 32] Float32 batch (2M elements), forward and backward,
// reporting elements per second.
func BenchmarkPreluForwardBackward(b *testing.B) {
	ad := tensor.CPU().Autodiff()
	x := tensor.Randn(ad, 32, 64, 32, 32).RequireGrad()
	w := tensor.Full(ad, 0.25, 64).RequireGrad()
	b.ResetTimer()
	for range b.N {
		tensor.Scope(func() {
			g := x.Prelu(w).Sum().Backward()
			g.Release()
		})
	}
	b.ReportMetric(float64(b.N*x.NumElements())/b.Elapsed().Seconds(), "elements/s")
}

// BenchmarkHardTanhForwardBackward is BenchmarkPreluForwardBackward for
// HardTanh, beside Clamp (the same forward, a different gradient mask).
func BenchmarkHardTanhForwardBackward(b *testing.B) {
	ad := tensor.CPU().Autodiff()
	x := tensor.Randn(ad, 32, 64, 32, 32).RequireGrad()
	for _, c := range []struct {
		name string
		f    func(x *tensor.Tensor) *tensor.Tensor
	}{
		{"HardTanh", func(x *tensor.Tensor) *tensor.Tensor { return x.HardTanh(-1, 1) }},
		{"Clamp", func(x *tensor.Tensor) *tensor.Tensor { return x.Clamp(-1, 1) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				tensor.Scope(func() {
					g := c.f(x).Sum().Backward()
					g.Release()
				})
			}
			b.ReportMetric(float64(b.N*x.NumElements())/b.Elapsed().Seconds(), "elements/s")
		})
	}
}
