package tensor_test

import (
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func bitwiseFixtures() map[string]mathFixture {
	type binop = func(a, b *tensor.Tensor) *tensor.Tensor
	type scalarop = func(a *tensor.Tensor, s int64) *tensor.Tensor
	// as runs f on inputs converted to dtype d and returns Int64, for the
	// dtypes the fixture files cannot hold (Uint8, Int32).
	as := func(d tensor.DType, f binop) mathFixture {
		return func(c mathCase) map[string]*tensor.Tensor {
			return out(f(c.T("a").To(d), c.T("b").To(d)).To(tensor.Int64))
		}
	}
	table := map[string]mathFixture{}
	bin := func(f binop) mathFixture {
		return func(c mathCase) map[string]*tensor.Tensor { return out(f(c.T("a"), c.T("b"))) }
	}
	scalar := func(f scalarop, s int64) mathFixture {
		return func(c mathCase) map[string]*tensor.Tensor { return out(f(c.T("a"), s)) }
	}
	for name, ops := range map[string]struct {
		f binop
		s scalarop
	}{
		"and": {(*tensor.Tensor).BitwiseAnd, (*tensor.Tensor).BitwiseAndScalar},
		"or":  {(*tensor.Tensor).BitwiseOr, (*tensor.Tensor).BitwiseOrScalar},
		"xor": {(*tensor.Tensor).BitwiseXor, (*tensor.Tensor).BitwiseXorScalar},
	} {
		p := "bitwise_" + name
		table[p] = bin(ops.f)
		table[p+"_scalar"] = scalar(ops.s, 6)
		table[p+"_bool"] = bin(ops.f)
		table[p+"_bool_int"] = bin(ops.f)
		table[p+"_broadcast"] = bin(ops.f)
		f := ops.f
		table[p+"_t"] = func(c mathCase) map[string]*tensor.Tensor { return out(f(c.T("a").T(), c.T("b"))) }
		table[p+"_uint8"] = as(tensor.Uint8, ops.f)
	}
	not := func(c mathCase) map[string]*tensor.Tensor { return out(c.T("a").BitwiseNot()) }
	table["bitwise_not"] = not
	table["bitwise_not_bool"] = not
	table["bitwise_not_uint8"] = func(c mathCase) map[string]*tensor.Tensor {
		return out(c.T("a").To(tensor.Uint8).BitwiseNot().To(tensor.Int64))
	}
	table["bitwise_empty"] = bin((*tensor.Tensor).BitwiseAnd)
	table["left_shift"] = bin((*tensor.Tensor).BitwiseLeftShift)
	table["right_shift"] = bin((*tensor.Tensor).BitwiseRightShift)
	table["left_shift_scalar"] = scalar((*tensor.Tensor).BitwiseLeftShiftScalar, 3)
	table["right_shift_scalar"] = scalar((*tensor.Tensor).BitwiseRightShiftScalar, 2)
	table["left_shift_broadcast"] = bin((*tensor.Tensor).BitwiseLeftShift)
	table["left_shift_uint8"] = as(tensor.Uint8, (*tensor.Tensor).BitwiseLeftShift)
	table["right_shift_uint8"] = as(tensor.Uint8, (*tensor.Tensor).BitwiseRightShift)
	table["left_shift_int32"] = as(tensor.Int32, (*tensor.Tensor).BitwiseLeftShift)
	return table
}

func TestBitwiseFixtures(t *testing.T) { runElementwise2Fixtures(t, bitwiseFixtures()) }

// TestBitwiseInt64Exact checks values beyond 2^53, which the fixture files
// (JSON doubles) cannot hold.
func TestBitwiseInt64Exact(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		a := tensor.FromInt64s(dev, []int64{math.MaxInt64, math.MinInt64 + 1, 1<<62 + 1})
		b := tensor.FromInt64s(dev, []int64{1<<60 + 3, -1, 1})
		check := func(name string, got *tensor.Tensor, want []int64) {
			g := got.Int64s()
			for i := range want {
				if g[i] != want[i] {
					t.Errorf("%s[%d] = %d, want %d", name, i, g[i], want[i])
				}
			}
		}
		check("and", a.BitwiseAnd(b), []int64{(1<<60 + 3) & math.MaxInt64, math.MinInt64 + 1, 1})
		check("or", a.BitwiseOr(b), []int64{math.MaxInt64, -1, 1<<62 + 1})
		check("xor", a.BitwiseXor(b), []int64{math.MaxInt64 ^ (1<<60 + 3), ^(math.MinInt64 + 1), 1 << 62})
		check("not", a.BitwiseNot(), []int64{math.MinInt64, math.MaxInt64 - 1, ^(1<<62 + 1)})
		check("shl", a.BitwiseLeftShiftScalar(1), []int64{-2, 2, math.MinInt64 + 2})
		check("shr", a.BitwiseRightShiftScalar(61), []int64{3, -4, 2})
		check("shift out", a.BitwiseLeftShift(tensor.FromInt64s(dev, []int64{64, -1, 63})), []int64{0, 0, math.MinInt64})
	})
}

func TestBitwiseBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		i := tensor.FromInt64s(dev, []int64{1, 2})
		f := tensor.Zeros(dev, 2)
		b := tensor.FromBools(dev, []bool{true, false})
		cases := []struct {
			name string
			f    func()
			want error
		}{
			{"and float", func() { i.BitwiseAnd(f) }, tensor.ErrDType},
			{"or float receiver", func() { f.BitwiseOr(i) }, tensor.ErrDType},
			{"not float", func() { f.BitwiseNot() }, tensor.ErrDType},
			{"xor scalar float", func() { f.BitwiseXorScalar(1) }, tensor.ErrDType},
			{"shift bool", func() { b.BitwiseLeftShift(i) }, tensor.ErrDType},
			{"shift scalar bool", func() { b.BitwiseRightShiftScalar(1) }, tensor.ErrDType},
			{"and shapes", func() { i.BitwiseAnd(tensor.FromInt64s(dev, []int64{1, 2, 3})) }, tensor.ErrShape},
		}
		for _, c := range cases {
			err := tensor.Try(c.f)
			var te *tensor.Error
			if !errors.Is(err, c.want) || !errors.As(err, &te) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
	})
}
