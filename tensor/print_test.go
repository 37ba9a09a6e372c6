package tensor_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// actPrintReference holds PyTorch 1.13's rendering of each case's values,
// "tensor(" + torch._tensor_str._tensor_str(x, 7) + ")", for the tensors
// that actPrintTensor builds. Kiln prints the same values (with Go's
// true/false) followed by its shape, dtype and device.
var actPrintReference = []struct{ name, want string }{
	{"floats", `tensor([ 1.5000, -2.2500,  3.0000])`},
	{"intfloats", `tensor([1., 2., 3.])`},
	{"ints", `tensor([  1, -20, 300])`},
	{"bools", `tensor([ True, False])`},
	{"booltrue", `tensor([True, True])`},
	{"scalar", `tensor(3.5000)`},
	{"scalarint", `tensor(7)`},
	{"empty", `tensor([])`},
	{"empty2", `tensor([])`},
	{"mat", `tensor([[1.2500, 2.0000],
        [3.0000, 4.0000]])`},
	{"cube", `tensor([[[0., 1.],
         [2., 3.]],

        [[4., 5.],
         [6., 7.]]])`},
	{"small", `tensor([1.0000e-05, 1.0000e+00])`},
	{"big", `tensor([1.0000e+09, 1.0000e+00])`},
	{"intratio", `tensor([1.0000e+00, 5.0000e+03])`},
	{"int1e8", `tensor([100000000.])`},
	{"nan0", `tensor([0.0000,    nan, 1.5000])`},
	{"inf1", `tensor([1., inf])`},
	{"nans", `tensor([nan, nan])`},
	{"zeros", `tensor([0., 0.])`},
	{"negzero", `tensor([0., -0.])`},
	{"negzero2", `tensor([-0.0000, 2.5000])`},
	{"sum2d", `tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.7000e+01, 1.8000e+01,
         1.9000e+01],
        [2.0000e+01, 2.1000e+01, 2.2000e+01,  ..., 3.7000e+01, 3.8000e+01,
         3.9000e+01],
        [4.0000e+01, 4.1000e+01, 4.2000e+01,  ..., 5.7000e+01, 5.8000e+01,
         5.9000e+01],
        ...,
        [1.9400e+03, 1.9410e+03, 1.9420e+03,  ..., 1.9570e+03, 1.9580e+03,
         1.9590e+03],
        [1.9600e+03, 1.9610e+03, 1.9620e+03,  ..., 1.9770e+03, 1.9780e+03,
         1.9790e+03],
        [1.9800e+03, 1.9810e+03, 1.9820e+03,  ..., 1.9970e+03, 1.9980e+03,
         1.9990e+03]])`},
	{"sum1d", `tensor([   0,    1,    2,  ...,  998,  999, 1000])`},
	{"sum3d", `tensor([[[   0,    1,    2,  ...,  147,  148,  149]],

        [[ 150,  151,  152,  ...,  297,  298,  299]],

        [[ 300,  301,  302,  ...,  447,  448,  449]],

        ...,

        [[ 600,  601,  602,  ...,  747,  748,  749]],

        [[ 750,  751,  752,  ...,  897,  898,  899]],

        [[ 900,  901,  902,  ..., 1047, 1048, 1049]]])`},
	{"bigint", `tensor([4611686018427387905,                  -5])`},
	{"transposed", `tensor([[1.2500, 3.0000],
        [2.0000, 4.0000]])`},
	{"half", `tensor([0.1000, 2.0000])`},
	{"float64", `tensor([0.3333, 0.6667])`},
	{"wrap", `tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,
        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,
        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,
        3.8571, 4.0000, 4.1429])`},
	{"wrapint", `tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,
        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
        36, 37, 38, 39])`},
	{"sumsci", `tensor([1.0000e-06, 1.0000e+00, 1.0000e+00,  ..., 1.0000e+00, 1.0000e+00,
        1.0000e+00])`},
	{"summedges", `tensor([1., 1., 1.,  ..., 1., 1., 1.])`},
}

// actArange returns 0, 1, …, n−1 as float64s.
func actArange(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i)
	}
	return v
}

func actF32(v ...float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func actI64(v []float64) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// actPrintTensor builds the tensor of a reference case on dev.
func actPrintTensor(dev tensor.Device, name string) *tensor.Tensor {
	nan, inf := math.NaN(), math.Inf(1)
	f32 := func(shape []int, v ...float64) *tensor.Tensor {
		return tensor.FromFloat32s(dev, actF32(v...), shape...)
	}
	switch name {
	case "floats":
		return f32(nil, 1.5, -2.25, 3)
	case "intfloats":
		return f32(nil, 1, 2, 3)
	case "ints":
		return tensor.FromInt64s(dev, []int64{1, -20, 300})
	case "bools":
		return tensor.FromBools(dev, []bool{true, false})
	case "booltrue":
		return tensor.FromBools(dev, []bool{true, true})
	case "scalar":
		return tensor.Scalar(dev, 3.5)
	case "scalarint":
		return tensor.ScalarOf(dev, tensor.Int64, 7)
	case "empty":
		return tensor.Zeros(dev, 0)
	case "empty2":
		return tensor.Zeros(dev, 2, 0)
	case "mat":
		return f32([]int{2, 2}, 1.25, 2, 3, 4)
	case "cube":
		return f32([]int{2, 2, 2}, actArange(8)...)
	case "small":
		return f32(nil, 1e-5, 1)
	case "big":
		return f32(nil, 1e9, 1)
	case "intratio":
		return f32(nil, 1, 5000)
	case "int1e8":
		return f32(nil, 1e8)
	case "nan0":
		return f32(nil, 0, nan, 1.5)
	case "inf1":
		return f32(nil, 1, inf)
	case "nans":
		return f32(nil, nan, nan)
	case "zeros":
		return f32(nil, 0, 0)
	case "negzero":
		return f32(nil, 0, math.Copysign(0, -1))
	case "negzero2":
		return f32(nil, math.Copysign(0, -1), 2.5)
	case "sum2d":
		return f32([]int{100, 20}, actArange(2000)...)
	case "sum1d":
		return tensor.FromInt64s(dev, actI64(actArange(1001)))
	case "sum3d":
		return tensor.FromInt64s(dev, actI64(actArange(1050)), 7, 1, 150)
	case "bigint":
		return tensor.FromInt64s(dev, []int64{1<<62 + 1, -5})
	case "transposed":
		return f32([]int{2, 2}, 1.25, 2, 3, 4).T()
	case "half":
		return f32(nil, 0.1, 2).To(tensor.Float16)
	case "float64":
		return tensor.FromFloat64s(dev, []float64{1. / 3, 2. / 3})
	case "wrap":
		v := make([]float32, 30)
		for i := range v {
			v[i] = float32(i) / 7
		}
		return tensor.FromFloat32s(dev, v)
	case "wrapint":
		return tensor.FromInt64s(dev, actI64(actArange(40)))
	case "sumsci":
		v := append([]float64{1e-6}, make([]float64, 1500)...)
		for i := 1; i < len(v); i++ {
			v[i] = 1
		}
		return f32(nil, v...)
	case "summedges":
		v := make([]float64, 1006)
		for i := range v {
			v[i] = 12345.678
			if i < 3 || i >= 1003 {
				v[i] = 1
			}
		}
		return f32(nil, v...)
	}
	panic("no print case " + name)
}

// TestPrintMatchesPyTorch checks the printed values of floats (fixed,
// whole-number and scientific formats, NaN, ±inf, −0), integers (exact
// beyond 2⁵³), booleans, 0-d and empty tensors, non-contiguous views,
// 16-bit floats, line wrapping and summarised tensors of 1 to 3 dimensions.
func TestPrintMatchesPyTorch(t *testing.T) {
	for _, c := range actPrintReference {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				x := actPrintTensor(dev, c.name)
				want := strings.NewReplacer("True", "true", "False", "false").Replace(c.want)
				want = strings.TrimSuffix(want, ")") + fmt.Sprintf(", shape=%v, dtype=%s, device=%s)", x.Shape(), x.DType(), dev)
				if got := x.String(); got != want {
					t.Errorf("got\n%s\nwant\n%s", got, want)
				}
			})
		})
	}
}

// TestPrintSuffixes checks the gradient markers and the special cases of
// String.
func TestPrintSuffixes(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		leaf := tensor.FromFloat32s(ad, []float32{1, 2}).RequireGrad()
		cases := []struct{ name, got, want string }{
			{"leaf", leaf.String(), "tensor([1., 2.], shape=[2], dtype=float32, device=" + ad.String() + ", requires_grad=true)"},
			{"op result", leaf.Softmax(0).String(), "tensor([0.2689, 0.7311], shape=[2], dtype=float32, device=" + ad.String() + ", grad_fn=softmax)"},
			{"no grad", tensor.FromFloat32s(ad, []float32{1, 2}).String(), "tensor([1., 2.], shape=[2], dtype=float32, device=" + ad.String() + ")"},
			{"nil", (*tensor.Tensor)(nil).String(), "tensor(nil)"},
		}
		r := tensor.Ones(dev, 2, 3)
		r.Release()
		cases = append(cases, struct{ name, got, want string }{"released", r.String(), "tensor(<released>, shape=[2 3], dtype=float32)"})
		for _, c := range cases {
			if c.got != c.want {
				t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
			}
		}
	})
}
