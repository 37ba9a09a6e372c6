package nn

import "github.com/kiln-ml/kiln/tensor"

// Volumetric layers: the 3-D counterparts of Conv2d, ConvTranspose2d,
// MaxPool2d and AvgPool2d, with PyTorch's parameter names and layouts so
// that their state dicts load unchanged.

// Conv3d is a 3-D convolution layer, torch.nn.Conv3d: Weight
// [Out, In/Groups, KD, KH, KW] and Bias [Out]. The geometry fields are the
// constructor's configuration resolved to one value per dimension (depth,
// height, width).
type Conv3d struct {
	Weight      *Param `kiln:"weight"`
	Bias        *Param `kiln:"bias"` // nil without bias
	Stride      []int  `kiln:"-"`
	Padding     []int  `kiln:"-"`
	Dilation    []int  `kiln:"-"`
	Same        bool   `kiln:"-"`
	Groups      int    `kiln:"-"`
	PaddingMode string `kiln:"-"` // "zeros", "reflect", "replicate" or "circular"
}

// NewConv3d returns a Conv3d from in to out channels with a cubic
// kernel×kernel×kernel window (ConvConfig.Kernel, three values, for
// another), PyTorch's default initialisation, and the optional
// configuration, whose lists hold one value or three. It fails as
// NewConv2d does.
func NewConv3d(dev tensor.Device, in, out, kernel int, cfg ...ConvConfig) *Conv3d {
	var c ConvConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	s := checkConv("nn.NewConv3d", in, out, kernel, c, 3)
	l := &Conv3d{Stride: s.stride, Padding: s.padding, Dilation: s.dilation, Same: c.Same, Groups: s.groups,
		PaddingMode: s.mode}
	l.Weight, l.Bias = newConvParams(dev, []int{out, in / s.groups, s.kernel[0], s.kernel[1], s.kernel[2]}, out, c)
	return l
}

// Forward convolves x [N, In, D, H, W] (or an unbatched [In, D, H, W])
// into [N, Out, OD, OH, OW]. It panics with a *tensor.Error whose Op is
// "nn.Conv3d" when x has another rank or channel count, and as
// tensor.Conv3d for other failures.
func (l *Conv3d) Forward(x *tensor.Tensor) *tensor.Tensor {
	check3dInput("Conv3d", x, l.Weight.Dim(1)*l.Groups)
	w := l.Weight.Tensor
	cfg := tensor.ConvConfig{Stride: l.Stride, Dilation: l.Dilation, Groups: l.Groups}
	switch {
	case l.PaddingMode != "zeros" && l.PaddingMode != "":
		var pads []int
		for d := 2; d >= 0; d-- {
			lo, hi := l.Padding[d], l.Padding[d]
			if l.Same {
				total := l.Dilation[d] * (w.Dim(2+d) - 1)
				lo, hi = total/2, total-total/2
			}
			pads = append(pads, lo, hi)
		}
		x = x.Pad(pads, l.PaddingMode, 0)
	case l.Same:
		cfg.PaddingMode = "same"
	default:
		cfg.Padding = l.Padding
	}
	return tensor.Conv3d(x, w, optional(l.Bias), cfg)
}

// ConvTranspose3d is a transposed 3-D convolution layer,
// torch.nn.ConvTranspose3d: Weight [In, Out/Groups, KD, KH, KW] and Bias
// [Out].
type ConvTranspose3d struct {
	Weight        *Param `kiln:"weight"`
	Bias          *Param `kiln:"bias"` // nil without bias
	Stride        []int  `kiln:"-"`
	Padding       []int  `kiln:"-"`
	OutputPadding []int  `kiln:"-"`
	Dilation      []int  `kiln:"-"`
	Groups        int    `kiln:"-"`
}

// NewConvTranspose3d returns a ConvTranspose3d from in to out channels
// with a cubic window and PyTorch's default initialisation; lists hold one
// value or three. It fails as NewConvTranspose2d does.
func NewConvTranspose3d(dev tensor.Device, in, out, kernel int, cfg ...ConvTransposeConfig) *ConvTranspose3d {
	const op = "nn.NewConvTranspose3d"
	var c ConvTransposeConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	s := checkConv(op, in, out, kernel, ConvConfig{Kernel: c.Kernel, Stride: c.Stride, Padding: c.Padding,
		Dilation: c.Dilation, Groups: c.Groups}, 3)
	op3 := perDim(op, "OutputPadding", c.OutputPadding, 3, 0, 0)
	for d := range op3 {
		if op3[d] >= s.stride[d] && op3[d] >= s.dilation[d] {
			argError(op, "OutputPadding %v must be smaller than the stride %v or the dilation %v", op3, s.stride,
				s.dilation)
		}
	}
	l := &ConvTranspose3d{Stride: s.stride, Padding: s.padding, OutputPadding: op3, Dilation: s.dilation,
		Groups: s.groups}
	l.Weight, l.Bias = newConvParams(dev, []int{in, out / s.groups, s.kernel[0], s.kernel[1], s.kernel[2]}, out,
		ConvConfig{NoBias: c.NoBias, WeightInit: c.WeightInit, BiasInit: c.BiasInit, DType: c.DType})
	return l
}

// Forward applies the transposed convolution to x [N, In, D, H, W] (or
// [In, D, H, W]). It panics with a *tensor.Error whose Op is
// "nn.ConvTranspose3d" when x has another rank or channel count.
func (l *ConvTranspose3d) Forward(x *tensor.Tensor) *tensor.Tensor {
	check3dInput("ConvTranspose3d", x, l.Weight.Dim(0))
	return tensor.ConvTranspose3d(x, l.Weight.Tensor, optional(l.Bias), tensor.ConvTransposeConfig{
		Stride: l.Stride, Padding: l.Padding, OutputPadding: l.OutputPadding, Dilation: l.Dilation, Groups: l.Groups})
}

// check3dInput panics unless x is [N, C, D, H, W] or [C, D, H, W] with C =
// channels (any C when channels is 0).
func check3dInput(layer string, x *tensor.Tensor, channels int) {
	r := x.Dims()
	if (r != 4 && r != 5) || (channels > 0 && x.Dim(-4) != channels) {
		c := any("C")
		if channels > 0 {
			c = channels
		}
		shapeError(layer, "expects input [N, %v, D, H, W] or [%v, D, H, W], got %v", c, c, x.Shape())
	}
}

// MaxPool3d takes the maximum of each window, torch.nn.MaxPool3d.
type MaxPool3d struct {
	Config tensor.PoolConfig `kiln:"-"`
}

// NewMaxPool3d returns a MaxPool3d with a cubic kernel window; cfg, if
// given, sets the stride (default: the kernel), padding, dilation and ceil
// mode, and a non-empty cfg.Kernel replaces the cubic window. Lists hold
// one value or three. It fails as NewMaxPool2d does.
func NewMaxPool3d(kernel int, cfg ...tensor.PoolConfig) MaxPool3d {
	const op = "nn.NewMaxPool3d"
	var c tensor.PoolConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Kernel = poolKernel(op, kernel, c.Kernel)
	check3dPoolLists(op, c.Kernel, c.Stride, c.Padding)
	perDim(op, "Dilation", c.Dilation, 3, 1, 1)
	return MaxPool3d{Config: c}
}

// Forward pools x [N, C, D, H, W] (or [C, D, H, W]). It panics with a
// *tensor.Error whose Op is "nn.MaxPool3d" for another rank, and as
// tensor.MaxPool3d when the input is smaller than a window.
func (l MaxPool3d) Forward(x *tensor.Tensor) *tensor.Tensor {
	v, i := l.ForwardWithIndices(x)
	i.Release()
	return v
}

// ForwardWithIndices returns the maxima and their flat positions
// d·H·W + h·W + w in each input volume (PyTorch's return_indices=True).
func (l MaxPool3d) ForwardWithIndices(x *tensor.Tensor) (values, indices *tensor.Tensor) {
	check3dInput("MaxPool3d", x, 0)
	return tensor.MaxPool3d(x, l.Config)
}

// AvgPool3d averages each window, torch.nn.AvgPool3d.
type AvgPool3d struct {
	Config tensor.AvgPoolConfig `kiln:"-"`
}

// NewAvgPool3d returns an AvgPool3d with a cubic kernel window; cfg sets
// the rest (see tensor.AvgPoolConfig) and fails as NewMaxPool3d.
func NewAvgPool3d(kernel int, cfg ...tensor.AvgPoolConfig) AvgPool3d {
	const op = "nn.NewAvgPool3d"
	var c tensor.AvgPoolConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Kernel = poolKernel(op, kernel, c.Kernel)
	check3dPoolLists(op, c.Kernel, c.Stride, c.Padding)
	if c.DivisorOverride < 0 {
		argError(op, "DivisorOverride %d must not be negative", c.DivisorOverride)
	}
	return AvgPool3d{Config: c}
}

// Forward pools x [N, C, D, H, W] (or [C, D, H, W]); it fails as
// MaxPool3d.Forward, with Op "nn.AvgPool3d".
func (l AvgPool3d) Forward(x *tensor.Tensor) *tensor.Tensor {
	check3dInput("AvgPool3d", x, 0)
	return tensor.AvgPool3d(x, l.Config)
}

func check3dPoolLists(op string, kernel, stride, padding []int) {
	k := perDim(op, "Kernel", kernel, 3, 1, 1)
	perDim(op, "Stride", stride, 3, 1, 1)
	p := perDim(op, "Padding", padding, 3, 0, 0)
	for d := range p {
		if 2*p[d] > k[d] {
			argError(op, "Padding %v must be at most half the kernel %v", padding, kernel)
		}
	}
}
