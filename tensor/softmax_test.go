package tensor_test

import (
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// actSoftmaxDims maps gen_act.py's softmax case names to their dim.
var actSoftmaxDims = map[string]int{
	"2d_dim1": 1, "2d_dim0": 0, "3d_dim-1": -1, "3d_dim1": 1, "1d": 0, "large": 1, "scalar": 0,
}

// TestSoftmaxFixtures compares Softmax and LogSoftmax and their gradients
// with PyTorch, including rows of ±1000 and ±1e4 (stability) and a 0-d input.
func TestSoftmaxFixtures(t *testing.T) {
	all := loadFixtures(t, "act.json")
	for _, prefix := range []string{"softmax/", "log_softmax/"} {
		names := actCases(all, prefix)
		if len(names) != len(actSoftmaxDims) {
			t.Errorf("%s: %d fixtures, want %d", prefix, len(names), len(actSoftmaxDims))
		}
		for _, name := range names {
			dim, ok := actSoftmaxDims[strings.TrimPrefix(name, prefix)]
			if !ok {
				t.Errorf("%s: unknown case", name)
				continue
			}
			f := func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Softmax(dim) }
			if prefix == "log_softmax/" {
				f = func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LogSoftmax(dim) }
			}
			c := all[name]
			t.Run(name+"/float64", func(t *testing.T) {
				forEachDevice(t, func(t *testing.T, dev tensor.Device) {
					actRun(t, dev, c, []string{"x"}, []string{"dx"}, f, tensor.Float64, 1e-12, 1e-13)
				})
			})
			t.Run(name+"/float32", func(t *testing.T) {
				forEachDevice(t, func(t *testing.T, dev tensor.Device) {
					actRun(t, dev, c, []string{"x"}, []string{"dx"}, f, tensor.Float32, 1e-5, 1e-5)
				})
			})
		}
	}
}

// TestSoftmaxGradients checks both ops' backward by finite differences,
// over each dim and through transposed, permuted and broadcast views.
func TestSoftmaxGradients(t *testing.T) {
	type tc struct {
		name  string
		shape []int
		f     func(x *tensor.Tensor, log bool) *tensor.Tensor
	}
	sm := func(x *tensor.Tensor, log bool, dim int) *tensor.Tensor {
		if log {
			return x.LogSoftmax(dim)
		}
		return x.Softmax(dim)
	}
	cases := []tc{
		{"last dim", []int{3, 4}, func(x *tensor.Tensor, log bool) *tensor.Tensor { return sm(x, log, -1) }},
		{"first dim", []int{3, 4}, func(x *tensor.Tensor, log bool) *tensor.Tensor { return sm(x, log, 0) }},
		{"middle dim 3d", []int{2, 3, 4}, func(x *tensor.Tensor, log bool) *tensor.Tensor { return sm(x, log, 1) }},
		{"transposed view", []int{4, 3}, func(x *tensor.Tensor, log bool) *tensor.Tensor { return sm(x.T(), log, 1) }},
		{"permuted view", []int{2, 3, 4}, func(x *tensor.Tensor, log bool) *tensor.Tensor {
			return sm(x.Permute(2, 0, 1), log, 0)
		}},
		{"broadcast view", []int{4}, func(x *tensor.Tensor, log bool) *tensor.Tensor {
			return sm(x.Unsqueeze(0).Expand(3, -1), log, 1)
		}},
		{"scalar", []int{}, func(x *tensor.Tensor, log bool) *tensor.Tensor { return sm(x, log, -1) }},
	}
	for _, c := range cases {
		for _, log := range []bool{false, true} {
			name := "softmax/" + c.name
			if log {
				name = "log_softmax/" + c.name
			}
			t.Run(name, func(t *testing.T) {
				forEachDevice(t, func(t *testing.T, dev tensor.Device) {
					x := randFloat64(dev, 3, -3, 3, c.shape...)
					gradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor { return c.f(in[0], log) }, x)
				})
			})
		}
	}
}

// TestSoftmaxStability checks Float32 results for logits far beyond exp's
// range, and that every row of a softmax sums to 1.
func TestSoftmaxStability(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.FromFloat32s(dev, []float32{1e30, 1e30, -1e30, 88, 89, 90}, 2, 3)
		s := x.Softmax(1)
		assertValues(t, "softmax", s, []int{2, 3}, []float64{0.5, 0.5, 0, 0.09003057, 0.24472847, 0.66524096}, 1e-5, 1e-7)
		ls := x.LogSoftmax(1)
		assertValues(t, "log_softmax", ls, []int{2, 3}, []float64{-math.Ln2, -math.Ln2, -2e30, -2.40760596, -1.40760596, -0.40760596}, 1e-5, 1e-6)
		r := tensor.Randn(dev, 5, 7).MulScalar(50).Softmax(-1).Sum(-1)
		assertValues(t, "row sums", r, []int{5}, []float64{1, 1, 1, 1, 1}, 0, 1e-5)
	})
}

// TestSoftmaxEdgeCases covers empty tensors, a 0-d input, NaN propagation
// and 16-bit floats (computed in Float32).
func TestSoftmaxEdgeCases(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		e := tensor.Zeros(dev, 0, 3).Softmax(1)
		if s := e.Shape(); len(s) != 2 || s[0] != 0 || s[1] != 3 {
			t.Errorf("softmax of [0 3]: shape %v", s)
		}
		assertValues(t, "0-d softmax", tensor.Scalar(dev, 7).Softmax(0), []int{}, []float64{1}, 0, 0)
		assertValues(t, "0-d log_softmax", tensor.Scalar(dev, 7).LogSoftmax(-1), []int{}, []float64{0}, 0, 0)
		nan := tensor.FromFloat32s(dev, []float32{1, float32(math.NaN()), 2, 3}, 2, 2).Softmax(1)
		assertValues(t, "NaN row", nan, []int{2, 2}, []float64{math.NaN(), math.NaN(), 0.26894142, 0.73105858}, 1e-6, 1e-7)
		h := tensor.FromFloat32s(dev, []float32{1, 2, 3}).To(tensor.Float16).LogSoftmax(0)
		if h.DType() != tensor.Float16 {
			t.Errorf("float16 log_softmax: %s", h.DType())
		}
		assertValues(t, "float16 log_softmax", h, []int{3}, []float64{-2.40760596, -1.40760596, -0.40760596}, 1e-3, 1e-3)
	})
}

// TestSoftmaxGraph checks that each op records one named node on its input.
func TestSoftmaxGraph(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Ones(dev.Autodiff(), 2, 3).RequireGrad()
		for op, y := range map[string]*tensor.Tensor{"softmax": x.Softmax(-1), "log_softmax": x.LogSoftmax(0)} {
			n := y.Node()
			if n == nil || n.Op != op || len(n.Inputs) != 1 || n.Inputs[0] != x.Node() {
				t.Errorf("%s: node %+v, want one %q node on the leaf", op, n, op)
			}
		}
		// Releasing the output before Backward leaves the backward's own hold.
		y := x.Softmax(1)
		l := y.Mul(tensor.FromFloat32s(dev, []float32{1, 2, 3}))
		y.Release()
		g := l.Backward().Get(x)
		assertValues(t, "gradient after release", g, []int{2, 3}, []float64{-1. / 3, 0, 1. / 3, -1. / 3, 0, 1. / 3}, 1e-6, 1e-7)
	})
}

// TestSoftmaxBadInput checks the errors for integer inputs and bad dims.
func TestSoftmaxBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Ones(dev, 2, 3)
		i := tensor.FromInt64s(dev, []int64{1, 2, 3})
		actExpectError(t, "int input", func() { i.Softmax(0) }, tensor.ErrDType, "tensor.Softmax", "int64", "[3]")
		actExpectError(t, "dim out of range", func() { x.LogSoftmax(2) }, tensor.ErrArgument, "tensor.LogSoftmax", "dimension 2")
		actExpectError(t, "negative dim out of range", func() { x.Softmax(-3) }, tensor.ErrArgument, "tensor.Softmax")
	})
}
