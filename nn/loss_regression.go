package nn

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// MSEOptions configures MSE. Its zero value is PyTorch's default, the mean.
type MSEOptions struct {
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// MSE returns the squared error (input − target)² of each element, reduced,
// as torch.nn.functional.mse_loss. Gradients flow to both tensors.
//
// It panics with ErrDType for non-float tensors, ErrShape when the shapes
// differ (PyTorch broadcasts them with a warning; that is almost always a
// bug, so Kiln refuses) and ErrArgument for a bad reduction.
func MSE(input, target *tensor.Tensor, opts MSEOptions) *tensor.Tensor {
	d := regressionDiff("MSE", input, target, opts.Reduction)
	return reduce(d.Square(), lossReduction("MSE", opts.Reduction, false))
}

// L1Options configures L1. Its zero value is PyTorch's default, the mean.
type L1Options struct {
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// L1 returns the absolute error |input − target| of each element, reduced,
// as torch.nn.functional.l1_loss. The gradient is sign(input − target), 0
// where they are equal. It panics as MSE does.
func L1(input, target *tensor.Tensor, opts L1Options) *tensor.Tensor {
	d := regressionDiff("L1", input, target, opts.Reduction)
	return reduce(d.Abs(), lossReduction("L1", opts.Reduction, false))
}

// HuberOptions configures Huber. Its zero value is PyTorch's defaults:
// delta 1, reduction "mean".
type HuberOptions struct {
	// Delta (> 0; 0 means 1) is where the loss turns from quadratic to
	// linear.
	Delta float64 `json:"delta,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// Huber returns the Huber loss of each element, with d = input − target:
// d²/2 where |d| < delta, else delta·(|d| − delta/2), reduced, as
// torch.nn.functional.huber_loss. The gradient is d inside and
// ±delta outside. It panics as MSE does, and with ErrArgument for a
// negative, infinite or NaN Delta.
func Huber(input, target *tensor.Tensor, opts HuberOptions) *tensor.Tensor {
	const loss = "Huber"
	delta := opts.Delta
	if delta == 0 {
		delta = 1
	}
	if !(delta > 0) || math.IsInf(delta, 1) {
		lossError(loss, tensor.ErrArgument, "delta %v must be positive and finite", opts.Delta)
	}
	d := regressionDiff(loss, input, target, opts.Reduction)
	z := d.Abs()
	quadratic := d.Square().MulScalar(0.5)
	linear := z.SubScalar(0.5 * delta).MulScalar(delta)
	return reduce(tensor.Where(z.LtScalar(delta), quadratic, linear), lossReduction(loss, opts.Reduction, false))
}

// SmoothL1Options configures SmoothL1. Its zero value is PyTorch's
// defaults: beta 1, reduction "mean".
type SmoothL1Options struct {
	// Beta (≥ 0), when not nil, is where the loss turns from quadratic to
	// linear; nil means PyTorch's 1. (A pointer because 0 is valid: beta 0
	// is the L1 loss.)
	Beta *float64 `json:"beta,omitempty"`
	// Reduction is "mean" (when empty), "sum" or "none".
	Reduction string `json:"reduction,omitempty"`
}

// SmoothL1 returns the smooth L1 loss of each element, with
// d = input − target: d²/(2·beta) where |d| < beta, else |d| − beta/2,
// reduced, as torch.nn.functional.smooth_l1_loss (Huber divided by beta;
// L1 when beta is 0). It panics as MSE does, and with ErrArgument for a
// negative or NaN Beta.
func SmoothL1(input, target *tensor.Tensor, opts SmoothL1Options) *tensor.Tensor {
	const loss = "SmoothL1"
	beta := 1.0
	if opts.Beta != nil {
		beta = *opts.Beta
	}
	if !(beta >= 0) || math.IsInf(beta, 1) {
		lossError(loss, tensor.ErrArgument, "beta %v must be finite and at least 0", beta)
	}
	d := regressionDiff(loss, input, target, opts.Reduction)
	red := lossReduction(loss, opts.Reduction, false)
	z := d.Abs()
	if beta == 0 {
		return reduce(z, red)
	}
	quadratic := d.Square().MulScalar(0.5).DivScalar(beta)
	linear := z.SubScalar(0.5 * beta)
	return reduce(tensor.Where(z.LtScalar(beta), quadratic, linear), red)
}

// regressionDiff checks the arguments of an element-wise regression loss
// and returns input − target.
func regressionDiff(loss string, input, target *tensor.Tensor, reduction string) *tensor.Tensor {
	lossReduction(loss, reduction, false)
	lossInputs(loss, []string{"input", "target"}, input, target)
	floatInput(loss, "input", input)
	floatInput(loss, "target", target)
	sameShapes(loss, "input", input, "target", target)
	return input.Sub(target)
}
