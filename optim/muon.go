package optim

import (
	"math"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// MuonConfig configures Muon; the zero value of each field is the default
// of Keller Jordan's reference implementation (muon.py).
type MuonConfig struct {
	LR          float64 `json:"lr,omitempty"`           // learning rate of the matrices; default 0.02
	Momentum    float64 `json:"momentum,omitempty"`     // momentum factor; default 0.95 (0 cannot be set)
	NoNesterov  bool    `json:"no_nesterov,omitempty"`  // plain momentum instead of Nesterov's (the default)
	WeightDecay float64 `json:"weight_decay,omitempty"` // decoupled weight decay of the matrices; default 0
	NSSteps     int     `json:"ns_steps,omitempty"`     // Newton–Schulz iterations; default 5
	// AdamW configures the fallback for the parameters Muon does not
	// handle: those that are not matrices (biases, norms' gains,
	// convolution kernels) and groups marked AdamW. Its zero value is
	// AdamW's defaults (LR 1e-3, weight decay 1e-2); its Groups and
	// GradClip must be empty (Muon's apply to every parameter).
	AdamW    AdamWConfig  `json:"adamw,omitzero"`
	Groups   []ParamGroup `json:"groups,omitempty"`   // overrides: LR, WeightDecay, Momentum, Betas and Eps (fallback), AdamW
	GradClip GradClip     `json:"grad_clip,omitzero"` // clipping before each step; default none
}

// The quintic Newton–Schulz coefficients of Keller Jordan's Muon.
const nsA, nsB, nsC = 3.4445, -4.7750, 2.0315

// Muon is MomentUm Orthogonalized by Newton–Schulz (Keller Jordan et al.,
// 2024), as in Keller Jordan's reference implementation: for each matrix
// parameter [rows, cols],
//
//	b = b + (1 − μ)·(g − b)
//	u = g + μ·(b − g) (Nesterov) or b
//	u = NS₅(u) · √max(1, rows/cols)
//	p = p·(1 − lr·λ) − lr·u
//
// where NS₅ runs NSSteps quintic Newton–Schulz iterations (coefficients
// 3.4445, −4.7750, 2.0315) from u/(‖u‖_F + 1e-7), approximately replacing
// u's singular values by ones. Parameters that are not matrices, and
// groups marked AdamW, are updated by an AdamW fallback instead (the
// reference leaves them to a separate AdamW); convolution kernels, which
// the reference flattens to matrices, take the fallback here too. The
// iteration runs in the parameter's dtype (the reference uses bfloat16).
type Muon struct {
	base
	cfg      MuonConfig
	fallback AdamWConfig
}

// NewMuon returns a Muon optimizer. It panics with an error wrapping
// ErrConfig when a value is out of range, the fallback has groups or
// clipping of its own, or a group is malformed.
func NewMuon(cfg MuonConfig) *Muon {
	const op = "optim.NewMuon"
	if cfg.NSSteps < 0 {
		configError(op, "NSSteps %d is negative", cfg.NSSteps)
	}
	if len(cfg.AdamW.Groups) > 0 || cfg.AdamW.GradClip != (GradClip{}) {
		configError(op, "the AdamW fallback takes no Groups or GradClip; set them on MuonConfig")
	}
	mom := orDefault(cfg.Momentum, 0.95)
	if !(mom >= 0 && mom < 1) {
		configError(op, "Momentum %v outside [0, 1)", mom)
	}
	fb := NewAdamW(cfg.AdamW) // validates the fallback and applies its defaults
	o := &Muon{cfg: cfg, fallback: cfg.AdamW}
	o.base = newBase("Muon", hyper{lr: orDefault(cfg.LR, 0.02), weightDecay: cfg.WeightDecay, momentum: mom},
		cfg.Groups, cfg.GradClip, overrides{momentum: true, betas: true, eps: true, adamw: true},
		[]string{"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"})
	o.base.fallback = fb.top
	o.fallbackFor = func(p *nn.Param, g *ParamGroup) bool { return p.Dims() != 2 || (g != nil && g.AdamW) }
	o.hasMomentum = true
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *Muon) Config() MuonConfig { return o.cfg }

// Momentum returns Muon's momentum factor in use.
func (o *Muon) Momentum() float64 { return o.currentMomentum(o.top.momentum) }

// SetMomentum sets Muon's momentum factor for every group (not the AdamW
// fallback's β₁). It panics with ErrConfig outside [0, 1).
func (o *Muon) SetMomentum(m float64) { o.setMomentum(m) }

func (o *Muon) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	if h.fallback {
		return adamStep(p, g, h, st, true, o.fallback.AMSGrad, o.fallback.Maximize)
	}
	mu := h.momentum
	buf := g.MulScalar(1 - mu)
	if old := st.slots["momentum_buffer"]; old != nil {
		buf = old.Add(g.Sub(old).MulScalar(1 - mu))
	}
	st.slots["momentum_buffer"] = buf
	u := buf
	if !o.cfg.NoNesterov {
		u = g.Add(buf.Sub(g).MulScalar(mu))
	}
	steps := o.cfg.NSSteps
	if steps == 0 {
		steps = 5
	}
	rows, cols := p.Dim(0), p.Dim(1)
	u = newtonSchulz(u, steps).MulScalar(math.Sqrt(max(1, float64(rows)/float64(cols))))
	if h.weightDecay != 0 {
		p = p.MulScalar(1 - h.lr*h.weightDecay)
	}
	return p.Sub(u.MulScalar(h.lr))
}

// newtonSchulz approximately orthogonalises the matrix g: the quintic
// iteration X ← a·X + (b·A + c·A²)·X with A = X·Xᵀ, from X = g/(‖g‖_F +
// 1e-7), on the wide orientation of g (so A is the smaller Gram matrix).
func newtonSchulz(g *tensor.Tensor, steps int) *tensor.Tensor {
	x := g
	tall := g.Dim(0) > g.Dim(1)
	if tall {
		x = x.T()
	}
	x = x.Div(x.Square().Sum().Sqrt().AddScalar(1e-7))
	for range steps {
		a := x.Matmul(x.T())
		b := a.MulScalar(nsB).Add(a.Matmul(a).MulScalar(nsC))
		x = x.MulScalar(nsA).Add(b.Matmul(x))
	}
	if tall {
		x = x.T()
	}
	return x
}
