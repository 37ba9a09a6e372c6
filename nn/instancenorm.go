package nn

import "github.com/kiln-ml/kiln/tensor"

// InstanceNorm normalises each instance with tensor.LayerNorm over the
// spatial axes (one node with its own backward rule), then applies the
// per-channel affine parameters with broadcasting products; evaluation with
// running statistics is composed from elementwise ops, as BatchNorm's is.

// InstanceNormConfig configures InstanceNorm1d, InstanceNorm2d and
// InstanceNorm3d. Its zero value is PyTorch's default, which (unlike
// BatchNorm's) has no affine parameters and no running statistics.
type InstanceNormConfig struct {
	// Eps is added to the variance; 0 means 1e-5.
	Eps float64 `json:"eps,omitempty"`
	// Momentum weighs each batch in the running statistics when they are
	// tracked: running = (1−Momentum)·running + Momentum·batch, where the
	// batch statistic is the average over the samples of each instance's
	// mean and unbiased variance, as PyTorch does. 0 means 0.1.
	Momentum float64 `json:"momentum,omitempty"`
	// Affine adds a per-channel Weight (ones) and Bias (zeros), PyTorch's
	// affine=True.
	Affine bool `json:"affine,omitempty"`
	// TrackRunningStats keeps running statistics (PyTorch's
	// track_running_stats=True), which evaluation mode then uses instead
	// of each instance's own.
	TrackRunningStats bool `json:"track_running_stats,omitempty"`
	// DType is the dtype of the parameters and running statistics; zero
	// means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// InstanceNorm1d normalises each channel of each sample of x [N, C, L] (or
// an unbatched [C, L]) over its positions, as torch.nn.InstanceNorm1d:
// y = (x − mean)/√(var + Eps), with the biased variance, then scales by
// Weight and shifts by Bias (both [C]) when affine. With running
// statistics, training mode updates RunningMean and RunningVar and
// evaluation mode normalises with them; NumBatchesTracked is kept for
// PyTorch's state dict and, as in PyTorch, never incremented.
type InstanceNorm1d struct {
	Mode
	Features          int     `kiln:"-"`
	Eps               float64 `kiln:"-"`
	Momentum          float64 `kiln:"-"`
	Weight            *Param  `kiln:"weight"`              // nil without Affine
	Bias              *Param  `kiln:"bias"`                // nil without Affine
	RunningMean       *Param  `kiln:"running_mean"`        // buffer; nil without TrackRunningStats
	RunningVar        *Param  `kiln:"running_var"`         // buffer; nil without TrackRunningStats
	NumBatchesTracked *Param  `kiln:"num_batches_tracked"` // Int64 buffer; nil without TrackRunningStats
}

// InstanceNorm2d is InstanceNorm1d for images x [N, C, H, W] (or
// [C, H, W]), as torch.nn.InstanceNorm2d.
type InstanceNorm2d InstanceNorm1d

// InstanceNorm3d is InstanceNorm1d for volumes x [N, C, D, H, W] (or
// [C, D, H, W]), as torch.nn.InstanceNorm3d.
type InstanceNorm3d InstanceNorm1d

// NewInstanceNorm1d returns an InstanceNorm1d over features channels, in
// training mode. It panics with ErrArgument when features is not positive,
// Eps is negative or Momentum is outside [0, 1].
func NewInstanceNorm1d(dev tensor.Device, features int, cfg ...InstanceNormConfig) *InstanceNorm1d {
	return newInstanceNorm("nn.NewInstanceNorm1d", dev, features, cfg)
}

// NewInstanceNorm2d returns an InstanceNorm2d; it is configured and fails
// as NewInstanceNorm1d.
func NewInstanceNorm2d(dev tensor.Device, features int, cfg ...InstanceNormConfig) *InstanceNorm2d {
	return (*InstanceNorm2d)(newInstanceNorm("nn.NewInstanceNorm2d", dev, features, cfg))
}

// NewInstanceNorm3d returns an InstanceNorm3d; it is configured and fails
// as NewInstanceNorm1d.
func NewInstanceNorm3d(dev tensor.Device, features int, cfg ...InstanceNormConfig) *InstanceNorm3d {
	return (*InstanceNorm3d)(newInstanceNorm("nn.NewInstanceNorm3d", dev, features, cfg))
}

func newInstanceNorm(op string, dev tensor.Device, features int, cfg []InstanceNormConfig) *InstanceNorm1d {
	var c InstanceNormConfig
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
	n := &InstanceNorm1d{Features: features, Eps: c.Eps, Momentum: c.Momentum}
	if c.Affine {
		n.Weight = NewParam(convert(tensor.Ones(dev, features), c.DType))
		n.Bias = NewParam(convert(tensor.Zeros(dev, features), c.DType))
	}
	if c.TrackRunningStats {
		n.RunningMean = NewBuffer(convert(tensor.Zeros(dev.Inner(), features), c.DType))
		n.RunningVar = NewBuffer(convert(tensor.Ones(dev.Inner(), features), c.DType))
		n.NumBatchesTracked = NewBuffer(tensor.ZerosOf(dev.Inner(), tensor.Int64))
	}
	return n
}

// Forward normalises x [N, C, L] or [C, L]. It panics with a
// *tensor.Error whose Op is "nn.InstanceNorm1d" for another rank, for
// another channel count when the layer has parameters or running
// statistics (PyTorch only warns otherwise), for non-float input, and when
// instance statistics are needed for a single position (L = 1), whose
// variance is undefined.
func (n *InstanceNorm1d) Forward(x *tensor.Tensor) *tensor.Tensor {
	return n.forward("InstanceNorm1d", x, 1)
}

// Forward normalises x [N, C, H, W] or [C, H, W]; it fails as
// InstanceNorm1d.Forward does, with Op "nn.InstanceNorm2d".
func (n *InstanceNorm2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	return (*InstanceNorm1d)(n).forward("InstanceNorm2d", x, 2)
}

// Forward normalises x [N, C, D, H, W] or [C, D, H, W]; it fails as
// InstanceNorm1d.Forward does, with Op "nn.InstanceNorm3d".
func (n *InstanceNorm3d) Forward(x *tensor.Tensor) *tensor.Tensor {
	return (*InstanceNorm1d)(n).forward("InstanceNorm3d", x, 3)
}

func (n *InstanceNorm1d) forward(layer string, x *tensor.Tensor, spatial int) *tensor.Tensor {
	r := x.Dims()
	if r != spatial+1 && r != spatial+2 {
		dims := []string{"L"}
		if spatial == 2 {
			dims = []string{"H", "W"}
		} else if spatial == 3 {
			dims = []string{"D", "H", "W"}
		}
		shapeError(layer, "expects input [N, C, %s] or [C, %s], got %v", dimsString(toAny(dims)...),
			dimsString(toAny(dims)...), x.Shape())
	}
	requireFloat(layer, x)
	batched := r == spatial+2
	if !batched {
		x = x.Unsqueeze(0)
	}
	c := x.Dim(1)
	if (n.Weight != nil || n.RunningMean != nil) && c != n.Features {
		shapeError(layer, "expects %d channels, got input %v", n.Features, x.Shape())
	}
	dims := make([]int, spatial)
	positions := 1
	for i := range dims {
		dims[i] = i + 2
		positions *= x.Dim(i + 2)
	}
	shape := channelShape(c, x.Dims())
	var y *tensor.Tensor
	if n.Training() || n.RunningMean == nil {
		if positions <= 1 {
			shapeError(layer, "expects more than 1 spatial position per channel, got input %v", x.Shape())
		}
		if n.Training() && n.RunningMean != nil {
			n.updateRunning(x, dims)
		}
		// Normalising each instance over its positions is a layer norm
		// over the spatial axes: one graph node with its own backward rule
		// (and fused kernels where the backend has them), exported to ONNX
		// as LayerNormalization.
		y = x.LayerNorm(x.Shape()[2:], nil, nil, n.Eps)
	} else {
		mean := n.RunningMean.Reshape(shape...)
		variance := n.RunningVar.Reshape(shape...)
		y = x.Sub(mean).Mul(variance.AddScalar(n.Eps).Rsqrt())
	}
	if n.Weight != nil {
		// The channels are moved last so that Weight and Bias broadcast
		// as they are: a reshaped parameter would be a new tensor, which
		// an exported graph could not name.
		y = y.Transpose(1, -1).Mul(n.Weight.Tensor).Add(n.Bias.Tensor).Transpose(1, -1)
	}
	y = inDType(y, x)
	if !batched {
		y = y.Squeeze(0)
	}
	return y
}

// updateRunning folds the batch's per-instance statistics (averaged over
// the samples, the variance made unbiased) into the running ones, in place
// and outside any graph.
func (n *InstanceNorm1d) updateRunning(x *tensor.Tensor, dims []int) {
	tensor.Scope(func() {
		xd := x.Detach()
		m := xd.Mean(dims...).Mean(0)
		v := xd.VarCorrection(1, false, dims...).Mean(0)
		f := n.Momentum
		dt := n.RunningMean.DType()
		n.RunningMean.Assign(n.RunningMean.MulScalar(1 - f).Add(m.MulScalar(f)).To(dt))
		n.RunningVar.Assign(n.RunningVar.MulScalar(1 - f).Add(v.MulScalar(f)).To(dt))
	})
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
