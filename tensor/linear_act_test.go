package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// linearActivationNames are LinearActivation's activations with the
// method that applies each alone.
var linearActivationNames = []struct {
	name  string
	apply func(*tensor.Tensor) *tensor.Tensor
}{
	{"relu", (*tensor.Tensor).Relu}, {"gelu", (*tensor.Tensor).Gelu}, {"gelu_tanh", (*tensor.Tensor).GeluTanh},
	{"silu", (*tensor.Tensor).Silu}, {"sigmoid", (*tensor.Tensor).Sigmoid}, {"tanh", (*tensor.Tensor).Tanh},
}

// sameBits reports where a and b (same dtype and shape) first differ in
// their bits, or "" when they do not.
func sameBits(a, b *tensor.Tensor) string {
	if fmt.Sprint(a.Shape()) != fmt.Sprint(b.Shape()) || a.DType() != b.DType() {
		return fmt.Sprintf("%s %v against %s %v", a.DType(), a.Shape(), b.DType(), b.Shape())
	}
	av, bv := a.Float64s(), b.Float64s()
	for i := range av {
		if math.Float64bits(av[i]) != math.Float64bits(bv[i]) {
			return fmt.Sprintf("element %d: %v against %v", i, av[i], bv[i])
		}
	}
	return ""
}

// TestLinearActivationIsLinearThenActivation requires LinearActivation's
// output and the gradients of x, weight and bias to equal, bit for bit,
// Linear followed by the activation's own method, for every activation,
// in float32 and float64, for odd shapes (rows 1, 7, 130; outputs 1, 17,
// 1000; inputs 3, 300), a 3-D input and a weight read through a transposed
// view.
func TestLinearActivationIsLinearThenActivation(t *testing.T) {
	type shape struct {
		x          []int
		out        int
		transposed bool
	}
	var shapes []shape
	for _, m := range []int{1, 7, 130} {
		for _, n := range []int{1, 17, 1000} {
			for _, k := range []int{3, 300} {
				shapes = append(shapes, shape{[]int{m, k}, n, false})
			}
		}
	}
	shapes = append(shapes, shape{[]int{2, 5, 30}, 40, false}, shape{[]int{9, 30}, 20, true})
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			for si, s := range shapes {
				k := s.x[len(s.x)-1]
				scale := 1 / math.Sqrt(float64(k))
				x := randFloat64(ad, uint64(si), -2, 2, s.x...).To(dt).RequireGrad()
				w := randFloat64(ad, 100+uint64(si), -scale, scale, s.out, k).To(dt)
				if s.transposed {
					w = randFloat64(ad, 100+uint64(si), -scale, scale, k, s.out).To(dt).T()
				}
				w = w.RequireGrad()
				b := randFloat64(ad, 200+uint64(si), -1, 1, s.out).To(dt).RequireGrad()
				outShape := append(append([]int(nil), s.x[:len(s.x)-1]...), s.out)
				g := randFloat64(ad, 300+uint64(si), -1, 1, outShape...).To(dt)
				for _, a := range linearActivationNames {
					what := fmt.Sprintf("%s %v·%d %s", dt, s.x, s.out, a.name)
					got := tensor.LinearActivation(x, w, b, a.name)
					want := a.apply(tensor.Linear(x, w, b))
					if d := sameBits(got, want); d != "" {
						t.Fatalf("%s: output differs: %s", what, d)
					}
					gg, wg := got.BackwardWith(g), want.BackwardWith(g)
					for i, in := range []*tensor.Tensor{x, w, b} {
						if d := sameBits(gg.Get(in), wg.Get(in)); d != "" {
							t.Fatalf("%s: gradient of input %d differs: %s", what, i, d)
						}
					}
				}
			}
		}
	})
}

// TestLinearActivationGradients checks LinearActivation's backward by
// finite differences, with and without a bias.
func TestLinearActivationGradients(t *testing.T) {
	var cases []gradCase
	for _, a := range linearActivationNames {
		cases = append(cases, gradCase{"bias " + a.name, func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.LinearActivation(in[0], in[1], in[2], a.name)
		}, func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 4), randFloat64(d, 2, -1, 1, 5, 4), randFloat64(d, 3, -1, 1, 5)}
		}})
	}
	cases = append(cases, gradCase{"no bias", func(in []*tensor.Tensor) *tensor.Tensor {
		return tensor.LinearActivation(in[0], in[1], nil, "gelu")
	}, func(d tensor.Device) []*tensor.Tensor {
		return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 3, 4), randFloat64(d, 2, -1, 1, 5, 4)}
	}})
	runGradCases(t, cases)
}

// TestLinearActivationGraph checks that LinearActivation records the two
// nodes Linear and the activation record, so that tracing and exporters
// see what they see without fusion.
func TestLinearActivationGraph(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := tensor.Ones(ad, 2, 3)
		w := tensor.Ones(ad, 4, 3).RequireGrad()
		b := tensor.Zeros(ad, 4).RequireGrad()
		y := tensor.LinearActivation(x, w, b, "gelu")
		n := y.Node()
		if n == nil || n.Op != "gelu" || len(n.Inputs) != 1 {
			t.Fatalf("node %+v, want one gelu node", n)
		}
		if l := n.Inputs[0]; l.Op != "linear" || len(l.Inputs) != 3 || l.Inputs[1] != w.Node() || l.Inputs[2] != b.Node() {
			t.Errorf("gelu's input %+v, want a linear node on x, w, b", l)
		}
	})
}

// TestLinearActivationErrors checks LinearActivation's panics: an
// activation it does not know, and Linear's shape errors.
func TestLinearActivationErrors(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x, w, b := tensor.Ones(dev, 2, 3), tensor.Ones(dev, 4, 3), tensor.Zeros(dev, 4)
		actExpectError(t, "unknown activation", func() { tensor.LinearActivation(x, w, b, "elu") }, tensor.ErrArgument,
			"tensor.LinearActivation", `"elu"`)
		actExpectError(t, "bias of the wrong length", func() { tensor.LinearActivation(x, w, tensor.Zeros(dev, 3), "relu") },
			tensor.ErrShape, "tensor.LinearActivation", "bias [3]")
	})
}
