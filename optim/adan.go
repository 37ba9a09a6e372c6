package optim

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// AdanConfig configures Adan; the zero value of each field is the default
// of the authors' official implementation (sail-sg/Adan).
type AdanConfig struct {
	LR float64 `json:"lr,omitempty"` // learning rate; default 1e-3
	// Betas are the decay rates (β₁, β₂, β₃) of the gradient's average,
	// the gradient difference's average and the squared average, in the
	// official implementation's convention (1 − the paper's β); default
	// [0.98, 0.92, 0.99].
	Betas       []float64 `json:"betas,omitempty"`
	Eps         float64   `json:"eps,omitempty"`          // added to the denominator; default 1e-8 (0 cannot be set)
	WeightDecay float64   `json:"weight_decay,omitempty"` // decoupled weight decay; default 0
	// NoProx applies the weight decay as p·(1 − lr·λ) before the step
	// (AdamW's form) instead of the proximal p/(1 + lr·λ) after it.
	NoProx   bool         `json:"no_prox,omitempty"`
	Groups   []ParamGroup `json:"groups,omitempty"`   // overrides: LR, WeightDecay, Eps
	GradClip GradClip     `json:"grad_clip,omitzero"` // clipping before each step; default none
}

// Adan is the adaptive Nesterov momentum algorithm of Xie et al., "Adan:
// Adaptive Nesterov Momentum Algorithm for Faster Optimizing Deep Models"
// (2022), Algorithm 1 in the form of the authors' official PyTorch
// implementation (adan.py, _single_tensor_adan): with the gradient
// difference Δ = g − g_prev (0 at the first step),
//
//	m = β₁·m + (1 − β₁)·g
//	d = β₂·d + (1 − β₂)·Δ
//	n = β₃·n + (1 − β₃)·(g + β₂·Δ)²
//	u = (m/(1 − β₁ᵗ) + β₂·d/(1 − β₂ᵗ)) / (√n/√(1 − β₃ᵗ) + ε)
//	p = (p − lr·u) / (1 + lr·λ)       (NoProx: p·(1 − lr·λ) − lr·u)
//
// PyTorch has no Adan. The state holds four tensors per parameter
// ("exp_avg", "exp_avg_diff", "exp_avg_sq", and "neg_pre_grad", the
// previous gradient negated). The official implementation's own global
// gradient-norm clipping (max_grad_norm) is GradClip{MaxNorm: …} here.
type Adan struct {
	base
	cfg   AdanConfig
	beta3 float64
}

// NewAdan returns an Adan optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range (negative LR, betas outside
// [0, 1) or not three of them) or a group is malformed (groups cannot
// override Betas).
func NewAdan(cfg AdanConfig) *Adan {
	const op = "optim.NewAdan"
	b := []float64{0.98, 0.92, 0.99}
	switch len(cfg.Betas) {
	case 0:
	case 3:
		b = cfg.Betas
	default:
		configError(op, "Betas needs 3 values, got %d", len(cfg.Betas))
	}
	if !(b[2] >= 0 && b[2] < 1) {
		configError(op, "Betas %v outside [0, 1)", b)
	}
	o := &Adan{cfg: cfg, beta3: b[2]}
	o.base = newBase("Adan", hyper{lr: orDefault(cfg.LR, 1e-3), weightDecay: cfg.WeightDecay, beta1: b[0], beta2: b[1],
		eps: orDefault(cfg.Eps, 1e-8)}, cfg.Groups, cfg.GradClip, overrides{eps: true},
		[]string{"exp_avg", "exp_avg_diff", "exp_avg_sq", "neg_pre_grad"})
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *Adan) Config() AdanConfig { return o.cfg }

func (o *Adan) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	t := float64(st.step)
	b1, b2, b3 := h.beta1, h.beta2, o.beta3
	var diff *tensor.Tensor
	neg := st.slots["neg_pre_grad"]
	if neg == nil || st.step == 1 {
		diff = tensor.ZerosLike(g)
	} else {
		diff = neg.Add(g)
	}
	m := g.MulScalar(1 - b1)
	if old := st.slots["exp_avg"]; old != nil {
		m = old.MulScalar(b1).Add(m)
	}
	d := diff.MulScalar(1 - b2)
	if old := st.slots["exp_avg_diff"]; old != nil {
		d = old.MulScalar(b2).Add(d)
	}
	u := diff.MulScalar(b2).Add(g)
	n := u.Square().MulScalar(1 - b3)
	if old := st.slots["exp_avg_sq"]; old != nil {
		n = old.MulScalar(b3).Add(n)
	}
	st.slots["exp_avg"], st.slots["exp_avg_diff"], st.slots["exp_avg_sq"] = m, d, n
	st.slots["neg_pre_grad"] = g.Neg()
	denom := n.Sqrt().DivScalar(math.Sqrt(1 - math.Pow(b3, t))).AddScalar(h.eps)
	if h.weightDecay != 0 && o.cfg.NoProx {
		p = p.MulScalar(1 - h.lr*h.weightDecay)
	}
	p = p.Sub(m.Div(denom).MulScalar(h.lr / (1 - math.Pow(b1, t))))
	p = p.Sub(d.Div(denom).MulScalar(h.lr * b2 / (1 - math.Pow(b2, t))))
	if h.weightDecay != 0 && !o.cfg.NoProx {
		p = p.DivScalar(1 + h.lr*h.weightDecay)
	}
	return p
}
