package optim

import (
	"github.com/kiln-ml/kiln/tensor"
)

// AdamConfig configures Adam; the zero value of each field is
// torch.optim.Adam's default.
type AdamConfig struct {
	LR          float64      `json:"lr,omitempty"`           // learning rate; default 1e-3
	Betas       []float64    `json:"betas,omitempty"`        // moment decay rates; default [0.9, 0.999] (set both to use 0)
	Eps         float64      `json:"eps,omitempty"`          // added to the denominator; default 1e-8 (0 cannot be set)
	WeightDecay float64      `json:"weight_decay,omitempty"` // L2 penalty added to the gradient; default 0
	AMSGrad     bool         `json:"amsgrad,omitempty"`      // use the running maximum of the second moment
	Maximize    bool         `json:"maximize,omitempty"`     // ascend the objective instead
	Groups      []ParamGroup `json:"groups,omitempty"`       // overrides: LR, WeightDecay, Betas, Eps
	GradClip    GradClip     `json:"grad_clip,omitzero"`     // clipping before each step; default none
}

// AdamWConfig configures AdamW; the zero value of each field is
// torch.optim.AdamW's default.
type AdamWConfig struct {
	LR          float64   `json:"lr,omitempty"`           // learning rate; default 1e-3
	Betas       []float64 `json:"betas,omitempty"`        // moment decay rates; default [0.9, 0.999]
	Eps         float64   `json:"eps,omitempty"`          // added to the denominator; default 1e-8 (0 cannot be set)
	WeightDecay float64   `json:"weight_decay,omitempty"` // decoupled weight decay; default 1e-2
	// NoWeightDecay turns weight decay off (WeightDecay 0 means the
	// default, 1e-2).
	NoWeightDecay bool         `json:"no_weight_decay,omitempty"`
	AMSGrad       bool         `json:"amsgrad,omitempty"`  // use the running maximum of the second moment
	Maximize      bool         `json:"maximize,omitempty"` // ascend the objective instead
	Groups        []ParamGroup `json:"groups,omitempty"`   // overrides: LR, WeightDecay, Betas, Eps
	GradClip      GradClip     `json:"grad_clip,omitzero"` // clipping before each step; default none
}

// Adam is the Adam optimizer (Kingma and Ba, 2015) with L2 weight decay
// added to the gradient and optional AMSGrad, step for step as
// torch.optim.Adam (PyTorch 1.13):
//
//	g = ±g + λ·p
//	m = β₁·m + (1 − β₁)·g
//	v = β₂·v + (1 − β₂)·g²          (AMSGrad: v̂ = max(v̂, v))
//	p = p − lr/(1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + ε)
//
// A step updates every parameter through tensor.AdamSteps: one fused
// multi-tensor kernel call for the whole model where the backend has one
// (the CPU's), else a fused or composed update per parameter.
type Adam struct {
	base
	cfg AdamConfig
}

// AdamW is Adam with decoupled weight decay (Loshchilov and Hutter, 2019):
// the parameter shrinks by lr·λ before the Adam step, instead of λ·p being
// added to the gradient, step for step as torch.optim.AdamW (PyTorch 1.13).
type AdamW struct {
	base
	cfg AdamWConfig
}

var adamSlots = []string{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}

// NewAdam returns an Adam optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range (negative LR, betas outside
// [0, 1)) or a group is malformed.
func NewAdam(cfg AdamConfig) *Adam {
	b1, b2 := betas("optim.NewAdam", cfg.Betas, [2]float64{0.9, 0.999})
	h := hyper{lr: orDefault(cfg.LR, 1e-3), weightDecay: cfg.WeightDecay, beta1: b1, beta2: b2,
		eps: orDefault(cfg.Eps, 1e-8)}
	o := &Adam{cfg: cfg}
	o.base = newBase("Adam", h, cfg.Groups, cfg.GradClip, overrides{betas: true, eps: true}, adamSlots)
	o.hasMomentum = true
	o.update = o.step
	o.updateAll = func(ps, gs []*tensor.Tensor, hs []hyper, sts []*paramState) {
		adamSteps(ps, gs, hs, sts, false, cfg.AMSGrad, cfg.Maximize)
	}
	return o
}

// NewAdamW returns an AdamW optimizer. It panics like NewAdam.
func NewAdamW(cfg AdamWConfig) *AdamW {
	b1, b2 := betas("optim.NewAdamW", cfg.Betas, [2]float64{0.9, 0.999})
	wd := orDefault(cfg.WeightDecay, 1e-2)
	if cfg.NoWeightDecay {
		wd = 0
	}
	h := hyper{lr: orDefault(cfg.LR, 1e-3), weightDecay: wd, beta1: b1, beta2: b2, eps: orDefault(cfg.Eps, 1e-8)}
	o := &AdamW{cfg: cfg}
	o.base = newBase("AdamW", h, cfg.Groups, cfg.GradClip, overrides{betas: true, eps: true}, adamSlots)
	o.hasMomentum = true
	o.update = o.step
	o.updateAll = func(ps, gs []*tensor.Tensor, hs []hyper, sts []*paramState) {
		adamSteps(ps, gs, hs, sts, true, cfg.AMSGrad, cfg.Maximize)
	}
	return o
}

// Config returns the configuration o was made with.
func (o *Adam) Config() AdamConfig { return o.cfg }

// Config returns the configuration o was made with.
func (o *AdamW) Config() AdamWConfig { return o.cfg }

// Momentum returns β₁ (SetMomentum's, or the configured one).
func (o *Adam) Momentum() float64 { return o.currentMomentum(o.top.beta1) }

// SetMomentum sets β₁ for every group (OneCycleLR cycles it). It panics
// with ErrConfig outside [0, 1).
func (o *Adam) SetMomentum(m float64) { o.setMomentum(m) }

// Momentum returns β₁ (SetMomentum's, or the configured one).
func (o *AdamW) Momentum() float64 { return o.currentMomentum(o.top.beta1) }

// SetMomentum sets β₁ for every group (OneCycleLR cycles it). It panics
// with ErrConfig outside [0, 1).
func (o *AdamW) SetMomentum(m float64) { o.setMomentum(m) }

func (o *Adam) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	return adamStep(p, g, h, st, false, o.cfg.AMSGrad, o.cfg.Maximize)
}

func (o *AdamW) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	return adamStep(p, g, h, st, true, o.cfg.AMSGrad, o.cfg.Maximize)
}

// adamStep is one Adam or AdamW update (shared with Muon's fallback),
// through tensor.AdamStep, which runs it as one fused kernel where the
// backend has one.
func adamStep(p, g *tensor.Tensor, h hyper, st *paramState, decoupled, amsgrad, maximize bool) *tensor.Tensor {
	p, next := tensor.AdamStep(p, g, tensor.AdamState{ExpAvg: st.slots["exp_avg"], ExpAvgSq: st.slots["exp_avg_sq"],
		MaxExpAvgSq: st.slots["max_exp_avg_sq"]}, tensor.AdamConfig{LR: h.lr, Beta1: h.beta1, Beta2: h.beta2,
		Eps: h.eps, WeightDecay: h.weightDecay, Decoupled: decoupled, AMSGrad: amsgrad, Maximize: maximize,
		Step: st.step, InPlace: true})
	st.slots["exp_avg"], st.slots["exp_avg_sq"] = next.ExpAvg, next.ExpAvgSq
	if amsgrad {
		st.slots["max_exp_avg_sq"] = next.MaxExpAvgSq
	}
	return p
}

// adamSteps is adamStep for all the parameters of a step at once, through
// tensor.AdamSteps.
func adamSteps(ps, gs []*tensor.Tensor, hs []hyper, sts []*paramState, decoupled, amsgrad, maximize bool) {
	states := make([]tensor.AdamState, len(ps))
	cfgs := make([]tensor.AdamConfig, len(ps))
	for i, st := range sts {
		h := hs[i]
		states[i] = tensor.AdamState{ExpAvg: st.slots["exp_avg"], ExpAvgSq: st.slots["exp_avg_sq"],
			MaxExpAvgSq: st.slots["max_exp_avg_sq"]}
		cfgs[i] = tensor.AdamConfig{LR: h.lr, Beta1: h.beta1, Beta2: h.beta2, Eps: h.eps, WeightDecay: h.weightDecay,
			Decoupled: decoupled, AMSGrad: amsgrad, Maximize: maximize, Step: st.step, InPlace: true}
	}
	next := tensor.AdamSteps(ps, gs, states, cfgs)
	for i, st := range sts {
		st.slots["exp_avg"], st.slots["exp_avg_sq"] = next[i].ExpAvg, next[i].ExpAvgSq
		if amsgrad {
			st.slots["max_exp_avg_sq"] = next[i].MaxExpAvgSq
		}
	}
}
