package optim

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// NAdamConfig configures NAdam; the zero value of each field is
// torch.optim.NAdam's default.
type NAdamConfig struct {
	LR          float64   `json:"lr,omitempty"`           // learning rate; default 2e-3
	Betas       []float64 `json:"betas,omitempty"`        // moment decay rates; default [0.9, 0.999]
	Eps         float64   `json:"eps,omitempty"`          // added to the denominator; default 1e-8 (0 cannot be set)
	WeightDecay float64   `json:"weight_decay,omitempty"` // weight decay; default 0
	// MomentumDecay is ψ of the momentum schedule μₜ = β₁·(1 − ½·0.96^(t·ψ));
	// default 4e-3 (0 cannot be set).
	MomentumDecay float64 `json:"momentum_decay,omitempty"`
	// DecoupledWeightDecay shrinks the parameter by lr·λ before the step
	// (as AdamW does; PyTorch 2.1's decoupled_weight_decay, NAdamW) instead
	// of adding λ·p to the gradient.
	DecoupledWeightDecay bool         `json:"decoupled_weight_decay,omitempty"`
	Groups               []ParamGroup `json:"groups,omitempty"`   // overrides: LR, WeightDecay, Betas, Eps
	GradClip             GradClip     `json:"grad_clip,omitzero"` // clipping before each step; default none
}

// NAdam is Adam with Nesterov momentum (Dozat, 2016), step for step as
// torch.optim.NAdam of PyTorch 2.x:
//
//	g = g + λ·p                     (DecoupledWeightDecay: p = p·(1 − lr·λ))
//	μₜ = β₁·(1 − ½·0.96^(t·ψ)),  Πₜ = μ₁·…·μₜ
//	m = β₁·m + (1 − β₁)·g
//	v = β₂·v + (1 − β₂)·g²
//	d = √(v/(1 − β₂ᵗ)) + ε
//	p = p − lr·(1 − μₜ)/(1 − Πₜ) · g/d − lr·μₜ₊₁/(1 − Πₜ·μₜ₊₁) · m/d
//
// PyTorch 1.13 multiplies μₜ into the last denominator twice
// (1 − Πₜ·μₜ·μₜ₊₁), a bug PyTorch 2.0 fixed; Kiln follows 2.0 and the
// paper. The running product Πₜ is a host-side number per parameter,
// recomputed from the step count after LoadState, so NAdam's state holds
// only the two moments.
type NAdam struct {
	base
	cfg        NAdamConfig
	psi        float64
	muProducts map[*paramState]muProduct
}

// muProduct caches Πₜ for one parameter at a step.
type muProduct struct {
	step  int
	value float64
}

// NewNAdam returns a NAdam optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range (negative LR or MomentumDecay,
// betas outside [0, 1)) or a group is malformed.
func NewNAdam(cfg NAdamConfig) *NAdam {
	const op = "optim.NewNAdam"
	b1, b2 := betas(op, cfg.Betas, [2]float64{0.9, 0.999})
	psi := orDefault(cfg.MomentumDecay, 4e-3)
	if !(psi >= 0) || math.IsInf(psi, 0) {
		configError(op, "MomentumDecay %v out of range", psi)
	}
	o := &NAdam{cfg: cfg, psi: psi, muProducts: map[*paramState]muProduct{}}
	o.base = newBase("NAdam", hyper{lr: orDefault(cfg.LR, 2e-3), weightDecay: cfg.WeightDecay, beta1: b1, beta2: b2,
		eps: orDefault(cfg.Eps, 1e-8)}, cfg.Groups, cfg.GradClip, overrides{betas: true, eps: true},
		[]string{"exp_avg", "exp_avg_sq"})
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *NAdam) Config() NAdamConfig { return o.cfg }

// ZeroState forgets all per-parameter state (see Optimizer).
func (o *NAdam) ZeroState() {
	o.base.ZeroState()
	clear(o.muProducts)
}

// LoadState restores state saved by State (see Optimizer).
func (o *NAdam) LoadState(s *State) error {
	if err := o.base.LoadState(s); err != nil {
		return err
	}
	clear(o.muProducts)
	return nil
}

// mu is μₜ of the momentum schedule.
func (o *NAdam) mu(beta1 float64, t int) float64 {
	return beta1 * (1 - 0.5*math.Pow(0.96, float64(t)*o.psi))
}

// product returns Πₜ for st at its current step, multiplying the cached
// Πₜ₋₁ by μₜ or, after a restore, recomputing the product from step 1 in
// the same order.
func (o *NAdam) product(st *paramState, beta1 float64) float64 {
	c, ok := o.muProducts[st]
	if !ok || c.step != st.step-1 {
		c = muProduct{value: 1}
		for t := 1; t < st.step; t++ {
			c.value *= o.mu(beta1, t)
		}
	}
	c = muProduct{step: st.step, value: c.value * o.mu(beta1, st.step)}
	o.muProducts[st] = c
	return c.value
}

func (o *NAdam) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	if h.weightDecay != 0 {
		if o.cfg.DecoupledWeightDecay {
			p = p.MulScalar(1 - h.lr*h.weightDecay)
		} else {
			g = g.Add(p.MulScalar(h.weightDecay))
		}
	}
	t := st.step
	mu, muNext := o.mu(h.beta1, t), o.mu(h.beta1, t+1)
	prod := o.product(st, h.beta1)
	m, v := moments(g, h, st)
	denom := v.DivScalar(1 - math.Pow(h.beta2, float64(t))).Sqrt().AddScalar(h.eps)
	p = p.Sub(g.Div(denom).MulScalar(h.lr * (1 - mu) / (1 - prod)))
	return p.Sub(m.Div(denom).MulScalar(h.lr * muNext / (1 - prod*muNext)))
}

// moments updates Adam's two moments in st ("exp_avg", "exp_avg_sq"),
// m = β₁·m + (1 − β₁)·g and v = β₂·v + (1 − β₂)·g², and returns them.
func moments(g *tensor.Tensor, h hyper, st *paramState) (m, v *tensor.Tensor) {
	m = g.MulScalar(1 - h.beta1)
	if old := st.slots["exp_avg"]; old != nil {
		m = old.MulScalar(h.beta1).Add(m)
	}
	v = g.Square().MulScalar(1 - h.beta2)
	if old := st.slots["exp_avg_sq"]; old != nil {
		v = old.MulScalar(h.beta2).Add(v)
	}
	st.slots["exp_avg"], st.slots["exp_avg_sq"] = m, v
	return m, v
}
