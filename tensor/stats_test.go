package tensor_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func countFixtures() map[string]mathFixture {
	bincount := func(minlength int) mathFixture {
		return func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Bincount(nil, minlength)) }
	}
	weighted := func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Bincount(f.T("w"), 0)) }
	histc := func(bins int, lo, hi float64) mathFixture {
		return func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").Histc(bins, lo, hi)) }
	}
	return map[string]mathFixture{
		"bincount":             bincount(0),
		"bincount_minlength":   bincount(10),
		"bincount_weights":     weighted,
		"bincount_weights_f64": weighted,
		"bincount_weights_int": weighted,
		"bincount_empty":       bincount(3),
		"bincount_int32": func(f mathCase) map[string]*tensor.Tensor {
			return out(f.T("x").To(tensor.Int32).Bincount(nil, 0))
		},
		"histc":          histc(7, -2, 2),
		"histc_auto":     histc(5, 0, 0),
		"histc_f64":      histc(6, -1.5, 2.5),
		"histc_edges":    histc(4, 0, 4),
		"histc_constant": histc(4, 0, 0),
		"histc_t":        func(f mathCase) map[string]*tensor.Tensor { return out(f.T("x").T().Histc(3, -1, 1)) },
		"histc_empty":    histc(3, 0, 1),
	}
}

func TestCountFixtures(t *testing.T) { runElementwise2Fixtures(t, countFixtures()) }

// TestCountNoGradient checks that Bincount and Histc record no graph, as
// in PyTorch.
func TestCountNoGradient(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		w := tensor.FromFloat64s(ad, []float64{1, 2, 3}).RequireGrad()
		x := tensor.FromInt64s(ad, []int64{0, 2, 2})
		if x.Bincount(w, 0).RequiresGrad() || w.Histc(3, 0, 3).RequiresGrad() {
			t.Error("Bincount or Histc recorded a gradient")
		}
	})
}

func TestCountBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		idx := tensor.FromInt64s(dev, []int64{0, 2, 1})
		cases := []struct {
			name string
			f    func()
			want error
		}{
			{"bincount float", func() { tensor.Zeros(dev, 3).Bincount(nil, 0) }, tensor.ErrDType},
			{"bincount 2-D", func() { tensor.FromInt64s(dev, []int64{0, 1}, 1, 2).Bincount(nil, 0) }, tensor.ErrShape},
			{"bincount negative", func() { tensor.FromInt64s(dev, []int64{0, -1}).Bincount(nil, 0) }, tensor.ErrArgument},
			{"bincount minlength", func() { idx.Bincount(nil, -1) }, tensor.ErrArgument},
			{"bincount weights shape", func() { idx.Bincount(tensor.Zeros(dev, 2), 0) }, tensor.ErrShape},
			{"histc int", func() { idx.Histc(3, 0, 1) }, tensor.ErrDType},
			{"histc bins", func() { tensor.Zeros(dev, 3).Histc(0, 0, 1) }, tensor.ErrArgument},
			{"histc min above max", func() { tensor.Zeros(dev, 3).Histc(3, 2, 1) }, tensor.ErrArgument},
			{"histc infinite", func() { tensor.Zeros(dev, 3).Histc(3, 0, 1e300) }, tensor.ErrArgument},
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

func statsFixtures() map[string]mathFixture {
	all := func(f func(*tensor.Tensor) *tensor.Tensor) mathFixture {
		return func(c mathCase) map[string]*tensor.Tensor { return out(f(c.T("x"))) }
	}
	dim := func(f func(*tensor.Tensor, int, bool) (*tensor.Tensor, *tensor.Tensor), d int, keep bool, transpose bool) mathFixture {
		return func(c mathCase) map[string]*tensor.Tensor {
			x := c.T("x")
			if transpose {
				x = x.T()
			}
			return valuesIndices(f(x, d, keep))
		}
	}
	median, nanmedian, mode := (*tensor.Tensor).MedianDim, (*tensor.Tensor).NanmedianDim, (*tensor.Tensor).Mode
	quantile := func(q float64, d int, keep bool, interp string) mathFixture {
		return func(c mathCase) map[string]*tensor.Tensor {
			x := c.T("x")
			qt := tensor.ScalarOf(x.Device(), x.DType(), q)
			return out(x.Quantile(qt, d, keep, interp))
		}
	}
	quantileQ := func(d int, keep, transpose bool, interp string) mathFixture {
		return func(c mathCase) map[string]*tensor.Tensor {
			x := c.T("x")
			if transpose {
				x = x.T()
			}
			return out(x.Quantile(c.T("q"), d, keep, interp))
		}
	}
	table := map[string]mathFixture{
		"median_all":          all((*tensor.Tensor).Median),
		"median_all_even":     all((*tensor.Tensor).Median),
		"median_all_nan":      all((*tensor.Tensor).Median),
		"median_all_int":      all((*tensor.Tensor).Median),
		"median_all_empty":    all((*tensor.Tensor).Median),
		"median_dim":          dim(median, 1, false, false),
		"median_dim_keep":     dim(median, 0, true, false),
		"median_dim_t":        dim(median, -1, false, true),
		"median_dim_nan_ties": dim(median, 1, false, false),
		"nanmedian_dim":       dim(nanmedian, 1, false, false),
		"nanmedian_all":       all((*tensor.Tensor).Nanmedian),
		"nanmedian_all_nan":   all((*tensor.Tensor).Nanmedian),
		"median_dim_int":      dim(median, 0, false, false),
		"grad_median_all":     gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Median() }),
		"grad_median_all_ties": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Median()
		}),
		"grad_nanmedian_all": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Nanmedian() }),
		"grad_median_dim": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := in[0].MedianDim(1, false)
			return v
		}),
		"grad_nanmedian_dim": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := in[0].NanmedianDim(0, false)
			return v
		}),
		"quantile_scalar_keep": quantile(0.4, 0, true, ""),
		"quantile_vector_keep": quantileQ(-1, true, false, "linear"),
		"quantile_t":           quantileQ(0, false, true, "linear"),
		"quantile_half":        quantileQ(0, false, false, "nearest"),
		"quantile_nan":         quantileQ(1, false, false, "linear"),
		"grad_quantile_linear": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			q := tensor.FromFloat64s(in[0].Device(), []float64{0.2, 0.5, 0.9})
			return in[0].Quantile(q, 1, false, "linear")
		}),
		"grad_quantile_midpoint": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].Quantile(tensor.ScalarOf(in[0].Device(), tensor.Float64, 0.5), 0, false, "midpoint")
		}),
		"grad_quantile_all": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].QuantileAll(tensor.ScalarOf(in[0].Device(), tensor.Float64, 0.7), "")
		}),
		"mode":        dim(mode, 1, false, false),
		"mode_keep":   dim(mode, 0, true, false),
		"mode_t":      dim(mode, 0, false, true),
		"mode_int":    dim(mode, 0, false, false),
		"mode_nan":    dim(mode, 0, false, false),
		"mode_single": dim(mode, 0, false, false),
		"grad_mode": gradFixture(func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := in[0].Mode(1, false)
			return v
		}),
	}
	for _, interp := range []string{"linear", "lower", "higher", "midpoint", "nearest"} {
		table["quantile_"+interp] = quantileQ(1, false, false, interp)
		in := interp
		table["quantile_all_"+interp] = func(c mathCase) map[string]*tensor.Tensor {
			x := c.T("x")
			return out(x.QuantileAll(tensor.ScalarOf(x.Device(), x.DType(), 0.3), in))
		}
	}
	return table
}

func TestStatsFixtures(t *testing.T) { runElementwise2Fixtures(t, statsFixtures()) }

func TestStatsGradients(t *testing.T) {
	cases := []gradCase{
		{"median all", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Median() },
			inputs(spec(1, -2, 2, 3, 4))},
		{"median dim transposed", func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := in[0].T().MedianDim(0, true)
			return v
		}, inputs(spec(1, -2, 2, 3, 4))},
		{"nanmedian dim", func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := in[0].NanmedianDim(-1, false)
			return v
		}, inputs(spec(1, -2, 2, 2, 5))},
		{"quantile linear vector q", func(in []*tensor.Tensor) *tensor.Tensor {
			q := tensor.FromFloat64s(in[0].Device(), []float64{0.1, 0.35, 0.8})
			return in[0].T().Quantile(q, 1, true, "linear")
		}, inputs(spec(1, -2, 2, 6, 3))},
		{"quantile midpoint", func(in []*tensor.Tensor) *tensor.Tensor {
			return in[0].QuantileAll(tensor.ScalarOf(in[0].Device(), tensor.Float64, 0.5), "midpoint")
		}, inputs(spec(1, -2, 2, 2, 3))},
		{"mode of distinct values", func(in []*tensor.Tensor) *tensor.Tensor {
			v, _ := in[0].Mode(0, false)
			return v
		}, inputs(spec(1, -2, 2, 4, 3))},
	}
	runGradCases(t, cases)
}

func TestStatsBadInput(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := tensor.Zeros(dev, 2, 3)
		q := tensor.Scalar(dev, 0.5)
		cases := []struct {
			name string
			f    func()
			want error
		}{
			{"median dim range", func() { x.MedianDim(2, false) }, tensor.ErrArgument},
			{"median empty dim", func() { tensor.Zeros(dev, 2, 0).MedianDim(1, false) }, tensor.ErrShape},
			{"median empty int", func() { tensor.FromInt64s(dev, []int64{}).Median() }, tensor.ErrShape},
			{"mode dim range", func() { x.Mode(-3, false) }, tensor.ErrArgument},
			{"mode empty dim", func() { tensor.Zeros(dev, 0, 2).Mode(0, false) }, tensor.ErrShape},
			{"quantile int", func() { tensor.FromInt64s(dev, []int64{1, 2}).Quantile(q, 0, false, "") }, tensor.ErrDType},
			{"quantile q rank", func() { x.Quantile(tensor.Zeros(dev, 1, 1), 0, false, "") }, tensor.ErrShape},
			{"quantile q range", func() { x.Quantile(tensor.Scalar(dev, 1.5), 0, false, "") }, tensor.ErrArgument},
			{"quantile interpolation", func() { x.Quantile(q, 0, false, "cubic") }, tensor.ErrArgument},
			{"quantile empty", func() { tensor.Zeros(dev, 2, 0).Quantile(q, 1, false, "") }, tensor.ErrShape},
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

// BenchmarkStats reports elements/s of MedianDim, Quantile (three levels)
// and Mode along the last dimension of a [256, 4096] Float32 tensor.
func BenchmarkStats(b *testing.B) {
	dev := tensor.CPU()
	x := tensor.Randn(dev, 256, 4096).MulScalar(4).Round()
	q := tensor.FromFloat32s(dev, []float32{0.1, 0.5, 0.9})
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"MedianDim", func() { v, _ := x.MedianDim(1, false); v.Sum().Item() }},
		{"Quantile", func() { x.Quantile(q, 1, false, "linear").Sum().Item() }},
		{"Mode", func() { v, _ := x.Mode(1, false); v.Sum().Item() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				tensor.Scope(c.f)
			}
			b.ReportMetric(float64(b.N)*256*4096/b.Elapsed().Seconds(), "elements/s")
		})
	}
}
