package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// mathFixture computes, on one device, the outputs of one case of
// testdata/math.json (written by testdata/gen_math.py) from its inputs.
type mathFixture func(f mathCase) map[string]*tensor.Tensor

// mathCase is one fixture case on one device.
type mathCase struct {
	c   fixtureCase
	dev tensor.Device
}

// T returns input name of the case on the case's device.
func (f mathCase) T(name string) *tensor.Tensor {
	ft, ok := f.c[name]
	if !ok {
		panic("fixture has no tensor " + name)
	}
	return ft.Tensor(f.dev)
}

func out(t *tensor.Tensor) map[string]*tensor.Tensor { return map[string]*tensor.Tensor{"out": t} }

func valuesIndices(v, i *tensor.Tensor) map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{"values": v, "indices": i}
}

// gradFixture builds a case whose inputs in_0, in_1, … require gradients;
// its outputs grad_0, … are the gradients of f seeded with ones.
func gradFixture(f func(in []*tensor.Tensor) *tensor.Tensor) mathFixture {
	return func(c mathCase) map[string]*tensor.Tensor {
		ad := c.dev.Autodiff()
		var in []*tensor.Tensor
		for i := 0; ; i++ {
			ft, ok := c.c[fmt.Sprintf("in_%d", i)]
			if !ok {
				break
			}
			in = append(in, ft.Tensor(ad).RequireGrad())
		}
		grads := f(in).Backward()
		res := map[string]*tensor.Tensor{}
		for i, x := range in {
			res[fmt.Sprintf("grad_%d", i)] = grads.Get(x)
		}
		return res
	}
}

// isFixtureOutput reports whether a fixture tensor is an expected output.
func isFixtureOutput(name string) bool {
	return name == "out" || name == "values" || name == "indices" || strings.HasPrefix(name, "grad_")
}

// runMathFixtures checks every case of table against math.json on every
// test device: shapes, dtypes and values (floats within a few float32
// ulps, everything else exactly).
func runMathFixtures(t *testing.T, table map[string]mathFixture) {
	t.Helper()
	runFixtureFile(t, "math", table)
}

// runFixtureFile is runMathFixtures for testdata/<file>.json, written by
// testdata/gen_<file>.py.
func runFixtureFile(t *testing.T, file string, table map[string]mathFixture) {
	t.Helper()
	cases := loadFixtures(t, file+".json")
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c, ok := cases[name]
		if !ok {
			t.Errorf("fixture %s is missing from %s.json (regenerate with /usr/bin/python3 testdata/gen_%s.py)", name, file, file)
			continue
		}
		t.Run(name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				got := table[name](mathCase{c: c, dev: dev})
				for k, want := range c {
					if !isFixtureOutput(k) {
						continue
					}
					g := got[k]
					if g == nil {
						t.Errorf("%s: no result", k)
						continue
					}
					if g.DType().String() != want.DType {
						t.Errorf("%s: dtype %s, want %s", k, g.DType(), want.DType)
					}
					rtol, atol := 0.0, 0.0
					switch want.DType {
					case "float32":
						rtol, atol = 4e-6, 1e-6
					case "float64":
						rtol, atol = 1e-12, 1e-12
					}
					assertClose(t, k, g, want, rtol, atol)
				}
			})
		})
	}
}

// mathBinaryFixtures covers math.go and compare.go.
func mathBinaryFixtures() map[string]mathFixture {
	table := map[string]mathFixture{
		"pow_broadcast":           func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Pow(f.T("b"))) },
		"pow_special":             func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Pow(f.T("b"))) },
		"pow_int64":               func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Pow(f.T("b"))) },
		"pow_scalar_2_5":          func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").PowScalar(2.5)) },
		"pow_scalar_neg2":         func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").PowScalar(-2)) },
		"pow_scalar_0":            func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").PowScalar(0)) },
		"pow_scalar_int3":         func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").PowScalar(3)) },
		"pow_scalar_int_frac":     func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").PowScalar(0.5)) },
		"scalar_pow_2":            func(f mathCase) map[string]*tensor.Tensor { return out(tensor.ScalarPow(2, f.T("x"))) },
		"scalar_pow_0":            func(f mathCase) map[string]*tensor.Tensor { return out(tensor.ScalarPow(0, f.T("x"))) },
		"scalar_pow_0_5":          func(f mathCase) map[string]*tensor.Tensor { return out(tensor.ScalarPow(0.5, f.T("x"))) },
		"scalar_pow_int":          func(f mathCase) map[string]*tensor.Tensor { return out(tensor.ScalarPow(3, f.T("x"))) },
		"remainder":               func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Rem(f.T("b"))) },
		"remainder_broadcast":     func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Rem(f.T("b"))) },
		"remainder_int64":         func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Rem(f.T("b"))) },
		"remainder_scalar_3":      func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").RemScalar(3)) },
		"remainder_scalar_neg2_5": func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").RemScalar(-2.5)) },
		"remainder_scalar_int":    func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").RemScalar(3)) },
		"floor_divide":            func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").FloorDivide(f.T("b"))) },
		"floor_divide_int64":      func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").FloorDivide(f.T("b"))) },
		"floor_divide_scalar":     func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").FloorDivideScalar(2)) },
		"floor_divide_scalar_int": func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").FloorDivideScalar(2)) },
		"maximum":                 func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Maximum(f.T("b"))) },
		"minimum":                 func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Minimum(f.T("b"))) },
		"maximum_broadcast":       func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Maximum(f.T("b"))) },
		"minimum_broadcast":       func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Minimum(f.T("b"))) },
		"maximum_int64":           func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Maximum(f.T("b"))) },
		"minimum_int64":           func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Minimum(f.T("b"))) },
		"clamp":                   func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Clamp(-1, 0.5)) },
		"clamp_min":               func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").ClampMin(-0.5)) },
		"clamp_max":               func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").ClampMax(0)) },
		"clamp_min_above_max":     func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Clamp(1, -1)) },
		"clamp_int":               func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Clamp(-1, 3)) },
		"clamp_int_float_bound":   func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").ClampMin(-0.5)) },

		"cmp_int_float_lt":       func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Lt(f.T("b"))) },
		"cmp_broadcast_ge":       func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").Ge(f.T("b"))) },
		"cmp_scalar_int_frac_gt": func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").GtScalar(1.5)) },
		"logical_and":            func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").LogicalAnd(f.T("b"))) },
		"logical_or":             func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").LogicalOr(f.T("b"))) },
		"logical_xor":            func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").LogicalXor(f.T("b"))) },
		"logical_not":            func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").LogicalNot()) },
		"logical_and_int":        func(f mathCase) map[string]*tensor.Tensor { return out(f.T("a").LogicalAnd(f.T("b"))) },

		"grad_maximum_ties":       gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Maximum(in[1]) }),
		"grad_minimum_ties":       gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Minimum(in[1]) }),
		"grad_clamp_boundary":     gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Clamp(-1, 1) }),
		"grad_clamp_min_boundary": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].ClampMin(0) }),
		"grad_pow_special":        gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pow(in[1]) }),
		"grad_pow_scalar_0":       gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].PowScalar(0) }),
		"grad_scalar_pow_base0":   gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return tensor.ScalarPow(0, in[0]) }),
		"grad_abs_zero":           gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Abs() }),
		"grad_remainder":          gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Rem(in[1]) }),
	}
	cmp := map[string]func(a, b *tensor.Tensor) *tensor.Tensor{
		"eq": (*tensor.Tensor).Eq, "ne": (*tensor.Tensor).Ne, "lt": (*tensor.Tensor).Lt,
		"le": (*tensor.Tensor).Le, "gt": (*tensor.Tensor).Gt, "ge": (*tensor.Tensor).Ge,
	}
	cmpScalar := map[string]func(a *tensor.Tensor, s float64) *tensor.Tensor{
		"eq": (*tensor.Tensor).EqScalar, "ne": (*tensor.Tensor).NeScalar, "lt": (*tensor.Tensor).LtScalar,
		"le": (*tensor.Tensor).LeScalar, "gt": (*tensor.Tensor).GtScalar, "ge": (*tensor.Tensor).GeScalar,
	}
	for name, op := range cmp {
		table["cmp_"+name] = func(f mathCase) map[string]*tensor.Tensor { return out(op(f.T("a"), f.T("b"))) }
		sop := cmpScalar[name]
		table["cmp_scalar_"+name] = func(f mathCase) map[string]*tensor.Tensor { return out(sop(f.T("a"), 2)) }
	}
	unary := map[string]func(*tensor.Tensor) *tensor.Tensor{
		"abs": (*tensor.Tensor).Abs, "sign": (*tensor.Tensor).Sign, "log1p": (*tensor.Tensor).Log1p,
		"sqrt": (*tensor.Tensor).Sqrt, "rsqrt": (*tensor.Tensor).Rsqrt, "reciprocal": (*tensor.Tensor).Reciprocal,
		"erf": (*tensor.Tensor).Erf, "sin": (*tensor.Tensor).Sin, "cos": (*tensor.Tensor).Cos,
		"tan": (*tensor.Tensor).Tan, "floor": (*tensor.Tensor).Floor, "ceil": (*tensor.Tensor).Ceil,
		"round": (*tensor.Tensor).Round, "isnan": (*tensor.Tensor).IsNaN, "isinf": (*tensor.Tensor).IsInf,
	}
	for name, op := range unary {
		table["unary_"+name] = func(f mathCase) map[string]*tensor.Tensor { return out(op(f.T("x"))) }
		table["unary_int_"+name] = func(f mathCase) map[string]*tensor.Tensor { return out(op(f.T("x"))) }
	}
	return table
}

func TestMathFixtures(t *testing.T) {
	table := mathBinaryFixtures()
	cases := loadFixtures(t, "math.json")
	for name := range table {
		// unary_int_* exists only for some ops; the table offers all.
		if _, ok := cases[name]; !ok && strings.HasPrefix(name, "unary_int_") {
			delete(table, name)
		}
	}
	runMathFixtures(t, table)
}

// TestMathFixtureCoverage checks that every case in math.json is checked
// by some test, so a case added to gen_math.py cannot be forgotten.
func TestMathFixtureCoverage(t *testing.T) {
	known := map[string]bool{}
	for _, table := range []map[string]mathFixture{mathBinaryFixtures(), reductionFixtures(), sortFixtures(), rangeFixtures()} {
		for n := range table {
			known[n] = true
		}
	}
	for name := range loadFixtures(t, "math.json") {
		if !known[name] {
			t.Errorf("fixture %s is not checked by any test", name)
		}
	}
}

// inputs builds gradCheck inputs: each spec is (seed, lo, hi, shape...).
func inputs(specs ...[]float64) func(dev tensor.Device) []*tensor.Tensor {
	return func(dev tensor.Device) []*tensor.Tensor {
		out := make([]*tensor.Tensor, len(specs))
		for i, s := range specs {
			shape := make([]int, len(s)-3)
			for k := range shape {
				shape[k] = int(s[3+k])
			}
			out[i] = randFloat64(dev, uint64(s[0]), s[1], s[2], shape...)
		}
		return out
	}
}

func spec(seed, lo, hi float64, shape ...float64) []float64 {
	return append([]float64{seed, lo, hi}, shape...)
}

func TestMathGradients(t *testing.T) {
	unary := func(op func(*tensor.Tensor) *tensor.Tensor) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return op(in[0].Transpose(0, 1)) }
	}
	cases := []gradCase{
		{"pow broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pow(in[1]) },
			inputs(spec(1, 0.5, 2, 2, 3), spec(2, -2, 2, 3))},
		{"pow transposed base broadcast exponent", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Pow(in[1]) },
			inputs(spec(1, 0.5, 2, 3, 2), spec(2, -2, 2, 2, 1))},
		{"pow scalar 2.5", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].PowScalar(2.5) },
			inputs(spec(1, 0.5, 2, 2, 3))},
		{"pow scalar -1.5 of expanded", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Unsqueeze(0).Expand(2, -1).PowScalar(-1.5)
		}, inputs(spec(1, 0.5, 2, 3))},
		{"pow scalar 3 negative base", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].PowScalar(3) },
			inputs(spec(1, -2, 2, 4))},
		{"scalar pow 2", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.ScalarPow(2, in[0]) },
			inputs(spec(1, -2, 2, 2, 3))},
		{"scalar pow 0.5 transposed", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.ScalarPow(0.5, in[0].T()) },
			inputs(spec(1, -2, 2, 2, 3))},
		{"rem positive divisor broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Rem(in[1]) },
			inputs(spec(1, 5.2, 5.8, 2, 3), spec(2, 2.1, 2.4, 3))},
		{"rem negative divisor transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Rem(in[1]) },
			inputs(spec(1, 5.2, 5.8, 3, 2), spec(2, -2.4, -2.1, 2, 3))},
		{"rem scalar", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].RemScalar(0.75) },
			inputs(spec(1, 0.1, 0.7, 2, 3))},
		{"maximum broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Maximum(in[1]) },
			inputs(spec(1, -1, 1, 2, 1, 3), spec(2, -1, 1, 4, 1))},
		{"minimum transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Minimum(in[1]) },
			inputs(spec(1, -1, 1, 3, 2), spec(2, -1, 1, 2, 3))},
		{"clamp", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Clamp(-0.5, 0.7) },
			inputs(spec(1, -2, 2, 3, 4))},
		{"clamp min of expanded", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Expand(3, 4).ClampMin(0.1) },
			inputs(spec(1, -2, 2, 1, 4))},
		{"clamp max", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].ClampMax(0.1) }, inputs(spec(1, -2, 2, 3, 4))},
		{"abs", unary((*tensor.Tensor).Abs), inputs(spec(1, -2, 2, 3, 4))},
		{"sign", unary((*tensor.Tensor).Sign), inputs(spec(1, -2, 2, 3, 4))},
		{"log1p", unary((*tensor.Tensor).Log1p), inputs(spec(1, -0.5, 2, 3, 4))},
		{"sqrt", unary((*tensor.Tensor).Sqrt), inputs(spec(1, 0.2, 2, 3, 4))},
		{"rsqrt", unary((*tensor.Tensor).Rsqrt), inputs(spec(1, 0.2, 2, 3, 4))},
		{"reciprocal", unary((*tensor.Tensor).Reciprocal), inputs(spec(1, 0.2, 2, 3, 4))},
		{"erf", unary((*tensor.Tensor).Erf), inputs(spec(1, -2, 2, 3, 4))},
		{"sin", unary((*tensor.Tensor).Sin), inputs(spec(1, -3, 3, 3, 4))},
		{"cos", unary((*tensor.Tensor).Cos), inputs(spec(1, -3, 3, 3, 4))},
		{"tan", unary((*tensor.Tensor).Tan), inputs(spec(1, -1.2, 1.2, 3, 4))},
		{"floor", unary((*tensor.Tensor).Floor), inputs(spec(1, -3, 3, 3, 4))},
		{"ceil", unary((*tensor.Tensor).Ceil), inputs(spec(1, -3, 3, 3, 4))},
		{"round", unary((*tensor.Tensor).Round), inputs(spec(1, -3, 3, 3, 4))},
	}
	runGradCases(t, cases)
}

// TestMathPromotion checks result dtypes (and a value) against PyTorch's
// type-promotion rules.
func TestMathPromotion(t *testing.T) {
	ones := func(dev tensor.Device, d tensor.DType) *tensor.Tensor { return tensor.FullOf(dev, d, 2, 3) }
	cases := []struct {
		name  string
		f     func(dev tensor.Device) *tensor.Tensor
		dtype tensor.DType
		value float64
	}{
		{"bool + int32 is int32", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Bool).Add(ones(d, tensor.Int32)) }, tensor.Int32, 3},
		{"bool + int scalar is int64", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Bool).AddScalar(1) }, tensor.Int64, 2},
		{"int64 + float scalar is float32", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int64).AddScalar(0.5) }, tensor.Float32, 2.5},
		{"int64 × int scalar stays int64", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int64).MulScalar(3) }, tensor.Int64, 6},
		{"float16 + bfloat16 is float32", func(d tensor.Device) *tensor.Tensor {
			return ones(d, tensor.Float16).Add(ones(d, tensor.BFloat16))
		}, tensor.Float32, 4},
		{"int64 / int64 is float32", func(d tensor.Device) *tensor.Tensor {
			return ones(d, tensor.Int64).Div(tensor.FullOf(d, tensor.Int64, 4, 3))
		}, tensor.Float32, 0.5},
		{"uint8 + int32 is int32", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Uint8).Add(ones(d, tensor.Int32)) }, tensor.Int32, 4},
		{"float16 + int64 is float16", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Float16).Add(ones(d, tensor.Int64)) }, tensor.Float16, 4},
		{"float32 + float64 is float64", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Float32).Add(ones(d, tensor.Float64)) }, tensor.Float64, 4},
		{"int64 pow float32 is float32", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int64).Pow(ones(d, tensor.Float32)) }, tensor.Float32, 4},
		{"int32 pow int64 is int64", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int32).Pow(ones(d, tensor.Int64)) }, tensor.Int64, 4},
		{"int64 rem float64 is float64", func(d tensor.Device) *tensor.Tensor {
			return tensor.FullOf(d, tensor.Int64, 5, 3).Rem(ones(d, tensor.Float64))
		}, tensor.Float64, 1},
		{"int64 floor-divide int32 is int64", func(d tensor.Device) *tensor.Tensor {
			return tensor.FullOf(d, tensor.Int64, -5, 3).FloorDivide(ones(d, tensor.Int32))
		}, tensor.Int64, -3},
		{"int64 maximum float16 is float16", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int64).Maximum(ones(d, tensor.Float16)) }, tensor.Float16, 2},
		{"int64 eq float32 is bool", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int64).Eq(ones(d, tensor.Float32)) }, tensor.Bool, 1},
		{"bool pow 2 is int64", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Bool).PowScalar(2) }, tensor.Int64, 1},
		{"int32 pow 2 stays int32", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int32).PowScalar(2) }, tensor.Int32, 4},
		{"int64 pow 0.5 is float32", func(d tensor.Device) *tensor.Tensor { return tensor.FullOf(d, tensor.Int64, 4, 3).PowScalar(0.5) }, tensor.Float32, 2},
		{"float16 pow 2 stays float16", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Float16).PowScalar(2) }, tensor.Float16, 4},
		{"2 pow int64 is int64", func(d tensor.Device) *tensor.Tensor { return tensor.ScalarPow(2, ones(d, tensor.Int64)) }, tensor.Int64, 4},
		{"2.5 pow int64 is float32", func(d tensor.Device) *tensor.Tensor { return tensor.ScalarPow(2.5, ones(d, tensor.Int64)) }, tensor.Float32, 6.25},
		{"int clamp with int bounds stays int", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int32).Clamp(0, 1) }, tensor.Int32, 1},
		{"int clamp with fractional bound is float32", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int64).ClampMax(1.5) }, tensor.Float32, 1.5},
		{"sqrt of int is float32", func(d tensor.Device) *tensor.Tensor { return tensor.FullOf(d, tensor.Int64, 9, 3).Sqrt() }, tensor.Float32, 3},
		{"abs of int stays int", func(d tensor.Device) *tensor.Tensor { return tensor.FullOf(d, tensor.Int32, -9, 3).Abs() }, tensor.Int32, 9},
		{"sin of float64 stays float64", func(d tensor.Device) *tensor.Tensor { return tensor.ZerosOf(d, tensor.Float64, 3).Sin() }, tensor.Float64, 0},
		{"sqrt of bfloat16 stays bfloat16", func(d tensor.Device) *tensor.Tensor { return tensor.FullOf(d, tensor.BFloat16, 4, 3).Sqrt() }, tensor.BFloat16, 2},
		{"isnan of int is bool", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int64).IsNaN() }, tensor.Bool, 0},
		{"logical and of floats is bool", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Float32).LogicalAnd(ones(d, tensor.Int64)) }, tensor.Bool, 1},
		{"cumsum of int32 is int64", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int32).Cumsum(0).Sum() }, tensor.Int64, 12},
		{"prod of bool is int64", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Bool).Prod() }, tensor.Int64, 1},
		{"max of int32 stays int32", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Int32).Max() }, tensor.Int32, 2},
		{"logsumexp of int64 is float32", func(d tensor.Device) *tensor.Tensor { return tensor.ZerosOf(d, tensor.Int64, 3).LogSumExp() }, tensor.Float32, math.Log(3)},
		{"argmax is int64", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Float16).ArgmaxAll() }, tensor.Int64, 0},
		{"var of float16 stays float16", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Float16).Var() }, tensor.Float16, 0},
		{"any of float is bool", func(d tensor.Device) *tensor.Tensor { return ones(d, tensor.Float32).Any() }, tensor.Bool, 1},
		{"sort keeps int32", func(d tensor.Device) *tensor.Tensor { v, _ := ones(d, tensor.Int32).Sort(0, false); return v.Max() }, tensor.Int32, 2},
		{"arange of integers is int64", func(d tensor.Device) *tensor.Tensor { return tensor.Arange(d, 0, 5, 1).Sum() }, tensor.Int64, 10},
		{"arange with a fraction is float32", func(d tensor.Device) *tensor.Tensor { return tensor.Arange(d, 0, 1, 0.5).Sum() }, tensor.Float32, 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				got := c.f(dev)
				if got.DType() != c.dtype {
					t.Fatalf("dtype %s, want %s", got.DType(), c.dtype)
				}
				v := got.Float64s()
				if math.Abs(v[0]-c.value) > 1e-6 {
					t.Errorf("value %v, want %v", v[0], c.value)
				}
			})
		})
	}
}

// TestMathInt64Exact checks integer arithmetic beyond float64's 2^53,
// where a float path would round.
func TestMathInt64Exact(t *testing.T) {
	const big = math.MaxInt64
	cases := []struct {
		name string
		f    func(a, b *tensor.Tensor) *tensor.Tensor
		a, b []int64
		want []int64
	}{
		{"add", (*tensor.Tensor).Add, []int64{1<<53 + 1, -(1 << 62)}, []int64{2, -(1 << 62)}, []int64{1<<53 + 3, math.MinInt64}},
		{"mul", (*tensor.Tensor).Mul, []int64{3037000499, -(1<<31 + 1)}, []int64{3037000499, 1 << 31}, []int64{9223372030926249001, -(1<<62 + 1<<31)}},
		{"rem", (*tensor.Tensor).Rem, []int64{big, -big, 1<<53 + 1, -7}, []int64{10, 10, 2, 1 << 60}, []int64{7, 3, 1, 1<<60 - 7}},
		{"floor divide", (*tensor.Tensor).FloorDivide, []int64{big, -big, 1<<53 + 1}, []int64{10, 10, -1}, []int64{922337203685477580, -922337203685477581, -(1<<53 + 1)}},
		{"maximum", (*tensor.Tensor).Maximum, []int64{1<<53 + 1, -big}, []int64{1 << 53, -big + 1}, []int64{1<<53 + 1, -big + 1}},
		{"minimum", (*tensor.Tensor).Minimum, []int64{1<<53 + 1, -big}, []int64{1 << 53, -big + 1}, []int64{1 << 53, -big}},
		{"pow", (*tensor.Tensor).Pow, []int64{3, -3}, []int64{39, 39}, []int64{4052555153018976267, -4052555153018976267}},
		{"eq", func(a, b *tensor.Tensor) *tensor.Tensor { return a.Eq(b).To(tensor.Int64) }, []int64{1<<53 + 1}, []int64{1 << 53}, []int64{0}},
		{"rem scalar", func(a, _ *tensor.Tensor) *tensor.Tensor { return a.RemScalar(10) }, []int64{big, -big}, nil, []int64{7, 3}},
		{"floor divide scalar", func(a, _ *tensor.Tensor) *tensor.Tensor { return a.FloorDivideScalar(-10) }, []int64{big}, nil, []int64{-922337203685477581}},
		{"pow scalar", func(a, _ *tensor.Tensor) *tensor.Tensor { return a.PowScalar(39) }, []int64{3}, nil, []int64{4052555153018976267}},
		{"cumsum", func(a, _ *tensor.Tensor) *tensor.Tensor { return a.Cumsum(0) }, []int64{1 << 53, 1, 1}, nil, []int64{1 << 53, 1<<53 + 1, 1<<53 + 2}},
		{"cumprod", func(a, _ *tensor.Tensor) *tensor.Tensor { return a.Cumprod(0) }, []int64{3037000499, 3037000499}, nil, []int64{3037000499, 9223372030926249001}},
		{"prod", func(a, _ *tensor.Tensor) *tensor.Tensor { return a.Prod().Reshape(1) }, []int64{3037000499, 3037000499}, nil, []int64{9223372030926249001}},
		{"clamp", func(a, _ *tensor.Tensor) *tensor.Tensor { return a.Clamp(-5, 5) }, []int64{1<<53 + 1, 3}, nil, []int64{5, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				a := tensor.FromInt64s(dev, c.a)
				var b *tensor.Tensor
				if c.b != nil {
					b = tensor.FromInt64s(dev, c.b)
				}
				got := c.f(a, b)
				if got.DType() != tensor.Int64 {
					t.Fatalf("dtype %s, want int64", got.DType())
				}
				if g := got.Int64s(); fmt.Sprint(g) != fmt.Sprint(c.want) {
					t.Errorf("got %v, want %v", g, c.want)
				}
			})
		})
	}
}

// TestMathNoGradient checks that predicates, indices and floor division
// record nothing even on autodiff inputs.
func TestMathNoGradient(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := randFloat64(dev.Autodiff(), 1, -1, 1, 2, 3).RequireGrad()
		y := randFloat64(dev.Autodiff(), 2, -1, 1, 2, 3).RequireGrad()
		_, idx := x.MaxDim(1, false)
		for name, r := range map[string]*tensor.Tensor{
			"IsNaN": x.IsNaN(), "IsInf": x.IsInf(), "Lt": x.Lt(y), "GeScalar": x.GeScalar(0),
			"LogicalAnd": x.LogicalAnd(y), "LogicalNot": x.LogicalNot(), "FloorDivide": x.FloorDivide(y),
			"Argmax": x.Argmax(1), "ArgmaxAll": x.ArgmaxAll(), "Argsort": x.Argsort(1, false),
			"MaxDim indices": idx, "Any": x.Any(), "All": x.AllKeep(0),
		} {
			if r.RequiresGrad() || r.Node() != nil {
				t.Errorf("%s records a gradient", name)
			}
		}
		if v := x.Pow(y).Node(); v == nil || v.Op != "pow" {
			t.Errorf("Pow recorded %v, want a pow node", v)
		}
		// Results keep the autodiff view of inputs that need no gradient,
		// so they can meet parameters later.
		c := randFloat64(dev.Autodiff(), 3, -1, 1, 2, 3)
		for name, r := range map[string]*tensor.Tensor{
			"Sign": c.Sign(), "LogSumExp": c.LogSumExp(1), "Clamp": c.Clamp(0, 1), "Max": c.Max(),
			"Cumprod": c.Cumprod(0), "Std": c.Std(), "Eq": c.Eq(c), "Arange": tensor.Arange(dev.Autodiff(), 0, 3, 1),
		} {
			if !r.Device().IsAutodiff() {
				t.Errorf("%s of an autodiff tensor is on %s", name, r.Device())
			}
		}
	})
}

// badCase is a call that must panic with a *tensor.Error of kind err whose
// message names op.
type badCase struct {
	name string
	op   string
	err  error
	f    func(dev tensor.Device)
}

func runBadCases(t *testing.T, cases []badCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachDevice(t, func(t *testing.T, dev tensor.Device) {
				err := tensor.Try(func() { c.f(dev) })
				if err == nil {
					t.Fatal("no error")
				}
				var te *tensor.Error
				if !errors.As(err, &te) {
					t.Fatalf("error %v is not a *tensor.Error", err)
				}
				if !errors.Is(err, c.err) {
					t.Errorf("error %q is not %v", err, c.err)
				}
				if !strings.HasPrefix(err.Error(), "tensor."+c.op+":") {
					t.Errorf("error %q does not name tensor.%s", err, c.op)
				}
			})
		})
	}
}

func TestMathBadInput(t *testing.T) {
	other := func(dev tensor.Device) tensor.Device {
		if dev.Kind() == "cpu" {
			return tensor.MustDevice("strict")
		}
		return tensor.CPU()
	}
	released := func(dev tensor.Device) *tensor.Tensor {
		x := tensor.Ones(dev, 3)
		x.Release()
		return x
	}
	runBadCases(t, []badCase{
		{"pow shapes do not broadcast", "Pow", tensor.ErrShape, func(d tensor.Device) { tensor.Ones(d, 2, 3).Pow(tensor.Ones(d, 4)) }},
		{"rem across devices", "Rem", tensor.ErrDevice, func(d tensor.Device) {
			o := tensor.Ones(other(d), 3)
			defer o.Release()
			tensor.Ones(d, 3).Rem(o)
		}},
		{"maximum of released tensor", "Maximum", tensor.ErrReleased, func(d tensor.Device) { tensor.Ones(d, 3).Maximum(released(d)) }},
		{"floor divide shapes", "FloorDivide", tensor.ErrShape, func(d tensor.Device) { tensor.Ones(d, 2).FloorDivide(tensor.Ones(d, 3)) }},
		{"integer to negative power", "PowScalar", tensor.ErrArgument, func(d tensor.Device) { tensor.OnesOf(d, tensor.Int64, 3).PowScalar(-1) }},
		{"abs of released tensor", "Abs", tensor.ErrReleased, func(d tensor.Device) { released(d).Abs() }},
		{"sqrt of nil tensor", "Sqrt", tensor.ErrArgument, func(d tensor.Device) { (*tensor.Tensor)(nil).Sqrt() }},
		{"clamp of released tensor", "Clamp", tensor.ErrReleased, func(d tensor.Device) { released(d).Clamp(0, 1) }},
		{"eq shapes do not broadcast", "Eq", tensor.ErrShape, func(d tensor.Device) { tensor.Ones(d, 2, 3).Eq(tensor.Ones(d, 2)) }},
		{"logical or across devices", "LogicalOr", tensor.ErrDevice, func(d tensor.Device) {
			o := tensor.Ones(other(d), 3)
			defer o.Release()
			tensor.Ones(d, 3).LogicalOr(o)
		}},
		{"is nan of released tensor", "IsNaN", tensor.ErrReleased, func(d tensor.Device) { released(d).IsNaN() }},
		{"scalar pow of released tensor", "ScalarPow", tensor.ErrReleased, func(d tensor.Device) { tensor.ScalarPow(2, released(d)) }},
		{"lt scalar of released tensor", "LtScalar", tensor.ErrReleased, func(d tensor.Device) { released(d).LtScalar(1) }},
	})
}

// TestMathGradientDTypes runs every differentiable op of this area on each
// float dtype, with a second input of another dtype where the op takes one,
// and checks that each gradient has its input's dtype and shape (the
// backward rules mix dtypes through Where, Scatter and promotion).
func TestMathGradientDTypes(t *testing.T) {
	first := func(v, _ *tensor.Tensor) *tensor.Tensor { return v }
	ops := map[string]func(x, y *tensor.Tensor) *tensor.Tensor{
		"Pow":           func(x, y *tensor.Tensor) *tensor.Tensor { return x.Pow(y) },
		"Rem":           func(x, y *tensor.Tensor) *tensor.Tensor { return x.Rem(y) },
		"Maximum":       func(x, y *tensor.Tensor) *tensor.Tensor { return x.Maximum(y) },
		"Minimum":       func(x, y *tensor.Tensor) *tensor.Tensor { return x.Minimum(y) },
		"PowScalar":     func(x, _ *tensor.Tensor) *tensor.Tensor { return x.PowScalar(1.5) },
		"ScalarPow":     func(x, _ *tensor.Tensor) *tensor.Tensor { return tensor.ScalarPow(1.5, x) },
		"RemScalar":     func(x, _ *tensor.Tensor) *tensor.Tensor { return x.RemScalar(0.7) },
		"Clamp":         func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Clamp(0.6, 1.2) },
		"Sign":          func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Sign() },
		"Sqrt":          func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Sqrt() },
		"Prod":          func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Prod(1) },
		"Max":           func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Max() },
		"MinKeep":       func(x, _ *tensor.Tensor) *tensor.Tensor { return x.MinKeep(0) },
		"MaxDim":        func(x, _ *tensor.Tensor) *tensor.Tensor { return first(x.MaxDim(1, false)) },
		"Var":           func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Var(1) },
		"StdCorrection": func(x, _ *tensor.Tensor) *tensor.Tensor { return x.StdCorrection(0, true) },
		"LogSumExp":     func(x, _ *tensor.Tensor) *tensor.Tensor { return x.LogSumExp(0) },
		"Cumsum":        func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Cumsum(1) },
		"Cumprod":       func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Cumprod(1) },
		"Sort":          func(x, _ *tensor.Tensor) *tensor.Tensor { return first(x.Sort(1, true)) },
		"TopK":          func(x, _ *tensor.Tensor) *tensor.Tensor { return first(x.TopK(2, 1, false)) },
	}
	dtypes := []tensor.DType{tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16}
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		for name, op := range ops {
			for i, dx := range dtypes {
				dy := dtypes[(i+1)%len(dtypes)]
				x := tensor.Uniform(dev, 0.5, 1.5, 2, 3).To(dx).ToDevice(ad).RequireGrad()
				y := tensor.Uniform(dev, 0.5, 1.5, 3).To(dy).ToDevice(ad).RequireGrad()
				grads := op(x, y).Sum().Backward()
				for k, in := range []*tensor.Tensor{x, y} {
					g := grads.Get(in)
					if g == nil {
						continue // the op does not use y
					}
					if g.DType() != in.DType() || fmt.Sprint(g.Shape()) != fmt.Sprint(in.Shape()) {
						t.Errorf("%s(%s, %s): gradient %d is %s%v, want %s%v", name, dx, dy, k, g.DType(), g.Shape(), in.DType(), in.Shape())
					}
					for _, v := range g.Float64s() {
						if math.IsNaN(v) {
							t.Errorf("%s(%s, %s): gradient %d has NaN", name, dx, dy, k)
							break
						}
					}
				}
			}
		}
	})
}
