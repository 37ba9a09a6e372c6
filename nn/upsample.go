package nn

import "github.com/kiln-ml/kiln/tensor"

// Upsample resamples [N, C, L] or [N, C, H, W] inputs to a new spatial
// size, torch.nn.Upsample, through tensor.Interpolate: Config gives the
// output Size or the ScaleFactor, the Mode ("nearest", the default,
// "nearest-exact", "linear", "bilinear" or "bicubic") and AlignCorners.
// It holds no state.
type Upsample struct {
	Config tensor.InterpolateConfig `kiln:"-"`
}

// NewUpsample returns an Upsample with the given configuration. It panics
// with ErrArgument when the configuration cannot fit any input: both or
// neither of Size and ScaleFactor, non-positive sizes or factors, an
// unknown mode, or AlignCorners with a nearest mode. Whether the mode fits
// the input's rank is checked by Forward.
func NewUpsample(cfg tensor.InterpolateConfig) Upsample {
	const op = "nn.NewUpsample"
	switch {
	case len(cfg.Size) > 0 && len(cfg.ScaleFactor) > 0:
		argError(op, "give Size %v or ScaleFactor %v, not both", cfg.Size, cfg.ScaleFactor)
	case len(cfg.Size) == 0 && len(cfg.ScaleFactor) == 0:
		argError(op, "give Size or ScaleFactor")
	}
	for _, s := range cfg.Size {
		if s < 1 {
			argError(op, "Size %v: sizes must be positive", cfg.Size)
		}
	}
	for _, s := range cfg.ScaleFactor {
		if !(s > 0) {
			argError(op, "ScaleFactor %v: factors must be positive", cfg.ScaleFactor)
		}
	}
	switch cfg.Mode {
	case "", "nearest", "nearest-exact":
		if cfg.AlignCorners {
			argError(op, "AlignCorners only applies to linear and cubic modes, not %q", cfg.Mode)
		}
	case "linear", "bilinear", "bicubic":
	default:
		argError(op, "unknown Mode %q (want nearest, nearest-exact, linear, bilinear or bicubic)", cfg.Mode)
	}
	return Upsample{Config: cfg}
}

// Forward resamples x. It panics as tensor.Interpolate does: ErrShape for
// a rank other than 3 or 4, ErrArgument for a mode that does not fit the
// rank or a size list of the wrong length, ErrDType for non-float input.
func (l Upsample) Forward(x *tensor.Tensor) *tensor.Tensor { return tensor.Interpolate(x, l.Config) }
