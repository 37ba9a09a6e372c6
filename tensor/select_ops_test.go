package tensor_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func selectFixtures() map[string]mathFixture {
	gradMask := func(in []*tensor.Tensor) *tensor.Tensor {
		m := tensor.FromBools(in[0].Device(), []bool{true, false, true, false, true, true}, 2, 3)
		return in[0].MaskedSelect(m)
	}
	masked := func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").MaskedSelect(f.T("mask"))) }
	take := func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Take(f.T("idx"))) }
	return map[string]mathFixture{
		"movedim_one": func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Movedim([]int{0}, []int{2})) },
		"movedim_neg": func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Movedim([]int{-1}, []int{0})) },
		"movedim_two": func(f mathCase) map[string]*tensor.Tensor {
			return out(f.T("x").Movedim([]int{0, 1}, []int{2, 0}))
		},
		"movedim_f64": func(f mathCase) map[string]*tensor.Tensor {
			return out(f.T("x").Movedim([]int{2, 0}, []int{0, 1}))
		},
		"grad_movedim": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Movedim([]int{0, 2}, []int{1, 0})
		}),
		"masked_select":             masked,
		"masked_select_broadcast":   masked,
		"masked_select_broadcast_x": masked,
		"masked_select_t": func(f mathCase) map[string]*tensor.Tensor {
			return out(f.T("x").T().MaskedSelect(f.T("mask")))
		},
		"masked_select_none":           masked,
		"masked_select_int":            masked,
		"masked_select_empty":          masked,
		"grad_masked_select":           gradFixture(gradMask),
		"grad_masked_select_broadcast": gradFixture(gradMask),
		"take":                         take,
		"take_2d":                      take,
		"take_t":                       func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").T().Take(f.T("idx"))) },
		"take_int":                     take,
		"take_empty":                   take,
		"grad_take": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Take(tensor.FromInt64s(in[0].Device(), []int64{0, 5, 5, -1, 2}))
		}),
	}
}

func TestSelectFixtures(t *testing.T) { runElementwise2Fixtures(t, selectFixtures()) }

func TestSelectGradients(t *testing.T) {
	cases := []gradCase{
		{"movedim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Movedim([]int{-1, 0}, []int{0, -1}) },
			inputs(spec(1, -2, 2, 2, 3, 4))},
		{"masked select transposed", func(in []*tensor.Tensor) *tensor.Tensor {
			m := tensor.FromBools(in[0].Device(), []bool{true, false, true, true, false, true}, 2, 3)
			return in[0].T().MaskedSelect(m)
		}, inputs(spec(1, -2, 2, 3, 2))},
		{"masked select broadcast", func(in []*tensor.Tensor) *tensor.Tensor {
			m := tensor.FromBools(in[0].Device(), []bool{true, false, true}, 3, 1)
			return in[0].MaskedSelect(m)
		}, inputs(spec(1, -2, 2, 4))},
		{"take repeated", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].T().Take(tensor.FromInt64s(in[0].Device(), []int64{1, 1, -1, 4, 0, 2}, 3, 2))
		}, inputs(spec(1, -2, 2, 3, 2))},
	}
	runGradCases(t, cases)
}

func TestSelectBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Zeros(dev, 2, 3)
		cases := []struct {
			name string
			f    func()
			want error
		}{
			{"movedim length", func() { x.Movedim([]int{0}, []int{0, 1}) }, tensor.ErrArgument},
			{"movedim out of range", func() { x.Movedim([]int{2}, []int{0}) }, tensor.ErrArgument},
			{"movedim repeated", func() { x.Movedim([]int{0, 0}, []int{0, 1}) }, tensor.ErrArgument},
			{"masked select float mask", func() { x.MaskedSelect(tensor.Zeros(dev, 2, 3)) }, tensor.ErrDType},
			{"masked select shape", func() { x.MaskedSelect(tensor.FromBools(dev, []bool{true, false})) }, tensor.ErrShape},
			{"take float indices", func() { x.Take(tensor.Zeros(dev, 2)) }, tensor.ErrDType},
			{"take out of range", func() { x.Take(tensor.FromInt64s(dev, []int64{6})) }, tensor.ErrArgument},
			{"take below range", func() { x.Take(tensor.FromInt64s(dev, []int64{-7})) }, tensor.ErrArgument},
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
