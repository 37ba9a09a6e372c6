package nn

import "github.com/kiln-ml/kiln/tensor"

// ConvTranspose1d is a transposed 1-D convolution layer,
// torch.nn.ConvTranspose1d: Weight [In, Out/Groups, K] and Bias [Out]. The
// geometry fields are the constructor's configuration resolved to one
// value each.
type ConvTranspose1d struct {
	Weight        *Param `kiln:"weight"`
	Bias          *Param `kiln:"bias"` // nil without bias
	Stride        []int  `kiln:"-"`
	Padding       []int  `kiln:"-"`
	OutputPadding []int  `kiln:"-"`
	Dilation      []int  `kiln:"-"`
	Groups        int    `kiln:"-"`
}

// NewConvTranspose1d returns a ConvTranspose1d from in to out channels
// with a kernel of the given size (ConvTransposeConfig.Kernel, one value,
// overrides it) and PyTorch's default initialisation; configuration lists
// hold one value. It panics with ErrArgument for non-positive sizes, lists
// of another length, Groups that do not divide the channels, or an output
// padding not smaller than the stride or the dilation.
func NewConvTranspose1d(dev tensor.Device, in, out, kernel int, cfg ...ConvTransposeConfig) *ConvTranspose1d {
	const op = "nn.NewConvTranspose1d"
	var c ConvTransposeConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	s := checkConv(op, in, out, kernel, ConvConfig{Kernel: c.Kernel, Stride: c.Stride, Padding: c.Padding,
		Dilation: c.Dilation, Groups: c.Groups}, 1)
	op1 := perDim(op, "OutputPadding", c.OutputPadding, 1, 0, 0)
	if op1[0] >= s.stride[0] && op1[0] >= s.dilation[0] {
		argError(op, "OutputPadding %v must be smaller than the stride %v or the dilation %v", op1, s.stride, s.dilation)
	}
	l := &ConvTranspose1d{Stride: s.stride, Padding: s.padding, OutputPadding: op1, Dilation: s.dilation,
		Groups: s.groups}
	l.Weight, l.Bias = newConvParams(dev, []int{in, out / s.groups, s.kernel[0]}, out,
		ConvConfig{NoBias: c.NoBias, WeightInit: c.WeightInit, BiasInit: c.BiasInit, DType: c.DType})
	return l
}

// Forward applies the transposed convolution to x [N, In, L] (or [In, L]),
// giving [N, Out, OL] with OL = (L−1)·stride − 2·padding +
// dilation·(K−1) + output_padding + 1. It panics with a *tensor.Error
// whose Op is "nn.ConvTranspose1d" when x has another rank or channel
// count, and as tensor.ConvTranspose1d otherwise (mixed dtypes, an empty
// output).
func (l *ConvTranspose1d) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkSpatialInput("ConvTranspose1d", x, 1, l.Weight.Dim(0))
	return tensor.ConvTranspose1d(x, l.Weight.Tensor, optional(l.Bias), tensor.ConvTransposeConfig{
		Stride: l.Stride, Padding: l.Padding, OutputPadding: l.OutputPadding, Dilation: l.Dilation, Groups: l.Groups})
}
