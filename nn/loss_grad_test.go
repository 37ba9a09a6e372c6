package nn_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// lossGradCase is a finite-difference check of one loss: f receives the
// float inputs (differentiated) and integer ones (passed through) built by
// inputs on a device, and the reduction.
type lossGradCase struct {
	name   string
	f      func(in []*tensor.Tensor, reduction string) *tensor.Tensor
	inputs func(dev tensor.Device) []*tensor.Tensor
}

func randIn(seed uint64, lo, hi float64, shape ...int) func(tensor.Device) *tensor.Tensor {
	return func(dev tensor.Device) *tensor.Tensor { return testutil.RandFloat64(dev, seed, lo, hi, shape...) }
}

func inputsOf(makers ...func(tensor.Device) *tensor.Tensor) func(tensor.Device) []*tensor.Tensor {
	return func(dev tensor.Device) []*tensor.Tensor {
		out := make([]*tensor.Tensor, len(makers))
		for i, m := range makers {
			out[i] = m(dev)
		}
		return out
	}
}

func int64sIn(vals []int64, shape ...int) func(tensor.Device) *tensor.Tensor {
	return func(dev tensor.Device) *tensor.Tensor {
		return tensor.FromInt64s(dev, vals, shape...).Reshape(shape...)
	}
}

func floatsIn(vals []float64, shape ...int) func(tensor.Device) *tensor.Tensor {
	return func(dev tensor.Device) *tensor.Tensor {
		return tensor.FromFloat64s(dev, vals, shape...).Reshape(shape...)
	}
}

// constant returns a Float64 tensor with vals on in's device, for weights
// that receive no gradient (GradCheck differentiates every float input).
func constant(in *tensor.Tensor, vals []float64, shape ...int) *tensor.Tensor {
	return tensor.FromFloat64s(in.Device(), vals, shape...).Reshape(shape...)
}

// TestLossGradients checks every loss's gradients against central finite
// differences in float64, for each reduction, including strided views of
// the inputs.
func TestLossGradients(t *testing.T) {
	cases := []lossGradCase{
		{"CrossEntropy", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CrossEntropy(in[0], in[1], nn.CrossEntropyOptions{LabelSmoothing: 0.1, Reduction: r,
				Weight: constant(in[0], []float64{1, 2, 0.5}, 3)})
		}, inputsOf(randIn(1, -2, 2, 4, 3), int64sIn([]int64{2, -100, 0, 1}, 4))},
		{"NLL", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.NLL(in[0], in[1], nn.NLLOptions{Reduction: r})
		}, inputsOf(randIn(2, -3, 0, 4, 3), int64sIn([]int64{2, -100, 0, 1}, 4))},
		{"NLL/weight/ignore0", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			zero := 0
			return nn.NLL(in[0], in[1], nn.NLLOptions{Reduction: r, IgnoreIndex: &zero,
				Weight: constant(in[0], []float64{1, 2, 0.5}, 3)})
		}, inputsOf(randIn(3, -3, 0, 4, 3), int64sIn([]int64{2, 1, 0, 1}, 4))},
		{"NLL/spatial/transposed", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			// in[0] is [N, d, C]: the classes moved to dimension 1 by a view.
			return nn.NLL(in[0].Transpose(1, 2), in[1], nn.NLLOptions{Reduction: r})
		}, inputsOf(randIn(4, -3, 0, 2, 3, 4), int64sIn([]int64{3, 0, 1, 2, -100, 3}, 2, 3))},
		{"NLL/unbatched", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.NLL(in[0], in[1], nn.NLLOptions{Reduction: r, Weight: constant(in[0], []float64{1, 2, 0.5}, 3)})
		}, inputsOf(randIn(5, -3, 0, 3), int64sIn([]int64{1}))},
		{"BinaryCrossEntropy", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.BinaryCrossEntropy(in[0], in[1], nn.BinaryCrossEntropyOptions{Reduction: r})
		}, inputsOf(randIn(6, 0.05, 0.95, 3, 4), randIn(7, 0, 1, 3, 4))},
		{"BinaryCrossEntropy/weight", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.BinaryCrossEntropy(in[0], in[1], nn.BinaryCrossEntropyOptions{Reduction: r,
				Weight: constant(in[0], []float64{0.5, 1, 2, 3}, 4)})
		}, inputsOf(randIn(8, 0.05, 0.95, 3, 4), randIn(9, 0, 1, 3, 4))},
		{"BCEWithLogits", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.BCEWithLogits(in[0], in[1], nn.BCEWithLogitsOptions{Reduction: r})
		}, inputsOf(randIn(10, -4, 4, 3, 4), randIn(11, 0, 1, 3, 4))},
		{"BCEWithLogits/weights/expanded", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.BCEWithLogits(in[0].Expand(3, 4), in[1], nn.BCEWithLogitsOptions{Reduction: r,
				Weight: constant(in[1], []float64{0.5, 1, 2}, 3, 1), PosWeight: constant(in[1], []float64{3, 0.5, 1, 2}, 4)})
		}, inputsOf(randIn(12, -4, 4, 1, 4), randIn(13, 0, 1, 3, 4))},
		{"MSE", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MSE(in[0], in[1], nn.MSEOptions{Reduction: r})
		}, inputsOf(randIn(14, -2, 2, 2, 3), randIn(15, -2, 2, 2, 3))},
		{"MSE/transposed", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MSE(in[0].T(), in[1], nn.MSEOptions{Reduction: r})
		}, inputsOf(randIn(16, -2, 2, 3, 2), randIn(17, -2, 2, 2, 3))},
		{"L1", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.L1(in[0], in[1], nn.L1Options{Reduction: r})
		}, inputsOf(randIn(18, -2, 2, 2, 3), randIn(19, -2, 2, 2, 3))},
		{"Huber", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.Huber(in[0], in[1], nn.HuberOptions{Delta: 0.8, Reduction: r})
		}, inputsOf(floatsIn([]float64{-2, -0.5, 0.1, 0.7, 1.5, 3}, 2, 3), randIn(20, -0.2, 0.2, 2, 3))},
		{"SmoothL1", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.SmoothL1(in[0], in[1], nn.SmoothL1Options{Reduction: r})
		}, inputsOf(floatsIn([]float64{-2, -0.5, 0.1, 0.7, 1.5, 3}, 2, 3), randIn(21, -0.2, 0.2, 2, 3))},
		{"SmoothL1/beta0", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			zero := 0.0
			return nn.SmoothL1(in[0], in[1], nn.SmoothL1Options{Beta: &zero, Reduction: r})
		}, inputsOf(floatsIn([]float64{-2, -0.5, 0.1, 0.7, 1.5, 3}, 2, 3), randIn(22, -0.2, 0.2, 2, 3))},
		{"KLDiv", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.KLDiv(in[0], in[1], nn.KLDivOptions{Reduction: r})
		}, inputsOf(randIn(23, -3, 0, 2, 3), randIn(24, 0.05, 1, 2, 3))},
		{"KLDiv/batchmean", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			if r == "mean" {
				r = "batchmean"
			}
			return nn.KLDiv(in[0], in[1], nn.KLDivOptions{Reduction: r})
		}, inputsOf(randIn(25, -3, 0, 2, 3), randIn(26, 0.05, 1, 2, 3))},
		{"KLDiv/log_target", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.KLDiv(in[0], in[1], nn.KLDivOptions{LogTarget: true, Reduction: r})
		}, inputsOf(randIn(27, -3, 0, 2, 3), randIn(28, -3, 0, 2, 3))},
		{"CosineEmbedding", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CosineEmbedding(in[0], in[1], in[2], nn.CosineEmbeddingOptions{Margin: -0.5, Reduction: r})
		}, inputsOf(randIn(29, -1, 1, 4, 3), randIn(30, -1, 1, 4, 3), int64sIn([]int64{1, -1, -1, 1}, 4))},
		{"CosineEmbedding/unbatched", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CosineEmbedding(in[0], in[1], in[2], nn.CosineEmbeddingOptions{Reduction: r})
		}, inputsOf(randIn(31, -1, 1, 3), randIn(32, -1, 1, 3), int64sIn([]int64{1}))},
		{"MarginRanking", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MarginRanking(in[0], in[1], in[2], nn.MarginRankingOptions{Margin: 3, Reduction: r})
		}, inputsOf(randIn(33, -1, 1, 5), randIn(34, -1, 1, 5), floatsIn([]float64{1, -1, 1, -1, 1}, 5))},
		{"TripletMargin", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.TripletMargin(in[0], in[1], in[2], nn.TripletMarginOptions{Margin: floatPtr(5), Reduction: r})
		}, inputsOf(randIn(35, -1, 1, 3, 4), randIn(36, -1, 1, 3, 4), randIn(37, -1, 1, 3, 4))},
		{"TripletMargin/p1/swap", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.TripletMargin(in[0], in[1], in[2], nn.TripletMarginOptions{Margin: floatPtr(5), P: 1, Swap: true,
				Reduction: r})
		}, inputsOf(randIn(38, -1, 1, 3, 4), randIn(39, -1, 1, 3, 4), randIn(40, -1, 1, 3, 4))},
		{"TripletMargin/p3", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.TripletMargin(in[0], in[1], in[2], nn.TripletMarginOptions{Margin: floatPtr(5), P: 3, Eps: 0.01,
				Reduction: r})
		}, inputsOf(randIn(41, -1, 1, 3, 4), randIn(42, -1, 1, 3, 4), randIn(43, -1, 1, 3, 4))},
		{"TripletMargin/inf/unbatched", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.TripletMargin(in[0], in[1], in[2], nn.TripletMarginOptions{Margin: floatPtr(5), P: math.Inf(1),
				Reduction: r})
		}, inputsOf(randIn(44, -1, 1, 4), randIn(45, -1, 1, 4), randIn(46, -1, 1, 4))},
		{"CTC/padded", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CTC(in[0].LogSoftmax(2), in[1], []int{5, 4}, []int{2, 3}, nn.CTCOptions{Reduction: r})
		}, inputsOf(randIn(47, -2, 2, 5, 2, 4), int64sIn([]int64{1, 3, 0, 2, 2, 1}, 2, 3))},
		{"CTC/concatenated/blank2", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CTC(in[0].LogSoftmax(2), in[1], []int{5, 3}, []int{3, 1}, nn.CTCOptions{Blank: 2, Reduction: r})
		}, inputsOf(randIn(48, -2, 2, 5, 2, 4), int64sIn([]int64{1, 1, 3, 0}, 4))},
		{"CTC/zero_infinity/permuted", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			// in[0] is [N, T, C]; sample 1 cannot fit 1 1 in 2 frames.
			lp := in[0].Permute(1, 0, 2).LogSoftmax(2)
			return nn.CTC(lp, in[1], []int{4, 2}, []int{2, 2}, nn.CTCOptions{ZeroInfinity: true, Reduction: r})
		}, inputsOf(randIn(49, -2, 2, 2, 4, 3), int64sIn([]int64{1, 2, 1, 1}, 2, 2))},
		{"CTC/unbatched", func(in []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CTC(in[0].LogSoftmax(1), in[1], []int{4}, []int{2}, nn.CTCOptions{Reduction: r})
		}, inputsOf(randIn(50, -2, 2, 4, 3), int64sIn([]int64{2, 2}, 2))},
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

// TestCTCGradientWithRespectToLogProbs checks the gradient CTC gives for
// log-probabilities that need not be normalised: PyTorch's formula, which
// is the true derivative plus exp(logProbs)·(the sample's upstream
// gradient) at every frame within the input length.
func TestCTCGradientWithRespectToLogProbs(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		const T, N, C = 4, 2, 3
		inLens, tgtLens := []int{4, 3}, []int{2, 1}
		host := testutil.RandFloat64(dev, 51, -3, 0, T, N, C).Float64s()
		targets := tensor.FromInt64s(dev, []int64{1, 2, 2, 0}, N, 2)
		upstream := []float64{0.7, -1.3}
		loss := func(vals []float64) []float64 {
			var out []float64
			tensor.Scope(func() {
				lp := tensor.FromFloat64s(dev, vals, T, N, C)
				out = nn.CTC(lp, targets, inLens, tgtLens, nn.CTCOptions{Reduction: "none"}).Float64s()
			})
			return out
		}
		lp := tensor.FromFloat64s(dev.Autodiff(), host, T, N, C).RequireGrad()
		out := nn.CTC(lp, targets, inLens, tgtLens, nn.CTCOptions{Reduction: "none"})
		got := out.Mul(tensor.FromFloat64s(dev, upstream)).Sum().Backward().Get(lp).Float64s()
		const eps = 1e-6
		for i := range host {
			v := append([]float64(nil), host...)
			v[i] += eps
			plus := loss(v)
			v[i] -= 2 * eps
			minus := loss(v)
			fd := 0.0
			for n := range N {
				fd += upstream[n] * (plus[n] - minus[n]) / (2 * eps)
			}
			tt, n := i/(N*C), i/C%N
			want := fd
			if tt < inLens[n] {
				want += math.Exp(host[i]) * upstream[n]
			}
			if math.Abs(got[i]-want) > 1e-6 {
				t.Errorf("element %d (t=%d n=%d): gradient %v, want %v (finite difference %v)", i, tt, n, got[i], want, fd)
			}
		}
	})
}

// TestKLDivZeroTargetGradient checks that a target of exactly 0 gives a
// finite gradient for both tensors: −input for the target (PyTorch gives
// NaN) and −target = 0 for the input.
func TestKLDivZeroTargetGradient(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := tensor.FromFloat64s(ad, []float64{-1.5, -0.2, -3}).RequireGrad()
		y := tensor.FromFloat64s(ad, []float64{0, 0.5, 0.5}).RequireGrad()
		l := nn.KLDiv(x, y, nn.KLDivOptions{Reduction: "sum"})
		if got, want := l.Item(), 0.5*(math.Log(0.5)+0.2)+0.5*(math.Log(0.5)+3); math.Abs(got-want) > 1e-12 {
			t.Errorf("loss %v, want %v", got, want)
		}
		g := l.Backward()
		testutil.AssertValues(t, "input gradient", g.Get(x), []int{3}, []float64{0, -0.5, -0.5}, 0, 1e-12)
		testutil.AssertValues(t, "target gradient", g.Get(y), []int{3},
			[]float64{1.5, math.Log(0.5) + 1 + 0.2, math.Log(0.5) + 1 + 3}, 0, 1e-12)
	})
}

// TestLossHalfPrecision checks that the losses accept Float16 and BFloat16
// inputs, return their dtype, give gradients of their dtype, and agree with
// Float64 within half precision.
func TestLossHalfPrecision(t *testing.T) {
	losses := []struct {
		name string
		f    func(a, b *tensor.Tensor) *tensor.Tensor
	}{
		{"MSE", func(a, b *tensor.Tensor) *tensor.Tensor { return nn.MSE(a, b, nn.MSEOptions{}) }},
		{"SmoothL1", func(a, b *tensor.Tensor) *tensor.Tensor { return nn.SmoothL1(a, b, nn.SmoothL1Options{}) }},
		{"BinaryCrossEntropy", func(a, b *tensor.Tensor) *tensor.Tensor {
			return nn.BinaryCrossEntropy(a.Sigmoid(), b, nn.BinaryCrossEntropyOptions{})
		}},
		{"BCEWithLogits", func(a, b *tensor.Tensor) *tensor.Tensor { return nn.BCEWithLogits(a, b, nn.BCEWithLogitsOptions{}) }},
		{"KLDiv", func(a, b *tensor.Tensor) *tensor.Tensor {
			return nn.KLDiv(a.LogSoftmax(1), b.Softmax(1), nn.KLDivOptions{Reduction: "batchmean"})
		}},
		{"NLL", func(a, _ *tensor.Tensor) *tensor.Tensor {
			return nn.NLL(a.LogSoftmax(1), tensor.FromInt64s(a.Device(), []int64{0, 3, 2}), nn.NLLOptions{})
		}},
		{"CosineEmbedding", func(a, b *tensor.Tensor) *tensor.Tensor {
			return nn.CosineEmbedding(a, b, tensor.FromInt64s(a.Device(), []int64{1, -1, 1}), nn.CosineEmbeddingOptions{})
		}},
		{"TripletMargin", func(a, b *tensor.Tensor) *tensor.Tensor {
			return nn.TripletMargin(a, b, a.Flip(0), nn.TripletMarginOptions{Margin: floatPtr(3)})
		}},
		{"CTC", func(a, _ *tensor.Tensor) *tensor.Tensor {
			return nn.CTC(a.Reshape(3, 1, 4).LogSoftmax(2), tensor.FromInt64s(a.Device(), []int64{1, 2}, 1, 2),
				[]int{3}, []int{2}, nn.CTCOptions{})
		}},
	}
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		a64 := testutil.RandFloat64(ad, 60, 0.1, 0.9, 3, 4)
		b64 := testutil.RandFloat64(ad, 61, 0.1, 0.9, 3, 4)
		for _, l := range losses {
			want := l.f(a64, b64).Item()
			for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
				a := a64.To(dt).Detach().RequireGrad()
				out := l.f(a, b64.To(dt))
				if out.DType() != dt {
					t.Errorf("%s %s: loss is %s", l.name, dt, out.DType())
					continue
				}
				if got := out.Item(); math.Abs(got-want) > 0.02*math.Abs(want)+0.01 {
					t.Errorf("%s %s: loss %v, float64 gives %v", l.name, dt, got, want)
				}
				if g := out.Backward().Get(a); g == nil || g.DType() != dt {
					t.Errorf("%s %s: gradient %v", l.name, dt, g)
				}
			}
		}
	})
}
