package nn_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// lossInputs are a fixture case's tensors by name.
type lossInputs map[string]*tensor.Tensor

// lossFixtureCases maps each fixture case of testdata/loss.json (written by
// gen_loss.py, whose variant names encode the options) to the Kiln call.
var lossFixtureCases = map[string]func(in lossInputs, reduction string) *tensor.Tensor{
	"cross_entropy/plain": func(in lossInputs, r string) *tensor.Tensor {
		return nn.CrossEntropy(in["x"], in["target"], nn.CrossEntropyOptions{Reduction: r})
	},
	"cross_entropy/weight_ignore_smoothing": func(in lossInputs, r string) *tensor.Tensor {
		two := 2
		return nn.CrossEntropy(in["x"], in["target"], nn.CrossEntropyOptions{Weight: in["weight"], IgnoreIndex: &two,
			LabelSmoothing: 0.2, Reduction: r})
	},
	"cross_entropy/probs": func(in lossInputs, r string) *tensor.Tensor {
		return nn.CrossEntropy(in["x"], in["target"], nn.CrossEntropyOptions{Reduction: r})
	},
	"cross_entropy/spatial": func(in lossInputs, r string) *tensor.Tensor {
		return nn.CrossEntropy(in["x"], in["target"], nn.CrossEntropyOptions{Reduction: r})
	},

	"nll/plain":           nllCase(nil),
	"nll/default_ignore":  nllCase(nil),
	"nll/weight":          nllCase(nil),
	"nll/ignore0":         nllCase(intPtr(0)),
	"nll/ignore0_weight":  nllCase(intPtr(0)),
	"nll/ignore_all":      nllCase(nil),
	"nll/ignored_neg_inf": nllCase(intPtr(2)),
	"nll/spatial":         nllCase(nil),
	"nll/unbatched":       nllCase(nil),

	"bce/plain":       bceCase,
	"bce/weight":      bceCase,
	"bce/weight_full": bceCase,
	"bce/edges":       bceCase,

	"bce_logits/plain":             bceLogitsCase,
	"bce_logits/weight":            bceLogitsCase,
	"bce_logits/pos_weight":        bceLogitsCase,
	"bce_logits/weight_pos_weight": bceLogitsCase,
	"bce_logits/extreme":           bceLogitsCase,

	"mse/plain": func(in lossInputs, r string) *tensor.Tensor {
		return nn.MSE(in["x"], in["target"], nn.MSEOptions{Reduction: r})
	},
	"l1/plain": func(in lossInputs, r string) *tensor.Tensor {
		return nn.L1(in["x"], in["target"], nn.L1Options{Reduction: r})
	},
	"huber/default":      huberCase(0),
	"huber/delta0.5":     huberCase(0.5),
	"huber/delta2.5":     huberCase(2.5),
	"smooth_l1/default":  smoothL1Case(nil),
	"smooth_l1/beta0.5":  smoothL1Case(floatPtr(0.5)),
	"smooth_l1/beta0":    smoothL1Case(floatPtr(0)),
	"kl_div/plain":       klCase(false),
	"kl_div/zero_target": klCase(false),
	"kl_div/log_target":  klCase(true),
	"kl_div/unbatched":   klCase(false),

	"cosine_embedding/plain":     cosineCase(0),
	"cosine_embedding/margin":    cosineCase(-0.3),
	"cosine_embedding/unbatched": cosineCase(0.1),
	"margin_ranking/plain":       rankingCase(0),
	"margin_ranking/margin":      rankingCase(0.7),

	"triplet_margin/default":   tripletCase(nn.TripletMarginOptions{}),
	"triplet_margin/margin0":   tripletCase(nn.TripletMarginOptions{Margin: floatPtr(0)}),
	"triplet_margin/margin3":   tripletCase(nn.TripletMarginOptions{Margin: floatPtr(3)}),
	"triplet_margin/p1":        tripletCase(nn.TripletMarginOptions{P: 1}),
	"triplet_margin/p3":        tripletCase(nn.TripletMarginOptions{P: 3, Margin: floatPtr(2)}),
	"triplet_margin/swap":      tripletCase(nn.TripletMarginOptions{Swap: true, Margin: floatPtr(2)}),
	"triplet_margin/eps":       tripletCase(nn.TripletMarginOptions{Eps: 0.1, Margin: floatPtr(2)}),
	"triplet_margin/unbatched": tripletCase(nn.TripletMarginOptions{Margin: floatPtr(2)}),
}

func intPtr(v int) *int           { return &v }
func floatPtr(v float64) *float64 { return &v }
func nllCase(ignore *int) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		return nn.NLL(in["x"], in["target"], nn.NLLOptions{Weight: in["weight"], IgnoreIndex: ignore, Reduction: r})
	}
}

func bceCase(in lossInputs, r string) *tensor.Tensor {
	return nn.BinaryCrossEntropy(in["x"], in["target"], nn.BinaryCrossEntropyOptions{Weight: in["weight"], Reduction: r})
}

func bceLogitsCase(in lossInputs, r string) *tensor.Tensor {
	return nn.BCEWithLogits(in["x"], in["target"], nn.BCEWithLogitsOptions{Weight: in["weight"], PosWeight: in["pos_weight"],
		Reduction: r})
}

func huberCase(delta float64) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		return nn.Huber(in["x"], in["target"], nn.HuberOptions{Delta: delta, Reduction: r})
	}
}

func smoothL1Case(beta *float64) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		return nn.SmoothL1(in["x"], in["target"], nn.SmoothL1Options{Beta: beta, Reduction: r})
	}
}

func klCase(logTarget bool) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		return nn.KLDiv(in["x"], in["target"], nn.KLDivOptions{LogTarget: logTarget, Reduction: r})
	}
}

func cosineCase(margin float64) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		return nn.CosineEmbedding(in["x1"], in["x2"], in["y"], nn.CosineEmbeddingOptions{Margin: margin, Reduction: r})
	}
}

func rankingCase(margin float64) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		return nn.MarginRanking(in["x1"], in["x2"], in["y"], nn.MarginRankingOptions{Margin: margin, Reduction: r})
	}
}

func tripletCase(opts nn.TripletMarginOptions) func(lossInputs, string) *tensor.Tensor {
	return func(in lossInputs, r string) *tensor.Tensor {
		o := opts
		o.Reduction = r
		return nn.TripletMargin(in["anchor"], in["positive"], in["negative"], o)
	}
}

// fixtureReductions returns the reductions a fixture case was recorded
// with (its "out/<reduction>" entries), sorted.
func fixtureReductions(c testutil.FixtureCase) []string {
	var rs []string
	for k := range c {
		if r, ok := strings.CutPrefix(k, "out/"); ok {
			rs = append(rs, r)
		}
	}
	sort.Strings(rs)
	return rs
}

// lossTolerances returns the relative and absolute tolerances for a
// fixture recorded in dtype: PyTorch and Kiln round float32 differently.
func lossTolerances(dtype string) (rtol, atol float64) {
	if dtype == "float64" {
		return 1e-10, 1e-12
	}
	return 1e-5, 1e-6
}

// TestLossFixtures compares every loss, with every option and reduction,
// and its gradients (of Σ out·w) with PyTorch 1.13.
func TestLossFixtures(t *testing.T) {
	all := testutil.LoadFixtures(t, "loss.json")
	for name := range lossFixtureCases {
		if _, ok := all[name]; !ok {
			t.Errorf("case %s has no fixture (regenerate testdata/loss.json)", name)
		}
	}
	var names []string
	for name := range all {
		if !strings.HasPrefix(name, "ctc/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		c := all[name]
		f, ok := lossFixtureCases[name]
		if !ok {
			t.Errorf("fixture %s has no case in lossFixtureCases", name)
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

// runLossFixture evaluates one fixture case for reduction r on dev and
// compares the loss and the gradients the fixture holds.
func runLossFixture(t *testing.T, dev tensor.Device, c testutil.FixtureCase, r string,
	f func(lossInputs, string) *tensor.Tensor) {
	t.Helper()
	in := lossInputs{}
	for k, fx := range c {
		if strings.Contains(k, "/") {
			continue
		}
		in[k] = fx.Tensor(dev)
		if _, ok := c["grad_"+k+"/"+r]; ok {
			in[k].RequireGrad()
		}
	}
	want := c["out/"+r]
	rtol, atol := lossTolerances(want.DType)
	out := f(in, r)
	testutil.AssertClose(t, "loss", out, want, rtol, atol)
	w, ok := c["w/"+r]
	if !ok {
		return
	}
	grads := out.Mul(w.Tensor(dev)).Sum().Backward()
	for k, x := range in {
		g, ok := c["grad_"+k+"/"+r]
		if !ok {
			continue
		}
		got := grads.Get(x)
		if got == nil {
			t.Errorf("no gradient for %s", k)
			continue
		}
		testutil.AssertClose(t, "gradient of "+k, got, g, rtol, atol)
	}
}

// TestCTCFixtures compares CTC with PyTorch: padded and concatenated
// targets, repeated labels, a blank that is not 0, empty targets,
// impossible targets with and without ZeroInfinity, float32 and float64.
// Each case is run on the fixture's log-probabilities (PyTorch's gradient
// with respect to them) and on LogSoftmax of its logits x (the gradient
// with respect to x), the latter with the lengths given as tensors.
func TestCTCFixtures(t *testing.T) {
	all := testutil.LoadFixtures(t, "loss.json")
	var names []string
	for name := range all {
		if strings.HasPrefix(name, "ctc/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) < 8 {
		t.Fatalf("only %d CTC fixtures", len(names))
	}
	ints := func(f testutil.Fixture) []int {
		var out []int
		for _, v := range f.Float64s() {
			out = append(out, int(v))
		}
		return out
	}
	for _, name := range names {
		c := all[name]
		opts := nn.CTCOptions{ZeroInfinity: strings.Contains(name, "zero_infinity")}
		if strings.Contains(name, "blank_last") {
			opts.Blank = 3
		}
		for _, r := range fixtureReductions(c) {
			t.Run(name+"/"+r, func(t *testing.T) {
				testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
					ad := dev.Autodiff()
					o := opts
					o.Reduction = r
					rtol, atol := lossTolerances(c["log_probs"].DType)
					targets := c["targets"].Tensor(ad)
					w := c["w/"+r].Tensor(ad)

					lp := c["log_probs"].Tensor(ad).RequireGrad()
					out := nn.CTC(lp, targets, ints(c["input_lengths"]), ints(c["target_lengths"]), o)
					testutil.AssertClose(t, "loss", out, c["out/"+r], rtol, atol)
					g := out.Mul(w).Sum().Backward()
					testutil.AssertClose(t, "gradient of log-probabilities", g.Get(lp), c["grad_log_probs/"+r], rtol, atol)

					x := c["x"].Tensor(ad).RequireGrad()
					out = nn.CTCTensorLengths(x.LogSoftmax(2), targets, c["input_lengths"].Tensor(ad),
						c["target_lengths"].Tensor(ad), o)
					testutil.AssertClose(t, "loss from logits", out, c["out/"+r], rtol, atol)
					g = out.Mul(w).Sum().Backward()
					testutil.AssertClose(t, "gradient of logits", g.Get(x), c["grad_x/"+r], rtol, atol)
				})
			})
		}
	}
}
