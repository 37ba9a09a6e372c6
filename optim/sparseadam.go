package optim

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// SparseAdamConfig configures SparseAdam; the zero value of each field is
// torch.optim.SparseAdam's default.
type SparseAdamConfig struct {
	LR       float64      `json:"lr,omitempty"`       // learning rate; default 1e-3
	Betas    []float64    `json:"betas,omitempty"`    // moment decay rates; default [0.9, 0.999]
	Eps      float64      `json:"eps,omitempty"`      // added to the denominator; default 1e-8 (0 cannot be set)
	Maximize bool         `json:"maximize,omitempty"` // ascend the objective instead
	Groups   []ParamGroup `json:"groups,omitempty"`   // overrides: LR, Betas, Eps (there is no weight decay)
	GradClip GradClip     `json:"grad_clip,omitzero"` // clipping before each step; default none
}

// SparseAdam is the lazy Adam of torch.optim.SparseAdam (PyTorch 1.13),
// meant for embedding tables: a step updates only the rows the batch
// touched, moments included; the other rows keep their values and their
// moments, instead of decaying as dense Adam would decay them.
//
// Kiln has no sparse tensors: an embedding's gradient (tensor.Embedding's
// backward) is a dense [Num, Dim] tensor that is zero on the rows no index
// picked. "Sparse" therefore means here what torch's sparse gradient
// carries: the rows (slices along the first dimension; the elements of a
// vector) whose gradient is not all zero. This matches torch.optim.
// SparseAdam on nn.Embedding(sparse=True), except for a looked-up row whose
// summed gradient is exactly zero, which torch updates and Kiln leaves
// alone. Per touched row, at the parameter's step t:
//
//	m = m + (1 − β₁)·(±g − m)
//	v = v + (1 − β₂)·(g² − v)
//	p = p − lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m/(√v + ε)
//
// The update is computed densely (a handful of element-wise passes over
// the table, masked by the touched rows), so it saves none of dense Adam's
// work: what it buys is torch's semantics, not speed. There is no weight
// decay, as in torch.
type SparseAdam struct {
	base
	cfg SparseAdamConfig
}

// NewSparseAdam returns a SparseAdam optimizer. It panics with an error
// wrapping ErrConfig when a value is out of range (negative LR, betas
// outside [0, 1)) or a group is malformed or sets WeightDecay.
func NewSparseAdam(cfg SparseAdamConfig) *SparseAdam {
	const op = "optim.NewSparseAdam"
	b1, b2 := betas(op, cfg.Betas, [2]float64{0.9, 0.999})
	for i, g := range cfg.Groups {
		if g.WeightDecay != nil {
			configError(op, "group %d (%q): WeightDecay is not a hyper-parameter of SparseAdam", i, g.Pattern)
		}
	}
	o := &SparseAdam{cfg: cfg}
	o.base = newBase("SparseAdam", hyper{lr: orDefault(cfg.LR, 1e-3), beta1: b1, beta2: b2, eps: orDefault(cfg.Eps, 1e-8)},
		cfg.Groups, cfg.GradClip, overrides{betas: true, eps: true}, []string{"exp_avg", "exp_avg_sq"})
	o.hasMomentum = true
	o.update = o.step
	return o
}

// Config returns the configuration o was made with.
func (o *SparseAdam) Config() SparseAdamConfig { return o.cfg }

// Momentum returns β₁ (SetMomentum's, or the configured one).
func (o *SparseAdam) Momentum() float64 { return o.currentMomentum(o.top.beta1) }

// SetMomentum sets β₁ for every group (OneCycleLR cycles it). It panics
// with ErrConfig outside [0, 1).
func (o *SparseAdam) SetMomentum(m float64) { o.setMomentum(m) }

// touchedRows returns a Bool mask, broadcastable to g, of the rows (slices
// along dimension 0) where g is not all zero.
func touchedRows(g *tensor.Tensor) *tensor.Tensor {
	if g.Dims() < 2 {
		return g.NeScalar(0)
	}
	dims := make([]int, g.Dims()-1)
	for i := range dims {
		dims[i] = i + 1
	}
	return g.AnyKeep(dims...)
}

func (o *SparseAdam) step(p, g *tensor.Tensor, h hyper, st *paramState) *tensor.Tensor {
	if o.cfg.Maximize {
		g = g.Neg()
	}
	touched := touchedRows(g)
	m, v := st.slots["exp_avg"], st.slots["exp_avg_sq"]
	if m == nil {
		m = tensor.ZerosLike(p)
	}
	if v == nil {
		v = tensor.ZerosLike(p)
	}
	m = tensor.Where(touched, m.Add(g.Sub(m).MulScalar(1-h.beta1)), m)
	v = tensor.Where(touched, v.Add(g.Square().Sub(v).MulScalar(1-h.beta2)), v)
	st.slots["exp_avg"], st.slots["exp_avg_sq"] = m, v
	t := float64(st.step)
	stepSize := h.lr * math.Sqrt(1-math.Pow(h.beta2, t)) / (1 - math.Pow(h.beta1, t))
	return tensor.Where(touched, p.Sub(m.Div(v.Sqrt().AddScalar(h.eps)).MulScalar(stepSize)), p)
}
