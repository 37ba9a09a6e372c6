package nn

import (
	"github.com/kiln-ml/kiln/tensor"
)

// CTCOptions configures CTC. Its zero value is PyTorch's defaults: blank
// class 0, reduction "mean", infinite losses kept.
type CTCOptions struct {
	// Blank is the class index of the blank label, in [0, C).
	Blank int `json:"blank,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none". "mean" is
	// PyTorch's: each sample's loss divided by its target length (at least
	// 1), then averaged over the batch.
	Reduction string `json:"reduction,omitempty"`
	// ZeroInfinity replaces the infinite loss of a target that cannot fit
	// its input by 0, with a zero gradient; without it such a sample's loss
	// is +Inf and its gradient NaN, as in PyTorch.
	ZeroInfinity bool `json:"zero_infinity,omitempty"`
}

// CTC returns the connectionist temporal classification loss,
// −log p(target | input), as torch.nn.functional.ctc_loss. logProbs is
// [T, N, C] (time, batch, classes; [T, C] for one unbatched sample) of
// log-probabilities, usually a LogSoftmax over C. targets holds integer
// labels (never the blank), padded [N, S] ([S] unbatched) or the N
// sequences concatenated into one 1-D tensor; sample n uses its first
// inputLengths[n] frames and targetLengths[n] labels. "none" gives [N] (0-d
// unbatched).
//
// It is tensor.CTCLoss, one graph node whose forward and alpha-beta
// backward recursions run on the host in float64 (see there for why and
// for the gradient, which is PyTorch's), followed by the reduction. It
// panics as tensor.CTCLoss does, and with ErrArgument for a bad reduction.
func CTC(logProbs, targets *tensor.Tensor, inputLengths, targetLengths []int, opts CTCOptions) *tensor.Tensor {
	const loss = "CTC"
	red := lossReduction(loss, opts.Reduction, false)
	lossInputs(loss, []string{"log-probabilities", "targets"}, logProbs, targets)
	nll := tensor.CTCLoss(logProbs, targets, inputLengths, targetLengths,
		tensor.CTCLossOptions{Blank: opts.Blank, ZeroInfinity: opts.ZeroInfinity})
	if red != "mean" {
		return reduce(nll, red)
	}
	div := make([]float64, len(targetLengths))
	for i, l := range targetLengths {
		div[i] = float64(max(l, 1))
	}
	lengths := tensor.FromFloat64s(logProbs.Device(), div).Reshape(nll.Shape()...).To(nll.DType())
	return nll.Div(lengths).Mean()
}

// CTCTensorLengths is CTC with the lengths given as integer tensors (0-d or
// 1-D, on any device), as PyTorch accepts them; they are read to the host.
// It panics with ErrDType for non-integer lengths and ErrShape for lengths
// of rank above 1, besides CTC's panics.
func CTCTensorLengths(logProbs, targets, inputLengths, targetLengths *tensor.Tensor, opts CTCOptions) *tensor.Tensor {
	const loss = "CTC"
	lossInputs(loss, []string{"log-probabilities", "targets", "input lengths", "target lengths"},
		logProbs, targets, inputLengths, targetLengths)
	read := func(what string, t *tensor.Tensor) []int {
		if !t.DType().IsInt() {
			lossError(loss, tensor.ErrDType, "%s %v are %s; they must be integers", what, t.Shape(), t.DType())
		}
		if t.Dims() > 1 {
			lossError(loss, tensor.ErrShape, "%s %v must be 0-d or 1-D", what, t.Shape())
		}
		v := t.Int64s()
		out := make([]int, len(v))
		for i, x := range v {
			out[i] = int(x)
		}
		return out
	}
	return CTC(logProbs, targets, read("input lengths", inputLengths), read("target lengths", targetLengths), opts)
}
