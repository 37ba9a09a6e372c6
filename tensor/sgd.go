package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// SGDConfig holds one SGD update's settings for SGDStep, with
// torch.optim.SGD's meanings; the zero value of each field but LR turns
// its feature off.
type SGDConfig struct {
	LR          float64 // learning rate
	Momentum    float64 // momentum factor; 0: no momentum buffer
	Dampening   float64 // dampening of the gradient's share of the buffer
	WeightDecay float64 // L2 penalty: WeightDecay·p is added to the gradient
	Nesterov    bool    // Nesterov momentum (step along d + Momentum·buf)
	Maximize    bool    // ascend instead of descend
	// InPlace writes the new parameter into p's own storage and returns
	// p, as an optimizer updates its parameters; where the update is fused
	// the momentum buffer is updated in st's tensor too (and that is
	// returned), else it is a new tensor.
	InPlace bool
}

// SGDState holds one parameter's momentum buffer for SGDStep; it is nil
// before the first step, and stays nil without momentum.
type SGDState struct {
	MomentumBuffer *Tensor
}

// SGDStep computes one SGD update of p for gradient g, as PyTorch's
// torch.optim.SGD does, and returns the new parameter value and the new
// state as new tensors; p, g and st's buffer are left unchanged, unless
// cfg.InPlace asks for the update in place. It records no graph.
//
// The update, with μ the momentum, τ the dampening and λ the weight decay:
//
//	d = ±g + λ·p
//	buf = d (first step), else μ·buf + (1 − τ)·d
//	d = d + μ·buf (Nesterov) or buf
//	p = p − lr·d
//
// Where the backend offers a fused kernel (backends.SGDFusion) and p, g and
// the buffer are contiguous Float32 or Float64 tensors of one dtype, the
// update is one pass over memory; elsewhere it is composed from
// element-wise ops. The two give identical bits. Without momentum the
// returned state is st.
//
// p and g must be floating-point tensors of one shape and device; SGDStep
// panics with a *Error otherwise.
func SGDStep(p, g *Tensor, st SGDState, cfg SGDConfig) (*Tensor, SGDState) {
	const op = "SGDStep"
	nnLive(op, nil, p, g)
	if !p.dtype.IsFloat() || !g.dtype.IsFloat() || !sameShape(p.shape, g.shape) {
		fail(op, ErrShape, "parameter %s %s and gradient %s %s must be floats of one shape",
			shapeString(p.shape), p.dtype, shapeString(g.shape), g.dtype)
	}
	h := backends.SGDHyper{LR: cfg.LR, Momentum: cfg.Momentum, Dampening: cfg.Dampening,
		WeightDecay: cfg.WeightDecay, Nesterov: cfg.Nesterov, Maximize: cfg.Maximize,
		First: st.MomentumBuffer == nil}
	if f, ok := sgdFusion(p, g, st, h); ok {
		return sgdFused(op, f, p, g, st, h, cfg.InPlace)
	}
	next, nst := sgdComposed(p, g, st, h)
	if cfg.InPlace && next != p {
		p.Assign(next)
		next.Release()
		next = p
	}
	return next, nst
}

// sgdFusion returns the backend's fused SGD when it applies: float32 or
// float64, and every operand contiguous, of p's dtype, shape and device.
func sgdFusion(p, g *Tensor, st SGDState, h backends.SGDHyper) (backends.SGDFusion, bool) {
	if composeOnly.Load() || (p.dtype != Float32 && p.dtype != Float64) {
		return nil, false
	}
	operands := []*Tensor{p, g}
	if h.Momentum != 0 {
		operands = append(operands, st.MomentumBuffer)
	}
	for _, t := range operands {
		if t != nil && (!t.IsContiguous() || t.dtype != p.dtype || !sameShape(t.shape, p.shape) || t.dev.st != p.dev.st) {
			return nil, false
		}
	}
	f, ok := p.backend().(backends.SGDFusion)
	return f, ok
}

func sgdFused(op string, f backends.SGDFusion, p, g *Tensor, st SGDState, h backends.SGDHyper, inPlace bool) (*Tensor, SGDState) {
	dev := p.dev.NoGrad()
	next := st
	var bv, obv backends.View
	if h.Momentum != 0 {
		if !h.First {
			bv = st.MomentumBuffer.view()
		}
		if !inPlace || h.First {
			next.MomentumBuffer = newTensor(op, dev, p.dtype, p.shape)
		}
		obv = next.MomentumBuffer.view()
	}
	out := p
	if !inPlace {
		out = newTensor(op, dev, p.dtype, p.shape)
	}
	f.SGDStep(out.view(), obv, p.view(), g.view(), bv, h)
	return out, next
}

// sgdComposed is the update from element-wise ops (optim.SGD's before the
// fused kernels); the fused kernels round every intermediate exactly as
// these ops do.
func sgdComposed(p, g *Tensor, st SGDState, h backends.SGDHyper) (*Tensor, SGDState) {
	d := g
	if h.Maximize {
		d = d.Neg()
	}
	if h.WeightDecay != 0 {
		d = d.Add(p.MulScalar(h.WeightDecay))
	}
	next := st
	if h.Momentum != 0 {
		buf := st.MomentumBuffer
		switch {
		case buf == nil && d == g:
			buf = d.MulScalar(1) // a copy: the state must not share g's storage
		case buf == nil:
			buf = d
		default:
			damped := d
			if h.Dampening != 0 {
				damped = d.MulScalar(1 - h.Dampening)
			}
			buf = buf.MulScalar(h.Momentum).Add(damped)
		}
		next.MomentumBuffer = buf
		if h.Nesterov {
			d = d.Add(buf.MulScalar(h.Momentum))
		} else {
			d = buf
		}
	}
	return p.Sub(d.MulScalar(h.LR)), next
}
