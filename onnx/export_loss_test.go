package onnx_test

import (
	"errors"
	"go/ast"
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
	"Huber":    "picks the quadratic or the linear branch with a comparison (|d| < delta) that package tensor does not record: the mask would be frozen",
	"SmoothL1": "picks the quadratic or the linear branch with a comparison (|d| < beta) that package tensor does not record: the mask would be frozen",
	"NLL": "masks the ignored positions and guards negative classes with comparisons of the integer target (NeScalar, LtScalar) " +
		"that package tensor does not record, so the class indices it gathers would be frozen",
	"BinaryCrossEntropy": "attaches PyTorch's gradient through detached copies of its inputs (p − p.Detach()), whose values the graph would freeze",
	"KLDiv": "partly: with LogTarget it is exported; without, it treats zero targets with a comparison (target == 0) that package tensor does not record, " +
		"and \"batchmean\" divides by the traced batch size (DivScalar)",
	"GaussianNLL":               "clamps the variance through a detached copy (max(var, eps) with var's gradient), whose values the graph would freeze",
	"HingeEmbedding":            "selects the branch by comparing the ±1 target (target == 1), which package tensor does not record",
	"MultiMargin":               "builds the other-classes mask by comparing the target with the class ids, which package tensor does not record",
	"MultiLabelMargin":          "reads the target's −1 terminator with comparisons that package tensor does not record",
	"CosineEmbedding":           "selects the branch by comparing the ±1 target (y == 1), which package tensor does not record",
	"TripletMargin":             "guards zero distances in its p-norm with a comparison (s == 0) that package tensor does not record",
	"TripletMarginWithDistance": "its default distance guards zero norms with a comparison (s == 0) that package tensor does not record",
	"PairwiseDistance":          "guards zero norms with a comparison (s == 0) that package tensor does not record",
	"CTC":                       "no ONNX operator computes the CTC loss (its dynamic-programming recursion over the alignments)",
	"CTCTensorLengths":          "no ONNX operator computes the CTC loss (its dynamic-programming recursion over the alignments)",
}

// TestExportEveryLoss fails when a loss of package nn (an exported
// function taking an …Options struct and returning a tensor) is neither
// exported by TestExportLosses nor listed in unexportableLosses with the
// reason, and checks that a listed loss is refused with ErrExport rather
// than written with frozen values.
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
	for _, c := range []struct {
		name string
		fn   func(xs []*tensor.Tensor) *tensor.Tensor
		xs   []*tensor.Tensor
	}{
		{"Huber", func(x []*tensor.Tensor) *tensor.Tensor { return nn.Huber(x[0], x[1], nn.HuberOptions{}) }, []*tensor.Tensor{floats(3, 4), floats(3, 4)}},
		{"NLL", func(x []*tensor.Tensor) *tensor.Tensor { return nn.NLL(x[0], x[1], nn.NLLOptions{}) }, []*tensor.Tensor{floats(3, 5).LogSoftmax(1), classes(5, 3)}},
		{"BinaryCrossEntropy", func(x []*tensor.Tensor) *tensor.Tensor {
			return nn.BinaryCrossEntropy(x[0], x[1], nn.BinaryCrossEntropyOptions{})
		}, []*tensor.Tensor{probs(3, 4), probs(3, 4)}},
	} {
		_, err := onnx.TraceFunction(c.fn, nil, c.xs, onnx.ExportOptions{})
		if !errors.Is(err, onnx.ErrExport) {
			t.Errorf("%s: TraceFunction gave %v, want ErrExport", c.name, err)
		}
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
