package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends/strict"
	"github.com/kiln-ml/kiln/tensor"
)

// reductionFixtures covers reductions.go.
func reductionFixtures() map[string]mathFixture {
	x := func(f mathCase) *tensor.Tensor { return f.T("x") }
	one := func(op func(*tensor.Tensor) *tensor.Tensor) mathFixture {
		return func(f mathCase) map[string]*tensor.Tensor { return out(op(x(f))) }
	}
	return map[string]mathFixture{
		"prod_all":  one(func(t *tensor.Tensor) *tensor.Tensor { return t.Prod() }),
		"prod_dims": one(func(t *tensor.Tensor) *tensor.Tensor { return t.Prod(0, -1) }),
		"prod_keep": one(func(t *tensor.Tensor) *tensor.Tensor { return t.ProdKeep(1) }),
		"prod_int":  one(func(t *tensor.Tensor) *tensor.Tensor { return t.Prod() }),

		"amax_dim1":      one(func(t *tensor.Tensor) *tensor.Tensor { return t.Max(1) }),
		"amin_dim1_keep": one(func(t *tensor.Tensor) *tensor.Tensor { return t.MinKeep(1) }),
		"amax_dim0":      one(func(t *tensor.Tensor) *tensor.Tensor { return t.Max(0) }),
		"amax_all":       one(func(t *tensor.Tensor) *tensor.Tensor { return t.Max() }),
		"amin_dims":      one(func(t *tensor.Tensor) *tensor.Tensor { return t.Min(2, 0) }),
		"amax_int":       one(func(t *tensor.Tensor) *tensor.Tensor { return t.Max() }),

		"max_dim_ties":     func(f mathCase) map[string]*tensor.Tensor { return valuesIndices(x(f).MaxDim(1, false)) },
		"max_dim_nan_keep": func(f mathCase) map[string]*tensor.Tensor { return valuesIndices(x(f).MaxDim(-1, true)) },
		"max_dim_dim0":     func(f mathCase) map[string]*tensor.Tensor { return valuesIndices(x(f).MaxDim(0, false)) },
		"min_dim_ties":     func(f mathCase) map[string]*tensor.Tensor { return valuesIndices(x(f).MinDim(1, false)) },
		"min_dim_nan_keep": func(f mathCase) map[string]*tensor.Tensor { return valuesIndices(x(f).MinDim(1, true)) },
		"min_dim_dim0":     func(f mathCase) map[string]*tensor.Tensor { return valuesIndices(x(f).MinDim(-3, false)) },

		"argmax_dim1":      one(func(t *tensor.Tensor) *tensor.Tensor { return t.Argmax(1) }),
		"argmin_dim0_keep": one(func(t *tensor.Tensor) *tensor.Tensor { return t.ArgminKeep(0) }),
		"argmax_nan":       one(func(t *tensor.Tensor) *tensor.Tensor { return t.Argmax(-1) }),
		"argmax_all":       one(func(t *tensor.Tensor) *tensor.Tensor { return t.ArgmaxAll() }),
		"argmin_all":       one(func(t *tensor.Tensor) *tensor.Tensor { return t.ArgminAll() }),
		"argmax_all_ties":  one(func(t *tensor.Tensor) *tensor.Tensor { return t.ArgmaxAll() }),

		"var_all":                one(func(t *tensor.Tensor) *tensor.Tensor { return t.Var() }),
		"var_dim1":               one(func(t *tensor.Tensor) *tensor.Tensor { return t.Var(1) }),
		"var_dim0_keep":          one(func(t *tensor.Tensor) *tensor.Tensor { return t.VarKeep(0) }),
		"std_all":                one(func(t *tensor.Tensor) *tensor.Tensor { return t.Std() }),
		"std_dim1_keep":          one(func(t *tensor.Tensor) *tensor.Tensor { return t.StdKeep(1) }),
		"var_correction0":        one(func(t *tensor.Tensor) *tensor.Tensor { return t.VarCorrection(0, false, 1) }),
		"std_correction2":        one(func(t *tensor.Tensor) *tensor.Tensor { return t.StdCorrection(2, false, 0, 1) }),
		"var_single":             one(func(t *tensor.Tensor) *tensor.Tensor { return t.Var() }),
		"var_correction_too_big": one(func(t *tensor.Tensor) *tensor.Tensor { return t.VarCorrection(3, false, 0) }),
		"var_offset":             one(func(t *tensor.Tensor) *tensor.Tensor { return t.Var(1) }),

		"logsumexp_dim1":  one(func(t *tensor.Tensor) *tensor.Tensor { return t.LogSumExp(1) }),
		"logsumexp_all":   one(func(t *tensor.Tensor) *tensor.Tensor { return t.LogSumExp() }),
		"logsumexp_keep0": one(func(t *tensor.Tensor) *tensor.Tensor { return t.LogSumExpKeep(0) }),
		"logsumexp_inf":   one(func(t *tensor.Tensor) *tensor.Tensor { return t.LogSumExp(1) }),
		"logsumexp_int":   one(func(t *tensor.Tensor) *tensor.Tensor { return t.LogSumExp(0) }),
		"logsumexp_large": one(func(t *tensor.Tensor) *tensor.Tensor { return t.LogSumExp(0) }),

		"cumsum_dim1":  one(func(t *tensor.Tensor) *tensor.Tensor { return t.Cumsum(1) }),
		"cumsum_dim0":  one(func(t *tensor.Tensor) *tensor.Tensor { return t.Cumsum(-2) }),
		"cumprod_dim1": one(func(t *tensor.Tensor) *tensor.Tensor { return t.Cumprod(1) }),
		"cumsum_int":   one(func(t *tensor.Tensor) *tensor.Tensor { return t.Cumsum(0) }),
		"cumsum_bool":  one(func(t *tensor.Tensor) *tensor.Tensor { return t.Cumsum(0) }),
		"cumprod_int":  one(func(t *tensor.Tensor) *tensor.Tensor { return t.Cumprod(0) }),
		"cumsum_nan":   one(func(t *tensor.Tensor) *tensor.Tensor { return t.Cumsum(0) }),
		"cumprod_nan":  one(func(t *tensor.Tensor) *tensor.Tensor { return t.Cumprod(0) }),

		"any_dim1":      one(func(t *tensor.Tensor) *tensor.Tensor { return t.Any(1) }),
		"all_dim1":      one(func(t *tensor.Tensor) *tensor.Tensor { return t.All(1) }),
		"any_all":       one(func(t *tensor.Tensor) *tensor.Tensor { return t.Any() }),
		"all_all":       one(func(t *tensor.Tensor) *tensor.Tensor { return t.All() }),
		"all_dim0_keep": one(func(t *tensor.Tensor) *tensor.Tensor { return t.AllKeep(0) }),
		"any_int":       one(func(t *tensor.Tensor) *tensor.Tensor { return t.Any() }),
		"all_bool":      one(func(t *tensor.Tensor) *tensor.Tensor { return t.All() }),

		"grad_amax_ties":      gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Max(1) }),
		"grad_amin_ties":      gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Min(1) }),
		"grad_max_all_ties":   gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Max() }),
		"grad_max_all_nan":    gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Max() }),
		"grad_max_dim_ties":   gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { v, _ := in[0].MaxDim(1, false); return v }),
		"grad_min_dim_ties":   gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { v, _ := in[0].MinDim(1, false); return v }),
		"grad_prod_one_zero":  gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Prod() }),
		"grad_prod_two_zeros": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Prod() }),
		"grad_prod_dim_zeros": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Prod(1) }),
		"grad_cumprod_zeros":  gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Cumprod(0) }),
		"grad_std_zero":       gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Std(1) }),
	}
}

func TestReductionFixtures(t *testing.T) { runMathFixtures(t, reductionFixtures()) }

// withZeros returns a Float64 tensor of shape with the given flat
// positions set to zero, for products whose gradients must handle zeros.
func withZeros(dev tensor.Device, seed uint64, zeros []int, shape ...int) *tensor.Tensor {
	v := randFloat64(dev, seed, 0.5, 1.5, shape...).Float64s()
	for i, z := range zeros {
		v[z] = 0
		if i%2 == 1 {
			v[z] = math.Copysign(0, -1)
		}
	}
	return tensor.FromFloat64s(dev, v, shape...).Reshape(shape...)
}

func TestReductionGradients(t *testing.T) {
	fixed := func(build func(dev tensor.Device) *tensor.Tensor) func(dev tensor.Device) []*tensor.Tensor {
		return func(dev tensor.Device) []*tensor.Tensor { return []*tensor.Tensor{build(dev)} }
	}
	first := func(v, _ *tensor.Tensor) *tensor.Tensor { return v }
	cases := []gradCase{
		{"prod all", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Prod() }, inputs(spec(1, 0.5, 1.5, 2, 3))},
		{"prod dims of transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Transpose(0, 2).Prod(0, 2) },
			inputs(spec(1, -1.5, 1.5, 2, 3, 4))},
		{"prod keep of expanded", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Expand(3, 4).ProdKeep(0) },
			inputs(spec(1, 0.5, 1.5, 1, 4))},
		{"prod with one zero per row", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Prod(1) },
			fixed(func(d tensor.Device) *tensor.Tensor { return withZeros(d, 1, []int{1, 4}, 2, 3) })},
		{"prod with two zeros", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Prod() },
			fixed(func(d tensor.Device) *tensor.Tensor { return withZeros(d, 1, []int{0, 3}, 5) })},
		{"max dims", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Max(0, 2) }, inputs(spec(1, -1, 1, 2, 3, 4))},
		{"min keep of permuted", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Permute(1, 0).MinKeep(1) },
			inputs(spec(1, -1, 1, 3, 4))},
		{"max all", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Max() }, inputs(spec(1, -1, 1, 3, 4))},
		{"max dim", func(in []*tensor.Tensor) *tensor.Tensor { return first(in[0].MaxDim(1, false)) }, inputs(spec(1, -1, 1, 3, 4))},
		{"min dim keep of transposed", func(in []*tensor.Tensor) *tensor.Tensor { return first(in[0].T().MinDim(0, true)) },
			inputs(spec(1, -1, 1, 3, 4))},
		{"max dim of 0-d", func(in []*tensor.Tensor) *tensor.Tensor { return first(in[0].Sum().MaxDim(0, false)) },
			inputs(spec(1, -1, 1, 3))},
		{"var all", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Var() }, inputs(spec(1, -1, 1, 3, 4))},
		{"var dims of transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Var(1) }, inputs(spec(1, -1, 1, 3, 4))},
		{"var keep", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].VarKeep(0) }, inputs(spec(1, -1, 1, 3, 4))},
		{"var correction 0", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].VarCorrection(0, false, 0, 2) },
			inputs(spec(1, -1, 1, 2, 3, 4))},
		{"std all", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Std() }, inputs(spec(1, -1, 1, 3, 4))},
		{"std keep of expanded", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Expand(2, 3, 4).StdKeep(2) },
			inputs(spec(1, -1, 1, 3, 4))},
		{"std correction 2", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].StdCorrection(2, true, 1) },
			inputs(spec(1, -1, 1, 3, 5))},
		{"logsumexp dim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LogSumExp(1) }, inputs(spec(1, -3, 3, 3, 4))},
		{"logsumexp all of transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().LogSumExp() },
			inputs(spec(1, -3, 3, 3, 4))},
		{"logsumexp keep large", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].AddScalar(500).LogSumExpKeep(0) },
			inputs(spec(1, -3, 3, 3, 4))},
		{"cumsum", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Cumsum(1) }, inputs(spec(1, -1, 1, 3, 4))},
		{"cumsum of transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Cumsum(0) }, inputs(spec(1, -1, 1, 3, 4))},
		{"cumsum of expanded", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Expand(3, 4).Cumsum(0) },
			inputs(spec(1, -1, 1, 1, 4))},
		{"cumprod", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Cumprod(-1) }, inputs(spec(1, 0.5, 1.5, 3, 4))},
		{"cumprod of transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Cumprod(0) },
			inputs(spec(1, -1.5, 1.5, 3, 4))},
		{"cumprod with zeros", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Cumprod(1) },
			fixed(func(d tensor.Device) *tensor.Tensor { return withZeros(d, 2, []int{1, 6, 8, 9, 14}, 3, 5) })},
		{"cumprod with zeros along dim 0", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Cumprod(0) },
			fixed(func(d tensor.Device) *tensor.Tensor { return withZeros(d, 3, []int{0, 5, 7, 10}, 4, 3) })},
		{"cumprod of 0-d", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sum().Cumprod(0) }, inputs(spec(1, -1, 1, 3))},
	}
	runGradCases(t, cases)
}

// TestReductionShapes checks result shapes of keep/no-keep forms, 0-d
// inputs and empty reductions.
func TestReductionShapes(t *testing.T) {
	cases := []struct {
		name  string
		f     func(x *tensor.Tensor) *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"prod removes dims", func(x *tensor.Tensor) *tensor.Tensor { return x.Prod(0, 2) }, []int{3}, nil},
		{"max keep keeps dims", func(x *tensor.Tensor) *tensor.Tensor { return x.MaxKeep(0, 2) }, []int{1, 3, 1}, nil},
		{"argmax keep", func(x *tensor.Tensor) *tensor.Tensor { return x.ArgmaxKeep(1) }, []int{2, 1, 4}, nil},
		{"argmin removes dim", func(x *tensor.Tensor) *tensor.Tensor { return x.Argmin(-1) }, []int{2, 3}, nil},
		{"argmax all is 0-d", func(x *tensor.Tensor) *tensor.Tensor { return x.ArgmaxAll() }, []int{}, nil},
		{"var keep all", func(x *tensor.Tensor) *tensor.Tensor { return x.VarKeep() }, []int{1, 1, 1}, nil},
		{"std correction keep", func(x *tensor.Tensor) *tensor.Tensor { return x.StdCorrection(0, true, 1) }, []int{2, 1, 4}, nil},
		{"logsumexp keep", func(x *tensor.Tensor) *tensor.Tensor { return x.LogSumExpKeep(-1) }, []int{2, 3, 1}, nil},
		{"any keep", func(x *tensor.Tensor) *tensor.Tensor { return x.AnyKeep(1, 2) }, []int{2, 1, 1}, []float64{1, 1}},
		{"cumsum keeps shape", func(x *tensor.Tensor) *tensor.Tensor { return x.Cumsum(2) }, []int{2, 3, 4}, nil},
		{"max dim of 0-d", func(x *tensor.Tensor) *tensor.Tensor { v, _ := x.Sum().MaxDim(-1, true); return v }, []int{}, nil},
		{"argmax of 0-d", func(x *tensor.Tensor) *tensor.Tensor { return x.Sum().Argmax(0) }, []int{}, []float64{0}},
		{"cumsum of 0-d", func(x *tensor.Tensor) *tensor.Tensor { return x.Max().Cumsum(0) }, []int{}, nil},
		{"prod of empty is one", func(x *tensor.Tensor) *tensor.Tensor { return tensor.Zeros(x.Device(), 0, 3).Prod(0) }, []int{3}, []float64{1, 1, 1}},
		{"any of empty is false", func(x *tensor.Tensor) *tensor.Tensor { return tensor.Zeros(x.Device(), 2, 0).Any(1) }, []int{2}, []float64{0, 0}},
		{"all of empty is true", func(x *tensor.Tensor) *tensor.Tensor { return tensor.Zeros(x.Device(), 2, 0).All(1) }, []int{2}, []float64{1, 1}},
		{"logsumexp of empty is -inf", func(x *tensor.Tensor) *tensor.Tensor { return tensor.Zeros(x.Device(), 0, 2).LogSumExp(0) },
			[]int{2}, []float64{math.Inf(-1), math.Inf(-1)}},
		{"cumsum of empty", func(x *tensor.Tensor) *tensor.Tensor { return tensor.Zeros(x.Device(), 0, 2).Cumprod(0) }, []int{0, 2}, []float64{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				x := randFloat64(dev, 1, -1, 1, 2, 3, 4)
				got := c.f(x)
				if fmt.Sprint(got.Shape()) != fmt.Sprint(c.shape) {
					t.Fatalf("shape %v, want %v", got.Shape(), c.shape)
				}
				if c.want != nil {
					assertValues(t, c.name, got, c.shape, c.want, 0, 0)
				}
			})
		})
	}
}

func TestReductionBadInput(t *testing.T) {
	runBadCases(t, []badCase{
		{"prod dim out of range", "Prod", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 2, 3).Prod(2) }},
		{"max repeated dim", "Max", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 2, 3).Max(1, -1) }},
		{"max over empty dim", "Max", tensor.ErrShape, func(d tensor.Device) { tensor.Ones(d, 0, 3).Max(0) }},
		{"min keep over empty tensor", "MinKeep", tensor.ErrShape, func(d tensor.Device) { tensor.Ones(d, 0).MinKeep() }},
		{"max dim out of range", "MaxDim", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 2, 3).MaxDim(2, false) }},
		{"min dim over empty dim", "MinDim", tensor.ErrShape, func(d tensor.Device) { tensor.Ones(d, 2, 0).MinDim(1, false) }},
		{"max dim of 0-d with dim 1", "MaxDim", tensor.ErrArgument, func(d tensor.Device) { tensor.Scalar(d, 1).MaxDim(1, false) }},
		{"argmax dim out of range", "Argmax", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 2, 3).Argmax(-3) }},
		{"argmin keep over empty dim", "ArgminKeep", tensor.ErrShape, func(d tensor.Device) { tensor.Ones(d, 0, 2).ArgminKeep(0) }},
		{"argmax all of empty", "ArgmaxAll", tensor.ErrShape, func(d tensor.Device) { tensor.Ones(d, 3, 0).ArgmaxAll() }},
		{"var of int64", "Var", tensor.ErrDType, func(d tensor.Device) { tensor.OnesOf(d, tensor.Int64, 3).Var() }},
		{"std correction of bool", "StdCorrection", tensor.ErrDType, func(d tensor.Device) { tensor.OnesOf(d, tensor.Bool, 3).StdCorrection(0, false) }},
		{"var keep dim out of range", "VarKeep", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 3).VarKeep(1) }},
		{"logsumexp dim out of range", "LogSumExp", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 3).LogSumExp(-2) }},
		{"cumsum dim out of range", "Cumsum", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 2, 3).Cumsum(2) }},
		{"cumprod of 0-d with dim 1", "Cumprod", tensor.ErrArgument, func(d tensor.Device) { tensor.Scalar(d, 2).Cumprod(1) }},
		{"any dim out of range", "Any", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 3).Any(1) }},
		{"all keep of released tensor", "AllKeep", tensor.ErrReleased, func(d tensor.Device) {
			x := tensor.Ones(d, 3)
			x.Release()
			x.AllKeep()
		}},
	})
}

// TestMathReleasesTemporaries runs each op of this area and its backward
// on the strict device outside any Scope, releases everything it was
// handed, and checks that no buffer is left: every temporary of the
// forward and backward rules must be released by the rule itself. Ops
// that keep their indices for the backward pass (MaxDim, Sort, TopK) hold
// exactly that one buffer until their graph is collected.
func TestMathReleasesTemporaries(t *testing.T) {
	dev := tensor.MustDevice("strict")
	ad := dev.Autodiff()
	type result struct {
		out   *tensor.Tensor
		extra []*tensor.Tensor
	}
	one := func(o *tensor.Tensor) result { return result{out: o} }
	two := func(o, i *tensor.Tensor) result { return result{out: o, extra: []*tensor.Tensor{i}} }
	cases := []struct {
		name  string
		f     func(x, y *tensor.Tensor) result
		saved int
	}{
		{"Pow", func(x, y *tensor.Tensor) result { return one(x.Pow(y)) }, 0},
		{"PowScalar", func(x, _ *tensor.Tensor) result { return one(x.PowScalar(1.5)) }, 0},
		{"ScalarPow zero base", func(x, _ *tensor.Tensor) result { return one(tensor.ScalarPow(0, x)) }, 0},
		{"Rem", func(x, y *tensor.Tensor) result { return one(x.Rem(y)) }, 0},
		{"RemScalar", func(x, _ *tensor.Tensor) result { return one(x.RemScalar(0.3)) }, 0},
		{"Maximum", func(x, y *tensor.Tensor) result { return one(x.Maximum(y)) }, 0},
		{"Minimum", func(x, y *tensor.Tensor) result { return one(x.Minimum(y)) }, 0},
		{"Clamp", func(x, _ *tensor.Tensor) result { return one(x.Clamp(0.6, 1.2)) }, 0},
		{"Sign", func(x, _ *tensor.Tensor) result { return one(x.Sign()) }, 0},
		{"Rsqrt", func(x, _ *tensor.Tensor) result { return one(x.Rsqrt()) }, 0},
		{"Prod", func(x, _ *tensor.Tensor) result { return one(x.Prod(1)) }, 0},
		{"MaxKeep", func(x, _ *tensor.Tensor) result { return one(x.MaxKeep()) }, 0},
		{"Min", func(x, _ *tensor.Tensor) result { return one(x.Min(0)) }, 0},
		{"MaxDim", func(x, _ *tensor.Tensor) result { return two(x.MaxDim(1, false)) }, 1},
		{"Var", func(x, _ *tensor.Tensor) result { return one(x.Var(1)) }, 0},
		{"StdKeep", func(x, _ *tensor.Tensor) result { return one(x.StdKeep()) }, 0},
		{"LogSumExp", func(x, _ *tensor.Tensor) result { return one(x.LogSumExp(0)) }, 0},
		{"Cumsum", func(x, _ *tensor.Tensor) result { return one(x.Cumsum(1)) }, 0},
		{"Cumprod", func(x, _ *tensor.Tensor) result { return one(x.Cumprod(1)) }, 0},
		{"Sort", func(x, _ *tensor.Tensor) result { return two(x.Sort(1, false)) }, 1},
		{"TopK", func(x, _ *tensor.Tensor) result { return two(x.TopK(2, 1, true)) }, 1},
		{"Argsort", func(x, _ *tensor.Tensor) result { return one(x.Argsort(0, true)) }, 0},
		{"ArgmaxAll of transposed", func(x, _ *tensor.Tensor) result {
			xt := x.Transpose(0, 1)
			return result{out: xt.ArgmaxAll(), extra: []*tensor.Tensor{xt}}
		}, 0},
		{"Any", func(x, _ *tensor.Tensor) result { return one(x.AnyKeep(1)) }, 0},
		{"All", func(x, _ *tensor.Tensor) result { return one(x.All()) }, 0},
		{"Eq", func(x, y *tensor.Tensor) result { return one(x.Eq(y)) }, 0},
		{"Arange", func(_, _ *tensor.Tensor) result { return one(tensor.ArangeOf(ad, tensor.Float16, 0, 3, 1)) }, 0},
		{"Linspace", func(_, _ *tensor.Tensor) result { return one(tensor.LinspaceOf(ad, tensor.Int32, 0, 3, 4)) }, 0},
		{"Eye", func(_, _ *tensor.Tensor) result { return one(tensor.Eye(ad, 2, 3)) }, 0},
	}
	s := strict.Default()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.ClearError()
			mark := s.Mark()
			x := tensor.FromFloat64s(ad, []float64{0.7, 0, 1.1, 0.9, 1.3, 0.8}, 2, 3).RequireGrad()
			y := tensor.FromFloat64s(ad, []float64{1.1, 0.5, 1.1}, 3).RequireGrad()
			r := c.f(x, y)
			if r.out.RequiresGrad() {
				seed := tensor.OnesLike(r.out)
				grads := r.out.BackwardWith(seed)
				grads.Release()
				seed.Release()
			}
			r.out.Release()
			for _, e := range r.extra {
				e.Release()
			}
			x.Release()
			y.Release()
			if err := dev.Sync(); err != nil {
				t.Fatalf("device error: %v", err)
			}
			if live := s.LiveSince(mark); len(live) != c.saved {
				t.Errorf("%d buffers live, want %d:", len(live), c.saved)
				for _, l := range live {
					t.Errorf("  %s", l)
				}
			}
		})
	}
}
