package nn

import "github.com/kiln-ml/kiln/tensor"

// The 1-D pooling layers run tensor's 1-D pooling ops, which use the 2-D
// kernels with a unit height. Like the 2-D layers they hold no state, so
// the constructors return values.

// MaxPool1d takes the maximum of each window along the last axis,
// torch.nn.MaxPool1d.
type MaxPool1d struct {
	Config tensor.PoolConfig `kiln:"-"`
}

// NewMaxPool1d returns a MaxPool1d with a window of kernel positions; cfg,
// if given, sets the stride (default: the kernel), padding, dilation and
// ceil mode, each a one-value list. It panics with ErrArgument for a
// non-positive kernel, lists of another length, or padding over half the
// kernel.
func NewMaxPool1d(kernel int, cfg ...tensor.PoolConfig) MaxPool1d {
	const op = "nn.NewMaxPool1d"
	var c tensor.PoolConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Kernel = poolKernel(op, kernel, c.Kernel)
	check1dPoolLists(op, c.Kernel, c.Stride, c.Padding)
	perDim(op, "Dilation", c.Dilation, 1, 1, 1)
	return MaxPool1d{Config: c}
}

// Forward pools x [N, C, L] (or [C, L]). It panics with a *tensor.Error
// whose Op is "nn.MaxPool1d" for another rank, and as tensor.MaxPool1d
// when the input is shorter than a window.
func (l MaxPool1d) Forward(x *tensor.Tensor) *tensor.Tensor {
	v, i := l.ForwardWithIndices(x)
	i.Release()
	return v
}

// ForwardWithIndices returns the maxima and their positions along L
// (PyTorch's return_indices=True).
func (l MaxPool1d) ForwardWithIndices(x *tensor.Tensor) (values, indices *tensor.Tensor) {
	check1dPoolInput("MaxPool1d", x)
	return tensor.MaxPool1d(x, l.Config)
}

// AvgPool1d averages each window along the last axis, torch.nn.AvgPool1d.
type AvgPool1d struct {
	Config tensor.AvgPoolConfig `kiln:"-"`
}

// NewAvgPool1d returns an AvgPool1d with a window of kernel positions; cfg
// sets the stride, padding, ceil mode and ExcludePad (PyTorch's
// count_include_pad=False), and fails as NewMaxPool1d. PyTorch's
// AvgPool1d has no divisor_override, so DivisorOverride must be 0.
func NewAvgPool1d(kernel int, cfg ...tensor.AvgPoolConfig) AvgPool1d {
	const op = "nn.NewAvgPool1d"
	var c tensor.AvgPoolConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Kernel = poolKernel(op, kernel, c.Kernel)
	check1dPoolLists(op, c.Kernel, c.Stride, c.Padding)
	if c.DivisorOverride != 0 {
		argError(op, "DivisorOverride %d: AvgPool1d has no divisor override (as in PyTorch)", c.DivisorOverride)
	}
	return AvgPool1d{Config: c}
}

// Forward pools x [N, C, L] (or [C, L]); it fails as MaxPool1d.Forward,
// with Op "nn.AvgPool1d".
func (l AvgPool1d) Forward(x *tensor.Tensor) *tensor.Tensor {
	check1dPoolInput("AvgPool1d", x)
	return tensor.AvgPool1d(x, l.Config)
}

// AdaptiveAvgPool1d averages x into Out windows whatever its length,
// torch.nn.AdaptiveAvgPool1d; 0 keeps the input's length.
type AdaptiveAvgPool1d struct {
	Out int `kiln:"-"`
}

// NewAdaptiveAvgPool1d returns an AdaptiveAvgPool1d with out windows. It
// panics with ErrArgument for a negative size.
func NewAdaptiveAvgPool1d(out int) AdaptiveAvgPool1d {
	if out < 0 {
		argError("nn.NewAdaptiveAvgPool1d", "output size %d must not be negative", out)
	}
	return AdaptiveAvgPool1d{Out: out}
}

// Forward pools x [N, C, L] (or [C, L]) into [N, C, Out]. It panics with
// a *tensor.Error whose Op is "nn.AdaptiveAvgPool1d" for another rank.
func (l AdaptiveAvgPool1d) Forward(x *tensor.Tensor) *tensor.Tensor {
	check1dPoolInput("AdaptiveAvgPool1d", x)
	return tensor.AdaptiveAvgPool1d(x, l.Out)
}

// AdaptiveMaxPool1d takes the maximum of x over Out windows whatever its
// length, torch.nn.AdaptiveMaxPool1d; 0 keeps the input's length.
type AdaptiveMaxPool1d struct {
	Out int `kiln:"-"`
}

// NewAdaptiveMaxPool1d returns an AdaptiveMaxPool1d with out windows. It
// panics with ErrArgument for a negative size.
func NewAdaptiveMaxPool1d(out int) AdaptiveMaxPool1d {
	if out < 0 {
		argError("nn.NewAdaptiveMaxPool1d", "output size %d must not be negative", out)
	}
	return AdaptiveMaxPool1d{Out: out}
}

// Forward pools x [N, C, L] (or [C, L]) into [N, C, Out]. It panics with
// a *tensor.Error whose Op is "nn.AdaptiveMaxPool1d" for another rank,
// and as tensor.AdaptiveMaxPool1d for an empty L or non-float input.
func (l AdaptiveMaxPool1d) Forward(x *tensor.Tensor) *tensor.Tensor {
	v, i := l.ForwardWithIndices(x)
	i.Release()
	return v
}

// ForwardWithIndices returns the maxima and their positions along L
// (PyTorch's return_indices=True).
func (l AdaptiveMaxPool1d) ForwardWithIndices(x *tensor.Tensor) (values, indices *tensor.Tensor) {
	check1dPoolInput("AdaptiveMaxPool1d", x)
	return tensor.AdaptiveMaxPool1d(x, l.Out)
}

func check1dPoolLists(op string, kernel, stride, padding []int) {
	k := perDim(op, "Kernel", kernel, 1, 1, 1)
	perDim(op, "Stride", stride, 1, 1, 1)
	p := perDim(op, "Padding", padding, 1, 0, 0)
	if 2*p[0] > k[0] {
		argError(op, "Padding %v must be at most half the kernel %v", padding, kernel)
	}
}

func check1dPoolInput(layer string, x *tensor.Tensor) {
	if r := x.Dims(); r != 2 && r != 3 {
		shapeError(layer, "expects input [N, C, L] or [C, L], got %v", x.Shape())
	}
}
