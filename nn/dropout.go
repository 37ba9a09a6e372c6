package nn

import "github.com/kiln-ml/kiln/tensor"

// Dropout2d zeroes whole channels: during training each channel of each
// sample of x [N, C, H, W] (or [C, H, W]) is zeroed with probability P and
// the rest are scaled by 1/(1−P), as torch.nn.Dropout2d; in evaluation
// mode it is the identity. Adjacent pixels of a feature map are strongly
// correlated, so dropping single elements regularises convolutional
// layers little; dropping channels does.
type Dropout2d struct {
	Mode
	P float64 `kiln:"-"`
}

// NewDropout2d returns a Dropout2d with drop probability p in [0, 1). It
// panics with ErrArgument otherwise.
func NewDropout2d(p float64) *Dropout2d {
	if p < 0 || p >= 1 {
		argError("nn.NewDropout2d", "probability %v outside [0, 1)", p)
	}
	return &Dropout2d{P: p}
}

// Forward applies channel dropout to x in training mode, drawing the mask
// from x's device random stream. It panics with a *tensor.Error whose Op
// is "nn.Dropout2d" unless x is [N, C, H, W] or [C, H, W] (PyTorch 1.13
// reads a 3-D input as [N, C, L] instead, with a warning; Kiln follows the
// documented unbatched form).
func (d *Dropout2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	r := x.Dims()
	if r != 3 && r != 4 {
		shapeError("Dropout2d", "expects input [N, C, H, W] or [C, H, W], got %v", x.Shape())
	}
	if !d.Training() || d.P == 0 {
		return x
	}
	mask := x.Shape()
	mask[r-1], mask[r-2] = 1, 1
	return applyMask(x, mask, d.P)
}

// applyMask multiplies x by a Bernoulli(1−p) mask of the given shape
// (broadcast over x) scaled by 1/(1−p).
func applyMask(x *tensor.Tensor, shape []int, p float64) *tensor.Tensor {
	keep := tensor.Bernoulli(x.Device().Inner(), 1-p, shape...)
	if keep.DType() != x.DType() {
		k := keep.To(x.DType())
		keep.Release()
		keep = k
	}
	keep = scaled(keep, 1/(1-p))
	return x.Mul(keep)
}

// scaled multiplies t (outside any graph) by s, releasing t.
func scaled(t *tensor.Tensor, s float64) *tensor.Tensor {
	out := t.MulScalar(s)
	t.Release()
	return out
}
