package nn

import (
	"math"
	"slices"

	"github.com/kiln-ml/kiln/tensor"
)

// The rest of torch.nn.functional's losses: Poisson and Gaussian negative
// log-likelihoods, the hinge embedding, multi-label margin, multi-class
// margin and soft margin losses, and the triplet loss with a distance of
// the caller's choosing (with PairwiseDistance, its default). They follow
// loss.go: package functions with an options struct whose zero value is
// PyTorch's defaults, composed from public tensor ops (so gradients flow
// to every float input that requires them), panicking with a *tensor.Error
// whose Op names the loss.

// PoissonNLLOptions configures PoissonNLL. Its zero value is PyTorch's
// defaults: log-rate input, no Stirling term, eps 1e−8, reduction "mean".
type PoissonNLLOptions struct {
	// LogInput, when not nil, says whether the input holds log-rates
	// (true, the default: loss e^input − target·input) or rates (false:
	// loss input − target·log(input + Eps)).
	LogInput *bool `json:"log_input,omitempty"`
	// Full adds the Stirling approximation of log(target!),
	// target·log(target) − target + ½·log(2π·target), where target > 1.
	Full bool `json:"full,omitempty"`
	// Eps (≥ 0; 0 means 1e−8) keeps log(input + Eps) finite at a rate of
	// 0 when LogInput is false.
	Eps float64 `json:"eps,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// PoissonNLL returns the negative log-likelihood of target counts under a
// Poisson distribution whose rate is given by input (its logarithm by
// default), element-wise, reduced, as torch.nn.functional.poisson_nll_loss.
// input and target have one shape. Gradients flow to both; where Full's
// Stirling term is masked (target ≤ 1) its gradient is 0 (PyTorch gives
// NaN at a target of exactly 0).
//
// It panics with ErrDType for non-float tensors, ErrShape when the shapes
// differ (PyTorch broadcasts them), and ErrArgument for a negative or NaN
// Eps or a bad reduction.
func PoissonNLL(input, target *tensor.Tensor, opts PoissonNLLOptions) *tensor.Tensor {
	const loss = "PoissonNLL"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"input", "target"}, input, target)
	floatInput(loss, "input", input)
	floatInput(loss, "target", target)
	sameShapes(loss, "input", input, "target", target)
	eps := opts.Eps
	if eps == 0 {
		eps = 1e-8
	}
	if !(eps >= 0) || math.IsInf(eps, 1) {
		lossError(loss, tensor.ErrArgument, "eps %v must be finite and at least 0", opts.Eps)
	}
	var l *tensor.Tensor
	if opts.LogInput == nil || *opts.LogInput {
		l = input.Exp().Sub(target.Mul(input))
	} else {
		l = input.Sub(target.Mul(input.AddScalar(eps).Log()))
	}
	if opts.Full {
		// The term's logs read 1 where it is masked, so that neither value
		// nor gradient meets log 0.
		big := target.GtScalar(1)
		safe := tensor.Where(big, target, scalarOf(target, 1))
		stirling := safe.Mul(safe.Log()).Sub(safe).Add(safe.MulScalar(2 * math.Pi).Log().MulScalar(0.5))
		l = l.Add(tensor.Where(big, stirling, scalarOf(stirling, 0)))
	}
	return reduce(l, red)
}

// GaussianNLLOptions configures GaussianNLL. Its zero value is PyTorch's
// defaults: no constant term, eps 1e−6, reduction "mean".
type GaussianNLLOptions struct {
	// Full adds the constant ½·log(2π) to each element's loss.
	Full bool `json:"full,omitempty"`
	// Eps (> 0; 0 means 1e−6) is the smallest variance used: smaller ones
	// are raised to it in value, while their gradient passes unchanged, as
	// PyTorch's clamp under no_grad.
	Eps float64 `json:"eps,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// GaussianNLL returns the negative log-likelihood of target under normal
// distributions with mean input and variance variance,
// ½·(log(max(var, eps)) + (input − target)²/max(var, eps)) element-wise,
// reduced, as torch.nn.functional.gaussian_nll_loss. target has input's
// shape or broadcasts to it; variance has input's shape, or input's shape
// without its last dimension (one variance shared by the last dimension;
// a 0-d variance for a 1-D input), or that with a last dimension of 1, as
// PyTorch allows. "none" gives input's shape. Gradients flow to all three.
//
// It panics with ErrDType for non-float tensors, ErrShape for shapes
// outside those rules, and ErrArgument for a negative or NaN Eps or a bad
// reduction. Unlike PyTorch it does not read the variances back to refuse
// negative ones: they are raised to Eps.
func GaussianNLL(input, target, variance *tensor.Tensor, opts GaussianNLLOptions) *tensor.Tensor {
	const loss = "GaussianNLL"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"input", "target", "variance"}, input, target, variance)
	floatInput(loss, "input", input)
	floatInput(loss, "target", target)
	floatInput(loss, "variance", variance)
	broadcastsTo(loss, "target", target, "input", input.Shape())
	is, vs := input.Shape(), variance.Shape()
	switch {
	case slices.Equal(is, vs):
	case len(is) > 0 && slices.Equal(is[:len(is)-1], vs):
		variance = variance.Unsqueeze(-1)
	case len(is) > 0 && len(vs) == len(is) && slices.Equal(is[:len(is)-1], vs[:len(vs)-1]) && vs[len(vs)-1] == 1:
	default:
		lossError(loss, tensor.ErrShape, "variance %v does not fit input %v: want %v, its leading dimensions, or those with a last dimension of 1",
			vs, is, is)
	}
	eps := opts.Eps
	if eps == 0 {
		eps = 1e-6
	}
	if !(eps > 0) || math.IsInf(eps, 1) {
		lossError(loss, tensor.ErrArgument, "eps %v must be positive and finite", opts.Eps)
	}
	// max(var, eps) in value, with the gradient of var itself: var − var
	// is 0 but carries var's gradient.
	v := variance.Detach()
	clamped := v.ClampMin(eps).Add(variance.Sub(v))
	l := clamped.Log().Add(input.Sub(target).Square().Div(clamped)).MulScalar(0.5)
	if opts.Full {
		l = l.AddScalar(0.5 * math.Log(2*math.Pi))
	}
	return reduce(l, red)
}

// HingeEmbeddingOptions configures HingeEmbedding. Its zero value is
// PyTorch's defaults: margin 1, reduction "mean".
type HingeEmbeddingOptions struct {
	// Margin, when not nil, is the distance below which dissimilar pairs
	// cost margin − distance; nil means PyTorch's 1. (A pointer because 0
	// is valid.)
	Margin *float64 `json:"margin,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// HingeEmbedding returns the hinge embedding loss of distances input under
// labels target (same shape, any numeric dtype): input where the label is
// 1, max(0, margin − input) where it is −1, and the sum of both for other
// labels, as torch.nn.functional.hinge_embedding_loss. Gradients flow to
// input.
//
// It panics with ErrDType for a non-float input, ErrShape when the shapes
// differ, and ErrArgument for a bad reduction.
func HingeEmbedding(input, target *tensor.Tensor, opts HingeEmbeddingOptions) *tensor.Tensor {
	const loss = "HingeEmbedding"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"input", "target"}, input, target)
	floatInput(loss, "input", input)
	sameShapes(loss, "input", input, "target", target)
	margin := 1.0
	if opts.Margin != nil {
		margin = *opts.Margin
	}
	zero := scalarOf(input, 0)
	hinge := tensor.Where(target.NeScalar(1), input.Neg().AddScalar(margin).ClampMin(0), zero)
	same := tensor.Where(target.NeScalar(-1), input, zero)
	return reduce(hinge.Add(same), red)
}

// MultiLabelMarginOptions configures MultiLabelMargin. Its zero value is
// PyTorch's default reduction, "mean".
type MultiLabelMarginOptions struct {
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// MultiLabelMargin returns the multi-label margin loss of scores input
// [N, C] ([C] for one sample) against target, integer class indices of
// input's shape: each row's indices are its classes, up to the first
// negative one, and the loss of a row is
// Σ_j Σ_i max(0, 1 − (x[y_j] − x[i]))/C over its classes y_j and the
// classes i that are not among them, as
// torch.nn.functional.multilabel_margin_loss. "none" gives [N] (0-d for
// one sample). Gradients flow to input. It builds an [N, C, C] tensor, so
// it suits up to a few thousand classes.
//
// It panics with ErrDType for a non-float input or a non-integer target,
// ErrShape when the shapes differ or are not 1-D or 2-D, and ErrArgument
// for a bad reduction. A class index ≥ C is a device error, reported at
// the next read or Sync.
func MultiLabelMargin(input, target *tensor.Tensor, opts MultiLabelMarginOptions) *tensor.Tensor {
	const loss = "MultiLabelMargin"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"input", "target"}, input, target)
	floatInput(loss, "input", input)
	if !target.DType().IsInt() {
		lossError(loss, tensor.ErrDType, "target %v is %s; it must hold integer class indices", target.Shape(), target.DType())
	}
	sameShapes(loss, "input", input, "target", target)
	s := input.Shape()
	if len(s) != 1 && len(s) != 2 {
		lossError(loss, tensor.ErrShape, "input must be [N C] or [C], got %v", s)
	}
	x, t := input, target.To(tensor.Int64)
	if len(s) == 1 {
		x, t = x.Unsqueeze(0), t.Unsqueeze(0)
	}
	c := x.Dim(1)
	// A row's classes are the indices before its first negative one.
	valid := t.LtScalar(0).Cumsum(1).EqScalar(0)
	idx := tensor.Where(valid, t, scalarOf(t, 0))
	classes := tensor.ArangeOf(t.Device().Inner(), tensor.Int64, 0, float64(c), 1).Reshape(1, 1, c)
	// isTarget[n, i]: class i is one of row n's classes.
	isTarget := idx.Unsqueeze(2).Eq(classes).LogicalAnd(valid.Unsqueeze(2)).Any(1)
	picked := x.Gather(1, idx) // x[y_j] for each position j
	h := x.Unsqueeze(1).Sub(picked.Unsqueeze(2)).AddScalar(1).ClampMin(0)
	keep := valid.Unsqueeze(2).LogicalAnd(isTarget.LogicalNot().Unsqueeze(1))
	l := tensor.Where(keep, h, scalarOf(h, 0)).Sum(1, 2).DivScalar(float64(c))
	if len(s) == 1 {
		l = l.Reshape()
	}
	return reduce(l, red)
}

// MultiMarginOptions configures MultiMargin. Its zero value is PyTorch's
// defaults: p 1, margin 1, no class weights, reduction "mean".
type MultiMarginOptions struct {
	// P (1 or 2; 0 means 1) is the power of each hinge term.
	P int `json:"p,omitempty"`
	// Margin, when not nil, is how far the target class's score must lead
	// every other to cost nothing; nil means PyTorch's 1. (A pointer
	// because 0 is valid.)
	Margin *float64 `json:"margin,omitempty"`
	// Weight, when not nil, is a float tensor [C] of per-class weights,
	// multiplying the terms of each sample by its target class's weight.
	// No gradient flows to it.
	Weight *tensor.Tensor `json:"-"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// MultiMargin returns the multi-class margin (hinge) loss of scores input
// [N, C] ([C] for one sample) at integer class indices target [N] (0-d):
// Σ_{i≠y} w[y]·max(0, margin − x[y] + x[i])^p / C for each sample, as
// torch.nn.functional.multi_margin_loss. "none" gives target's shape.
// Gradients flow to input.
//
// It panics with ErrDType for non-float input or weights or a non-integer
// target, ErrShape when input is not 1-D or 2-D or target or Weight do not
// fit it, and ErrArgument for a P other than 1 or 2 or a bad reduction. A
// class index outside [0, C) is a device error, reported at the next read
// or Sync.
func MultiMargin(input, target *tensor.Tensor, opts MultiMarginOptions) *tensor.Tensor {
	const loss = "MultiMargin"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"input", "target"}, input, target)
	floatInput(loss, "input", input)
	if !target.DType().IsInt() {
		lossError(loss, tensor.ErrDType, "target %v is %s; it must hold integer class indices", target.Shape(), target.DType())
	}
	s := input.Shape()
	if len(s) != 1 && len(s) != 2 {
		lossError(loss, tensor.ErrShape, "input must be [N C] or [C], got %v", s)
	}
	if want := s[:len(s)-1]; !slices.Equal(target.Shape(), want) {
		lossError(loss, tensor.ErrShape, "target %v does not match input %v: want %v", target.Shape(), s, want)
	}
	p := opts.P
	if p == 0 {
		p = 1
	}
	if p != 1 && p != 2 {
		lossError(loss, tensor.ErrArgument, "p %d must be 1 or 2", opts.P)
	}
	c := s[len(s)-1]
	if w := opts.Weight; w != nil {
		floatInput(loss, "class weights", w)
		if !slices.Equal(w.Shape(), []int{c}) {
			lossError(loss, tensor.ErrShape, "class weights %v do not match the %d classes of input %v", w.Shape(), c, s)
		}
	}
	margin := 1.0
	if opts.Margin != nil {
		margin = *opts.Margin
	}
	x, t := input, target.To(tensor.Int64)
	if len(s) == 1 {
		x, t = x.Unsqueeze(0), t.Unsqueeze(0)
	}
	// Negative classes would count from the end in Gather: send them past
	// it, so that the device reports them.
	t = tensor.Where(t.LtScalar(0), scalarOf(t, float64(c)), t)
	picked := x.Gather(1, t.Unsqueeze(1))
	h := x.Sub(picked).AddScalar(margin).ClampMin(0)
	if p == 2 {
		h = h.Square()
	}
	classes := tensor.ArangeOf(t.Device().Inner(), tensor.Int64, 0, float64(c), 1).Reshape(1, c)
	h = tensor.Where(classes.Eq(t.Unsqueeze(1)), scalarOf(h, 0), h)
	l := h.Sum(1).DivScalar(float64(c))
	if opts.Weight != nil {
		l = l.Mul(opts.Weight.Detach().To(l.DType()).Gather(0, t))
	}
	if len(s) == 1 {
		l = l.Reshape()
	}
	return reduce(l, red)
}

// SoftMarginOptions configures SoftMargin. Its zero value is PyTorch's
// default reduction, "mean".
type SoftMarginOptions struct {
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// SoftMargin returns the two-class logistic loss log(1 + e^(−target·input))
// of each element, with labels target of ±1 (input's shape, any numeric
// dtype), reduced, as torch.nn.functional.soft_margin_loss. It is computed
// as −log σ(target·input), finite for inputs of any magnitude (PyTorch
// overflows to ∞ beyond about 88 in float32). Gradients flow to input and
// to a float target (PyTorch refuses the latter).
//
// It panics with ErrDType for a non-float input, ErrShape when the shapes
// differ, and ErrArgument for a bad reduction.
func SoftMargin(input, target *tensor.Tensor, opts SoftMarginOptions) *tensor.Tensor {
	const loss = "SoftMargin"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"input", "target"}, input, target)
	floatInput(loss, "input", input)
	sameShapes(loss, "input", input, "target", target)
	if !target.DType().IsFloat() {
		target = target.To(input.DType())
	}
	return reduce(target.Mul(input).LogSigmoid().Neg(), red)
}

// PairwiseDistanceOptions configures PairwiseDistance. Its zero value is
// PyTorch's defaults: the 2-norm, eps 1e−6, the last dimension removed.
type PairwiseDistanceOptions struct {
	// P (> 0; 0 means 2) is the norm's degree; math.Inf(1) is the maximum
	// norm.
	P float64 `json:"p,omitempty"`
	// Eps (≥ 0; 0 means 1e−6) is added to each difference before its
	// norm, as PyTorch does, keeping the norm's gradient finite.
	Eps float64 `json:"eps,omitempty"`
	// KeepDim keeps the last dimension with size 1.
	KeepDim bool `json:"keep_dim,omitempty"`
}

// PairwiseDistance returns ‖x1 − x2 + eps‖_P over the last dimension of
// x1 and x2, which broadcast together (so [N, D] against [D] measures
// every row against one point), as torch.nn.functional.pairwise_distance
// and torch.nn.PairwiseDistance. A norm of exactly 0 has gradient 0.
// Gradients flow to both.
//
// It panics with ErrDType for non-float tensors, ErrShape for 0-d tensors
// or shapes that do not broadcast, and ErrArgument for a P that is not
// positive or a negative or NaN Eps.
func PairwiseDistance(x1, x2 *tensor.Tensor, opts PairwiseDistanceOptions) *tensor.Tensor {
	const op = "PairwiseDistance"
	lossInputs(op, []string{"x1", "x2"}, x1, x2)
	floatInput(op, "x1", x1)
	floatInput(op, "x2", x2)
	if x1.Dims() == 0 || x2.Dims() == 0 {
		lossError(op, tensor.ErrShape, "x1 %v and x2 %v must have at least one dimension", x1.Shape(), x2.Shape())
	}
	if !broadcastable(x1.Shape(), x2.Shape()) {
		lossError(op, tensor.ErrShape, "x1 %v and x2 %v do not broadcast together", x1.Shape(), x2.Shape())
	}
	p, eps := opts.P, opts.Eps
	if p == 0 {
		p = 2
	}
	if eps == 0 {
		eps = 1e-6
	}
	if !(p > 0) {
		lossError(op, tensor.ErrArgument, "norm degree P %v must be positive", opts.P)
	}
	if !(eps >= 0) {
		lossError(op, tensor.ErrArgument, "eps %v must be at least 0", opts.Eps)
	}
	d := pNorm(x1.Sub(x2).AddScalar(eps), p)
	if opts.KeepDim {
		d = d.Unsqueeze(-1)
	}
	return d
}

// broadcastable reports whether shapes a and b broadcast together.
func broadcastable(a, b []int) bool {
	for i := 1; i <= min(len(a), len(b)); i++ {
		x, y := a[len(a)-i], b[len(b)-i]
		if x != y && x != 1 && y != 1 {
			return false
		}
	}
	return true
}

// TripletMarginWithDistanceOptions configures TripletMarginWithDistance.
// Its zero value is PyTorch's defaults: PairwiseDistance, margin 1, no
// swap, reduction "mean".
type TripletMarginWithDistanceOptions struct {
	// Distance, when not nil, returns the distances between the rows of
	// two embedding tensors (any non-negative function that is smaller for
	// closer points; for [N, D] embeddings, an [N] result); nil means
	// PairwiseDistance with its defaults. It must be built from tensor ops
	// for gradients to flow.
	Distance func(x1, x2 *tensor.Tensor) *tensor.Tensor `json:"-"`
	// Margin, when not nil, is how much farther the negative must be than
	// the positive to cost nothing; nil means PyTorch's 1. (A pointer
	// because 0 is valid.)
	Margin *float64 `json:"margin,omitempty"`
	// Swap uses the smaller of the anchor's and the positive's distances to
	// the negative (Balntas et al.'s distance swap).
	Swap bool `json:"swap,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// TripletMarginWithDistance returns the triplet loss
// max(d(a, p) − d(a, n) + margin, 0) of anchor, positive and negative
// embeddings under the distance d of opts.Distance, as
// torch.nn.functional.triplet_margin_with_distance_loss. With the default
// distance it equals TripletMargin with its default P and Eps. "none"
// gives the distances' shape. Gradients flow to all three embeddings
// through d.
//
// It panics with ErrDType for non-float embeddings, ErrArgument for a NaN
// margin, a bad reduction or a Distance that returns nil, and ErrShape
// when the distances of the two pairs do not have one shape; the default
// distance panics as PairwiseDistance.
func TripletMarginWithDistance(anchor, positive, negative *tensor.Tensor, opts TripletMarginWithDistanceOptions) *tensor.Tensor {
	const loss = "TripletMarginWithDistance"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"anchor", "positive", "negative"}, anchor, positive, negative)
	floatInput(loss, "anchor", anchor)
	floatInput(loss, "positive", positive)
	floatInput(loss, "negative", negative)
	margin := 1.0
	if opts.Margin != nil {
		margin = *opts.Margin
	}
	if math.IsNaN(margin) {
		lossError(loss, tensor.ErrArgument, "margin is NaN")
	}
	dist := opts.Distance
	if dist == nil {
		dist = func(x1, x2 *tensor.Tensor) *tensor.Tensor { return PairwiseDistance(x1, x2, PairwiseDistanceOptions{}) }
	}
	measure := func(what string, x1, x2 *tensor.Tensor) *tensor.Tensor {
		d := dist(x1, x2)
		if d == nil {
			lossError(loss, tensor.ErrArgument, "the distance function returned nil for the %s pair", what)
		}
		return d
	}
	dPos, dNeg := measure("anchor-positive", anchor, positive), measure("anchor-negative", anchor, negative)
	if opts.Swap {
		dNeg = dNeg.Minimum(measure("positive-negative", positive, negative))
	}
	if !slices.Equal(dPos.Shape(), dNeg.Shape()) {
		lossError(loss, tensor.ErrShape, "distances of the positive pairs %v and of the negative pairs %v differ in shape",
			dPos.Shape(), dNeg.Shape())
	}
	return reduce(dPos.AddScalar(margin).Sub(dNeg).ClampMin(0), red)
}
