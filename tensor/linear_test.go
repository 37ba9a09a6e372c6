package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestLinearFixtures compares Linear, Dot and Outer and their gradients
// with PyTorch.
func TestLinearFixtures(t *testing.T) {
	all := loadFixtures(t, "act.json")
	type fc struct {
		in, grads []string
		f         actFunc
	}
	linear := func(in []*tensor.Tensor) *tensor.Tensor {
		if len(in) == 3 {
			return tensor.Linear(in[0], in[1], in[2])
		}
		return tensor.Linear(in[0], in[1], nil)
	}
	ops := map[string]fc{
		"linear/2d_bias":   {[]string{"x", "w", "b"}, []string{"dx", "dw", "db"}, linear},
		"linear/2d_nobias": {[]string{"x", "w"}, []string{"dx", "dw"}, linear},
		"linear/3d_bias":   {[]string{"x", "w", "b"}, []string{"dx", "dw", "db"}, linear},
		"linear/1d_bias":   {[]string{"x", "w", "b"}, []string{"dx", "dw", "db"}, linear},
		"dot/float": {[]string{"a", "b"}, []string{"da", "db"},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1]) }},
		"outer/float": {[]string{"a", "b"}, []string{"da", "db"},
			func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Outer(in[1]) }},
	}
	n := len(actCases(all, "linear/")) + len(actCases(all, "dot/")) + len(actCases(all, "outer/"))
	if n != len(ops) {
		t.Errorf("%d fixtures for %d cases", n, len(ops))
	}
	for name, op := range ops {
		c, ok := all[name]
		if !ok {
			t.Errorf("no fixture %s", name)
			continue
		}
		t.Run(name+"/float64", func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				actRun(t, dev, c, op.in, op.grads, op.f, tensor.Float64, 1e-12, 1e-12)
			})
		})
		t.Run(name+"/float32", func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				actRun(t, dev, c, op.in, op.grads, op.f, tensor.Float32, 1e-5, 1e-5)
			})
		})
	}
}

// TestLinearGradients checks the backward of Linear, Dot and Outer by
// finite differences, including transposed, permuted and broadcast operands.
func TestLinearGradients(t *testing.T) {
	cases := []struct {
		name   string
		inputs func(d tensor.Device) []*tensor.Tensor
		f      func(in []*tensor.Tensor) *tensor.Tensor
	}{
		{"linear 2d", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 4), randFloat64(d, 2, -1, 1, 5, 4), randFloat64(d, 3, -1, 1, 5)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Linear(in[0], in[1], in[2]) }},
		{"linear no bias", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 4), randFloat64(d, 2, -1, 1, 2, 4)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Linear(in[0], in[1], nil) }},
		{"linear 3d input", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 2, 3, 4), randFloat64(d, 2, -1, 1, 5, 4), randFloat64(d, 3, -1, 1, 5)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Linear(in[0], in[1], in[2]) }},
		{"linear 1d input", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 4), randFloat64(d, 2, -1, 1, 3, 4), randFloat64(d, 3, -1, 1, 3)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Linear(in[0], in[1], in[2]) }},
		{"linear transposed weight view", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3, 4), randFloat64(d, 2, -1, 1, 4, 5), randFloat64(d, 3, -1, 1, 5)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Linear(in[0], in[1].T(), in[2]) }},
		{"linear permuted input", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 4, 2, 3), randFloat64(d, 2, -1, 1, 5, 4)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Linear(in[0].Permute(1, 2, 0), in[1], nil) }},
		{"linear broadcast input", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 4), randFloat64(d, 2, -1, 1, 3, 4), randFloat64(d, 3, -1, 1, 3)}
		}, func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.Linear(in[0].Unsqueeze(0).Expand(2, -1), in[1], in[2])
		}},
		{"dot", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 5), randFloat64(d, 2, -1, 1, 5)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dot(in[1]) }},
		{"dot of broadcast vector", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 1), randFloat64(d, 2, -1, 1, 5)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Expand(5).Dot(in[1]) }},
		{"outer", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3), randFloat64(d, 2, -1, 1, 4)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Outer(in[1]) }},
		{"outer of itself", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Outer(in[0]) }},
		{"outer of broadcast vector", func(d tensor.Device) []*tensor.Tensor {
			return []*tensor.Tensor{randFloat64(d, 1, -1, 1, 3), randFloat64(d, 2, -1, 1, 1)}
		}, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Outer(in[1].Expand(4)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				gradCheck(t, dev, c.f, c.inputs(dev)...)
			})
		})
	}
}

// TestLinearGraph checks that Linear records one node with its inputs and
// that Dot and Outer keep integer dtypes as PyTorch does.
func TestLinearGraph(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := tensor.Ones(ad, 2, 3)
		w := tensor.Ones(ad, 4, 3).RequireGrad()
		b := tensor.Zeros(ad, 4).RequireGrad()
		y := tensor.Linear(x, w, b)
		n := y.Node()
		if n == nil || n.Op != "linear" || len(n.Inputs) != 3 || n.Inputs[1] != w.Node() || n.Inputs[2] != b.Node() {
			t.Errorf("node %+v, want one linear node on x, w, b", n)
		}
		assertValues(t, "y", y, []int{2, 4}, []float64{3, 3, 3, 3, 3, 3, 3, 3}, 0, 0)
		g := y.Backward()
		assertValues(t, "dw", g.Get(w), []int{4, 3}, []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, 0, 0)
		assertValues(t, "db", g.Get(b), []int{4}, []float64{2, 2, 2, 2}, 0, 0)

		a := tensor.FromInt64s(dev, []int64{1, 2, 3})
		d := a.Dot(tensor.FromInt64s(dev, []int64{4, 5, 6}))
		if d.DType() != tensor.Int64 || d.Item() != 32 || len(d.Shape()) != 0 {
			t.Errorf("int dot: %s %v %v", d.DType(), d.Shape(), d.Item())
		}
		o := a.Outer(tensor.FromFloat32s(dev, []float32{0.5, 2}))
		assertValues(t, "mixed outer", o, []int{3, 2}, []float64{0.5, 2, 1, 4, 1.5, 6}, 0, 0)
		if o.DType() != tensor.Float32 {
			t.Errorf("outer of int64 and float32: %s", o.DType())
		}
	})
}

// TestLinearBadInput checks the shape and dtype errors, which name the shapes.
func TestLinearBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x, w, b := tensor.Ones(dev, 8, 5), tensor.Ones(dev, 3, 4), tensor.Ones(dev, 3)
		v3, v4 := tensor.Ones(dev, 3), tensor.Ones(dev, 4)
		cases := []struct {
			name string
			call func()
			kind error
			op   string
			want []string
		}{
			{"features", func() { tensor.Linear(x, w, b) }, tensor.ErrShape, "tensor.Linear", []string{"[8 5]", "4 input features", "[3 4]"}},
			{"1-d weight", func() { tensor.Linear(x, v4, nil) }, tensor.ErrShape, "tensor.Linear", []string{"weight [4]"}},
			{"bias", func() { tensor.Linear(tensor.Ones(dev, 2, 4), w, v4) }, tensor.ErrShape, "tensor.Linear", []string{"bias [4]", "3 output features"}},
			{"0-d input", func() { tensor.Linear(tensor.Scalar(dev, 1), w, nil) }, tensor.ErrShape, "tensor.Linear", []string{"[]"}},
			{"int input", func() { tensor.Linear(tensor.FromInt64s(dev, []int64{1, 2, 3, 4}), w, nil) }, tensor.ErrDType, "tensor.Linear", []string{"int64"}},
			{"dot lengths", func() { v3.Dot(v4) }, tensor.ErrShape, "tensor.Dot", []string{"[3]", "[4]"}},
			{"dot of matrix", func() { w.Dot(w) }, tensor.ErrShape, "tensor.Dot", []string{"[3 4]"}},
			{"dot dtypes", func() { v3.Dot(v3.To(tensor.Float64)) }, tensor.ErrDType, "tensor.Dot", []string{"float32", "float64"}},
			{"outer of matrix", func() { v3.Outer(w) }, tensor.ErrShape, "tensor.Outer", []string{"[3 4]"}},
		}
		for _, c := range cases {
			actExpectError(t, c.name, c.call, c.kind, c.op, c.want...)
		}
	})
}
