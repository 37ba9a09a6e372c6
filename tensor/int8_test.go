package tensor_test

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// int8Ops maps the op part of a testdata/int8.json case name (before the
// last "_int8"/"_int16" or the promotion pair) to the Kiln call it checks.
// Casts (whose target is the output's dtype) and max_dim0 (two outputs)
// are checked in TestInt8Fixtures itself.
var int8Ops = map[string]func(in map[string]*tensor.Tensor) *tensor.Tensor{
	"cast_float32_from": func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].To(tensor.Float32) },
	"add":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Add(in["b"]) },
	"sub":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Sub(in["b"]) },
	"mul":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Mul(in["b"]) },
	"neg":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Neg() },
	"abs":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Abs() },
	"floordiv":          func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].FloorDivide(in["b"]) },
	"remainder":         func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Rem(in["b"]) },
	"and":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].BitwiseAnd(in["b"]) },
	"or":                func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].BitwiseOr(in["b"]) },
	"xor":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].BitwiseXor(in["b"]) },
	"not":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].BitwiseNot() },
	"shl":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].BitwiseLeftShift(in["b"]) },
	"shr":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].BitwiseRightShift(in["b"]) },
	"eq":                func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Eq(in["b"]) },
	"lt":                func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Lt(in["b"]) },
	"ge":                func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Ge(in["b"]) },
	"sum":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Sum() },
	"sum_dim1":          func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Sum(1) },
	"max":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Max() },
	"min":               func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Min() },
	"argmax_dim1":       func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Argmax(1) },
	"gather":            func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Gather(0, in["index"]) },
	"index_select":      func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].IndexSelect(0, in["index"]) },
	"promote":           func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].Add(in["b"]) },
	"scalar_add_int":    func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].AddScalar(1) },
	"scalar_mul_int":    func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].MulScalar(3) },
	"scalar_add_float":  func(in map[string]*tensor.Tensor) *tensor.Tensor { return in["a"].AddScalar(0.5) },
}

// int8Input builds a fixture input with its own dtype (uint8 and int32
// through an exact float64 conversion, which the fixture loader lacks).
func int8Input(dev tensor.Device, f fixtureTensor) *tensor.Tensor {
	dt, err := backends.ParseDType(f.DType)
	if err != nil {
		panic(err)
	}
	switch dt {
	case tensor.Uint8, tensor.Int32:
		flat := tensor.FromFloat64s(dev, f.Float64s(), len(f.Data))
		return flat.To(dt).Reshape(f.Shape...)
	}
	return f.Tensor(dev)
}

// int8Op returns the op of a case name: the name less its dtype suffix.
func int8Op(name string) string {
	if strings.HasPrefix(name, "promote_") {
		return "promote"
	}
	return name[:strings.LastIndex(name, "_")]
}

// checkExact fails unless got has want's dtype, shape and exact values.
func checkExact(t *testing.T, what string, got *tensor.Tensor, want fixtureTensor) {
	t.Helper()
	wdt, err := backends.ParseDType(want.DType)
	if err != nil {
		t.Fatal(err)
	}
	if got.DType() != wdt {
		t.Errorf("%s: dtype %s, want %s (PyTorch)", what, got.DType(), wdt)
	}
	shape := want.Shape
	if shape == nil {
		shape = []int{}
	}
	assertValues(t, what, got, shape, want.Float64s(), 0, 0)
}

// TestInt8Fixtures checks int8 and int16 casts, wrapping arithmetic, floor
// division and remainder, bitwise ops, comparisons, reductions, promotion
// and gathers against PyTorch 1.13 (testdata/gen_int8.py), on every device.
func TestInt8Fixtures(t *testing.T) {
	cases := loadFixtures(t, "int8.json")
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, name := range names {
			c := cases[name]
			t.Run(name, func(t *testing.T) {
				tensor.Scope(func() {
					in := map[string]*tensor.Tensor{}
					for k, f := range c {
						if k == "a" || k == "b" || k == "index" {
							in[k] = int8Input(dev, f)
						}
					}
					op := int8Op(name)
					if op == "max_dim0" {
						v, i := in["a"].MaxDim(0, false)
						checkExact(t, "values", v, c["values"])
						checkExact(t, "indices", i, c["indices"])
						return
					}
					var got *tensor.Tensor
					switch op {
					case "cast_float", "cast_int64":
						dt, _ := backends.ParseDType(c["out"].DType)
						got = in["a"].To(dt)
					default:
						f := int8Ops[op]
						if f == nil {
							t.Fatalf("no Kiln op for case %s (op %q)", name, op)
						}
						got = f(in)
					}
					checkExact(t, "out", got, c["out"])
				})
			})
		}
	})
}

// TestInt8IndexDTypes checks that Int8 and Int16 tensors serve as indices
// (converted to Int64 as Int32 and Uint8 indices are).
func TestInt8IndexDTypes(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		tensor.Scope(func() {
			x := tensor.FromFloat32s(dev, []float32{10, 20, 30, 40}, 4)
			for _, idx := range []*tensor.Tensor{
				tensor.FromInt8s(dev, []int8{3, 0, -1}, 3),
				tensor.FromInt16s(dev, []int16{3, 0, -1}, 3),
			} {
				assertValues(t, "IndexSelect by "+idx.DType().String(), x.IndexSelect(0, idx), []int{3}, []float64{40, 10, 40}, 0, 0)
			}
		})
	})
}

// TestInt8Promote checks backends.Promote on the new dtypes against
// torch.promote_types.
func TestInt8Promote(t *testing.T) {
	for _, c := range []struct{ a, b, want tensor.DType }{
		{tensor.Int8, tensor.Uint8, tensor.Int16},
		{tensor.Uint8, tensor.Int8, tensor.Int16},
		{tensor.Int8, tensor.Int16, tensor.Int16},
		{tensor.Int16, tensor.Uint8, tensor.Int16},
		{tensor.Int16, tensor.Int32, tensor.Int32},
		{tensor.Int8, tensor.Int64, tensor.Int64},
		{tensor.Int8, tensor.Bool, tensor.Int8},
		{tensor.Bool, tensor.Int16, tensor.Int16},
		{tensor.Int8, tensor.Float16, tensor.Float16},
		{tensor.Int16, tensor.BFloat16, tensor.BFloat16},
		{tensor.Int16, tensor.Float32, tensor.Float32},
	} {
		if got := backends.Promote(c.a, c.b); got != c.want {
			t.Errorf("Promote(%s, %s) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	for _, s := range []string{"int8", "i8", "int16", "i16", "short"} {
		if _, err := backends.ParseDType(s); err != nil {
			t.Errorf("ParseDType(%q): %v", s, err)
		}
	}
}

// TestInt8CastOutOfRange checks what To documents for floats outside the
// int8 and int16 ranges (undefined in PyTorch, so not in the fixtures):
// truncation to int64, then a two's complement wrap; NaN gives 0.
func TestInt8CastOutOfRange(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		tensor.Scope(func() {
			x := tensor.FromFloat64s(dev, []float64{300.7, -129.9, 65536 + 5.5, math.NaN(), -40000.2}, 5)
			assertValues(t, "Int8", x.To(tensor.Int8), []int{5}, []float64{44, 127, 5, 0, -64}, 0, 0)
			assertValues(t, "Int16", x.To(tensor.Int16), []int{5}, []float64{300, -129, 5, 0, 25536}, 0, 0)
		})
	})
}
