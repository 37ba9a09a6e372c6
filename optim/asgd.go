package optim

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// ASGDConfig configures ASGD; the zero value of each field is
// torch.optim.ASGD's default.
type ASGDConfig struct {
	LR float64 `json:"lr,omitempty"` // learning rate; default 1e-2
	// Lambd is the decay term λ; nil means the default 1e-4 (Float(0)
	// turns the decay off).
	Lambd *float64 `json:"lambd,omitempty"`
	// Alpha is the power of the step-size decay ηₜ = lr/(1 + λ·lr·t)^α;
	// default 0.75 (0 cannot be set).
	Alpha float64 `json:"alpha,omitempty"`
	// T0 is the step after which averaging starts; nil means the default
	// 1e6 (Float(0) averages from the first steps).
	T0          *float64     `json:"t0,omitempty"`
	WeightDecay float64      `json:"weight_decay,omitempty"` // L2 penalty added to the gradient; default 0
	Maximize    bool         `json:"maximize,omitempty"`     // ascend the objective instead
	Groups      []ParamGroup `json:"groups,omitempty"`       // overrides: LR, WeightDecay
	GradClip    GradClip     `json:"grad_clip,omitzero"`     // clipping before each step; default none
}

// ASGD is averaged stochastic gradient descent (Polyak and Juditsky, 1992;
// Bottou's "Stochastic Gradient Descent Tricks", 2012), step for step as
// torch.optim.ASGD (PyTorch 1.13). At step t, with η₁ = lr,
// ηₜ = lr/(1 + λ·lr·(t−1))^α and μₜ = 1/max(1, t − 1 − t₀):
//
//	g = ±g + λ_wd·p
//	p = p·(1 − λ·ηₜ) − ηₜ·g
//	ax = p (μₜ = 1), else ax + μₜ·(p − ax)
//
// The parameters follow plain decaying SGD; the average ax, the estimate
// ASGD is named for, is kept in the state slot "ax" and read with
// Averages. ηₜ and μₜ are recomputed from the step count rather than
// stored (torch keeps them as state); they use the learning rate of the
// step they are used in, where torch uses the one of the step before, so a
// schedule changing LR shifts ηₜ one step earlier than in torch.
type ASGD struct {
	base
	cfg              ASGDConfig
	lambd, alpha, t0 float64
}

// NewASGD returns an ASGD optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range (negative LR, Lambd, Alpha or
// T0) or a group is malformed.
func NewASGD(cfg ASGDConfig) *ASGD {
	const op = "optim.NewASGD"
	o := &ASGD{cfg: cfg, lambd: 1e-4, alpha: orDefault(cfg.Alpha, 0.75), t0: 1e6}
	if cfg.Lambd != nil {
		o.lambd = *cfg.Lambd
	}
	if cfg.T0 != nil {
		o.t0 = *cfg.T0
	}
	for _, v := range []struct {
		name  string
		value float64
	}{{"Lambd", o.lambd}, {"Alpha", o.alpha}, {"T0", o.t0}} {
		if !(v.value >= 0) || math.IsInf(v.value, 0) {
			configError(op, "%s %v out of range", v.name, v.value)
		}
	}
	o.base = newBase("ASGD", hyper{lr: orDefault(cfg.LR, 1e-2), weightDecay: cfg.WeightDecay},
		cfg.Groups, cfg.GradClip, overrides{}, []string{"ax"})
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *ASGD) Config() ASGDConfig { return o.cfg }

// Averages returns copies of the averaged parameters ax, keyed by
// parameter name, for the parameters stepped so far (state restored by
// LoadState and not yet stepped included). Use them, loaded into a copy
// of the model (nn.LoadStateDict), as the model ASGD estimates. It fails
// as State does.
func (o *ASGD) Averages() (map[string]*tensor.Tensor, error) {
	s, err := o.State()
	if err != nil {
		return nil, err
	}
	out := make(map[string]*tensor.Tensor, len(s.Tensors))
	for key, t := range s.Tensors {
		name, _, _ := SplitStateKey(key)
		out[name] = t
	}
	return out, nil
}

func (o *ASGD) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	if o.cfg.Maximize {
		g = g.Neg()
	}
	if h.weightDecay != 0 {
		g = g.Add(p.MulScalar(h.weightDecay))
	}
	t := float64(st.step)
	eta := h.lr / math.Pow(1+o.lambd*h.lr*(t-1), o.alpha)
	mu := 1 / math.Max(1, t-1-o.t0)
	p = p.MulScalar(1 - o.lambd*eta).Sub(g.MulScalar(eta))
	if ax := st.slots["ax"]; ax != nil && mu != 1 {
		st.slots["ax"] = ax.Add(p.Sub(ax).MulScalar(mu))
	} else {
		st.slots["ax"] = clone(p)
	}
	return p
}
