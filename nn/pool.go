package nn

import "github.com/kiln-ml/kiln/tensor"

// Pooling layers hold no state, so the constructors return values: a
// model may hold the same pooling layer in several places.

// MaxPool2d takes the maximum of each window, torch.nn.MaxPool2d.
type MaxPool2d struct {
	Config tensor.PoolConfig `kiln:"-"`
}

// NewMaxPool2d returns a MaxPool2d with a kernel×kernel window; cfg, if
// given, sets the stride (default: the kernel), padding, dilation and ceil
// mode, and a non-empty cfg.Kernel replaces the square window. It panics
// with ErrArgument for non-positive sizes, lists of the wrong length, or
// padding over half the kernel.
func NewMaxPool2d(kernel int, cfg ...tensor.PoolConfig) MaxPool2d {
	const op = "nn.NewMaxPool2d"
	var c tensor.PoolConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Kernel = poolKernel(op, kernel, c.Kernel)
	checkPoolLists(op, c.Kernel, c.Stride, c.Padding)
	perDim(op, "Dilation", c.Dilation, 2, 1, 1)
	return MaxPool2d{Config: c}
}

// Forward pools x [N, C, H, W] (or [C, H, W]). It panics with a
// *tensor.Error whose Op is "nn.MaxPool2d" for another rank, and as
// tensor.MaxPool2d when the input is smaller than a window.
func (l MaxPool2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	v, i := l.ForwardWithIndices(x)
	i.Release()
	return v
}

// ForwardWithIndices returns the maxima and their flat positions h·W + w
// in each input plane (PyTorch's return_indices=True).
func (l MaxPool2d) ForwardWithIndices(x *tensor.Tensor) (values, indices *tensor.Tensor) {
	checkPoolInput("MaxPool2d", x)
	return tensor.MaxPool2d(x, l.Config)
}

// AvgPool2d averages each window, torch.nn.AvgPool2d.
type AvgPool2d struct {
	Config tensor.AvgPoolConfig `kiln:"-"`
}

// NewAvgPool2d returns an AvgPool2d with a kernel×kernel window; cfg sets
// the rest (see tensor.AvgPoolConfig; its zero value is PyTorch's
// default) and fails as NewMaxPool2d.
func NewAvgPool2d(kernel int, cfg ...tensor.AvgPoolConfig) AvgPool2d {
	const op = "nn.NewAvgPool2d"
	var c tensor.AvgPoolConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Kernel = poolKernel(op, kernel, c.Kernel)
	checkPoolLists(op, c.Kernel, c.Stride, c.Padding)
	if c.DivisorOverride < 0 {
		argError(op, "DivisorOverride %d must not be negative", c.DivisorOverride)
	}
	return AvgPool2d{Config: c}
}

// Forward pools x [N, C, H, W] (or [C, H, W]); it fails as
// MaxPool2d.Forward, with Op "nn.AvgPool2d".
func (l AvgPool2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkPoolInput("AvgPool2d", x)
	return tensor.AvgPool2d(x, l.Config)
}

// AdaptiveAvgPool2d averages x into a fixed OutH×OutW grid whatever its
// size, torch.nn.AdaptiveAvgPool2d; a size of 0 keeps the input's (PyTorch's
// None).
type AdaptiveAvgPool2d struct {
	OutH int `kiln:"-"`
	OutW int `kiln:"-"`
}

// NewAdaptiveAvgPool2d returns an AdaptiveAvgPool2d with output size
// outH×outW. It panics with ErrArgument for negative sizes.
func NewAdaptiveAvgPool2d(outH, outW int) AdaptiveAvgPool2d {
	if outH < 0 || outW < 0 {
		argError("nn.NewAdaptiveAvgPool2d", "output size %d×%d must not be negative", outH, outW)
	}
	return AdaptiveAvgPool2d{OutH: outH, OutW: outW}
}

// Forward pools x [N, C, H, W] (or [C, H, W]) into [N, C, OutH, OutW]. It
// panics with a *tensor.Error whose Op is "nn.AdaptiveAvgPool2d" for
// another rank.
func (l AdaptiveAvgPool2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkPoolInput("AdaptiveAvgPool2d", x)
	return tensor.AdaptiveAvgPool2d(x, l.OutH, l.OutW)
}

func poolKernel(op string, kernel int, list []int) []int {
	if len(list) > 0 {
		return append([]int(nil), list...)
	}
	if kernel <= 0 {
		argError(op, "kernel size must be positive, got %d", kernel)
	}
	return []int{kernel}
}

func checkPoolLists(op string, kernel, stride, padding []int) {
	k := perDim(op, "Kernel", kernel, 2, 1, 1)
	perDim(op, "Stride", stride, 2, 1, 1)
	p := perDim(op, "Padding", padding, 2, 0, 0)
	for d := range p {
		if 2*p[d] > k[d] {
			argError(op, "Padding %v must be at most half the kernel %v", padding, kernel)
		}
	}
}

func checkPoolInput(layer string, x *tensor.Tensor) {
	if r := x.Dims(); r != 3 && r != 4 {
		shapeError(layer, "expects input [N, C, H, W] or [C, H, W], got %v", x.Shape())
	}
}
