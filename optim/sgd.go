package optim

import "github.com/kiln-ml/kiln/tensor"

// SGDConfig configures SGD; the zero value of each field is
// torch.optim.SGD's default, except LR, which torch requires too.
type SGDConfig struct {
	LR          float64      `json:"lr"`                     // learning rate; required (> 0)
	Momentum    float64      `json:"momentum,omitempty"`     // momentum factor; default 0 (none)
	Dampening   float64      `json:"dampening,omitempty"`    // dampening of momentum; default 0
	Nesterov    bool         `json:"nesterov,omitempty"`     // Nesterov momentum (needs Momentum > 0, Dampening 0)
	WeightDecay float64      `json:"weight_decay,omitempty"` // L2 penalty added to the gradient; default 0
	Maximize    bool         `json:"maximize,omitempty"`     // ascend the objective instead
	Groups      []ParamGroup `json:"groups,omitempty"`       // overrides: LR, WeightDecay, Momentum
	GradClip    GradClip     `json:"grad_clip,omitzero"`     // clipping before each step; default none
}

// SGD is stochastic gradient descent with optional momentum, dampening,
// Nesterov momentum and L2 weight decay, step for step as torch.optim.SGD
// (PyTorch 1.13):
//
//	d = ±g + λ·p
//	b = d (first step), else μ·b + (1 − τ)·d
//	d = d + μ·b (Nesterov) or b
//	p = p − lr·d
//
// A step updates each parameter through tensor.SGDStep: one fused pass
// over memory where the backend has it (the CPU's), else composed from
// element-wise ops, with the same bits either way.
type SGD struct {
	base
	cfg SGDConfig
}

// NewSGD returns an SGD optimizer. It panics with an error wrapping
// ErrConfig when LR is missing or negative, another value is out of range,
// Nesterov lacks momentum or has dampening, or a group is malformed.
func NewSGD(cfg SGDConfig) *SGD {
	const op = "optim.NewSGD"
	if cfg.LR == 0 {
		configError(op, "LR is required (torch.optim.SGD has no default learning rate)")
	}
	if cfg.Nesterov && (cfg.Momentum <= 0 || cfg.Dampening != 0) {
		configError(op, "Nesterov momentum needs Momentum > 0 and Dampening 0, got %v and %v", cfg.Momentum, cfg.Dampening)
	}
	if cfg.Dampening < 0 || cfg.Dampening > 1 {
		configError(op, "Dampening %v outside [0, 1]", cfg.Dampening)
	}
	o := &SGD{cfg: cfg}
	o.base = newBase("SGD", hyper{lr: cfg.LR, weightDecay: cfg.WeightDecay, momentum: cfg.Momentum},
		cfg.Groups, cfg.GradClip, overrides{momentum: true}, []string{"momentum_buffer"})
	o.hasMomentum = true
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *SGD) Config() SGDConfig { return o.cfg }

// Momentum returns the momentum factor in use (SetMomentum's, or the
// configured one).
func (o *SGD) Momentum() float64 { return o.currentMomentum(o.cfg.Momentum) }

// SetMomentum sets the momentum factor of every group (OneCycleLR cycles
// it). It panics with ErrConfig outside [0, 1).
func (o *SGD) SetMomentum(m float64) { o.setMomentum(m) }

// step is one SGD update through tensor.SGDStep, which runs it as one
// fused kernel where the backend has one, in place: the parameter and,
// after the first step, its momentum buffer are overwritten.
func (o *SGD) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	p, next := tensor.SGDStep(p, g, tensor.SGDState{MomentumBuffer: st.slots["momentum_buffer"]},
		tensor.SGDConfig{LR: h.lr, Momentum: h.momentum, Dampening: o.cfg.Dampening, WeightDecay: h.weightDecay,
			Nesterov: o.cfg.Nesterov, Maximize: o.cfg.Maximize, InPlace: true})
	if next.MomentumBuffer != nil {
		st.slots["momentum_buffer"] = next.MomentumBuffer
	}
	return p
}
