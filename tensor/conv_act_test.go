package tensor_test

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestConv2dActivationIsConvThenActivation requires Conv2dActivation's
// output and the gradients of x, weight and bias to equal, bit for bit,
// Conv2d followed by the activation's own method, for every activation,
// in float32 and float64: the MNIST CNN's second layer (the CPU's direct
// path), a padded layer, a strided one, an unbatched input, and no bias.
func TestConv2dActivationIsConvThenActivation(t *testing.T) {
	cases := []struct {
		x, w []int
		cfg  tensor.ConvConfig
		bias bool
	}{
		{[]int{6, 16, 13, 13}, []int{32, 16, 3, 3}, tensor.ConvConfig{}, true},
		{[]int{3, 5, 8, 7}, []int{7, 5, 3, 3}, tensor.ConvConfig{Padding: []int{1}}, true},
		{[]int{2, 3, 9, 9}, []int{4, 3, 3, 3}, tensor.ConvConfig{Stride: []int{2}, Padding: []int{1}}, true},
		{[]int{4, 6, 6}, []int{3, 4, 2, 2}, tensor.ConvConfig{}, true},
		{[]int{2, 3, 6, 6}, []int{4, 3, 3, 3}, tensor.ConvConfig{}, false},
	}
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			for ci, c := range cases {
				x := randFloat64(ad, uint64(ci), -2, 2, c.x...).To(dt).RequireGrad()
				w := randFloat64(ad, 100+uint64(ci), -0.3, 0.3, c.w...).To(dt).RequireGrad()
				var b *tensor.Tensor
				if c.bias {
					b = randFloat64(ad, 200+uint64(ci), -1, 1, c.w[0]).To(dt).RequireGrad()
				}
				for _, a := range linearActivationNames {
					what := fmt.Sprintf("%s %v * %v %+v %s", dt, c.x, c.w, c.cfg, a.name)
					got := tensor.Conv2dActivation(x, w, b, c.cfg, a.name)
					want := a.apply(tensor.Conv2d(x, w, b, c.cfg))
					if d := sameBits(got, want); d != "" {
						t.Fatalf("%s: output differs: %s", what, d)
					}
					g := randFloat64(ad, 300+uint64(ci), -1, 1, got.Shape()...).To(dt)
					gg, wg := got.BackwardWith(g), want.BackwardWith(g)
					for i, in := range []*tensor.Tensor{x, w, b} {
						if in == nil {
							continue
						}
						if d := sameBits(gg.Get(in), wg.Get(in)); d != "" {
							t.Fatalf("%s: gradient of input %d differs: %s", what, i, d)
						}
					}
				}
			}
		}
	})
}

// TestConv2dActivationGraph checks that Conv2dActivation records the two
// nodes Conv2d and the activation record.
func TestConv2dActivationGraph(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := tensor.Ones(ad, 2, 3, 5, 5)
		w := tensor.Ones(ad, 4, 3, 3, 3).RequireGrad()
		b := tensor.Zeros(ad, 4).RequireGrad()
		n := tensor.Conv2dActivation(x, w, b, tensor.ConvConfig{}, "relu").Node()
		if n == nil || n.Op != "relu" || len(n.Inputs) != 1 {
			t.Fatalf("node %+v, want one relu node", n)
		}
		if c := n.Inputs[0]; c.Op != "conv2d" || len(c.Inputs) != 3 || c.Inputs[1] != w.Node() || c.Inputs[2] != b.Node() {
			t.Errorf("relu's input %+v, want a conv2d node on x, w, b", c)
		}
	})
}

// TestConv2dActivationErrors checks Conv2dActivation's panics: an
// activation it does not know, and Conv2d's shape errors named by it.
func TestConv2dActivationErrors(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x, w, b := tensor.Ones(dev, 1, 3, 5, 5), tensor.Ones(dev, 4, 3, 3, 3), tensor.Zeros(dev, 4)
		actExpectError(t, "unknown activation", func() { tensor.Conv2dActivation(x, w, b, tensor.ConvConfig{}, "elu") },
			tensor.ErrArgument, "tensor.Conv2dActivation", `"elu"`)
		actExpectError(t, "bias of the wrong length", func() {
			tensor.Conv2dActivation(x, w, tensor.Zeros(dev, 3), tensor.ConvConfig{}, "relu")
		}, tensor.ErrShape, "tensor.Conv2dActivation", "bias [3]")
	})
}
