package nn

import (
	"fmt"
	"slices"

	"github.com/kiln-ml/kiln/tensor"
)

// Losses are package functions, like torch.nn.functional's: each takes its
// tensors and an options struct whose zero value is PyTorch's defaults, and
// whose Reduction field says how the per-element losses are combined:
//
//   - "" or "mean": their mean (each loss documents its own weighted or
//     normalised mean where PyTorch has one), a 0-d tensor;
//   - "sum": their sum, a 0-d tensor;
//   - "none": the per-element losses themselves.
//
// They are composed from public tensor ops, so gradients flow to every
// float input that requires them (never to class weights, as in PyTorch),
// except CrossEntropy and CTC, which are single graph nodes of package
// tensor. Bad inputs panic with a *tensor.Error whose Op names the loss
// ("nn.MSE") and whose message names the shapes or dtypes involved.

// lossError panics with a *tensor.Error naming the loss.
func lossError(loss string, kind error, format string, args ...any) {
	panic(&tensor.Error{Op: "nn." + loss, Msg: fmt.Sprintf(format, args...), Err: kind})
}

// lossReduction returns the reduction r means ("" is "mean"), panicking
// with ErrArgument for an unknown one; "batchmean" is accepted only when
// batchMean is set (KLDiv).
func lossReduction(loss, r string, batchMean bool) string {
	switch r {
	case "":
		return "mean"
	case "mean", "sum", "none":
		return r
	case "batchmean":
		if batchMean {
			return r
		}
	}
	if batchMean {
		lossError(loss, tensor.ErrArgument, "reduction %q is not \"mean\", \"sum\", \"none\" or \"batchmean\"", r)
	}
	lossError(loss, tensor.ErrArgument, "reduction %q is not \"mean\", \"sum\" or \"none\"", r)
	return ""
}

// reduce applies reduction ("mean", "sum" or "none") to per-element losses.
func reduce(l *tensor.Tensor, reduction string) *tensor.Tensor {
	switch reduction {
	case "sum":
		return l.Sum()
	case "none":
		return l
	}
	return l.Mean()
}

// lossInputs panics with ErrArgument when a tensor is nil, naming it.
func lossInputs(loss string, names []string, ts ...*tensor.Tensor) {
	for i, t := range ts {
		if t == nil {
			lossError(loss, tensor.ErrArgument, "%s is nil", names[i])
		}
	}
}

// floatInput panics with ErrDType unless t is floating point.
func floatInput(loss, what string, t *tensor.Tensor) {
	if !t.DType().IsFloat() {
		lossError(loss, tensor.ErrDType, "%s %v are %s; they must be floating point", what, t.Shape(), t.DType())
	}
}

// sameShapes panics with ErrShape unless a and b have the same shape.
func sameShapes(loss, aName string, a *tensor.Tensor, bName string, b *tensor.Tensor) {
	if !slices.Equal(a.Shape(), b.Shape()) {
		lossError(loss, tensor.ErrShape, "%s %v and %s %v must have the same shape", aName, a.Shape(), bName, b.Shape())
	}
}

// broadcastsTo panics with ErrShape unless t (named what) broadcasts to
// shape without growing it, as PyTorch's expand requires of loss weights.
func broadcastsTo(loss, what string, t *tensor.Tensor, toName string, shape []int) {
	s := t.Shape()
	ok := len(s) <= len(shape)
	for i := 1; ok && i <= len(s); i++ {
		d, to := s[len(s)-i], shape[len(shape)-i]
		ok = d == to || d == 1
	}
	if !ok {
		lossError(loss, tensor.ErrShape, "%s %v does not broadcast to %s %v", what, s, toName, shape)
	}
}

// scalarOf returns a 0-d tensor holding v with t's device and dtype.
func scalarOf(t *tensor.Tensor, v float64) *tensor.Tensor {
	return tensor.ScalarOf(t.Device(), t.DType(), v)
}

// CrossEntropyOptions configures CrossEntropy: class weights, the ignored
// class index, label smoothing and the reduction. Its zero value is
// PyTorch's defaults (see tensor.CrossEntropyOptions).
type CrossEntropyOptions = tensor.CrossEntropyOptions

// CrossEntropy returns the cross-entropy between logits [N, C, d…] ([C]
// unbatched) and target, either Int64 class indices [N, d…] or class
// probabilities shaped like logits, as torch.nn.functional.cross_entropy.
// It is tensor.CrossEntropyFromLogits, one graph node computed from a
// stable log-softmax, and panics as that does.
func CrossEntropy(logits, target *tensor.Tensor, opts CrossEntropyOptions) *tensor.Tensor {
	return tensor.CrossEntropyFromLogits(logits, target, opts)
}

// NLLOptions configures NLL. Its zero value is PyTorch's defaults: no class
// weights, ignore index −100, reduction "mean".
type NLLOptions struct {
	// Weight, when not nil, is a float tensor [C] of per-class weights. No
	// gradient flows to it.
	Weight *tensor.Tensor `json:"-"`
	// IgnoreIndex, when not nil, is the target value whose positions
	// contribute neither loss nor gradient; nil means PyTorch's −100. (A
	// pointer because 0 is a valid class.)
	IgnoreIndex *int `json:"ignore_index,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none". "mean" is
	// PyTorch's weighted mean: the sum of the losses divided by the sum of
	// the target classes' weights over the positions not ignored (their
	// number without weights), NaN when every position is ignored.
	Reduction string `json:"reduction,omitempty"`
}

// NLL returns the negative log-likelihood loss of log-probabilities
// logProbs [N, C, d…] ([C] unbatched; the classes are dimension 1) at the
// integer class indices target [N, d…] (0-d unbatched):
// −weight[t]·logProbs[…, t, …] at each position not ignored, 0 at ignored
// ones, as torch.nn.functional.nll_loss. "none" gives target's shape.
//
// It panics with ErrDType for non-float logProbs or weights or a
// non-integer target, ErrShape when target or Weight do not fit logProbs,
// and ErrArgument for a bad reduction. A class index outside [0, C) that
// is not ignored is a device error, reported at the next read or Sync.
func NLL(logProbs, target *tensor.Tensor, opts NLLOptions) *tensor.Tensor {
	const loss = "NLL"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"log-probabilities", "target"}, logProbs, target)
	floatInput(loss, "log-probabilities", logProbs)
	shape := logProbs.Shape()
	if len(shape) == 0 {
		lossError(loss, tensor.ErrShape, "log-probabilities must be [C], [N C] or [N C d1 ...], got a 0-d tensor")
	}
	ca := 0 // the class axis
	if len(shape) > 1 {
		ca = 1
	}
	c := shape[ca]
	positions := append(append([]int{}, shape[:ca]...), shape[ca+1:]...)
	if !target.DType().IsInt() {
		lossError(loss, tensor.ErrDType, "target %v is %s; it must hold integer class indices", target.Shape(), target.DType())
	}
	if !slices.Equal(target.Shape(), positions) {
		lossError(loss, tensor.ErrShape, "target %v does not match log-probabilities %v: want %v (without the class dimension %d)",
			target.Shape(), shape, positions, ca)
	}
	if w := opts.Weight; w != nil {
		floatInput(loss, "class weights", w)
		if !slices.Equal(w.Shape(), []int{c}) {
			lossError(loss, tensor.ErrShape, "class weights %v do not match the %d classes of log-probabilities %v", w.Shape(), c, shape)
		}
	}
	ignore := -100
	if opts.IgnoreIndex != nil {
		ignore = *opts.IgnoreIndex
	}

	t := target
	if t.DType() != tensor.Int64 {
		t = t.To(tensor.Int64)
	}
	keep := t.NeScalar(float64(ignore))
	// Negative classes would count from the end in Gather: send them past
	// it, so that the device reports them; ignored positions read class 0.
	idx := tensor.Where(t.LtScalar(0), scalarOf(t, float64(c)), t)
	idx = tensor.Where(keep, idx, scalarOf(t, 0))
	var picked *tensor.Tensor
	if ca == 0 {
		picked = logProbs.Gather(0, idx.Reshape(1)).Reshape()
	} else {
		picked = logProbs.Gather(1, idx.Unsqueeze(1)).Squeeze(1)
	}
	l := picked.Neg()
	zero := scalarOf(l, 0)
	var den *tensor.Tensor // the positions' weights, for "mean"
	if opts.Weight != nil {
		w := opts.Weight.Detach().To(l.DType())
		wt := w.Gather(0, idx.Reshape(-1)).Reshape(positions...)
		l = l.Mul(wt)
		den = tensor.Where(keep, wt, zero)
	} else {
		den = keep.To(l.DType())
	}
	l = tensor.Where(keep, l, zero)
	if red == "mean" {
		return l.Sum().Div(den.Sum())
	}
	return reduce(l, red)
}

// BinaryCrossEntropyOptions configures BinaryCrossEntropy. Its zero value
// is PyTorch's defaults: no weights, reduction "mean".
type BinaryCrossEntropyOptions struct {
	// Weight, when not nil, multiplies each element's loss; it broadcasts
	// to the probabilities' shape. No gradient flows to it.
	Weight *tensor.Tensor `json:"-"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// BinaryCrossEntropy returns the binary cross-entropy between probabilities
// probs and target (same shape, floats in [0, 1]):
// −weight·(target·log(probs) + (1 − target)·log(1 − probs)), each log
// clamped to at least −100 as PyTorch does, so probabilities of exactly 0
// or 1 give finite losses. As torch.nn.functional.binary_cross_entropy.
//
// The gradient with respect to probs is PyTorch's,
// weight·(probs − target)/max(probs·(1 − probs), 1e−12), finite at 0 and 1;
// the gradient with respect to target is the derivative of the clamped
// loss, weight·(log(1 − probs) − log(probs)) with the clamped logs (PyTorch
// leaves the logs unclamped there, giving ±∞ at 0 and 1). Logits are
// better served by BCEWithLogits, which is stable for any input.
//
// It panics with ErrDType for non-float tensors, ErrShape when target's
// shape differs from probs' or Weight does not broadcast to it, and
// ErrArgument for a bad reduction. Unlike PyTorch it does not read the
// probabilities back to check that they lie in [0, 1]: values outside give
// NaN.
func BinaryCrossEntropy(probs, target *tensor.Tensor, opts BinaryCrossEntropyOptions) *tensor.Tensor {
	const loss = "BinaryCrossEntropy"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"probabilities", "target"}, probs, target)
	floatInput(loss, "probabilities", probs)
	floatInput(loss, "target", target)
	sameShapes(loss, "probabilities", probs, "target", target)
	if opts.Weight != nil {
		floatInput(loss, "weight", opts.Weight)
		broadcastsTo(loss, "weight", opts.Weight, "probabilities", probs.Shape())
	}
	p := probs.Detach()
	logP := p.Log().ClampMin(-100)
	log1mP := p.Neg().AddScalar(1).Log().ClampMin(-100)
	// PyTorch's (t − 1)·log(1 − p) − t·log(p), differentiable in t only.
	l := target.SubScalar(1).Mul(log1mP).Sub(target.Mul(logP))
	if probs.RequiresGrad() {
		// Attach PyTorch's gradient for p: (probs − p) is 0 in value and
		// passes the gradient to probs, so l keeps its value and gains
		// ∂l/∂probs = grad.
		t := target.Detach()
		grad := p.Sub(t).Div(p.Neg().AddScalar(1).Mul(p).ClampMin(1e-12))
		l = l.Add(probs.Sub(p).Mul(grad))
	}
	if opts.Weight != nil {
		l = l.Mul(opts.Weight.Detach())
	}
	return reduce(l, red)
}

// BCEWithLogitsOptions configures BCEWithLogits. Its zero value is
// PyTorch's defaults: no weights, reduction "mean".
type BCEWithLogitsOptions struct {
	// Weight, when not nil, multiplies each element's loss; it broadcasts
	// to the logits' shape. No gradient flows to it.
	Weight *tensor.Tensor `json:"-"`
	// PosWeight, when not nil, weights the positive term (target·log σ(x))
	// of each element; it broadcasts to the logits' shape, so a [C] tensor
	// weights the classes of [N, C] multi-label logits. No gradient flows
	// to it.
	PosWeight *tensor.Tensor `json:"-"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// BCEWithLogits returns the binary cross-entropy between σ(logits) and
// target (same shape), computed stably from the logits as
// torch.nn.functional.binary_cross_entropy_with_logits:
// weight·((1 − target)·x − (1 + (posWeight − 1)·target)·log σ(x)), with
// log σ(x) = −log(1 + e^(−x)) evaluated without overflow, so any finite
// logit gives a finite loss. Gradients flow to logits and target.
//
// It panics with ErrDType for non-float tensors, ErrShape when target's
// shape differs from logits' or a weight does not broadcast to it, and
// ErrArgument for a bad reduction.
func BCEWithLogits(logits, target *tensor.Tensor, opts BCEWithLogitsOptions) *tensor.Tensor {
	const loss = "BCEWithLogits"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"logits", "target"}, logits, target)
	floatInput(loss, "logits", logits)
	floatInput(loss, "target", target)
	sameShapes(loss, "logits", logits, "target", target)
	for _, w := range []struct {
		name string
		t    *tensor.Tensor
	}{{"weight", opts.Weight}, {"positive weight", opts.PosWeight}} {
		if w.t != nil {
			floatInput(loss, w.name, w.t)
			broadcastsTo(loss, w.name, w.t, "logits", logits.Shape())
		}
	}
	l := target.Neg().AddScalar(1).Mul(logits)
	logSig := logits.LogSigmoid()
	if opts.PosWeight != nil {
		lw := opts.PosWeight.Detach().SubScalar(1).Mul(target).AddScalar(1)
		l = l.Sub(lw.Mul(logSig))
	} else {
		l = l.Sub(logSig)
	}
	if opts.Weight != nil {
		l = l.Mul(opts.Weight.Detach())
	}
	return reduce(l, red)
}

// KLDivOptions configures KLDiv. Its zero value is PyTorch's defaults:
// probability targets, reduction "mean".
type KLDivOptions struct {
	// LogTarget says that the target holds log-probabilities rather than
	// probabilities.
	LogTarget bool `json:"log_target,omitempty"`
	// Reduction is "mean" (when empty: the mean over every element, as
	// PyTorch's default, which is not the divergence's definition),
	// "batchmean" (the sum divided by the batch size, dimension 0: the
	// mathematically correct mean divergence per sample), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// KLDiv returns the Kullback-Leibler divergence loss of input
// log-probabilities against target (same shape), element-wise
// target·(log(target) − input), 0 where target is 0 (PyTorch's
// xlogy(target, target) − target·input), or exp(target)·(target − input)
// with LogTarget, as torch.nn.functional.kl_div. Gradients flow to input
// and target; at target = 0 the target's gradient is −input (PyTorch gives
// NaN there).
//
// It panics with ErrDType for non-float tensors, ErrShape when the shapes
// differ, and ErrArgument for a bad reduction.
func KLDiv(input, target *tensor.Tensor, opts KLDivOptions) *tensor.Tensor {
	const loss = "KLDiv"
	red := lossReduction(loss, opts.Reduction, true)
	lossInputs(loss, []string{"input", "target"}, input, target)
	floatInput(loss, "input", input)
	floatInput(loss, "target", target)
	sameShapes(loss, "input", input, "target", target)
	var l *tensor.Tensor
	if opts.LogTarget {
		l = target.Exp().Mul(target.Sub(input))
	} else {
		// xlogy(t, t): t·log t, 0 at t = 0. The log reads 1 there so that
		// neither value nor gradient meets log 0.
		zero := target.EqScalar(0)
		safe := tensor.Where(zero, scalarOf(target, 1), target)
		xlogx := tensor.Where(zero, scalarOf(target, 0), safe.Mul(safe.Log()))
		l = xlogx.Sub(target.Mul(input))
	}
	if red == "batchmean" {
		if input.Dims() == 0 {
			return l.Sum()
		}
		return l.Sum().DivScalar(float64(input.Dim(0)))
	}
	return reduce(l, red)
}
