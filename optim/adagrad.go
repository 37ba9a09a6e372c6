package optim

import "github.com/kiln-ml/kiln/tensor"

// AdaGradConfig configures AdaGrad; the zero value of each field is
// torch.optim.Adagrad's default.
type AdaGradConfig struct {
	LR                      float64      `json:"lr,omitempty"`                        // learning rate; default 1e-2
	LRDecay                 float64      `json:"lr_decay,omitempty"`                  // lr/(1 + (t−1)·LRDecay) at step t; default 0
	WeightDecay             float64      `json:"weight_decay,omitempty"`              // L2 penalty added to the gradient; default 0
	InitialAccumulatorValue float64      `json:"initial_accumulator_value,omitempty"` // starting sum of squares; default 0
	Eps                     float64      `json:"eps,omitempty"`                       // added to the denominator; default 1e-10 (0 cannot be set)
	Maximize                bool         `json:"maximize,omitempty"`                  // ascend the objective instead
	Groups                  []ParamGroup `json:"groups,omitempty"`                    // overrides: LR, WeightDecay, Eps
	GradClip                GradClip     `json:"grad_clip,omitzero"`                  // clipping before each step; default none
}

// AdaGrad scales each element's step by the root of the sum of its squared
// gradients (Duchi et al., 2011), step for step as torch.optim.Adagrad
// (PyTorch 1.13, dense gradients):
//
//	g = ±g + λ·p
//	s = s + g²                      (s starts at InitialAccumulatorValue)
//	p = p − lr/(1 + (t − 1)·decay) · g / (√s + ε)
type AdaGrad struct {
	base
	cfg AdaGradConfig
}

// NewAdaGrad returns an AdaGrad optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range or a group is malformed.
func NewAdaGrad(cfg AdaGradConfig) *AdaGrad {
	const op = "optim.NewAdaGrad"
	if !(cfg.LRDecay >= 0) {
		configError(op, "LRDecay %v out of range", cfg.LRDecay)
	}
	if !(cfg.InitialAccumulatorValue >= 0) {
		configError(op, "InitialAccumulatorValue %v out of range", cfg.InitialAccumulatorValue)
	}
	o := &AdaGrad{cfg: cfg}
	o.base = newBase("AdaGrad", hyper{lr: orDefault(cfg.LR, 1e-2), weightDecay: cfg.WeightDecay,
		eps: orDefault(cfg.Eps, 1e-10)}, cfg.Groups, cfg.GradClip, overrides{eps: true}, []string{"sum"})
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *AdaGrad) Config() AdaGradConfig { return o.cfg }

func (o *AdaGrad) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	if o.cfg.Maximize {
		g = g.Neg()
	}
	if h.weightDecay != 0 {
		g = g.Add(p.MulScalar(h.weightDecay))
	}
	sum := st.slots["sum"]
	switch {
	case sum != nil:
		sum = sum.Add(g.Square())
	case o.cfg.InitialAccumulatorValue != 0:
		sum = g.Square().AddScalar(o.cfg.InitialAccumulatorValue)
	default:
		sum = g.Square()
	}
	st.slots["sum"] = sum
	clr := h.lr / (1 + float64(st.step-1)*o.cfg.LRDecay)
	return p.Sub(g.Div(sum.Sqrt().AddScalar(h.eps)).MulScalar(clr))
}
