package optim

import "github.com/kiln-ml/kiln/tensor"

// RMSPropConfig configures RMSProp; the zero value of each field is
// torch.optim.RMSprop's default.
type RMSPropConfig struct {
	LR          float64      `json:"lr,omitempty"`           // learning rate; default 1e-2
	Alpha       float64      `json:"alpha,omitempty"`        // smoothing of the squared gradient; default 0.99
	Eps         float64      `json:"eps,omitempty"`          // added to the denominator; default 1e-8 (0 cannot be set)
	WeightDecay float64      `json:"weight_decay,omitempty"` // L2 penalty added to the gradient; default 0
	Momentum    float64      `json:"momentum,omitempty"`     // momentum factor; default 0 (none)
	Centered    bool         `json:"centered,omitempty"`     // normalise by the estimated variance instead
	Maximize    bool         `json:"maximize,omitempty"`     // ascend the objective instead
	Groups      []ParamGroup `json:"groups,omitempty"`       // overrides: LR, WeightDecay, Momentum, Eps
	GradClip    GradClip     `json:"grad_clip,omitzero"`     // clipping before each step; default none
}

// RMSProp divides the gradient by a running root mean square of recent
// gradients (Hinton's lecture 6e), step for step as torch.optim.RMSprop
// (PyTorch 1.13):
//
//	g = ±g + λ·p
//	s = α·s + (1 − α)·g²
//	a = √(s − ḡ²) with ḡ = α·ḡ + (1 − α)·g (centered), else √s
//	b = μ·b + g/(a + ε); p = p − lr·b  (momentum), else p = p − lr·g/(a + ε)
type RMSProp struct {
	base
	cfg   RMSPropConfig
	alpha float64
}

// NewRMSProp returns an RMSProp optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range or a group is malformed.
func NewRMSProp(cfg RMSPropConfig) *RMSProp {
	alpha := orDefault(cfg.Alpha, 0.99)
	if !(alpha >= 0 && alpha <= 1) {
		configError("optim.NewRMSProp", "Alpha %v outside [0, 1]", alpha)
	}
	o := &RMSProp{cfg: cfg, alpha: alpha}
	o.base = newBase("RMSProp", hyper{lr: orDefault(cfg.LR, 1e-2), weightDecay: cfg.WeightDecay,
		momentum: cfg.Momentum, eps: orDefault(cfg.Eps, 1e-8)},
		cfg.Groups, cfg.GradClip, overrides{momentum: true, eps: true}, []string{"square_avg", "grad_avg", "momentum_buffer"})
	o.hasMomentum = true
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *RMSProp) Config() RMSPropConfig { return o.cfg }

// Momentum returns the momentum factor in use.
func (o *RMSProp) Momentum() float64 { return o.currentMomentum(o.cfg.Momentum) }

// SetMomentum sets the momentum factor of every group (OneCycleLR cycles
// it). It panics with ErrConfig outside [0, 1).
func (o *RMSProp) SetMomentum(m float64) { o.setMomentum(m) }

func (o *RMSProp) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	if o.cfg.Maximize {
		g = g.Neg()
	}
	if h.weightDecay != 0 {
		g = g.Add(p.MulScalar(h.weightDecay))
	}
	a := o.alpha
	sq := g.Square().MulScalar(1 - a)
	if old := st.slots["square_avg"]; old != nil {
		sq = old.MulScalar(a).Add(sq)
	}
	st.slots["square_avg"] = sq
	var avg *tensor.Tensor
	if o.cfg.Centered {
		ga := g.MulScalar(1 - a)
		if old := st.slots["grad_avg"]; old != nil {
			ga = old.MulScalar(a).Add(ga)
		}
		st.slots["grad_avg"] = ga
		avg = sq.Sub(ga.Square()).Sqrt()
	} else {
		avg = sq.Sqrt()
	}
	avg = avg.AddScalar(h.eps)
	if h.momentum > 0 {
		buf := g.Div(avg)
		if old := st.slots["momentum_buffer"]; old != nil {
			buf = old.MulScalar(h.momentum).Add(buf)
		}
		st.slots["momentum_buffer"] = buf
		return p.Sub(buf.MulScalar(h.lr))
	}
	return p.Sub(g.Div(avg).MulScalar(h.lr))
}
