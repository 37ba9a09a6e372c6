package tensor_test

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// sortFixtures covers sort.go.
func sortFixtures() map[string]mathFixture {
	sorted := func(dim int, desc bool) mathFixture {
		return func(f mathCase) map[string]*tensor.Tensor { return valuesIndices(f.T("x").Sort(dim, desc)) }
	}
	argsort := func(dim int, desc bool) mathFixture {
		return func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Argsort(dim, desc)) }
	}
	topk := func(k, dim int, largest bool) mathFixture {
		return func(f mathCase) map[string]*tensor.Tensor { return valuesIndices(f.T("x").TopK(k, dim, largest)) }
	}
	return map[string]mathFixture{
		"sort_dim1_asc":     sorted(1, false),
		"sort_dim1_desc":    sorted(-1, true),
		"sort_dim0_asc":     sorted(0, false),
		"sort_dim0_desc":    sorted(-2, true),
		"sort_int64":        sorted(0, false),
		"argsort_dim1_asc":  argsort(1, false),
		"argsort_dim1_desc": argsort(1, true),
		"topk_2_largest":    topk(2, 1, true),
		"topk_2_smallest":   topk(2, -1, false),
		"topk_dim0":         topk(3, 0, true),
		"grad_sort_ties": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := in[0].Sort(0, false)
			return v.Mul(tensor.FromFloat32s(in[0].Device(), []float32{1, 2, 3, 4}))
		}),
		"grad_topk_ties": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := in[0].TopK(2, 0, true)
			return v.Mul(tensor.FromFloat32s(in[0].Device(), []float32{1, 2}))
		}),
	}
}

func TestSortFixtures(t *testing.T) { runMathFixtures(t, sortFixtures()) }

func TestSortGradients(t *testing.T) {
	first := func(v, _ *tensor.Tensor) *tensor.Tensor { return v }
	runGradCases(t, []gradCase{
		{"sort ascending", func(in []*tensor.Tensor) *tensor.Tensor { return first(in[0].Sort(1, false)) }, inputs(spec(1, -1, 1, 3, 5))},
		{"sort descending of transposed", func(in []*tensor.Tensor) *tensor.Tensor { return first(in[0].T().Sort(0, true)) },
			inputs(spec(1, -1, 1, 3, 5))},
		{"sort of 3-d along middle", func(in []*tensor.Tensor) *tensor.Tensor { return first(in[0].Sort(1, false)) },
			inputs(spec(1, -1, 1, 2, 4, 3))},
		{"sort of 0-d", func(in []*tensor.Tensor) *tensor.Tensor { return first(in[0].Sum().Sort(0, false)) }, inputs(spec(1, -1, 1, 3))},
		{"topk largest", func(in []*tensor.Tensor) *tensor.Tensor { return first(in[0].TopK(2, 1, true)) }, inputs(spec(1, -1, 1, 3, 5))},
		{"topk smallest along dim 0 of permuted", func(in []*tensor.Tensor) *tensor.Tensor {
			return first(in[0].Permute(1, 0).TopK(3, 0, false))
		}, inputs(spec(1, -1, 1, 3, 5))},
		{"topk of expanded", func(in []*tensor.Tensor) *tensor.Tensor { return first(in[0].Expand(2, 5).TopK(4, 1, true)) },
			inputs(spec(1, -1, 1, 1, 5))},
	})
}

// TestSortProperties checks results that need no fixture: stability on a
// tensor of ties, k = 0 and k = n, and that indices gather the values.
func TestSortProperties(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ties := tensor.FromFloat32s(dev, []float32{1, 0, 1, 0, 1, 0})
		if _, i := ties.Sort(0, false); fmt.Sprint(i.Int64s()) != "[1 3 5 0 2 4]" {
			t.Errorf("ascending sort of ties: indices %v, want [1 3 5 0 2 4]", i.Int64s())
		}
		if i := ties.Argsort(0, true); fmt.Sprint(i.Int64s()) != "[0 2 4 1 3 5]" {
			t.Errorf("descending argsort of ties: %v, want [0 2 4 1 3 5]", i.Int64s())
		}
		x := randFloat64(dev, 3, -1, 1, 4, 6)
		v, i := x.TopK(0, 1, true)
		if fmt.Sprint(v.Shape(), i.Shape()) != "[4 0] [4 0]" {
			t.Errorf("TopK(0): shapes %v %v", v.Shape(), i.Shape())
		}
		v, i = x.TopK(6, 1, false)
		sv, si := x.Sort(1, false)
		if !v.AllClose(sv, 0, 0) || fmt.Sprint(i.Int64s()) != fmt.Sprint(si.Int64s()) {
			t.Errorf("TopK(n, smallest) differs from Sort")
		}
		xs, is := x.Float64s(), si.Int64s()
		vs := sv.Float64s()
		for r := range 4 {
			for c := range 6 {
				if xs[r*6+int(is[r*6+c])] != vs[r*6+c] {
					t.Fatalf("row %d: index %d does not select value %v", r, is[r*6+c], vs[r*6+c])
				}
				if c > 0 && vs[r*6+c-1] > vs[r*6+c] {
					t.Fatalf("row %d not sorted: %v", r, vs[r*6:r*6+6])
				}
			}
		}
		s, si0 := tensor.Scalar(dev, 3).TopK(1, -1, true)
		if fmt.Sprint(s.Shape(), si0.Int64s(), s.Item()) != "[] [0] 3" {
			t.Errorf("TopK of 0-d: %v %v", s.Shape(), si0.Int64s())
		}
	})
}

func TestSortBadInput(t *testing.T) {
	runBadCases(t, []badCase{
		{"sort dim out of range", "Sort", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 2, 3).Sort(2, false) }},
		{"argsort dim out of range", "Argsort", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 2, 3).Argsort(-3, true) }},
		{"topk k larger than dim", "TopK", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 2, 3).TopK(4, 1, true) }},
		{"topk negative k", "TopK", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 3).TopK(-1, 0, true) }},
		{"topk dim out of range", "TopK", tensor.ErrArgument, func(d tensor.Device) { tensor.Ones(d, 3).TopK(1, 1, true) }},
		{"sort of released tensor", "Sort", tensor.ErrReleased, func(d tensor.Device) {
			x := tensor.Ones(d, 3)
			x.Release()
			x.Sort(0, false)
		}},
	})
}
