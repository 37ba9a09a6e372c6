package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/kiln-ml/kiln/tensor"
)

// BatchNorm in training mode (tensor.BatchNorm), LayerNorm and RMSNorm are
// single tensor ops with their own gradients (fused kernels where the
// backend has them); BatchNorm in evaluation mode and GroupNorm are
// composed from tensor ops (means, variances, Rsqrt, broadcasting
// products), so their gradients come from those ops' rules. Their output has
// the input's dtype whatever the parameters'.

// BatchNormConfig configures BatchNorm1d and BatchNorm2d; the zero value of
// each field is PyTorch's default.
type BatchNormConfig struct {
	// Eps is added to the variance; 0 means 1e-5.
	Eps float64 `json:"eps,omitempty"`
	// Momentum weighs each batch in the running statistics:
	// running = (1−Momentum)·running + Momentum·batch. 0 means 0.1. (A
	// momentum of exactly 0, which would freeze the statistics, is not
	// expressible: freeze them with NoTrackRunningStats or Eval instead.)
	Momentum float64 `json:"momentum,omitempty"`
	// CumulativeAverage makes the running statistics the plain average of
	// every batch seen (PyTorch's momentum=None), weighting batch k by
	// 1/k; Momentum is then ignored.
	CumulativeAverage bool `json:"cumulative_average,omitempty"`
	// NoAffine leaves out Weight and Bias (PyTorch's affine=False).
	NoAffine bool `json:"no_affine,omitempty"`
	// NoTrackRunningStats keeps no running statistics (PyTorch's
	// track_running_stats=False): batch statistics are used in evaluation
	// mode too, and the buffers are nil, so they are not in state dicts.
	NoTrackRunningStats bool `json:"no_track_running_stats,omitempty"`
	// DType is the dtype of the parameters and running statistics; zero
	// means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// BatchNorm1d normalises each channel of x [N, C] or [N, C, L] over the
// batch (and length), then scales by Weight and shifts by Bias (both [C]),
// as torch.nn.BatchNorm1d. In training mode it uses the batch's mean and
// biased variance and updates the running statistics (RunningMean, and
// RunningVar with the unbiased batch variance, as PyTorch does) and counts
// the batches in NumBatchesTracked (an Int64 scalar); in evaluation mode it
// uses the running statistics. Weight starts at ones, Bias at zeros,
// RunningMean at zeros and RunningVar at ones.
type BatchNorm1d struct {
	Mode
	Eps               float64 `kiln:"-"`
	Momentum          float64 `kiln:"-"`
	CumulativeAverage bool    `kiln:"-"`
	Weight            *Param  `kiln:"weight"`              // nil with NoAffine
	Bias              *Param  `kiln:"bias"`                // nil with NoAffine
	RunningMean       *Param  `kiln:"running_mean"`        // buffer; nil with NoTrackRunningStats
	RunningVar        *Param  `kiln:"running_var"`         // buffer; nil with NoTrackRunningStats
	NumBatchesTracked *Param  `kiln:"num_batches_tracked"` // Int64 buffer; nil with NoTrackRunningStats
}

// BatchNorm2d is BatchNorm1d for images: it normalises each channel of
// x [N, C, H, W] over the batch, height and width, as
// torch.nn.BatchNorm2d. Its fields are BatchNorm1d's.
type BatchNorm2d BatchNorm1d

// NewBatchNorm1d returns a BatchNorm1d over features channels, in training
// mode. It panics with ErrArgument when features is not positive or Eps or
// Momentum is negative.
func NewBatchNorm1d(dev tensor.Device, features int, cfg ...BatchNormConfig) *BatchNorm1d {
	return newBatchNorm("nn.NewBatchNorm1d", dev, features, cfg)
}

// NewBatchNorm2d returns a BatchNorm2d over features channels; it is
// configured and fails as NewBatchNorm1d.
func NewBatchNorm2d(dev tensor.Device, features int, cfg ...BatchNormConfig) *BatchNorm2d {
	return (*BatchNorm2d)(newBatchNorm("nn.NewBatchNorm2d", dev, features, cfg))
}

func newBatchNorm(op string, dev tensor.Device, features int, cfg []BatchNormConfig) *BatchNorm1d {
	var c BatchNormConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if features <= 0 {
		argError(op, "features must be positive, got %d", features)
	}
	if c.Eps < 0 || c.Momentum < 0 || c.Momentum > 1 {
		argError(op, "Eps %v must not be negative and Momentum %v must be in [0, 1]", c.Eps, c.Momentum)
	}
	if c.Eps == 0 {
		c.Eps = 1e-5
	}
	if c.Momentum == 0 {
		c.Momentum = 0.1
	}
	b := &BatchNorm1d{Eps: c.Eps, Momentum: c.Momentum, CumulativeAverage: c.CumulativeAverage}
	if !c.NoAffine {
		b.Weight = NewParam(convert(tensor.Ones(dev, features), c.DType))
		b.Bias = NewParam(convert(tensor.Zeros(dev, features), c.DType))
	}
	if !c.NoTrackRunningStats {
		b.RunningMean = NewBuffer(convert(tensor.Zeros(dev.Inner(), features), c.DType))
		b.RunningVar = NewBuffer(convert(tensor.Ones(dev.Inner(), features), c.DType))
		b.NumBatchesTracked = NewBuffer(tensor.ZerosOf(dev.Inner(), tensor.Int64))
	}
	return b
}

// channels returns C, from whichever tensor the layer has.
func (b *BatchNorm1d) channels() int {
	switch {
	case b.Weight != nil:
		return b.Weight.Dim(0)
	case b.RunningMean != nil:
		return b.RunningMean.Dim(0)
	}
	return -1 // neither: any channel count is accepted
}

// Forward normalises x [N, C] or [N, C, L]. It panics with a *tensor.Error
// whose Op is "nn.BatchNorm1d" for another rank or channel count, for
// non-float input, and in training mode when a channel has only one value
// (N·L = 1), whose variance is undefined.
func (b *BatchNorm1d) Forward(x *tensor.Tensor) *tensor.Tensor {
	c := b.channels()
	if r := x.Dims(); (r != 2 && r != 3) || (c >= 0 && x.Dim(1) != c) {
		shapeError("BatchNorm1d", "expects input [N, %s] or [N, %s, L], got %v", channelName(c), channelName(c), x.Shape())
	}
	return b.forward("BatchNorm1d", x)
}

// Forward normalises x [N, C, H, W]; it fails as BatchNorm1d.Forward does,
// with Op "nn.BatchNorm2d".
func (b *BatchNorm2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	bn := (*BatchNorm1d)(b)
	c := bn.channels()
	if x.Dims() != 4 || (c >= 0 && x.Dim(1) != c) {
		shapeError("BatchNorm2d", "expects input [N, %s, H, W], got %v", channelName(c), x.Shape())
	}
	return bn.forward("BatchNorm2d", x)
}

func channelName(c int) string {
	if c < 0 {
		return "C"
	}
	return fmt.Sprint(c)
}

func (b *BatchNorm1d) forward(layer string, x *tensor.Tensor) *tensor.Tensor {
	requireFloat(layer, x)
	rank, c := x.Dims(), x.Dim(1)
	shape := channelShape(c, rank)
	if b.Training() || b.RunningMean == nil {
		n := x.NumElements() / max(c, 1)
		if b.Training() && n <= 1 {
			shapeError(layer, "expects more than 1 value per channel when training, got input %v", x.Shape())
		}
		// one graph node, fused where the backend has fused batch
		// normalisation; it also gives the batch's statistics
		y, mean, variance := x.BatchNorm(paramTensor(b.Weight), paramTensor(b.Bias), b.Eps)
		if b.Training() && b.RunningMean != nil {
			b.updateRunning(mean, variance, n)
		}
		mean.Release()
		variance.Release()
		return inDType(y, x)
	}
	centred := x.Sub(b.RunningMean.Reshape(shape...))
	variance := b.RunningVar.Reshape(shape...)
	// the weight folds into the per-channel scale, so the full-size tensor
	// is multiplied once (and its gradient computed once)
	scale := variance.AddScalar(b.Eps).Rsqrt()
	if b.Weight != nil {
		scale = scale.Mul(b.Weight.Reshape(shape...))
	}
	y := centred.Mul(scale)
	if b.Bias != nil {
		y = y.Add(b.Bias.Reshape(shape...))
	}
	return inDType(y, x)
}

// paramTensor returns p's tensor, or nil for an absent parameter.
func paramTensor(p *Param) *tensor.Tensor {
	if p == nil {
		return nil
	}
	return p.Tensor
}

// updateRunning folds a batch's statistics into the running ones, in
// place and outside any graph; its temporaries are freed at once.
func (b *BatchNorm1d) updateRunning(mean, variance *tensor.Tensor, n int) {
	tensor.Scope(func() {
		nb := b.NumBatchesTracked
		nb.Assign(nb.AddScalar(1))
		f := b.Momentum
		if b.CumulativeAverage {
			f = 1 / nb.Item()
		}
		c := b.RunningMean.Dim(0)
		m := mean.Detach().Reshape(c)
		v := variance.Detach().Reshape(c).MulScalar(float64(n) / float64(n-1))
		b.RunningMean.Assign(b.RunningMean.MulScalar(1 - f).Add(m.MulScalar(f)))
		b.RunningVar.Assign(b.RunningVar.MulScalar(1 - f).Add(v.MulScalar(f)))
	})
}

// GroupNormConfig configures a GroupNorm; the zero value is PyTorch's
// default.
type GroupNormConfig struct {
	Eps      float64      `json:"eps,omitempty"`       // default 1e-5
	NoAffine bool         `json:"no_affine,omitempty"` // no Weight and Bias (affine=False)
	DType    tensor.DType `json:"dtype,omitempty"`     // parameter dtype; zero means Float32
}

// GroupNorm splits the channels of x [N, C, …] into Groups groups,
// normalises each group of each sample over its channels and positions,
// then scales and shifts each channel by Weight and Bias (both [C],
// starting at ones and zeros), as torch.nn.GroupNorm. It behaves the same
// in training and evaluation.
type GroupNorm struct {
	Groups   int     `kiln:"-"`
	Channels int     `kiln:"-"`
	Eps      float64 `kiln:"-"`
	Weight   *Param  `kiln:"weight"` // nil with NoAffine
	Bias     *Param  `kiln:"bias"`   // nil with NoAffine
}

// NewGroupNorm returns a GroupNorm of groups groups over channels
// channels. It panics with ErrArgument unless groups divides channels.
func NewGroupNorm(dev tensor.Device, groups, channels int, cfg ...GroupNormConfig) *GroupNorm {
	var c GroupNormConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if groups <= 0 || channels <= 0 || channels%groups != 0 {
		argError("nn.NewGroupNorm", "groups %d must be positive and divide channels %d", groups, channels)
	}
	if c.Eps < 0 {
		argError("nn.NewGroupNorm", "Eps %v must not be negative", c.Eps)
	}
	if c.Eps == 0 {
		c.Eps = 1e-5
	}
	g := &GroupNorm{Groups: groups, Channels: channels, Eps: c.Eps}
	if !c.NoAffine {
		g.Weight = NewParam(convert(tensor.Ones(dev, channels), c.DType))
		g.Bias = NewParam(convert(tensor.Zeros(dev, channels), c.DType))
	}
	return g
}

// Forward normalises x [N, C, …]. It panics with a *tensor.Error whose Op
// is "nn.GroupNorm" when x has fewer than 2 dimensions or another channel
// count, or is not floating point.
func (g *GroupNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x.Dims() < 2 || x.Dim(1) != g.Channels {
		shapeError("GroupNorm", "expects input [N, %d, …], got %v", g.Channels, x.Shape())
	}
	requireFloat("GroupNorm", x)
	shape := x.Shape()
	xg := x.Reshape(shape[0], g.Groups, -1)
	mean := xg.MeanKeep(2)
	variance := xg.VarCorrection(0, true, 2)
	y := xg.Sub(mean).Mul(variance.AddScalar(g.Eps).Rsqrt()).Reshape(shape...)
	if g.Weight != nil {
		cs := channelShape(g.Channels, len(shape))
		y = y.Mul(g.Weight.Reshape(cs...)).Add(g.Bias.Reshape(cs...))
	}
	return inDType(y, x)
}

// RMSNormConfig configures an RMSNorm; the zero value is PyTorch's default.
type RMSNormConfig struct {
	// Eps is added to the mean square. 0 means PyTorch's default (eps=None):
	// the machine epsilon of the input's dtype, torch.finfo(dtype).eps —
	// 2⁻²³ ≈ 1.19e-7 for float32, 2⁻⁵² for float64, 2⁻¹⁰ for float16 and
	// 2⁻⁷ for bfloat16. Many language models use 1e-6 or 1e-5 instead:
	// set it explicitly to load their weights.
	Eps float64 `json:"eps,omitempty"`
	// NoAffine leaves out Weight (PyTorch's elementwise_affine=False).
	NoAffine bool `json:"no_affine,omitempty"`
	// DType is the dtype of Weight; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// RMSNorm divides x by the root mean square of its trailing Shape
// dimensions and scales by Weight (shaped Shape, starting at ones):
// y = x / √(mean(x²) + Eps) · Weight, as torch.nn.RMSNorm (PyTorch 2.4).
// It is tensor.RMSNorm: one graph node, fused where the backend has fused
// normalisation.
type RMSNorm struct {
	Shape  []int   `kiln:"-"`
	Eps    float64 `kiln:"-"` // 0: the machine epsilon of the input's dtype
	Weight *Param  `kiln:"weight"`
}

// NewRMSNorm returns an RMSNorm over the trailing dimensions shape. It
// panics with ErrArgument for an empty shape, non-positive sizes or a
// negative Eps.
func NewRMSNorm(dev tensor.Device, shape []int, cfg ...RMSNormConfig) *RMSNorm {
	var c RMSNormConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if len(shape) == 0 || c.Eps < 0 {
		argError("nn.NewRMSNorm", "shape %v must not be empty and Eps %v must not be negative", shape, c.Eps)
	}
	for _, s := range shape {
		if s <= 0 {
			argError("nn.NewRMSNorm", "shape %v must have positive sizes", shape)
		}
	}
	r := &RMSNorm{Shape: append([]int(nil), shape...), Eps: c.Eps}
	if !c.NoAffine {
		r.Weight = NewParam(convert(tensor.Ones(dev, shape...), c.DType))
	}
	return r
}

// Forward normalises x, whose trailing dimensions must equal Shape. It
// panics with a *tensor.Error whose Op is "nn.RMSNorm" otherwise, or for
// non-float input.
func (r *RMSNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	xs := x.Shape()
	if len(xs) < len(r.Shape) || !slices.Equal(xs[len(xs)-len(r.Shape):], r.Shape) {
		shapeError("RMSNorm", "expects input [..., %s], got %v", trimBrackets(r.Shape), xs)
	}
	requireFloat("RMSNorm", x)
	eps := r.Eps
	if eps == 0 {
		eps = machineEpsilon(x.DType())
	}
	var w *tensor.Tensor
	if r.Weight != nil {
		w = r.Weight.Tensor
	}
	return x.RMSNorm(r.Shape, w, eps)
}

// inDType returns y in x's dtype: a half-precision input normalised with
// float32 parameters or statistics gives a half-precision output, as in
// PyTorch.
func inDType(y, x *tensor.Tensor) *tensor.Tensor {
	if y.DType() == x.DType() {
		return y
	}
	return y.To(x.DType())
}

// machineEpsilon returns torch.finfo(dtype).eps: the gap between 1 and the
// next representable number.
func machineEpsilon(dtype tensor.DType) float64 {
	switch dtype {
	case tensor.Float64:
		return math.Ldexp(1, -52)
	case tensor.Float16:
		return math.Ldexp(1, -10)
	case tensor.BFloat16:
		return math.Ldexp(1, -7)
	}
	return math.Ldexp(1, -23)
}
