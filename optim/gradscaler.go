package optim

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// GradScalerConfig configures dynamic loss scaling for float16 training.
// Zero fields take PyTorch's defaults (torch.amp.GradScaler).
type GradScalerConfig struct {
	InitScale      float64 `json:"init_scale,omitempty"`      // first scale; default 65536
	GrowthFactor   float64 `json:"growth_factor,omitempty"`   // scale × this after GrowthInterval good steps; default 2
	BackoffFactor  float64 `json:"backoff_factor,omitempty"`  // scale × this after a step with inf/NaN; default 0.5
	GrowthInterval int     `json:"growth_interval,omitempty"` // good steps between growths; default 2000
}

// GradScaler scales the loss up before Backward so that small float16
// gradients do not flush to zero, then divides the gradients back before
// the optimizer step. A step whose gradients hold an inf or NaN is skipped
// and the scale reduced; after GrowthInterval good steps in a row the scale
// grows. bfloat16 has float32's range and needs no scaler.
type GradScaler struct {
	cfg   GradScalerConfig
	scale float64
	good  int // finite steps since the last change of scale
}

// NewGradScaler returns a scaler. It panics with an error wrapping
// ErrConfig for a negative or non-finite field, a GrowthFactor not above 1
// or a BackoffFactor not in (0, 1).
func NewGradScaler(cfg GradScalerConfig) *GradScaler {
	if cfg.InitScale == 0 {
		cfg.InitScale = 65536
	}
	if cfg.GrowthFactor == 0 {
		cfg.GrowthFactor = 2
	}
	if cfg.BackoffFactor == 0 {
		cfg.BackoffFactor = 0.5
	}
	if cfg.GrowthInterval == 0 {
		cfg.GrowthInterval = 2000
	}
	switch {
	case !(cfg.InitScale > 0) || math.IsInf(cfg.InitScale, 0):
		configError("NewGradScaler", "InitScale %v: want a positive finite scale", cfg.InitScale)
	case !(cfg.GrowthFactor > 1) || math.IsInf(cfg.GrowthFactor, 0):
		configError("NewGradScaler", "GrowthFactor %v: want a finite factor above 1", cfg.GrowthFactor)
	case !(cfg.BackoffFactor > 0 && cfg.BackoffFactor < 1):
		configError("NewGradScaler", "BackoffFactor %v: want a factor in (0, 1)", cfg.BackoffFactor)
	case cfg.GrowthInterval < 0:
		configError("NewGradScaler", "GrowthInterval %d: want a positive count", cfg.GrowthInterval)
	}
	return &GradScaler{cfg: cfg, scale: cfg.InitScale}
}

// Scale returns the current loss scale.
func (s *GradScaler) Scale() float64 { return s.scale }

// ScaleLoss returns loss × Scale(), to call Backward on.
func (s *GradScaler) ScaleLoss(loss *tensor.Tensor) *tensor.Tensor { return loss.MulScalar(s.scale) }

// Step checks the gradients of model's trainable parameters in grads (from
// a scaled loss). If all are finite it divides them by the scale, in place,
// and runs opt.Step; otherwise it leaves the parameters alone. It then
// updates the scale and reports whether the step was taken.
func (s *GradScaler) Step(opt Optimizer, model any, grads *tensor.Gradients) bool {
	gs := gradsOf(grads, paramList("GradScaler.Step", model))
	finite := true
	tensor.Scope(func() {
		for _, g := range gs {
			if m := g.Abs().Max().Item(); math.IsNaN(m) || math.IsInf(m, 0) {
				finite = false
				return
			}
		}
		inv := 1 / s.scale
		inPlace(gs, func(g *tensor.Tensor) *tensor.Tensor { return g.MulScalar(inv) })
	})
	if !finite {
		s.scale *= s.cfg.BackoffFactor
		s.good = 0
		return false
	}
	opt.Step(model, grads)
	s.good++
	if s.good >= s.cfg.GrowthInterval {
		s.scale *= s.cfg.GrowthFactor
		s.good = 0
	}
	return true
}

// String describes the scaler's state.
func (s *GradScaler) String() string {
	return fmt.Sprintf("GradScaler(scale %g, %d good steps)", s.scale, s.good)
}
