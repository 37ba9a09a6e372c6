package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestLayerNormFixtures compares LayerNorm and its gradients (input, weight,
// bias) with PyTorch over one and two normalised dimensions, with and
// without the affine parameters.
func TestLayerNormFixtures(t *testing.T) {
	all := loadFixtures(t, "act.json")
	names := actCases(all, "layer_norm/")
	if len(names) != 5 {
		t.Errorf("%d layer norm fixtures, want 5", len(names))
	}
	for _, name := range names {
		c := all[name]
		eps := c["eps"].Float64s()[0]
		var ns []int
		for _, v := range c["normalized_shape"].Float64s() {
			ns = append(ns, int(v))
		}
		in, grads := []string{"x"}, []string{"dx"}
		if _, ok := c["w"]; ok {
			in, grads = []string{"x", "w", "b"}, []string{"dx", "dw", "db"}
		}
		f := func(in []*tensor.Tensor) *tensor.Tensor {
			var w, b *tensor.Tensor
			if len(in) == 3 {
				w, b = in[1], in[2]
			}
			return in[0].LayerNorm(ns, w, b, eps)
		}
		t.Run(name+"/float64", func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				actRun(t, dev, c, in, grads, f, tensor.Float64, 1e-10, 1e-12)
			})
		})
		t.Run(name+"/float32", func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				actRun(t, dev, c, in, grads, f, tensor.Float32, 1e-4, 1e-5)
			})
		})
	}
}

// TestLayerNormGradients checks the backward by finite differences for each
// combination of parameters and through non-contiguous and broadcast inputs.
func TestLayerNormGradients(t *testing.T) {
	cases := []struct {
		name   string
		inputs func(dev tensor.Device) []*tensor.Tensor
		f      func(in []*tensor.Tensor) *tensor.Tensor
	}{
		{"affine 1 dim", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 3, 4), randFloat64(d, 2, 0.5, 1.5, 4), randFloat64(d, 3, -1, 1, 4)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LayerNorm([]int{4}, in[1], in[2], 1e-5) }},
		{"affine 2 dims", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 2, 3, 4), randFloat64(d, 2, 0.5, 1.5, 3, 4), randFloat64(d, 3, -1, 1, 3, 4)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LayerNorm([]int{3, 4}, in[1], in[2], 1e-5) }},
		{"plain", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 3, 5)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LayerNorm([]int{5}, nil, nil, 1e-3) }},
		{"weight only", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 3, 4), randFloat64(d, 2, 0.5, 1.5, 4)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LayerNorm([]int{4}, in[1], nil, 1e-5) }},
		{"bias only", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 3, 4), randFloat64(d, 3, -1, 1, 4)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LayerNorm([]int{4}, nil, in[1], 1e-5) }},
		{"whole tensor", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 6), randFloat64(d, 2, 0.5, 1.5, 6), randFloat64(d, 3, -1, 1, 6)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LayerNorm([]int{6}, in[1], in[2], 1e-5) }},
		{"transposed input", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 4, 3), randFloat64(d, 2, 0.5, 1.5, 4), randFloat64(d, 3, -1, 1, 4)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().LayerNorm([]int{4}, in[1], in[2], 1e-5) }},
		{"permuted input 2 dims", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 4, 2, 3), randFloat64(d, 2, 0.5, 1.5, 3, 4)}
		}, func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Permute(1, 2, 0).LayerNorm([]int{3, 4}, in[1], nil, 1e-5)
		}},
		{"broadcast input, transposed weight", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -2, 2, 2, 3), randFloat64(d, 2, 0.5, 1.5, 3, 2)}
		}, func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Unsqueeze(0).Expand(3, -1, -1).LayerNorm([]int{2, 3}, in[1].T(), nil, 1e-5)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				gradCheck(t, dev, c.f, c.inputs(dev)...)
			})
		})
	}
}

// TestLayerNormGraph checks the single node and that a parameter alone can
// require gradients.
func TestLayerNormGraph(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := tensor.FromFloat32s(ad, []float32{1, 2, 3, 4, 6, 8}, 2, 3)
		w := tensor.Ones(ad, 3).RequireGrad()
		b := tensor.Zeros(ad, 3).RequireGrad()
		y := x.LayerNorm([]int{3}, w, b, 0)
		n := y.Node()
		if n == nil || n.Op != "layer_norm" || len(n.Inputs) != 3 || n.Inputs[1] != w.Node() || n.Inputs[2] != b.Node() {
			t.Fatalf("node %+v, want one layer_norm node on x, w, b", n)
		}
		grads := y.Backward()
		if grads.Get(x) != nil {
			t.Errorf("x received a gradient without requiring one")
		}
		// x̂ of both rows is (−√1.5, 0, √1.5): dw = Σ x̂, db = 2 per element.
		assertValues(t, "dw", grads.Get(w), []int{3}, []float64{-2.4494897, 0, 2.4494897}, 1e-5, 1e-5)
		assertValues(t, "db", grads.Get(b), []int{3}, []float64{2, 2, 2}, 0, 0)
		plain := tensor.FromFloat32s(dev, []float32{1, 2, 3}).LayerNorm([]int{3}, nil, nil, 1e-5)
		if plain.Node() != nil || plain.RequiresGrad() {
			t.Errorf("layer norm without gradients recorded a node")
		}
		h := x.To(tensor.BFloat16).LayerNorm([]int{3}, nil, nil, 1e-5)
		if h.DType() != tensor.BFloat16 {
			t.Errorf("bfloat16 layer norm: %s", h.DType())
		}
		assertValues(t, "bfloat16", h, []int{2, 3}, []float64{-1.2247, 0, 1.2247, -1.2247, 0, 1.2247}, 1e-2, 1e-2)
	})
}

// TestLayerNormBadInput checks the errors for shapes, dtypes and arguments.
func TestLayerNormBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Ones(dev, 2, 3, 4)
		w4, w3 := tensor.Ones(dev, 4), tensor.Ones(dev, 3)
		const op = "tensor.LayerNorm"
		cases := []struct {
			name string
			call func()
			kind error
			want []string
		}{
			{"normalized shape not trailing", func() { x.LayerNorm([]int{3}, nil, nil, 1e-5) }, tensor.ErrShape, []string{"[2 3 4]", "[3]"}},
			{"normalized shape too long", func() { w4.LayerNorm([]int{2, 4}, nil, nil, 1e-5) }, tensor.ErrShape, []string{"[4]", "[2 4]"}},
			{"weight shape", func() { x.LayerNorm([]int{4}, w3, nil, 1e-5) }, tensor.ErrShape, []string{"weight [3]", "[4]"}},
			{"bias shape", func() { x.LayerNorm([]int{3, 4}, nil, w4, 1e-5) }, tensor.ErrShape, []string{"bias [4]", "[3 4]"}},
			{"int input", func() { tensor.FromInt64s(dev, []int64{1, 2}).LayerNorm([]int{2}, nil, nil, 1e-5) }, tensor.ErrDType, []string{"int64"}},
			{"int weight", func() { x.LayerNorm([]int{4}, tensor.FromInt64s(dev, []int64{1, 2, 3, 4}), nil, 1e-5) }, tensor.ErrDType, []string{"weight", "int64"}},
			{"empty normalized shape", func() { x.LayerNorm(nil, nil, nil, 1e-5) }, tensor.ErrArgument, []string{"empty"}},
			{"negative eps", func() { x.LayerNorm([]int{4}, nil, nil, -1) }, tensor.ErrArgument, []string{"eps"}},
		}
		for _, c := range cases {
			actExpectError(t, c.name, c.call, c.kind, op, c.want...)
		}
	})
}
