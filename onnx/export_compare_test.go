package onnx_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// TestExportComparisons exports functions built on the ops package tensor
// records only while tracing (tensor.TraceInput): comparisons of floats
// and of integers, with tensors and scalars, logical ops, Where and
// MaskedFill on masks, Any and All, OneHot, integer casts and arithmetic,
// cumulative sums of masks and Detach. Each graph passes onnx.checker and,
// imported back, gives Kiln's values on new inputs at two batch sizes, so
// no mask or index was frozen at the traced values.
func TestExportComparisons(t *testing.T) {
	const c = 5
	two := func(a, b func(n int) *tensor.Tensor) func(n int) []*tensor.Tensor {
		return func(n int) []*tensor.Tensor { return []*tensor.Tensor{a(n), b(n)} }
	}
	x := func(n int) *tensor.Tensor { return floats(n, c) }
	labels := func(n int) *tensor.Tensor { return classes(c, n, c) }
	f32 := func(b *tensor.Tensor) *tensor.Tensor { return b.To(tensor.Float32) }
	cases := []functionCase{
		{name: "float comparisons", fn: func(v []*tensor.Tensor) *tensor.Tensor {
			a, b := v[0], v[1]
			return f32(a.Lt(b)).Add(f32(a.Le(b)).MulScalar(2)).Add(f32(a.Gt(b)).MulScalar(4)).Add(f32(a.Ge(b)).MulScalar(8)).
				Add(f32(a.Eq(a.Round())).MulScalar(16)).Add(f32(a.Ne(b)).MulScalar(32))
		}, inputs: two(x, x), ops: []string{"Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Equal", "Not"}},
		{name: "scalar comparisons", fn: func(v []*tensor.Tensor) *tensor.Tensor {
			a := v[0]
			return f32(a.LtScalar(0.25)).Add(f32(a.LeScalar(-0.5)).MulScalar(2)).Add(f32(a.GtScalar(1)).MulScalar(4)).
				Add(f32(a.GeScalar(0)).MulScalar(8)).Add(f32(a.Round().EqScalar(0)).MulScalar(16)).Add(f32(a.Round().NeScalar(1)).MulScalar(32))
		}, inputs: func(n int) []*tensor.Tensor { return []*tensor.Tensor{x(n)} }},
		{name: "integer target against floats and scalars", fn: func(v []*tensor.Tensor) *tensor.Tensor {
			a, k := v[0], v[1]
			// An int64 compared with a float compares in float32; a
			// fractional scalar too.
			return f32(k.Gt(a)).Add(f32(k.LtScalar(2.5)).MulScalar(2)).Add(f32(k.EqScalar(3)).MulScalar(4)).Mul(a)
		}, inputs: two(x, labels), ops: []string{"Greater", "Less", "Cast"}},
		{name: "logical ops, Any and All", fn: func(v []*tensor.Tensor) *tensor.Tensor {
			a, b := v[0].GtScalar(0), v[1].LtScalar(0.5)
			and, or, xor := a.LogicalAnd(b), a.LogicalOr(b), v[0].LogicalXor(v[1].Round()) // floats count as non-zero
			m := f32(and).Add(f32(or).MulScalar(2)).Add(f32(xor).MulScalar(4)).Add(f32(a.LogicalNot()).MulScalar(8))
			return m.Add(f32(and.AnyKeep(1)).MulScalar(16)).Add(f32(or.AllKeep(1)).MulScalar(32)).Add(f32(v[1].GtScalar(-3).All()).MulScalar(64))
		}, inputs: two(x, x), ops: []string{"And", "Or", "Xor", "Not", "ReduceSum"}},
		{name: "Where MaskedFill and Detach", fn: func(v []*tensor.Tensor) *tensor.Tensor {
			a, b := v[0], v[1]
			w := tensor.Where(a.Abs().LtScalar(0.5), a.Square(), b.Detach().Mul(a))
			return w.MaskedFill(b.GtScalar(1), -2)
		}, inputs: two(x, x), ops: []string{"Where", "Identity", "Abs"}},
		{name: "OneHot integer casts and arithmetic", fn: func(v []*tensor.Tensor) *tensor.Tensor {
			a, k := v[0], v[1]
			oh := k.Select(1, 0).OneHot(c).To(tensor.Float32) // [n, c]
			trunc := a.MulScalar(3).To(tensor.Int64).To(tensor.Float32)
			half := k.AddScalar(1).DivScalar(2) // int64 / number: true division in float32
			return oh.Mul(a).Add(trunc).Add(half)
		}, inputs: two(x, labels), ops: []string{"OneHot", "Cast", "Div"}},
		{name: "cumulative sum of a mask", fn: func(v []*tensor.Tensor) *tensor.Tensor {
			valid := v[1].LtScalar(1).Cumsum(1).EqScalar(0)
			return tensor.Where(valid, v[0], tensor.ScalarOf(v[0].Device(), tensor.Float32, 0)).Sum(1)
		}, inputs: two(x, labels), ops: []string{"CumSum"}},
	}
	checkFunctionExports(t, cases, 1e-5, []int{3, 5})
}
