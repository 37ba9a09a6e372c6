package optim

import "github.com/kiln-ml/kiln/tensor"

// LionConfig configures Lion; the zero value of each field is the default
// of the paper's reference implementation.
type LionConfig struct {
	LR          float64      `json:"lr,omitempty"`           // learning rate; default 1e-4 (3–10× below AdamW's)
	Betas       []float64    `json:"betas,omitempty"`        // interpolation and momentum decay; default [0.9, 0.99]
	WeightDecay float64      `json:"weight_decay,omitempty"` // decoupled weight decay; default 0
	Maximize    bool         `json:"maximize,omitempty"`     // ascend the objective instead
	Groups      []ParamGroup `json:"groups,omitempty"`       // overrides: LR, WeightDecay, Betas
	GradClip    GradClip     `json:"grad_clip,omitzero"`     // clipping before each step; default none
}

// Lion is the sign-momentum optimizer of Chen et al., "Symbolic Discovery
// of Optimization Algorithms" (2023), Algorithm 2, with decoupled weight
// decay; it keeps one moment per parameter (half Adam's memory):
//
//	c = β₁·m + (1 − β₁)·g
//	p = p·(1 − lr·λ) − lr·sign(c)
//	m = β₂·m + (1 − β₂)·g
type Lion struct {
	base
	cfg LionConfig
}

// NewLion returns a Lion optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range or a group is malformed.
func NewLion(cfg LionConfig) *Lion {
	b1, b2 := betas("optim.NewLion", cfg.Betas, [2]float64{0.9, 0.99})
	o := &Lion{cfg: cfg}
	o.base = newBase("Lion", hyper{lr: orDefault(cfg.LR, 1e-4), weightDecay: cfg.WeightDecay, beta1: b1, beta2: b2},
		cfg.Groups, cfg.GradClip, overrides{betas: true}, []string{"exp_avg"})
	o.hasMomentum = true
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *Lion) Config() LionConfig { return o.cfg }

// Momentum returns β₁ (SetMomentum's, or the configured one).
func (o *Lion) Momentum() float64 { return o.currentMomentum(o.top.beta1) }

// SetMomentum sets β₁ for every group. It panics with ErrConfig outside
// [0, 1).
func (o *Lion) SetMomentum(m float64) { o.setMomentum(m) }

func (o *Lion) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	if o.cfg.Maximize {
		g = g.Neg()
	}
	m := st.slots["exp_avg"]
	var c, next *tensor.Tensor
	if m == nil {
		c = g.MulScalar(1 - h.beta1)
		next = g.MulScalar(1 - h.beta2)
	} else {
		c = m.MulScalar(h.beta1).Add(g.MulScalar(1 - h.beta1))
		next = m.MulScalar(h.beta2).Add(g.MulScalar(1 - h.beta2))
	}
	st.slots["exp_avg"] = next
	if h.weightDecay != 0 {
		p = p.MulScalar(1 - h.lr*h.weightDecay)
	}
	return p.Sub(c.Sign().MulScalar(h.lr))
}
