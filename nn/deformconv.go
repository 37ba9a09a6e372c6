package nn

import "github.com/kiln-ml/kiln/tensor"

// DeformConvConfig configures a DeformConv2d; the zero value of each field
// is torchvision's default. Lists hold one value for both spatial
// dimensions or two (height, width).
type DeformConvConfig struct {
	// Kernel gives per-dimension kernel sizes, overriding the
	// constructor's square kernel size.
	Kernel []int `json:"kernel,omitempty"`
	// Stride is the step between windows; empty means 1.
	Stride []int `json:"stride,omitempty"`
	// Padding is the padding on both sides of each spatial dimension;
	// empty means 0.
	Padding []int `json:"padding,omitempty"`
	// Dilation is the spacing between kernel elements; empty means 1.
	Dilation []int `json:"dilation,omitempty"`
	// Groups splits the channels into independent convolutions; 0 means 1.
	// It must divide both channel counts.
	Groups int `json:"groups,omitempty"`
	// NoBias leaves out the bias (bias=False).
	NoBias bool `json:"no_bias,omitempty"`
	// WeightInit defaults to KaimingUniform{A: √5}, as torchvision.
	WeightInit Initializer `json:"-"`
	// BiasInit defaults to U(−1/√fanIn, 1/√fanIn), as torchvision.
	BiasInit Initializer `json:"-"`
	// DType is the parameters' dtype; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// DeformConv2d is a deformable 2-D convolution layer (v1, or v2 with a
// modulation mask), torchvision.ops.DeformConv2d: Weight
// [Out, In/Groups, KH, KW] and Bias [Out]. The sampling offsets (and the
// mask) are inputs of Forward, usually predicted by an ordinary
// convolution of the same input, so the layer is not an nn.Module.
type DeformConv2d struct {
	Weight   *Param `kiln:"weight"`
	Bias     *Param `kiln:"bias"` // nil without bias
	Stride   []int  `kiln:"-"`
	Padding  []int  `kiln:"-"`
	Dilation []int  `kiln:"-"`
	Groups   int    `kiln:"-"`
}

// NewDeformConv2d returns a DeformConv2d from in to out channels with a
// kernel×kernel window (DeformConvConfig.Kernel for a rectangular one) and
// torchvision's default initialisation. It panics with ErrArgument for
// non-positive sizes, bad configuration lists or Groups that do not
// divide the channels.
func NewDeformConv2d(dev tensor.Device, in, out, kernel int, cfg ...DeformConvConfig) *DeformConv2d {
	var c DeformConvConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	s := checkConv("nn.NewDeformConv2d", in, out, kernel, ConvConfig{Kernel: c.Kernel, Stride: c.Stride,
		Padding: c.Padding, Dilation: c.Dilation, Groups: c.Groups}, 2)
	l := &DeformConv2d{Stride: s.stride, Padding: s.padding, Dilation: s.dilation, Groups: s.groups}
	l.Weight, l.Bias = newConvParams(dev, []int{out, in / s.groups, s.kernel[0], s.kernel[1]}, out,
		ConvConfig{NoBias: c.NoBias, WeightInit: c.WeightInit, BiasInit: c.BiasInit, DType: c.DType})
	return l
}

// OffsetChannels returns the channel count of the offsets Forward takes
// with offsetGroups offset groups: 2·offsetGroups·KH·KW (a mask has half
// as many).
func (l *DeformConv2d) OffsetChannels(offsetGroups int) int {
	return 2 * offsetGroups * l.Weight.Dim(2) * l.Weight.Dim(3)
}

// Forward convolves x [N, In, H, W] with its kernel elements displaced by
// offset [N, 2·G·KH·KW, OH, OW] (G offset groups; (Δy, Δx) pairs) and, when
// mask [N, G·KH·KW, OH, OW] is not nil, modulated by it, giving
// [N, Out, OH, OW] (see tensor.DeformConv2d). It panics with a
// *tensor.Error whose Op is "nn.DeformConv2d" when x is not 4-D with In
// channels, and as tensor.DeformConv2d for offsets or masks that do not
// fit.
func (l *DeformConv2d) Forward(x, offset, mask *tensor.Tensor) *tensor.Tensor {
	in := l.Weight.Dim(1) * l.Groups
	if x.Dims() != 4 || x.Dim(1) != in {
		shapeError("DeformConv2d", "expects input [N, %d, H, W], got %v", in, x.Shape())
	}
	return tensor.DeformConv2d(x, offset, l.Weight.Tensor, optional(l.Bias), mask,
		tensor.DeformConvConfig{Stride: l.Stride, Padding: l.Padding, Dilation: l.Dilation})
}
