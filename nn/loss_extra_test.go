package nn_test

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

func boolPtr(v bool) *bool { return &v }

// l1Distance and squaredDistance are gen_loss2.py's custom distances.
func l1Distance(a, b *tensor.Tensor) *tensor.Tensor { return a.Sub(b).Abs().Sum(-1) }

func squaredDistance(a, b *tensor.Tensor) *tensor.Tensor { return a.Sub(b).Square().Sum(-1) }

// lossExtraFixtureCases maps each case of testdata/loss2.json (written by
// gen_loss2.py, whose variant names encode the options) to the Kiln call.
var lossExtraFixtureCases = map[string]func(in lossInputs, reduction string) *tensor.Tensor{
	"poisson_nll/log_input":          poissonCase(nn.PoissonNLLOptions{}),
	"poisson_nll/rate":               poissonCase(nn.PoissonNLLOptions{LogInput: boolPtr(false)}),
	"poisson_nll/rate_eps":           poissonCase(nn.PoissonNLLOptions{LogInput: boolPtr(false), Eps: 0.1}),
	"poisson_nll/full":               poissonCase(nn.PoissonNLLOptions{Full: true}),
	"poisson_nll/full_rate":          poissonCase(nn.PoissonNLLOptions{Full: true, LogInput: boolPtr(false)}),
	"poisson_nll/full_zero_target":   poissonCase(nn.PoissonNLLOptions{Full: true, LogInput: boolPtr(true)}),
	"poisson_nll/float64":            poissonCase(nn.PoissonNLLOptions{Full: true}),
	"poisson_nll/empty":              poissonCase(nn.PoissonNLLOptions{}),
	"gaussian_nll/same_shape":        gaussianCase(nn.GaussianNLLOptions{}),
	"gaussian_nll/var_per_row":       gaussianCase(nn.GaussianNLLOptions{}),
	"gaussian_nll/var_last_one":      gaussianCase(nn.GaussianNLLOptions{}),
	"gaussian_nll/full":              gaussianCase(nn.GaussianNLLOptions{Full: true}),
	"gaussian_nll/eps0.5":            gaussianCase(nn.GaussianNLLOptions{Eps: 0.5}),
	"gaussian_nll/tiny_var":          gaussianCase(nn.GaussianNLLOptions{}),
	"gaussian_nll/target_broadcast":  gaussianCase(nn.GaussianNLLOptions{}),
	"gaussian_nll/unbatched":         gaussianCase(nn.GaussianNLLOptions{}),
	"gaussian_nll/float64":           gaussianCase(nn.GaussianNLLOptions{Full: true}),
	"hinge_embedding/default":        hingeCase(nil),
	"hinge_embedding/margin2":        hingeCase(floatPtr(2)),
	"hinge_embedding/margin0":        hingeCase(floatPtr(0)),
	"hinge_embedding/float64":        hingeCase(floatPtr(0.5)),
	"multilabel_margin/plain":        multiLabelCase,
	"multilabel_margin/unbatched":    multiLabelCase,
	"multilabel_margin/float64":      multiLabelCase,
	"multi_margin/p1":                multiMarginCase(nn.MultiMarginOptions{}),
	"multi_margin/p2":                multiMarginCase(nn.MultiMarginOptions{P: 2}),
	"multi_margin/margin0.3":         multiMarginCase(nn.MultiMarginOptions{Margin: floatPtr(0.3)}),
	"multi_margin/weight":            multiMarginCase(nn.MultiMarginOptions{P: 1}),
	"multi_margin/p2_weight_margin2": multiMarginCase(nn.MultiMarginOptions{P: 2, Margin: floatPtr(2)}),
	"multi_margin/unbatched":         multiMarginCase(nn.MultiMarginOptions{P: 2}),
	"multi_margin/float64":           multiMarginCase(nn.MultiMarginOptions{}),
	"soft_margin/plain":              softMarginCase,
	"soft_margin/float64":            softMarginCase,
	"soft_margin/empty":              softMarginCase,
	"triplet_distance/default":       tripletDistanceCase(nn.TripletMarginWithDistanceOptions{}),
	"triplet_distance/swap_margin2":  tripletDistanceCase(nn.TripletMarginWithDistanceOptions{Swap: true, Margin: floatPtr(2)}),
	"triplet_distance/margin0":       tripletDistanceCase(nn.TripletMarginWithDistanceOptions{Margin: floatPtr(0)}),
	"triplet_distance/l1": tripletDistanceCase(nn.TripletMarginWithDistanceOptions{Distance: l1Distance,
		Margin: floatPtr(2)}),
	"triplet_distance/squared_swap": tripletDistanceCase(nn.TripletMarginWithDistanceOptions{Distance: squaredDistance,
		Swap: true, Margin: floatPtr(3)}),
	"triplet_distance/unbatched":          tripletDistanceCase(nn.TripletMarginWithDistanceOptions{Margin: floatPtr(2)}),
	"triplet_distance/broadcast_negative": tripletDistanceCase(nn.TripletMarginWithDistanceOptions{Margin: floatPtr(2)}),
	"triplet_distance/float64": tripletDistanceCase(nn.TripletMarginWithDistanceOptions{Margin: floatPtr(2),
		Swap: true}),
	"pairwise_distance/p2":         pairwiseCase(nn.PairwiseDistanceOptions{}),
	"pairwise_distance/p1_keepdim": pairwiseCase(nn.PairwiseDistanceOptions{P: 1, KeepDim: true}),
	"pairwise_distance/p3_eps0.1":  pairwiseCase(nn.PairwiseDistanceOptions{P: 3, Eps: 0.1}),
	"pairwise_distance/pinf":       pairwiseCase(nn.PairwiseDistanceOptions{P: math.Inf(1)}),
	"pairwise_distance/broadcast":  pairwiseCase(nn.PairwiseDistanceOptions{}),
	"pairwise_distance/vector":     pairwiseCase(nn.PairwiseDistanceOptions{}),
}

func poissonCase(opts nn.PoissonNLLOptions) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		o := opts
		o.Reduction = r
		return nn.PoissonNLL(in["x"], in["target"], o)
	}
}

func gaussianCase(opts nn.GaussianNLLOptions) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		o := opts
		o.Reduction = r
		return nn.GaussianNLL(in["x"], in["target"], in["var"], o)
	}
}

func hingeCase(margin *float64) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		return nn.HingeEmbedding(in["x"], in["target"], nn.HingeEmbeddingOptions{Margin: margin, Reduction: r})
	}
}

func multiLabelCase(in lossInputs, r string) *tensor.Tensor {
	return nn.MultiLabelMargin(in["x"], in["target"], nn.MultiLabelMarginOptions{Reduction: r})
}

func multiMarginCase(opts nn.MultiMarginOptions) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		o := opts
		o.Reduction, o.Weight = r, in["weight"]
		return nn.MultiMargin(in["x"], in["target"], o)
	}
}

func softMarginCase(in lossInputs, r string) *tensor.Tensor {
	return nn.SoftMargin(in["x"], in["target"], nn.SoftMarginOptions{Reduction: r})
}

func tripletDistanceCase(opts nn.TripletMarginWithDistanceOptions) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		o := opts
		o.Reduction = r
		return nn.TripletMarginWithDistance(in["anchor"], in["positive"], in["negative"], o)
	}
}

func pairwiseCase(opts nn.PairwiseDistanceOptions) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, _ string) *tensor.Tensor { return nn.PairwiseDistance(in["x1"], in["x2"], opts) }
}

// TestLossExtraFixtures compares every loss of loss_extra.go, with every
// option and reduction, and its gradients (of Σ out·w) with PyTorch 1.13.
func TestLossExtraFixtures(t *testing.T) {
	all := testutil.LoadFixtures(t, "loss2.json")
	for name := range lossExtraFixtureCases {
		if _, ok := all[name]; !ok {
			t.Errorf("case %s has no fixture (regenerate testdata/loss2.json)", name)
		}
	}
	var names []string
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := all[name]
		f, ok := lossExtraFixtureCases[name]
		if !ok {
			t.Errorf("fixture %s has no case in lossExtraFixtureCases", name)
			continue
		}
		for _, r := range fixtureReductions(c) {
			t.Run(name+"/"+r, func(t *testing.T) {
				testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
					runLossFixture(t, dev.Autodiff(), c, r, f)
				})
			})
		}
	}
}

// TestLossExtraStrided runs the losses on non-contiguous views (transposes
// and strided slices) and checks them against the same losses of
// contiguous copies.
func TestLossExtraStrided(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		x := testutil.RandFloat64(dev, 1, -2, 2, 5, 4)
		y := testutil.RandFloat64(dev, 2, 0.1, 3, 5, 4)
		xt, yt := x.T(), y.T() // [4, 5] views
		labels := tensor.FromInt64s(dev, []int64{1, 0, -1, 2, 3, 1, 4, 0, 2, 3, 3, 2, 1, 0, 4, 0, -1, 1, 1, 2}, 4, 5)
		classes := tensor.FromInt64s(dev, []int64{0, 4, 2, 1}, 4)
		signs := y.T().SubScalar(1.5).Sign()
		for name, f := range map[string]func(a, b *tensor.Tensor) *tensor.Tensor{
			"PoissonNLL": func(a, b *tensor.Tensor) *tensor.Tensor {
				return nn.PoissonNLL(a, b, nn.PoissonNLLOptions{Full: true, Reduction: "none"})
			},
			"GaussianNLL": func(a, b *tensor.Tensor) *tensor.Tensor {
				return nn.GaussianNLL(a, b.Flip(0), b, nn.GaussianNLLOptions{Reduction: "none"})
			},
			"HingeEmbedding": func(a, _ *tensor.Tensor) *tensor.Tensor {
				return nn.HingeEmbedding(a, signs, nn.HingeEmbeddingOptions{Reduction: "none"})
			},
			"MultiLabelMargin": func(a, _ *tensor.Tensor) *tensor.Tensor {
				return nn.MultiLabelMargin(a, labels, nn.MultiLabelMarginOptions{Reduction: "none"})
			},
			"MultiMargin": func(a, _ *tensor.Tensor) *tensor.Tensor {
				return nn.MultiMargin(a, classes, nn.MultiMarginOptions{P: 2, Reduction: "none"})
			},
			"SoftMargin": func(a, _ *tensor.Tensor) *tensor.Tensor {
				return nn.SoftMargin(a, signs, nn.SoftMarginOptions{Reduction: "none"})
			},
			"TripletMarginWithDistance": func(a, b *tensor.Tensor) *tensor.Tensor {
				return nn.TripletMarginWithDistance(a, b, b.Flip(1), nn.TripletMarginWithDistanceOptions{Swap: true,
					Margin: floatPtr(3), Reduction: "none"})
			},
		} {
			got := f(xt, yt)
			want := f(xt.Contiguous(), yt.Contiguous())
			testutil.AssertValues(t, name, got, want.Shape(), want.Float64s(), 1e-14, 1e-14)
			sliced := f(x.Slice(0, 0, 5, 1).T().Slice(1, 0, 5, 1), y.T()) // strided views again
			testutil.AssertValues(t, name+" (sliced)", sliced, want.Shape(), want.Float64s(), 1e-14, 1e-14)
		}
	})
}

// TestLossExtraGradients checks each loss's gradients against central
// finite differences in float64, for each reduction, through views.
func TestLossExtraGradients(t *testing.T) {
	cases := []lossGradCase{
		{"PoissonNLL/full", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.PoissonNLL(in[0], in[1], nn.PoissonNLLOptions{Full: true, Reduction: r})
		}, inputsOf(randIn(1, -2, 2, 3, 4), randIn(2, 0.2, 4, 3, 4))},
		{"PoissonNLL/rate/transposed", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.PoissonNLL(in[0].T(), in[1].T(), nn.PoissonNLLOptions{LogInput: boolPtr(false), Full: true, Reduction: r})
		}, inputsOf(randIn(3, 0.1, 3, 3, 4), randIn(4, 0.2, 4, 3, 4))},
		{"GaussianNLL/per_row", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.GaussianNLL(in[0], in[1], in[2], nn.GaussianNLLOptions{Full: true, Reduction: r})
		}, inputsOf(randIn(5, -2, 2, 4, 3), randIn(6, -2, 2, 4, 3), randIn(7, 0.1, 2, 4))},
		{"GaussianNLL/clamped", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			// Every variance below eps: the loss reads eps (the variance's
			// own gradient passes through the clamp, so finite differences
			// cannot check it; the fixtures do).
			v := constant(in[0], []float64{0.01, 0.2, 0.3, 0.05, 0.1, 0.4, 0.2, 0.3, 0.1, 0.01, 0.02, 0.03}, 4, 3)
			return nn.GaussianNLL(in[0], in[1], v, nn.GaussianNLLOptions{Eps: 0.5, Reduction: r})
		}, inputsOf(randIn(8, -2, 2, 4, 3), randIn(9, -2, 2, 4, 1))},
		{"HingeEmbedding", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.HingeEmbedding(in[0], in[1], nn.HingeEmbeddingOptions{Margin: floatPtr(1.5), Reduction: r})
		}, inputsOf(randIn(11, -2, 2, 3, 4), int64sIn([]int64{1, -1, 0, 1, -1, -1, 1, 1, -1, 0, 1, -1}, 3, 4))},
		{"MultiLabelMargin/transposed", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MultiLabelMargin(in[0].T(), in[1], nn.MultiLabelMarginOptions{Reduction: r})
		}, inputsOf(randIn(12, -2, 2, 5, 3), int64sIn([]int64{3, 0, -1, 1, 2, 1, 2, 3, 4, 0, -1, 2, 3, 0, 0}, 3, 5))},
		{"MultiMargin/p2/weight", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MultiMargin(in[0], in[1], nn.MultiMarginOptions{P: 2, Margin: floatPtr(1.5), Reduction: r,
				Weight: constant(in[0], []float64{1, 2, 0.5, 3}, 4)})
		}, inputsOf(randIn(13, -2, 2, 5, 4), int64sIn([]int64{0, 3, 1, 1, 2}, 5))},
		{"MultiMargin/unbatched", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MultiMargin(in[0], in[1], nn.MultiMarginOptions{Reduction: r})
		}, inputsOf(randIn(14, -2, 2, 4), int64sIn([]int64{2}))},
		{"SoftMargin", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.SoftMargin(in[0], in[1], nn.SoftMarginOptions{Reduction: r})
		}, inputsOf(randIn(15, -4, 4, 3, 4), randIn(16, -1, 1, 3, 4))},
		{"TripletMarginWithDistance/swap", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.TripletMarginWithDistance(in[0], in[1], in[2], nn.TripletMarginWithDistanceOptions{Swap: true,
				Margin: floatPtr(2), Reduction: r})
		}, inputsOf(randIn(17, -1, 1, 4, 3), randIn(18, -1, 1, 4, 3), randIn(19, -1, 1, 4, 3))},
		{"TripletMarginWithDistance/squared", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.TripletMarginWithDistance(in[0], in[1], in[2], nn.TripletMarginWithDistanceOptions{
				Distance: squaredDistance, Margin: floatPtr(2), Reduction: r})
		}, inputsOf(randIn(20, -1, 1, 4, 3), randIn(21, -1, 1, 4, 3), randIn(22, -1, 1, 4, 3))},
		{"PairwiseDistance/p3", func(in []*tensor.Tensor, _ string) *tensor.Tensor {
			return nn.PairwiseDistance(in[0], in[1], nn.PairwiseDistanceOptions{P: 3})
		}, inputsOf(randIn(23, -1, 1, 4, 3), randIn(24, -1, 1, 3))},
	}
	for _, c := range cases {
		for _, r := range []string{"mean", "sum", "none"} {
			t.Run(c.name+"/"+r, func(t *testing.T) {
				testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
					testutil.GradCheck(t, dev, func(in []*tensor.Tensor) *tensor.Tensor { return c.f(in, r) }, c.inputs(dev)...)
				})
			})
		}
	}
}

// TestTripletMarginWithDistanceDefault checks that the default distance
// gives the existing TripletMargin, with and without swap.
func TestTripletMarginWithDistanceDefault(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		a := testutil.RandFloat64(dev, 30, -1, 1, 6, 4)
		p := testutil.RandFloat64(dev, 31, -1, 1, 6, 4)
		n := testutil.RandFloat64(dev, 32, -1, 1, 6, 4)
		for _, swap := range []bool{false, true} {
			want := nn.TripletMargin(a, p, n, nn.TripletMarginOptions{Swap: swap, Margin: floatPtr(1.5), Reduction: "none"})
			got := nn.TripletMarginWithDistance(a, p, n, nn.TripletMarginWithDistanceOptions{Swap: swap, Margin: floatPtr(1.5),
				Reduction: "none"})
			testutil.AssertValues(t, "loss", got, want.Shape(), want.Float64s(), 0, 0)
		}
	})
}

// TestPoissonNLLZeroTargetGradient checks that the Stirling term, masked
// where the target is ≤ 1, gives a finite target gradient at 0 (PyTorch
// gives NaN): −input, the gradient of the rest of the loss.
func TestPoissonNLLZeroTargetGradient(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := tensor.FromFloat64s(ad, []float64{0.5, -1, 2}).RequireGrad()
		y := tensor.FromFloat64s(ad, []float64{0, 1, 3}).RequireGrad()
		g := nn.PoissonNLL(x, y, nn.PoissonNLLOptions{Full: true, Reduction: "sum"}).Backward()
		// At 3 the Stirling term adds log 3 + 1/(2·3) to −x.
		testutil.AssertValues(t, "target gradient", g.Get(y), []int{3},
			[]float64{-0.5, 1, -2 + math.Log(3) + 1.0/6}, 0, 1e-12)
	})
}

// TestLossExtraHalfPrecision checks that the losses accept Float16 and
// BFloat16 inputs, return their dtype and agree with Float64 within half
// precision.
func TestLossExtraHalfPrecision(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		a64 := testutil.RandFloat64(dev, 60, 0.1, 0.9, 3, 4)
		b64 := testutil.RandFloat64(dev, 61, 0.1, 0.9, 3, 4)
		labels := tensor.FromInt64s(dev, []int64{1, 3, -1, 0, 2, 0, 1, 3, -1, 1, 2, 3}, 3, 4)
		classes := tensor.FromInt64s(dev, []int64{1, 3, 0}, 3)
		for name, f := range map[string]func(a, b *tensor.Tensor) *tensor.Tensor{
			"PoissonNLL":  func(a, b *tensor.Tensor) *tensor.Tensor { return nn.PoissonNLL(a, b, nn.PoissonNLLOptions{Full: true}) },
			"GaussianNLL": func(a, b *tensor.Tensor) *tensor.Tensor { return nn.GaussianNLL(a, b, b, nn.GaussianNLLOptions{}) },
			"HingeEmbedding": func(a, b *tensor.Tensor) *tensor.Tensor {
				return nn.HingeEmbedding(a, b.SubScalar(0.5).Sign(), nn.HingeEmbeddingOptions{})
			},
			"MultiLabelMargin": func(a, _ *tensor.Tensor) *tensor.Tensor {
				return nn.MultiLabelMargin(a, labels, nn.MultiLabelMarginOptions{})
			},
			"MultiMargin": func(a, _ *tensor.Tensor) *tensor.Tensor { return nn.MultiMargin(a, classes, nn.MultiMarginOptions{}) },
			"SoftMargin":  func(a, b *tensor.Tensor) *tensor.Tensor { return nn.SoftMargin(a, b, nn.SoftMarginOptions{}) },
			"TripletMarginWithDistance": func(a, b *tensor.Tensor) *tensor.Tensor {
				return nn.TripletMarginWithDistance(a, b, a.Flip(0), nn.TripletMarginWithDistanceOptions{Margin: floatPtr(3)})
			},
		} {
			want := f(a64, b64).Item()
			for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
				out := f(a64.To(dt), b64.To(dt))
				if out.DType() != dt {
					t.Errorf("%s %s: loss is %s", name, dt, out.DType())
					continue
				}
				if got := out.Item(); math.Abs(got-want) > 0.02*math.Abs(want)+0.01 {
					t.Errorf("%s %s: loss %v, float64 gives %v", name, dt, got, want)
				}
			}
		}
	})
}

// TestLossExtraBadInput checks that bad inputs panic with a *tensor.Error
// naming the loss and the kind of mistake.
func TestLossExtraBadInput(t *testing.T) {
	dev := tensor.CPU()
	x := tensor.Zeros(dev, 3, 4)
	ints := tensor.FromInt64s(dev, []int64{0, 1, 2}, 3)
	cases := []struct {
		name, op, msg string
		kind          error
		f             func()
	}{
		{"PoissonNLL shapes", "nn.PoissonNLL", "same shape", tensor.ErrShape,
			func() { nn.PoissonNLL(x, tensor.Zeros(dev, 4), nn.PoissonNLLOptions{}) }},
		{"PoissonNLL dtype", "nn.PoissonNLL", "floating point", tensor.ErrDType,
			func() { nn.PoissonNLL(x, x.To(tensor.Int64), nn.PoissonNLLOptions{}) }},
		{"PoissonNLL eps", "nn.PoissonNLL", "eps", tensor.ErrArgument,
			func() { nn.PoissonNLL(x, x, nn.PoissonNLLOptions{Eps: -1}) }},
		{"PoissonNLL reduction", "nn.PoissonNLL", "reduction", tensor.ErrArgument,
			func() { nn.PoissonNLL(x, x, nn.PoissonNLLOptions{Reduction: "avg"}) }},
		{"GaussianNLL variance", "nn.GaussianNLL", "variance [4]", tensor.ErrShape,
			func() { nn.GaussianNLL(x, x, tensor.Ones(dev, 4), nn.GaussianNLLOptions{}) }},
		{"GaussianNLL target", "nn.GaussianNLL", "target", tensor.ErrShape,
			func() { nn.GaussianNLL(x, tensor.Zeros(dev, 2, 4), x, nn.GaussianNLLOptions{}) }},
		{"GaussianNLL eps", "nn.GaussianNLL", "eps", tensor.ErrArgument,
			func() { nn.GaussianNLL(x, x, x, nn.GaussianNLLOptions{Eps: -1}) }},
		{"GaussianNLL nil", "nn.GaussianNLL", "variance is nil", tensor.ErrArgument,
			func() { nn.GaussianNLL(x, x, nil, nn.GaussianNLLOptions{}) }},
		{"HingeEmbedding shapes", "nn.HingeEmbedding", "same shape", tensor.ErrShape,
			func() { nn.HingeEmbedding(x, ints, nn.HingeEmbeddingOptions{}) }},
		{"MultiLabelMargin float target", "nn.MultiLabelMargin", "integer", tensor.ErrDType,
			func() { nn.MultiLabelMargin(x, x, nn.MultiLabelMarginOptions{}) }},
		{"MultiLabelMargin rank", "nn.MultiLabelMargin", "[N C] or [C]", tensor.ErrShape,
			func() {
				nn.MultiLabelMargin(tensor.Zeros(dev, 1, 1, 2), tensor.Zeros(dev, 1, 1, 2).To(tensor.Int64), nn.MultiLabelMarginOptions{})
			}},
		{"MultiMargin target", "nn.MultiMargin", "want [3]", tensor.ErrShape,
			func() { nn.MultiMargin(x, tensor.FromInt64s(dev, []int64{0, 1}), nn.MultiMarginOptions{}) }},
		{"MultiMargin p", "nn.MultiMargin", "1 or 2", tensor.ErrArgument,
			func() { nn.MultiMargin(x, ints, nn.MultiMarginOptions{P: 3}) }},
		{"MultiMargin weight", "nn.MultiMargin", "4 classes", tensor.ErrShape,
			func() { nn.MultiMargin(x, ints, nn.MultiMarginOptions{Weight: tensor.Ones(dev, 3)}) }},
		{"SoftMargin dtype", "nn.SoftMargin", "floating point", tensor.ErrDType,
			func() { nn.SoftMargin(ints, ints, nn.SoftMarginOptions{}) }},
		{"TripletMarginWithDistance nil distance", "nn.TripletMarginWithDistance", "returned nil", tensor.ErrArgument,
			func() {
				nn.TripletMarginWithDistance(x, x, x, nn.TripletMarginWithDistanceOptions{
					Distance: func(a, b *tensor.Tensor) *tensor.Tensor { return nil }})
			}},
		{"TripletMarginWithDistance shapes", "nn.TripletMarginWithDistance", "differ in shape", tensor.ErrShape,
			func() {
				calls := 0
				nn.TripletMarginWithDistance(x, x, x, nn.TripletMarginWithDistanceOptions{
					Distance: func(a, b *tensor.Tensor) *tensor.Tensor {
						calls++
						if calls == 1 {
							return a.Sum(1)
						}
						return a.Sum()
					}})
			}},
		{"TripletMarginWithDistance default shapes", "nn.PairwiseDistance", "do not broadcast", tensor.ErrShape,
			func() {
				nn.TripletMarginWithDistance(x, tensor.Zeros(dev, 3, 5), x, nn.TripletMarginWithDistanceOptions{})
			}},
		{"PairwiseDistance 0-d", "nn.PairwiseDistance", "at least one dimension", tensor.ErrShape,
			func() { nn.PairwiseDistance(tensor.Scalar(dev, 1), x, nn.PairwiseDistanceOptions{}) }},
		{"PairwiseDistance p", "nn.PairwiseDistance", "positive", tensor.ErrArgument,
			func() { nn.PairwiseDistance(x, x, nn.PairwiseDistanceOptions{P: -1}) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mustPanic(t, c.f)
			if !isTensorError(err, c.kind) || !strings.HasPrefix(err.Error(), c.op+":") || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %v, want a *tensor.Error from %s wrapping %v, saying %q", err, c.op, c.kind, c.msg)
			}
		})
	}
}
