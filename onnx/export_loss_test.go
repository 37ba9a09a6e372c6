package onnx_test

import (
	"errors"
	"go/ast"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/onnx"
	"github.com/kiln-ml/kiln/tensor"
)

// lossInputs makes a loss's inputs for a batch of n on the CPU.
type lossInputs func(n int) []*tensor.Tensor

func floats(shape ...int) *tensor.Tensor { return tensor.Randn(tensor.CPU(), shape...) }

func probs(shape ...int) *tensor.Tensor { return floats(shape...).Sigmoid() }

func positive(shape ...int) *tensor.Tensor { return tensor.Rand(tensor.CPU(), shape...).AddScalar(0.1) }

// signs returns ±1 floats.
func signs(shape ...int) *tensor.Tensor {
	return tensor.RandInt(tensor.CPU(), 0, 2, shape...).To(tensor.Float32).MulScalar(2).AddScalar(-1)
}

func classes(c int, shape ...int) *tensor.Tensor {
	return tensor.RandInt(tensor.CPU(), 0, int64(c), shape...)
}

// sparseProbs returns rows of c probabilities of which about a third are
// exactly 0.
func sparseProbs(c int) func(n int) *tensor.Tensor {
	return func(n int) *tensor.Tensor {
		keep := tensor.RandInt(tensor.CPU(), 0, 3, n, c).GtScalar(0)
		p := tensor.Where(keep, floats(n, c).Exp(), tensor.ScalarOf(tensor.CPU(), tensor.Float32, 0))
		return p.Div(p.SumKeep(1).AddScalar(1e-6))
	}
}

// lossCase is one loss of nn for TestExportLosses, its inputs and the ONNX
// operators its graph must hold.
type lossCase struct {
	name   string
	loss   func(xs []*tensor.Tensor, reduction string) *tensor.Tensor
	inputs lossInputs
	ops    []string
}

// exportedLosses lists the losses of package nn that ExportFunction writes;
// TestExportEveryLoss fails when a loss is neither here nor in
// unexportableLosses.
func exportedLosses() []lossCase {
	const c = 5
	weight := tensor.FromFloat32s(tensor.CPU(), []float32{0.5, 1, 2, 1.5, 0.25}, c)
	ignore := 2
	two := func(a, b func(n int) *tensor.Tensor) lossInputs {
		return func(n int) []*tensor.Tensor { return []*tensor.Tensor{a(n), b(n)} }
	}
	three := func(a, b, d func(n int) *tensor.Tensor) lossInputs {
		return func(n int) []*tensor.Tensor { return []*tensor.Tensor{a(n), b(n), d(n)} }
	}
	nd := func(f func(shape ...int) *tensor.Tensor, shape ...int) func(n int) *tensor.Tensor {
		return func(n int) *tensor.Tensor { return f(append([]int{n}, shape...)...) }
	}
	cls := func(n int) *tensor.Tensor { return classes(c, n) }
	logProbs := func(c int) func(n int) *tensor.Tensor {
		return func(n int) *tensor.Tensor { return floats(n, c).LogSoftmax(1) }
	}
	return []lossCase{
		{"MSE", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MSE(x[0], x[1], nn.MSEOptions{Reduction: r})
		},
			two(nd(floats, 4), nd(floats, 4)), nil},
		{"L1", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.L1(x[0], x[1], nn.L1Options{Reduction: r})
		},
			two(nd(floats, 4), nd(floats, 4)), []string{"Abs"}},
		{"CrossEntropy", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CrossEntropy(x[0], x[1], nn.CrossEntropyOptions{Reduction: r})
		}, two(nd(floats, c), cls), []string{"SoftmaxCrossEntropyLoss"}},
		{"CrossEntropy weight ignore smoothing", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CrossEntropy(x[0], x[1], nn.CrossEntropyOptions{Weight: weight, IgnoreIndex: &ignore, LabelSmoothing: 0.1, Reduction: r})
		}, two(nd(floats, c), cls), nil},
		{"CrossEntropy weight ignore", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CrossEntropy(x[0], x[1], nn.CrossEntropyOptions{Weight: weight, IgnoreIndex: &ignore, Reduction: r})
		}, two(nd(floats, c, 3), func(n int) *tensor.Tensor { return classes(c, n, 3) }), []string{"SoftmaxCrossEntropyLoss"}},
		{"CrossEntropy probabilities", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CrossEntropy(x[0], x[1], nn.CrossEntropyOptions{Reduction: r})
		}, two(nd(floats, c), func(n int) *tensor.Tensor { return floats(n, c).Softmax(1) }), nil},
		{"BCEWithLogits", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.BCEWithLogits(x[0], x[1], nn.BCEWithLogitsOptions{Reduction: r})
		}, two(nd(floats, c), nd(probs, c)), nil},
		{"BCEWithLogits pos_weight", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.BCEWithLogits(x[0], x[1], nn.BCEWithLogitsOptions{PosWeight: weight, Reduction: r})
		}, two(nd(floats, c), nd(probs, c)), nil},
		{"KLDiv log_target", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.KLDiv(x[0], x[1], nn.KLDivOptions{LogTarget: true, Reduction: r})
		}, two(func(n int) *tensor.Tensor { return floats(n, c).LogSoftmax(1) }, func(n int) *tensor.Tensor { return floats(n, c).LogSoftmax(1) }), []string{"Exp"}},
		{"PoissonNLL", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.PoissonNLL(x[0], x[1], nn.PoissonNLLOptions{Reduction: r})
		}, two(nd(floats, 4), nd(positive, 4)), nil},
		{"SoftMargin", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.SoftMargin(x[0], x[1], nn.SoftMarginOptions{Reduction: r})
		}, two(nd(floats, 4), nd(signs, 4)), nil},
		{"MarginRanking", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MarginRanking(x[0], x[1], x[2], nn.MarginRankingOptions{Margin: 0.3, Reduction: r})
		}, three(nd(floats), nd(floats), nd(signs)), nil},

		// The losses below compute masks, class indices or detached copies
		// from their inputs: the trace records those ops too
		// (tensor.TraceInput), so the graph computes them.
		{"Huber", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.Huber(x[0], x[1], nn.HuberOptions{Delta: 0.6, Reduction: r})
		}, two(nd(floats, 4), nd(floats, 4)), []string{"Less", "Where"}},
		{"SmoothL1", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			beta := 0.7
			return nn.SmoothL1(x[0], x[1], nn.SmoothL1Options{Beta: &beta, Reduction: r})
		}, two(nd(floats, 4), nd(floats, 4)), []string{"Less", "Where"}},
		{"NLL", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.NLL(x[0], x[1], nn.NLLOptions{Reduction: r})
		}, two(logProbs(c), cls), []string{"GatherElements", "Equal", "Not"}},
		{"NLL weight ignore spatial", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.NLL(x[0], x[1], nn.NLLOptions{Weight: weight, IgnoreIndex: &ignore, Reduction: r})
		}, two(func(n int) *tensor.Tensor { return floats(n, c, 3).LogSoftmax(1) }, func(n int) *tensor.Tensor { return classes(c, n, 3) }),
			[]string{"GatherElements", "Where"}},
		{"NLL int32 target", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.NLL(x[0], x[1], nn.NLLOptions{Weight: weight, Reduction: r})
		}, two(logProbs(c), func(n int) *tensor.Tensor { return classes(c, n).To(tensor.Int32) }), []string{"Cast"}},
		{"BinaryCrossEntropy", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.BinaryCrossEntropy(x[0], x[1], nn.BinaryCrossEntropyOptions{Reduction: r})
		}, two(nd(probs, c), nd(probs, c)), []string{"Identity", "Log"}},
		{"BinaryCrossEntropy weight", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.BinaryCrossEntropy(x[0], x[1], nn.BinaryCrossEntropyOptions{Weight: weight, Reduction: r})
		}, two(nd(probs, c), nd(probs, c)), nil},
		{"KLDiv", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.KLDiv(x[0], x[1], nn.KLDivOptions{Reduction: r})
		}, two(logProbs(c), sparseProbs(c)), []string{"Equal", "Where"}},
		{"GaussianNLL", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			// An eps inside the variances' range, so that the clamp bites.
			return nn.GaussianNLL(x[0], x[1], x[2], nn.GaussianNLLOptions{Eps: 0.4, Reduction: r})
		}, three(nd(floats, 4), nd(floats, 4), nd(positive, 4)), []string{"Identity", "Clip"}},
		{"GaussianNLL full per-sample variance", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.GaussianNLL(x[0], x[1], x[2], nn.GaussianNLLOptions{Full: true, Eps: 0.4, Reduction: r})
		}, three(nd(floats, 4), nd(floats, 4), nd(positive)), nil},
		{"HingeEmbedding", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			margin := 0.5
			return nn.HingeEmbedding(x[0], x[1], nn.HingeEmbeddingOptions{Margin: &margin, Reduction: r})
		}, two(nd(floats, 4), nd(signs, 4)), []string{"Equal", "Not"}},
		{"MultiMargin", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MultiMargin(x[0], x[1], nn.MultiMarginOptions{Reduction: r})
		}, two(nd(floats, c), cls), []string{"GatherElements", "Equal"}},
		{"MultiMargin p2 margin weight", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			margin := 0.7
			return nn.MultiMargin(x[0], x[1], nn.MultiMarginOptions{P: 2, Margin: &margin, Weight: weight, Reduction: r})
		}, two(nd(floats, c), cls), nil},
		{"MultiLabelMargin", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.MultiLabelMargin(x[0], x[1], nn.MultiLabelMarginOptions{Reduction: r})
		}, two(nd(floats, c), func(n int) *tensor.Tensor { return tensor.RandInt(tensor.CPU(), -1, c, n, c) }), []string{"CumSum", "ReduceSum"}},
		{"CosineEmbedding", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CosineEmbedding(x[0], x[1], x[2], nn.CosineEmbeddingOptions{Margin: 0.2, Reduction: r})
		}, three(nd(floats, 6), nd(floats, 6), nd(signs)), []string{"Equal", "Where"}},
		{"CosineEmbedding int64 labels", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.CosineEmbedding(x[0], x[1], x[2], nn.CosineEmbeddingOptions{Margin: -0.3, Reduction: r})
		}, three(nd(floats, 6), nd(floats, 6), func(n int) *tensor.Tensor { return signs(n).To(tensor.Int64) }), nil},
		{"TripletMargin", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.TripletMargin(x[0], x[1], x[2], nn.TripletMarginOptions{Reduction: r})
		}, three(nd(floats, 6), nd(floats, 6), nd(floats, 6)), []string{"Equal", "Sqrt"}},
		{"TripletMargin p3 swap", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			margin := 0.5
			return nn.TripletMargin(x[0], x[1], x[2], nn.TripletMarginOptions{Margin: &margin, P: 3, Swap: true, Reduction: r})
		}, three(nd(floats, 6), nd(floats, 6), nd(floats, 6)), []string{"Pow", "Min"}},
		{"TripletMargin p1 and inf", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			l1 := nn.TripletMargin(x[0], x[1], x[2], nn.TripletMarginOptions{P: 1, Reduction: r})
			return l1.Add(nn.TripletMargin(x[0], x[1], x[2], nn.TripletMarginOptions{P: math.Inf(1), Reduction: r}))
		}, three(nd(floats, 6), nd(floats, 6), nd(floats, 6)), nil},
		{"TripletMarginWithDistance", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			return nn.TripletMarginWithDistance(x[0], x[1], x[2], nn.TripletMarginWithDistanceOptions{Reduction: r})
		}, three(nd(floats, 6), nd(floats, 6), nd(floats, 6)), []string{"Equal"}},
		{"TripletMarginWithDistance cosine swap", func(x []*tensor.Tensor, r string) *tensor.Tensor {
			cosine := func(a, b *tensor.Tensor) *tensor.Tensor {
				return a.Mul(b).Sum(1).Div(a.Square().Sum(1).Mul(b.Square().Sum(1)).Sqrt()).Neg().AddScalar(1)
			}
			return nn.TripletMarginWithDistance(x[0], x[1], x[2], nn.TripletMarginWithDistanceOptions{Distance: cosine, Swap: true, Reduction: r})
		}, three(nd(floats, 6), nd(floats, 6), nd(floats, 6)), nil},
		{"PairwiseDistance", func(x []*tensor.Tensor, _ string) *tensor.Tensor {
			return nn.PairwiseDistance(x[0], x[1], nn.PairwiseDistanceOptions{})
		}, two(nd(floats, 6), nd(floats, 6)), []string{"Equal", "Sqrt"}},
		{"PairwiseDistance p1.5 keepdim", func(x []*tensor.Tensor, _ string) *tensor.Tensor {
			return nn.PairwiseDistance(x[0], x[1], nn.PairwiseDistanceOptions{P: 1.5, Eps: 1e-3, KeepDim: true})
		}, two(nd(floats, 6), nd(floats, 6)), nil},
	}
}

// TestExportLosses exports every loss of exportedLosses for each reduction
// as a graph of the prediction and target (and a third input where the
// loss has one) with a scalar output ("mean", "sum") or one loss per
// position ("none"), checks it with onnx.checker and compares the
// re-imported graph's loss with Kiln's on other inputs and batch sizes.
func TestExportLosses(t *testing.T) {
	for _, lc := range exportedLosses() {
		var cases []functionCase
		for _, r := range []string{"mean", "sum", "none"} {
			cases = append(cases, functionCase{name: lc.name + " " + r, fn: func(xs []*tensor.Tensor) *tensor.Tensor { return lc.loss(xs, r) },
				inputs: lc.inputs, ops: lc.ops})
		}
		checkFunctionExports(t, cases, 1e-5, []int{3, 5})
	}
}

// unexportableLosses lists the losses of package nn that Export cannot
// write, and why.
var unexportableLosses = map[string]string{
	"KLDiv": "partly: \"batchmean\" divides by the traced batch size (DivScalar by a number), so its graph is right at the traced " +
		"batch size only (TestExportKLDivBatchMean)",
	"CTC":              "no ONNX operator computes the CTC loss (its dynamic-programming recursion over the alignments)",
	"CTCTensorLengths": "no ONNX operator computes the CTC loss (its dynamic-programming recursion over the alignments)",
}

// TestExportKLDivBatchMean exports KLDiv's "batchmean" reduction, whose
// divisor is the traced batch size, and compares it at that size.
func TestExportKLDivBatchMean(t *testing.T) {
	checkFunctionExports(t, []functionCase{{name: "KLDiv batchmean", fn: func(x []*tensor.Tensor) *tensor.Tensor {
		return nn.KLDiv(x[0], x[1], nn.KLDivOptions{Reduction: "batchmean"})
	}, inputs: func(n int) []*tensor.Tensor {
		return []*tensor.Tensor{floats(n, 5).LogSoftmax(1), sparseProbs(5)(n)}
	}}}, 1e-5, []int{3})
}

// TestExportEveryLoss fails when a loss of package nn (an exported
// function taking an …Options struct and returning a tensor) is neither
// exported by TestExportLosses nor listed in unexportableLosses with the
// reason, and checks that a function computing a mask from its input's
// values outside the graph (read to the host) is refused with ErrExport
// rather than written with frozen values.
func TestExportEveryLoss(t *testing.T) {
	exported := map[string]bool{}
	for _, lc := range exportedLosses() {
		exported[strings.Fields(lc.name)[0]] = true
	}
	var missing []string
	for _, loss := range nnLosses(t) {
		if !exported[loss] && unexportableLosses[loss] == "" {
			missing = append(missing, loss)
		}
		if exported[loss] && unexportableLosses[loss] != "" && !strings.HasPrefix(unexportableLosses[loss], "partly: ") {
			t.Errorf("%s is both exported and listed as unexportable", loss)
		}
	}
	if len(missing) > 0 {
		t.Errorf("nn losses with no export test (add them to exportedLosses, or to unexportableLosses with the reason): %s", strings.Join(missing, ", "))
	}
	hostMask := func(x []*tensor.Tensor) *tensor.Tensor {
		v := x[0].Float32s()
		m := make([]float32, len(v))
		for i, f := range v {
			if f > 0 {
				m[i] = 1
			}
		}
		return x[0].Mul(tensor.FromFloat32s(tensor.CPU(), m, x[0].Shape()...)).Sum()
	}
	_, err := onnx.TraceFunction(hostMask, nil, []*tensor.Tensor{floats(3, 4)}, onnx.ExportOptions{})
	if !errors.Is(err, onnx.ErrExport) {
		t.Errorf("a mask read to the host: TraceFunction gave %v, want ErrExport", err)
	}
}

// nnLosses lists package nn's exported functions that take an …Options
// struct and return a *tensor.Tensor.
func nnLosses(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, fd := range nnFuncs(t) {
		if fd.Recv != nil || !fd.Name.IsExported() || fd.Type.Results == nil || len(fd.Type.Params.List) == 0 {
			continue
		}
		last := fd.Type.Params.List[len(fd.Type.Params.List)-1]
		id, ok := last.Type.(*ast.Ident)
		if ok && strings.HasSuffix(id.Name, "Options") {
			out = append(out, fd.Name.Name)
		}
	}
	sort.Strings(out)
	return out
}
