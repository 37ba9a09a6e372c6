package nn

import (
	"math"
	"slices"

	"github.com/kiln-ml/kiln/tensor"
)

// CosineEmbeddingOptions configures CosineEmbedding. Its zero value is
// PyTorch's defaults: margin 0, reduction "mean".
type CosineEmbeddingOptions struct {
	// Margin, in [−1, 1], is the cosine similarity below which dissimilar
	// pairs cost nothing.
	Margin float64 `json:"margin,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// CosineEmbedding returns the cosine embedding loss of pairs x1, x2 ([N, D],
// or [D] for one pair) labelled y ([N], or 0-d; any numeric dtype): with
// cos the pairs' cosine similarity, 1 − cos where y = 1 (similar),
// max(0, cos − margin) where y = −1 (dissimilar), and 0 for other labels,
// as torch.nn.functional.cosine_embedding_loss (whose 1e−12 added to each
// squared norm it keeps). "none" gives y's shape. Gradients flow to x1 and
// x2.
//
// It panics with ErrDType for non-float inputs, ErrShape when x1 and x2
// differ in shape, are not 1-D or 2-D, or y does not have one label per
// pair, and ErrArgument for a bad reduction.
func CosineEmbedding(x1, x2, y *tensor.Tensor, opts CosineEmbeddingOptions) *tensor.Tensor {
	const loss = "CosineEmbedding"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"x1", "x2", "y"}, x1, x2, y)
	floatInput(loss, "x1", x1)
	floatInput(loss, "x2", x2)
	sameShapes(loss, "x1", x1, "x2", x2)
	s := x1.Shape()
	if len(s) != 1 && len(s) != 2 {
		lossError(loss, tensor.ErrShape, "inputs x1 and x2 must be [N D] or [D], got %v", s)
	}
	if want := s[:len(s)-1]; !slices.Equal(y.Shape(), want) {
		lossError(loss, tensor.ErrShape, "labels y %v do not match inputs %v: want %v", y.Shape(), s, want)
	}
	d := len(s) - 1
	const eps = 1e-12
	dot := x1.Mul(x2).Sum(d)
	norms := x1.Mul(x1).Sum(d).AddScalar(eps).Mul(x2.Mul(x2).Sum(d).AddScalar(eps)).Sqrt()
	cos := dot.Div(norms)
	zero := scalarOf(cos, 0)
	similar := tensor.Where(y.EqScalar(1), cos.Neg().AddScalar(1), zero)
	dissimilar := tensor.Where(y.EqScalar(-1), cos.SubScalar(opts.Margin).ClampMin(0), zero)
	return reduce(similar.Add(dissimilar), red)
}

// MarginRankingOptions configures MarginRanking. Its zero value is
// PyTorch's defaults: margin 0, reduction "mean".
type MarginRankingOptions struct {
	// Margin is how far the preferred input must lead to cost nothing.
	Margin float64 `json:"margin,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// MarginRanking returns the margin ranking loss max(0, −y·(x1 − x2) +
// margin) of each element, where y = 1 says x1 should rank higher and
// y = −1 that x2 should, as torch.nn.functional.margin_ranking_loss. x1,
// x2 and y have one shape; y may be an integer tensor. Gradients flow to
// x1, x2 and a float y.
//
// It panics with ErrDType for non-float x1 or x2, ErrShape when the shapes
// differ, and ErrArgument for a bad reduction.
func MarginRanking(x1, x2, y *tensor.Tensor, opts MarginRankingOptions) *tensor.Tensor {
	const loss = "MarginRanking"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"x1", "x2", "y"}, x1, x2, y)
	floatInput(loss, "x1", x1)
	floatInput(loss, "x2", x2)
	sameShapes(loss, "x1", x1, "x2", x2)
	sameShapes(loss, "x1", x1, "y", y)
	if !y.DType().IsFloat() {
		y = y.To(x1.DType())
	}
	return reduce(y.Neg().Mul(x1.Sub(x2)).AddScalar(opts.Margin).ClampMin(0), red)
}

// TripletMarginOptions configures TripletMargin. Its zero value is
// PyTorch's defaults: margin 1, the 2-norm, eps 1e−6, no swap, reduction
// "mean".
type TripletMarginOptions struct {
	// Margin, when not nil, is how much farther the negative must be than
	// the positive to cost nothing; nil means PyTorch's 1. (A pointer
	// because 0 is valid.)
	Margin *float64 `json:"margin,omitempty"`
	// P (> 0; 0 means 2) is the norm's degree; math.Inf(1) is the maximum
	// norm.
	P float64 `json:"p,omitempty"`
	// Eps (≥ 0; 0 means 1e−6) is added to each difference before its norm,
	// as PyTorch's pairwise_distance does, keeping the norm's gradient
	// finite.
	Eps float64 `json:"eps,omitempty"`
	// Swap uses the smaller of the anchor's and the positive's distances to
	// the negative (Balntas et al.'s distance swap).
	Swap bool `json:"swap,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// TripletMargin returns the triplet margin loss of anchor, positive and
// negative embeddings ([N, D], or [D] for one triplet):
// max(d(a, p) − d(a, n) + margin, 0) with d(x, y) = ‖x − y + eps‖_P, as
// torch.nn.functional.triplet_margin_loss. "none" gives [N] (0-d for one
// triplet). Gradients flow to all three; a norm of exactly 0 has gradient
// 0.
//
// It panics with ErrDType for non-float inputs, ErrShape when the three
// shapes differ or are not 1-D or 2-D, and ErrArgument for a negative or
// NaN P or Eps or a bad reduction.
func TripletMargin(anchor, positive, negative *tensor.Tensor, opts TripletMarginOptions) *tensor.Tensor {
	const loss = "TripletMargin"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"anchor", "positive", "negative"}, anchor, positive, negative)
	for _, x := range []struct {
		name string
		t    *tensor.Tensor
	}{{"anchor", anchor}, {"positive", positive}, {"negative", negative}} {
		floatInput(loss, x.name, x.t)
	}
	if !slices.Equal(anchor.Shape(), positive.Shape()) || !slices.Equal(anchor.Shape(), negative.Shape()) {
		lossError(loss, tensor.ErrShape, "anchor %v, positive %v and negative %v must have the same shape",
			anchor.Shape(), positive.Shape(), negative.Shape())
	}
	if r := anchor.Dims(); r != 1 && r != 2 {
		lossError(loss, tensor.ErrShape, "embeddings must be [N D] or [D], got %v", anchor.Shape())
	}
	margin, p, eps := 1.0, opts.P, opts.Eps
	if opts.Margin != nil {
		margin = *opts.Margin
	}
	if p == 0 {
		p = 2
	}
	if eps == 0 {
		eps = 1e-6
	}
	if !(p > 0) {
		lossError(loss, tensor.ErrArgument, "norm degree P %v must be positive", opts.P)
	}
	if !(eps >= 0) {
		lossError(loss, tensor.ErrArgument, "eps %v must be at least 0", opts.Eps)
	}
	dist := func(a, b *tensor.Tensor) *tensor.Tensor { return pNorm(a.Sub(b).AddScalar(eps), p) }
	dPos, dNeg := dist(anchor, positive), dist(anchor, negative)
	if opts.Swap {
		dNeg = dNeg.Minimum(dist(positive, negative))
	}
	return reduce(dPos.AddScalar(margin).Sub(dNeg).ClampMin(0), red)
}

// pNorm returns the p-norm of v over its last dimension. Where the norm is
// 0 its gradient is 0 (as PyTorch's norm), not the 0·∞ of the root's
// derivative.
func pNorm(v *tensor.Tensor, p float64) *tensor.Tensor {
	d := v.Dims() - 1
	switch {
	case p == 1:
		return v.Abs().Sum(d)
	case math.IsInf(p, 1):
		return v.Abs().Max(d)
	}
	var s *tensor.Tensor
	if p == 2 {
		s = v.Square().Sum(d)
	} else {
		s = v.Abs().PowScalar(p).Sum(d)
	}
	zero := s.EqScalar(0)
	safe := tensor.Where(zero, scalarOf(s, 1), s)
	var root *tensor.Tensor
	if p == 2 {
		root = safe.Sqrt()
	} else {
		root = safe.PowScalar(1 / p)
	}
	return tensor.Where(zero, scalarOf(s, 0), root)
}
