package tensor_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// rangeFixtures covers ranges.go.
func rangeFixtures() map[string]mathFixture {
	r := func(f func(dev tensor.Device) *tensor.Tensor) mathFixture {
		return func(c mathCase) map[string]*tensor.Tensor { return out(f(c.dev)) }
	}
	return map[string]mathFixture{
		"arange_int":          r(func(d tensor.Device) *tensor.Tensor { return tensor.Arange(d, 0, 10, 3) }),
		"arange_neg_step":     r(func(d tensor.Device) *tensor.Tensor { return tensor.Arange(d, 5, -5, -2) }),
		"arange_float":        r(func(d tensor.Device) *tensor.Tensor { return tensor.Arange(d, 0, 1, 0.3) }),
		"arange_float_start":  r(func(d tensor.Device) *tensor.Tensor { return tensor.Arange(d, -1.5, 2, 0.5) }),
		"arange_fraction_end": r(func(d tensor.Device) *tensor.Tensor { return tensor.Arange(d, 0, 2.5, 1) }),
		"arange_empty":        r(func(d tensor.Device) *tensor.Tensor { return tensor.Arange(d, 3, 3, 1) }),
		"arange_float64":      r(func(d tensor.Device) *tensor.Tensor { return tensor.ArangeOf(d, tensor.Float64, 0, 1, 0.1) }),
		"linspace_7":          r(func(d tensor.Device) *tensor.Tensor { return tensor.Linspace(d, 0, 1, 7) }),
		"linspace_rev":        r(func(d tensor.Device) *tensor.Tensor { return tensor.Linspace(d, 3, -2, 6) }),
		"linspace_1":          r(func(d tensor.Device) *tensor.Tensor { return tensor.Linspace(d, 2, 9, 1) }),
		"linspace_0":          r(func(d tensor.Device) *tensor.Tensor { return tensor.Linspace(d, 2, 9, 0) }),
		"linspace_float64":    r(func(d tensor.Device) *tensor.Tensor { return tensor.LinspaceOf(d, tensor.Float64, -1, 1, 11) }),
		"linspace_int64":      r(func(d tensor.Device) *tensor.Tensor { return tensor.LinspaceOf(d, tensor.Int64, 0, 10, 4) }),
		"eye_2_3":             r(func(d tensor.Device) *tensor.Tensor { return tensor.Eye(d, 2, 3) }),
		"eye_3_2":             r(func(d tensor.Device) *tensor.Tensor { return tensor.Eye(d, 3, 2) }),
		"eye_3_3":             r(func(d tensor.Device) *tensor.Tensor { return tensor.Eye(d, 3, 3) }),
	}
}

// TestRangeFixtures compares with PyTorch exactly: ranges are computed with
// PyTorch's own rounding.
func TestRangeFixtures(t *testing.T) { runMathFixtures(t, rangeFixtures()) }

func TestRangeDTypes(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, d := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16, tensor.Int64, tensor.Int32, tensor.Uint8} {
			a := tensor.ArangeOf(dev, d, 1, 7, 2)
			if a.DType() != d {
				t.Errorf("ArangeOf(%s): dtype %s", d, a.DType())
			}
			assertValues(t, "ArangeOf "+d.String(), a, []int{3}, []float64{1, 3, 5}, 0, 0)
			l := tensor.LinspaceOf(dev, d, 0, 4, 5)
			assertValues(t, "LinspaceOf "+d.String(), l, []int{5}, []float64{0, 1, 2, 3, 4}, 0, 0)
			e := tensor.EyeOf(dev, d, 2, 2)
			assertValues(t, "EyeOf "+d.String(), e, []int{2, 2}, []float64{1, 0, 0, 1}, 0, 0)
		}
		e := tensor.EyeOf(dev, tensor.Bool, 2, 3)
		assertValues(t, "EyeOf bool", e, []int{2, 3}, []float64{1, 0, 0, 0, 1, 0}, 0, 0)
		z := tensor.Eye(dev, 0, 3)
		assertValues(t, "Eye 0x3", z, []int{0, 3}, nil, 0, 0)
		big := tensor.Arange(dev, 1<<53, 1<<53+3, 1)
		if got := big.Int64s(); got[1] != 1<<53+1 || got[2] != 1<<53+2 {
			t.Errorf("Arange above 2^53: %v", got)
		}
		if v := tensor.Arange(dev, 0, 1, 0.1).Float64s(); len(v) != 10 || math.Abs(v[9]-0.9) > 1e-7 {
			t.Errorf("Arange(0, 1, 0.1): %v", v)
		}
	})
}

func TestRangeBadInput(t *testing.T) {
	runBadCases(t, []badCase{
		{"arange zero step", "Arange", tensor.ErrArgument, func(d tensor.Device) { tensor.Arange(d, 0, 5, 0) }},
		{"arange step of wrong sign", "Arange", tensor.ErrArgument, func(d tensor.Device) { tensor.Arange(d, 5, 0, 1) }},
		{"arange infinite end", "Arange", tensor.ErrArgument, func(d tensor.Device) { tensor.Arange(d, 0, math.Inf(1), 1) }},
		{"arange nan step", "ArangeOf", tensor.ErrArgument, func(d tensor.Device) { tensor.ArangeOf(d, tensor.Float32, 0, 1, math.NaN()) }},
		{"arange of bool", "ArangeOf", tensor.ErrDType, func(d tensor.Device) { tensor.ArangeOf(d, tensor.Bool, 0, 2, 1) }},
		{"linspace negative steps", "Linspace", tensor.ErrArgument, func(d tensor.Device) { tensor.Linspace(d, 0, 1, -1) }},
		{"linspace of bool", "LinspaceOf", tensor.ErrDType, func(d tensor.Device) { tensor.LinspaceOf(d, tensor.Bool, 0, 1, 2) }},
		{"eye negative size", "Eye", tensor.ErrShape, func(d tensor.Device) { tensor.Eye(d, -1, 2) }},
		{"eye of invalid dtype", "EyeOf", tensor.ErrDType, func(d tensor.Device) { tensor.EyeOf(d, tensor.DType(200), 2, 2) }},
	})
}
