package optim

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// AdamaxConfig configures Adamax; the zero value of each field is
// torch.optim.Adamax's default.
type AdamaxConfig struct {
	LR          float64      `json:"lr,omitempty"`           // learning rate; default 2e-3
	Betas       []float64    `json:"betas,omitempty"`        // decay of the moment and of the infinity norm; default [0.9, 0.999]
	Eps         float64      `json:"eps,omitempty"`          // added to |g| in the norm; default 1e-8 (0 cannot be set)
	WeightDecay float64      `json:"weight_decay,omitempty"` // L2 penalty added to the gradient; default 0
	Maximize    bool         `json:"maximize,omitempty"`     // ascend the objective instead
	Groups      []ParamGroup `json:"groups,omitempty"`       // overrides: LR, WeightDecay, Betas, Eps
	GradClip    GradClip     `json:"grad_clip,omitzero"`     // clipping before each step; default none
}

// Adamax is Adam with the infinity norm in place of the second moment
// (Kingma and Ba, 2015, section 7.1), step for step as torch.optim.Adamax
// (PyTorch 1.13):
//
//	g = ±g + λ·p
//	m = β₁·m + (1 − β₁)·g
//	u = max(β₂·u, |g| + ε)
//	p = p − lr/(1 − β₁ᵗ) · m/u
type Adamax struct {
	base
	cfg AdamaxConfig
}

// NewAdamax returns an Adamax optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range (negative LR, betas outside
// [0, 1)) or a group is malformed.
func NewAdamax(cfg AdamaxConfig) *Adamax {
	b1, b2 := betas("optim.NewAdamax", cfg.Betas, [2]float64{0.9, 0.999})
	o := &Adamax{cfg: cfg}
	o.base = newBase("Adamax", hyper{lr: orDefault(cfg.LR, 2e-3), weightDecay: cfg.WeightDecay, beta1: b1, beta2: b2,
		eps: orDefault(cfg.Eps, 1e-8)}, cfg.Groups, cfg.GradClip, overrides{betas: true, eps: true},
		[]string{"exp_avg", "exp_inf"})
	o.hasMomentum = true
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *Adamax) Config() AdamaxConfig { return o.cfg }

// Momentum returns β₁ (SetMomentum's, or the configured one).
func (o *Adamax) Momentum() float64 { return o.currentMomentum(o.top.beta1) }

// SetMomentum sets β₁ for every group (OneCycleLR cycles it). It panics
// with ErrConfig outside [0, 1).
func (o *Adamax) SetMomentum(m float64) { o.setMomentum(m) }

func (o *Adamax) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	if o.cfg.Maximize {
		g = g.Neg()
	}
	if h.weightDecay != 0 {
		g = g.Add(p.MulScalar(h.weightDecay))
	}
	m := g.MulScalar(1 - h.beta1)
	if old := st.slots["exp_avg"]; old != nil {
		m = old.MulScalar(h.beta1).Add(m)
	}
	u := g.Abs().AddScalar(h.eps)
	if old := st.slots["exp_inf"]; old != nil {
		u = old.MulScalar(h.beta2).Maximum(u)
	}
	st.slots["exp_avg"], st.slots["exp_inf"] = m, u
	clr := h.lr / (1 - math.Pow(h.beta1, float64(st.step)))
	return p.Sub(m.Div(u).MulScalar(clr))
}
