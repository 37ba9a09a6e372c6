package optim

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// RAdamConfig configures RAdam; the zero value of each field is
// torch.optim.RAdam's default.
type RAdamConfig struct {
	LR          float64      `json:"lr,omitempty"`           // learning rate; default 1e-3
	Betas       []float64    `json:"betas,omitempty"`        // moment decay rates; default [0.9, 0.999]
	Eps         float64      `json:"eps,omitempty"`          // added to the denominator; default 1e-8 (0 cannot be set)
	WeightDecay float64      `json:"weight_decay,omitempty"` // L2 penalty added to the gradient; default 0
	Groups      []ParamGroup `json:"groups,omitempty"`       // overrides: LR, WeightDecay, Betas, Eps
	GradClip    GradClip     `json:"grad_clip,omitzero"`     // clipping before each step; default none
}

// RAdam is Rectified Adam (Liu et al., 2020), step for step as
// torch.optim.RAdam (PyTorch 1.13): while the variance of the adaptive
// rate is intractable (ρₜ ≤ 5, the first steps) it takes plain momentum
// steps, then Adam steps scaled by the rectification term rₜ:
//
//	g = g + λ·p
//	m = β₁·m + (1 − β₁)·g;  v = β₂·v + (1 − β₂)·g²
//	ρ∞ = 2/(1 − β₂) − 1;  ρₜ = ρ∞ − 2t·β₂ᵗ/(1 − β₂ᵗ)
//	ρₜ > 5: rₜ = √((ρₜ−4)(ρₜ−2)ρ∞ / ((ρ∞−4)(ρ∞−2)ρₜ))
//	        p = p − lr·rₜ·√(1 − β₂ᵗ) · m/(1 − β₁ᵗ) / (√v + ε)
//	else:   p = p − lr · m/(1 − β₁ᵗ)
type RAdam struct {
	base
	cfg RAdamConfig
}

// NewRAdam returns a RAdam optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range (negative LR, betas outside
// [0, 1)) or a group is malformed.
func NewRAdam(cfg RAdamConfig) *RAdam {
	b1, b2 := betas("optim.NewRAdam", cfg.Betas, [2]float64{0.9, 0.999})
	o := &RAdam{cfg: cfg}
	o.base = newBase("RAdam", hyper{lr: orDefault(cfg.LR, 1e-3), weightDecay: cfg.WeightDecay, beta1: b1, beta2: b2,
		eps: orDefault(cfg.Eps, 1e-8)}, cfg.Groups, cfg.GradClip, overrides{betas: true, eps: true},
		[]string{"exp_avg", "exp_avg_sq"})
	o.hasMomentum = true
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *RAdam) Config() RAdamConfig { return o.cfg }

// Momentum returns β₁ (SetMomentum's, or the configured one).
func (o *RAdam) Momentum() float64 { return o.currentMomentum(o.top.beta1) }

// SetMomentum sets β₁ for every group (OneCycleLR cycles it). It panics
// with ErrConfig outside [0, 1).
func (o *RAdam) SetMomentum(m float64) { o.setMomentum(m) }

func (o *RAdam) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	if h.weightDecay != 0 {
		g = g.Add(p.MulScalar(h.weightDecay))
	}
	t := float64(st.step)
	m, v := moments(g, h, st)
	bc1 := 1 - math.Pow(h.beta1, t)
	bc2 := 1 - math.Pow(h.beta2, t)
	corrected := m.DivScalar(bc1)
	rhoInf := 2/(1-h.beta2) - 1
	rho := rhoInf - 2*t*math.Pow(h.beta2, t)/bc2
	if rho > 5 {
		rect := math.Sqrt((rho - 4) * (rho - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rho))
		adaptive := v.Sqrt().AddScalar(h.eps).Reciprocal().MulScalar(math.Sqrt(bc2))
		return p.Sub(corrected.MulScalar(h.lr).Mul(adaptive).MulScalar(rect))
	}
	return p.Sub(corrected.MulScalar(h.lr))
}
