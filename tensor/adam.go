package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// AdamConfig holds one Adam or AdamW update's settings for AdamStep. Step
// counts from 1 (the update being made), for the bias corrections.
type AdamConfig struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	Decoupled                          bool // AdamW: decay the parameter, not the gradient
	AMSGrad                            bool // use the maximum of past second moments
	Maximize                           bool // ascend instead of descend
	Step                               int
	// InPlace writes the new parameter into p's own storage and returns
	// p, as an optimizer updates its parameters; where the update is fused
	// the moments are updated in st's tensors too (and those are
	// returned), else they are new tensors.
	InPlace bool
}

// AdamState holds one parameter's moments for AdamStep; every tensor is
// nil before the first step (MaxExpAvgSq stays nil without AMSGrad).
type AdamState struct {
	ExpAvg, ExpAvgSq, MaxExpAvgSq *Tensor
}

// AdamStep computes one Adam (or, with Decoupled, AdamW) update of p for
// gradient g, as PyTorch's torch.optim.Adam/AdamW do, and returns the new
// parameter value and the new moments as new tensors; p, g and st's tensors
// are left unchanged, unless cfg.InPlace asks for the update in place. It
// records no graph. Where the backend offers a fused kernel
// (backends.AdamFusion) the update is one pass over memory; elsewhere, and
// for AMSGrad, it is composed from element-wise ops. The two give
// identical bits. For a Float32 parameter the update's scalars (β₁, β₂,
// λ, the decay 1 − lr·λ, the step's scale and ε term) are first rounded
// to float32 values, as PyTorch's float32 kernels hold them. When the step
// size is 0 (the end of a decaying schedule) the moments move and the
// returned parameter is p itself.
//
// p and g must be floating-point tensors of one shape, dtype and device;
// AdamStep panics with a *Error otherwise.
func AdamStep(p, g *Tensor, st AdamState, cfg AdamConfig) (*Tensor, AdamState) {
	const op = "AdamStep"
	nnLive(op, nil, p, g)
	if !p.dtype.IsFloat() || p.dtype != g.dtype || !sameShape(p.shape, g.shape) {
		fail(op, ErrShape, "parameter %s %s and gradient %s %s must be floats of one shape and dtype",
			shapeString(p.shape), p.dtype, shapeString(g.shape), g.dtype)
	}
	h := adamHyper(op, cfg, st, p.dtype)
	if f, ok := adamFusion(p, g, st, cfg); ok {
		return adamFused(op, f, p, g, st, h, cfg.InPlace)
	}
	next, nst := adamComposed(p, g, st, h, cfg.AMSGrad)
	if cfg.InPlace && next != p {
		p.Assign(next)
		next.Release()
		next = p
	}
	return next, nst
}

// adamHyper returns the scalars of one update (see backends.AdamHyper) of
// a parameter of dtype dt. For Float32 each is rounded to a float32 value,
// as PyTorch's float32 kernels hold their scalars: a float32 times such a
// scalar is then the float32 product rounded once, so a fused kernel can
// run the whole update in float32 (the CPU's is about five times faster
// than with float64 scalars) and still give the composed ops' bits.
func adamHyper(op string, cfg AdamConfig, st AdamState, dt DType) backends.AdamHyper {
	if cfg.Step < 1 {
		fail(op, ErrArgument, "Step %d: steps count from 1", cfg.Step)
	}
	negStep := -cfg.LR / (1 - math.Pow(cfg.Beta1, float64(cfg.Step)))
	bc2 := math.Sqrt(1 - math.Pow(cfg.Beta2, float64(cfg.Step)))
	h := backends.AdamHyper{Decay: 1, Beta1: cfg.Beta1, Beta2: cfg.Beta2, Maximize: cfg.Maximize,
		First: st.ExpAvg == nil, MovesParam: negStep != 0}
	if cfg.WeightDecay != 0 {
		if cfg.Decoupled {
			h.Decay = 1 - cfg.LR*cfg.WeightDecay
		} else {
			h.WeightDecay = cfg.WeightDecay
		}
	}
	if h.MovesParam {
		h.InvDenom, h.EpsTerm = 1/(bc2*negStep), cfg.Eps/negStep
	}
	if dt == Float32 {
		for _, x := range []*float64{&h.Decay, &h.WeightDecay, &h.Beta1, &h.Beta2, &h.InvDenom, &h.EpsTerm} {
			// only within float32's normal range: a scalar rounded to
			// infinity, zero or a subnormal would change the update by
			// more than a rounding
			if a := math.Abs(*x); a >= 0x1p-126 && a <= math.MaxFloat32 {
				*x = float64(float32(*x))
			}
		}
	}
	return h
}

// adamFusion returns the backend's fused Adam when it applies: no AMSGrad,
// float32 or float64, and every operand contiguous.
func adamFusion(p, g *Tensor, st AdamState, cfg AdamConfig) (backends.AdamFusion, bool) {
	if composeOnly.Load() || cfg.AMSGrad || (p.dtype != Float32 && p.dtype != Float64) {
		return nil, false
	}
	for _, t := range []*Tensor{p, g, st.ExpAvg, st.ExpAvgSq} {
		if t != nil && (!t.IsContiguous() || t.dtype != p.dtype || !sameShape(t.shape, p.shape) || t.dev.st != p.dev.st) {
			return nil, false
		}
	}
	f, ok := p.backend().(backends.AdamFusion)
	return f, ok
}

func adamFused(op string, f backends.AdamFusion, p, g *Tensor, st AdamState, h backends.AdamHyper, inPlace bool) (*Tensor, AdamState) {
	dev := p.dev.NoGrad()
	var m, v *Tensor
	var mv, vv, pv backends.View
	if !h.First {
		mv, vv = st.ExpAvg.view(), st.ExpAvgSq.view()
	}
	if inPlace && !h.First {
		m, v = st.ExpAvg, st.ExpAvgSq
	} else {
		m, v = newTensor(op, dev, p.dtype, p.shape), newTensor(op, dev, p.dtype, p.shape)
	}
	out := p
	if h.MovesParam {
		if !inPlace {
			out = newTensor(op, dev, p.dtype, p.shape)
		}
		pv = out.view()
	}
	f.AdamStep(pv, m.view(), v.view(), p.view(), g.view(), mv, vv, h)
	return out, AdamState{ExpAvg: m, ExpAvgSq: v}
}

// adamComposed is the update from element-wise ops; the fused kernels
// round every intermediate exactly as these ops do.
func adamComposed(p, g *Tensor, st AdamState, h backends.AdamHyper, amsgrad bool) (*Tensor, AdamState) {
	if h.Maximize {
		g = g.Neg()
	}
	if h.Decay != 1 {
		p = p.MulScalar(h.Decay)
	}
	if h.WeightDecay != 0 {
		g = g.Add(p.MulScalar(h.WeightDecay))
	}
	var next AdamState
	if h.First {
		next.ExpAvg = g.MulScalar(1 - h.Beta1)
		next.ExpAvgSq = g.Square().MulScalar(1 - h.Beta2)
	} else {
		next.ExpAvg = st.ExpAvg.MulScalar(h.Beta1).Add(g.MulScalar(1 - h.Beta1))
		next.ExpAvgSq = st.ExpAvgSq.MulScalar(h.Beta2).Add(g.Square().MulScalar(1 - h.Beta2))
	}
	v := next.ExpAvgSq
	if amsgrad {
		if st.MaxExpAvgSq != nil {
			v = st.MaxExpAvgSq.Maximum(v)
		} else {
			v = v.MulScalar(1)
		}
		next.MaxExpAvgSq = v
	}
	if !h.MovesParam {
		return p, next
	}
	// p − s·m/(√v/c + ε) with s = lr/(1 − β₁ᵗ), c = √(1 − β₂ᵗ), written as
	// PyTorch's capturable path does, p + m/(√v·(−1/(c·s)) + ε/(−s)), to
	// spend one pass less.
	denom := v.Sqrt().MulScalar(h.InvDenom).AddScalar(h.EpsTerm)
	return p.Add(next.ExpAvg.Div(denom)), next
}
