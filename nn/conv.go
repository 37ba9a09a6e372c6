package nn

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// ConvConfig configures Conv1d and Conv2d; the zero value of each field is
// PyTorch's default. Lists hold one value for every spatial dimension or
// one per dimension (height, width).
type ConvConfig struct {
	// Kernel gives per-dimension kernel sizes (height, width), overriding
	// the constructor's square kernel size: a rectangular kernel.
	Kernel []int `json:"kernel,omitempty"`
	// Stride is the step between windows; empty means 1.
	Stride []int `json:"stride,omitempty"`
	// Padding is the padding on both sides of each spatial dimension;
	// empty means 0 (PyTorch's padding=0 or padding="valid").
	Padding []int `json:"padding,omitempty"`
	// Same pads so that the output has the input's size (PyTorch's
	// padding="same", stride 1 only); an even kernel extent puts the extra
	// padding at the end, as PyTorch does. Padding must then be empty.
	Same bool `json:"same,omitempty"`
	// Dilation is the spacing between kernel elements; empty means 1.
	Dilation []int `json:"dilation,omitempty"`
	// Groups splits the channels into independent convolutions; 0 means 1.
	// It must divide both channel counts.
	Groups int `json:"groups,omitempty"`
	// PaddingMode is PyTorch's padding_mode: "" or "zeros" pad with zeros,
	// "reflect", "replicate" and "circular" pad the input with
	// Tensor.Pad's modes before an unpadded convolution.
	PaddingMode string `json:"padding_mode,omitempty"`
	// NoBias leaves out the bias (PyTorch's bias=False).
	NoBias bool `json:"no_bias,omitempty"`
	// WeightInit defaults to KaimingUniform{A: √5}, as PyTorch; it is told
	// the fans of Fans(weight shape).
	WeightInit Initializer `json:"-"`
	// BiasInit defaults to U(−1/√fanIn, 1/√fanIn), as PyTorch.
	BiasInit Initializer `json:"-"`
	// DType is the parameters' dtype; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// Conv2d is a 2-D convolution layer, torch.nn.Conv2d: Weight
// [Out, In/Groups, KH, KW] (OIHW) and Bias [Out]. The geometry fields are
// the constructor's configuration resolved to one value per dimension.
type Conv2d struct {
	Weight      *Param `kiln:"weight"`
	Bias        *Param `kiln:"bias"` // nil without bias
	Stride      []int  `kiln:"-"`
	Padding     []int  `kiln:"-"`
	Dilation    []int  `kiln:"-"`
	Same        bool   `kiln:"-"`
	Groups      int    `kiln:"-"`
	PaddingMode string `kiln:"-"` // "zeros", "reflect", "replicate" or "circular"
}

// Conv1d is a 1-D convolution layer, torch.nn.Conv1d: Weight
// [Out, In/Groups, K] and Bias [Out]; fields as Conv2d's, one value each.
type Conv1d struct {
	Weight      *Param `kiln:"weight"`
	Bias        *Param `kiln:"bias"` // nil without bias
	Stride      []int  `kiln:"-"`
	Padding     []int  `kiln:"-"`
	Dilation    []int  `kiln:"-"`
	Same        bool   `kiln:"-"`
	Groups      int    `kiln:"-"`
	PaddingMode string `kiln:"-"`
}

// convSetup is a checked convolution configuration.
type convSetup struct {
	kernel, stride, padding, dilation []int
	groups                            int
	mode                              string
}

// checkConv validates the arguments of a convolution constructor.
func checkConv(op string, in, out, kernel int, c ConvConfig, spatial int) convSetup {
	if in <= 0 || out <= 0 {
		argError(op, "channels must be positive, got in=%d out=%d", in, out)
	}
	var s convSetup
	if len(c.Kernel) > 0 {
		s.kernel = perDim(op, "Kernel", c.Kernel, spatial, 1, 1)
	} else {
		if kernel <= 0 {
			argError(op, "kernel size must be positive, got %d", kernel)
		}
		s.kernel = perDim(op, "kernel", []int{kernel}, spatial, 1, 1)
	}
	s.stride = perDim(op, "Stride", c.Stride, spatial, 1, 1)
	s.padding = perDim(op, "Padding", c.Padding, spatial, 0, 0)
	s.dilation = perDim(op, "Dilation", c.Dilation, spatial, 1, 1)
	if c.Same {
		if len(c.Padding) > 0 {
			argError(op, "Same with Padding %v: set one or the other", c.Padding)
		}
		for _, st := range s.stride {
			if st != 1 {
				argError(op, "Same needs stride 1, got Stride %v (as in PyTorch)", c.Stride)
			}
		}
	}
	s.groups = c.Groups
	if s.groups == 0 {
		s.groups = 1
	}
	if s.groups < 0 || in%s.groups != 0 || out%s.groups != 0 {
		argError(op, "Groups %d must divide the input channels %d and the output channels %d", c.Groups, in, out)
	}
	switch c.PaddingMode {
	case "", "zeros":
		s.mode = "zeros"
	case "reflect", "replicate", "circular":
		s.mode = c.PaddingMode
	default:
		argError(op, "unknown PaddingMode %q (want \"zeros\", \"reflect\", \"replicate\" or \"circular\")", c.PaddingMode)
	}
	return s
}

// newConvParams makes a convolution's weight (shaped as given) and bias.
func newConvParams(dev tensor.Device, shape []int, out int, c ConvConfig) (w, b *Param) {
	fanIn, fanOut := Fans(shape)
	w = initParam(dev, c.WeightInit, KaimingUniform{A: math.Sqrt(5)}, shape, fanIn, fanOut, c.DType)
	if !c.NoBias {
		bd := fanBound(fanIn)
		b = initParam(dev, c.BiasInit, Uniform{Low: -bd, High: bd}, []int{out}, fanIn, fanOut, c.DType)
	}
	return w, b
}

// NewConv2d returns a Conv2d from in to out channels with a kernel×kernel
// window (ConvConfig.Kernel for a rectangular one), PyTorch's default
// initialisation, and the optional configuration. It panics with
// ErrArgument for non-positive sizes, bad configuration lists, Groups that
// do not divide the channels, Same with a stride, or an unknown
// PaddingMode.
func NewConv2d(dev tensor.Device, in, out, kernel int, cfg ...ConvConfig) *Conv2d {
	var c ConvConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	s := checkConv("nn.NewConv2d", in, out, kernel, c, 2)
	l := &Conv2d{Stride: s.stride, Padding: s.padding, Dilation: s.dilation, Same: c.Same, Groups: s.groups,
		PaddingMode: s.mode}
	l.Weight, l.Bias = newConvParams(dev, []int{out, in / s.groups, s.kernel[0], s.kernel[1]}, out, c)
	return l
}

// NewConv1d returns a Conv1d from in to out channels with a kernel of the
// given size; it configures and fails as NewConv2d.
func NewConv1d(dev tensor.Device, in, out, kernel int, cfg ...ConvConfig) *Conv1d {
	var c ConvConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	s := checkConv("nn.NewConv1d", in, out, kernel, c, 1)
	l := &Conv1d{Stride: s.stride, Padding: s.padding, Dilation: s.dilation, Same: c.Same, Groups: s.groups,
		PaddingMode: s.mode}
	l.Weight, l.Bias = newConvParams(dev, []int{out, in / s.groups, s.kernel[0]}, out, c)
	return l
}

// Forward convolves x [N, In, H, W] (or an unbatched [In, H, W]) into
// [N, Out, OH, OW]. It panics with a *tensor.Error whose Op is "nn.Conv2d"
// when x has another rank or channel count, and as tensor.Conv2d for other
// failures (an input smaller than the kernel, mixed dtypes).
func (l *Conv2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	in := l.Weight.Dim(1) * l.Groups
	checkSpatialInput("Conv2d", x, 2, in)
	return runConv(x, l.Weight.Tensor, optional(l.Bias), l.Stride, l.Padding, l.Dilation, l.Same, l.Groups,
		l.PaddingMode, 2)
}

// forwardAct is Forward followed by activation (tensor.Conv2dActivation's
// name for it), the two in one call where the backend fuses them.
func (l *Conv2d) forwardAct(x *tensor.Tensor, activation string) *tensor.Tensor {
	in := l.Weight.Dim(1) * l.Groups
	checkSpatialInput("Conv2d", x, 2, in)
	cfg, x := convConfig(x, l.Weight.Tensor, l.Stride, l.Padding, l.Dilation, l.Same, l.Groups, l.PaddingMode, 2)
	return tensor.Conv2dActivation(x, l.Weight.Tensor, optional(l.Bias), cfg, activation)
}

// Forward convolves x [N, In, L] (or [In, L]) into [N, Out, OL]; it fails
// as Conv2d.Forward does, with Op "nn.Conv1d".
func (l *Conv1d) Forward(x *tensor.Tensor) *tensor.Tensor {
	in := l.Weight.Dim(1) * l.Groups
	checkSpatialInput("Conv1d", x, 1, in)
	return runConv(x, l.Weight.Tensor, optional(l.Bias), l.Stride, l.Padding, l.Dilation, l.Same, l.Groups,
		l.PaddingMode, 1)
}

// checkSpatialInput panics unless x is [N, C, spatial…] or [C, spatial…]
// with C = channels.
func checkSpatialInput(layer string, x *tensor.Tensor, spatial, channels int) {
	r := x.Dims()
	if (r != spatial+1 && r != spatial+2) || x.Dim(-spatial-1) != channels {
		pattern := []any{channels, "H", "W"}
		if spatial == 1 {
			pattern = []any{channels, "L"}
		}
		shapeError(layer, "expects input [N, %s] or [%s], got %v", dimsString(pattern...), dimsString(pattern...),
			x.Shape())
	}
}

// runConv applies a convolution with the layer's geometry; non-zero
// padding modes pad x first and convolve without padding.
func runConv(x, w, b *tensor.Tensor, stride, padding, dilation []int, same bool, groups int, mode string,
	spatial int) *tensor.Tensor {
	cfg, x := convConfig(x, w, stride, padding, dilation, same, groups, mode, spatial)
	if spatial == 1 {
		return tensor.Conv1d(x, w, b, cfg)
	}
	return tensor.Conv2d(x, w, b, cfg)
}

// convConfig returns runConv's tensor.ConvConfig and its input: x itself
// for zero padding, else x padded by mode.
func convConfig(x, w *tensor.Tensor, stride, padding, dilation []int, same bool, groups int, mode string,
	spatial int) (tensor.ConvConfig, *tensor.Tensor) {
	cfg := tensor.ConvConfig{Stride: stride, Dilation: dilation, Groups: groups}
	if mode == "zeros" {
		if same {
			cfg.PaddingMode = "same"
		} else {
			cfg.Padding = padding
		}
	} else {
		// Pad's list runs from the last dimension backwards.
		var pads []int
		for d := spatial - 1; d >= 0; d-- {
			lo, hi := padding[d], padding[d]
			if same {
				total := dilation[d] * (w.Dim(2+d) - 1)
				lo, hi = total/2, total-total/2
			}
			pads = append(pads, lo, hi)
		}
		x = x.Pad(pads, mode, 0)
	}
	return cfg, x
}

// ConvTransposeConfig configures ConvTranspose2d; the zero value of each
// field is PyTorch's default. Lists hold one value or one per dimension.
type ConvTransposeConfig struct {
	// Kernel gives per-dimension kernel sizes, overriding the
	// constructor's square size.
	Kernel []int `json:"kernel,omitempty"`
	// Stride is the step of the convolution this transposes; empty means 1.
	Stride []int `json:"stride,omitempty"`
	// Padding removes that many rows and columns from each side of the
	// output; empty means 0.
	Padding []int `json:"padding,omitempty"`
	// OutputPadding adds rows and columns at the end of the output; it must
	// be smaller than the stride or the dilation. Empty means 0.
	OutputPadding []int `json:"output_padding,omitempty"`
	// Dilation is the spacing between kernel elements; empty means 1.
	Dilation []int `json:"dilation,omitempty"`
	// Groups splits the channels into independent groups; 0 means 1.
	Groups int `json:"groups,omitempty"`
	// NoBias leaves out the bias.
	NoBias bool `json:"no_bias,omitempty"`
	// WeightInit defaults to KaimingUniform{A: √5} with PyTorch's fans of
	// the weight [In, Out/Groups, KH, KW] (fan-in Out/Groups·KH·KW).
	WeightInit Initializer `json:"-"`
	// BiasInit defaults to U(−1/√fanIn, 1/√fanIn) with that fan-in.
	BiasInit Initializer `json:"-"`
	// DType is the parameters' dtype; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// ConvTranspose2d is a transposed 2-D convolution layer,
// torch.nn.ConvTranspose2d: Weight [In, Out/Groups, KH, KW] and Bias [Out].
type ConvTranspose2d struct {
	Weight        *Param `kiln:"weight"`
	Bias          *Param `kiln:"bias"` // nil without bias
	Stride        []int  `kiln:"-"`
	Padding       []int  `kiln:"-"`
	OutputPadding []int  `kiln:"-"`
	Dilation      []int  `kiln:"-"`
	Groups        int    `kiln:"-"`
}

// NewConvTranspose2d returns a ConvTranspose2d from in to out channels
// with a kernel×kernel window and PyTorch's default initialisation. It
// panics with ErrArgument for non-positive sizes, bad lists, Groups that
// do not divide the channels, or an output padding not smaller than the
// stride or the dilation.
func NewConvTranspose2d(dev tensor.Device, in, out, kernel int, cfg ...ConvTransposeConfig) *ConvTranspose2d {
	const op = "nn.NewConvTranspose2d"
	var c ConvTransposeConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	s := checkConv(op, in, out, kernel, ConvConfig{Kernel: c.Kernel, Stride: c.Stride, Padding: c.Padding,
		Dilation: c.Dilation, Groups: c.Groups}, 2)
	op2 := perDim(op, "OutputPadding", c.OutputPadding, 2, 0, 0)
	for d := range op2 {
		if op2[d] >= s.stride[d] && op2[d] >= s.dilation[d] {
			argError(op, "OutputPadding %v must be smaller than the stride %v or the dilation %v", op2, s.stride,
				s.dilation)
		}
	}
	l := &ConvTranspose2d{Stride: s.stride, Padding: s.padding, OutputPadding: op2, Dilation: s.dilation,
		Groups: s.groups}
	l.Weight, l.Bias = newConvParams(dev, []int{in, out / s.groups, s.kernel[0], s.kernel[1]}, out,
		ConvConfig{NoBias: c.NoBias, WeightInit: c.WeightInit, BiasInit: c.BiasInit, DType: c.DType})
	return l
}

// Forward applies the transposed convolution to x [N, In, H, W] (or
// [In, H, W]), giving [N, Out, OH, OW] with OH = (H−1)·stride − 2·padding +
// dilation·(KH−1) + output_padding + 1. It panics with a *tensor.Error
// whose Op is "nn.ConvTranspose2d" when x has another rank or channel
// count.
func (l *ConvTranspose2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkSpatialInput("ConvTranspose2d", x, 2, l.Weight.Dim(0))
	return tensor.ConvTranspose2d(x, l.Weight.Tensor, optional(l.Bias), tensor.ConvTransposeConfig{
		Stride: l.Stride, Padding: l.Padding, OutputPadding: l.OutputPadding, Dilation: l.Dilation, Groups: l.Groups})
}
