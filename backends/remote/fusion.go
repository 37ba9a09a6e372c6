package remote

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
)

// The optional fused interfaces a server's backend may offer, forwarded so
// that package tensor takes the same one-kernel paths remotely as locally
// (a training step then crosses the wire as a few calls, not dozens).

// Capability bits of the hello reply.
const (
	capCrossEntropy uint64 = 1 << iota
	capAdam
	capMultiAdam
	capLinear
	capSGD
	capLinearAct

	capAll = capCrossEntropy | capAdam | capMultiAdam | capLinear | capSGD
)

// Fused-call opcodes, after the primitives'.
const (
	opCrossEntropyForward byte = iota + 64
	opCrossEntropyBackward
	opAdamStep
	opAdamSteps
	opMatmulBias
	opSGDStep
	opMatmulBiasAct
)

// maxMultiAdam bounds the entries of one AdamSteps call a server decodes.
const maxMultiAdam = 1 << 16

// capabilities reports which fused interfaces b implements.
func capabilities(b backends.Backend) uint64 {
	var c uint64
	if _, ok := b.(backends.CrossEntropyFusion); ok {
		c |= capCrossEntropy
	}
	if _, ok := b.(backends.AdamFusion); ok {
		c |= capAdam
	}
	if _, ok := b.(backends.MultiAdamFusion); ok {
		c |= capMultiAdam
	}
	if _, ok := b.(backends.LinearFusion); ok {
		c |= capLinear
	}
	if _, ok := b.(backends.SGDFusion); ok {
		c |= capSGD
	}
	if _, ok := b.(backends.LinearActFusion); ok {
		c |= capLinearAct
	}
	return c
}

// Fused is a remote backend whose server offers the fused interfaces
// backends.CrossEntropyFusion, AdamFusion, MultiAdamFusion, LinearFusion
// and SGDFusion; it forwards them. Backend.Decorated returns one when the
// server's device has them all. It also implements
// backends.LinearActFusion: forwarded where the server's device offers it
// (the CPU backend does), else composed of MatmulBias and Unary, the same
// results in two calls.
type Fused struct{ *Backend }

// Decorated returns c as a backends.Backend that also implements every
// fused interface the server's device offers (a *Fused when it offers
// CrossEntropyFusion, AdamFusion, MultiAdamFusion, LinearFusion and
// SGDFusion), else c itself.
func (c *Backend) Decorated() backends.Backend {
	if c.caps&capAll == capAll {
		return &Fused{c}
	}
	return c
}

func (e *encoder) hyper(h backends.AdamHyper) {
	for _, v := range []float64{h.Decay, h.WeightDecay, h.Beta1, h.Beta2, h.InvDenom, h.EpsTerm} {
		e.f(v)
	}
	e.flag(h.Maximize)
	e.flag(h.First)
	e.flag(h.MovesParam)
}

func (d *decoder) hyper() backends.AdamHyper {
	h := backends.AdamHyper{Decay: d.f(), WeightDecay: d.f(), Beta1: d.f(), Beta2: d.f(), InvDenom: d.f(), EpsTerm: d.f()}
	h.Maximize, h.First, h.MovesParam = d.flag(), d.flag(), d.flag()
	return h
}

func (e *encoder) sgdHyper(h backends.SGDHyper) {
	for _, v := range []float64{h.LR, h.Momentum, h.Dampening, h.WeightDecay} {
		e.f(v)
	}
	e.flag(h.Nesterov)
	e.flag(h.Maximize)
	e.flag(h.First)
}

func (d *decoder) sgdHyper() backends.SGDHyper {
	h := backends.SGDHyper{LR: d.f(), Momentum: d.f(), Dampening: d.f(), WeightDecay: d.f()}
	h.Nesterov, h.Maximize, h.First = d.flag(), d.flag(), d.flag()
	return h
}

// CrossEntropyForward implements backends.CrossEntropyFusion.
func (f *Fused) CrossEntropyForward(logp, nll, weight, x, target backends.View, ignore int64) {
	f.send("CrossEntropyForward", elements(x), func(e *encoder) error {
		e.op(opCrossEntropyForward)
		if err := f.views(e, logp, nll, weight, x, target); err != nil {
			return err
		}
		e.i(ignore)
		return nil
	})
}

// CrossEntropyBackward implements backends.CrossEntropyFusion.
func (f *Fused) CrossEntropyBackward(dx, logp, weight, target, coef backends.View, ignore int64) {
	f.send("CrossEntropyBackward", elements(dx), func(e *encoder) error {
		e.op(opCrossEntropyBackward)
		if err := f.views(e, dx, logp, weight, target, coef); err != nil {
			return err
		}
		e.i(ignore)
		return nil
	})
}

// AdamStep implements backends.AdamFusion.
func (f *Fused) AdamStep(outP, outM, outV, p, g, m, v backends.View, h backends.AdamHyper) {
	f.send("AdamStep", 2*elements(p), func(e *encoder) error {
		e.op(opAdamStep)
		if err := f.views(e, outP, outM, outV, p, g, m, v); err != nil {
			return err
		}
		e.hyper(h)
		return nil
	})
}

// AdamSteps implements backends.MultiAdamFusion. Slices of different
// lengths are the sticky error, as for a local backend.
func (f *Fused) AdamSteps(ps, gs, ms, vs []backends.View, hs []backends.AdamHyper) {
	f.send("AdamSteps", adamWork(ps), func(e *encoder) error {
		n := len(ps)
		if len(gs) != n || len(ms) != n || len(vs) != n || len(hs) != n {
			return fmt.Errorf("slices of lengths %d, %d, %d, %d and %d", len(ps), len(gs), len(ms), len(vs), len(hs))
		}
		e.op(opAdamSteps)
		e.u(uint64(n))
		for i := range n {
			if err := f.views(e, ps[i], gs[i], ms[i], vs[i]); err != nil {
				return err
			}
			e.hyper(hs[i])
		}
		return nil
	})
}

// adamWork estimates an AdamSteps call: two units per parameter element
// (it streams four arrays through memory).
func adamWork(ps []backends.View) int64 {
	var n int64
	for _, p := range ps {
		n += 2 * elements(p)
	}
	return n
}

// SGDStep implements backends.SGDFusion.
func (f *Fused) SGDStep(outP, outBuf, p, g, buf backends.View, h backends.SGDHyper) {
	f.send("SGDStep", 2*elements(p), func(e *encoder) error {
		e.op(opSGDStep)
		if err := f.views(e, outP, outBuf, p, g, buf); err != nil {
			return err
		}
		e.sgdHyper(h)
		return nil
	})
}

// MatmulBias implements backends.LinearFusion.
func (f *Fused) MatmulBias(out, x, w, bias backends.View) {
	f.send("MatmulBias", matmulWork(out, x), func(e *encoder) error { e.op(opMatmulBias); return f.views(e, out, x, w, bias) })
}

// MatmulBiasAct implements backends.LinearActFusion: one call where the
// server's device offers it, else MatmulBias then Unary (the interface
// promises those bits), with an op it does not accept refused alike.
func (f *Fused) MatmulBiasAct(out, pre, x, w, bias backends.View, op backends.UnaryOp) {
	if !backends.IsLinearAct(op) {
		f.send("MatmulBiasAct", 0, func(*encoder) error {
			return fmt.Errorf("%s is not an activation a linear layer fuses", op)
		})
		return
	}
	if f.caps&capLinearAct == 0 {
		f.MatmulBias(pre, x, w, bias)
		f.Unary(op, out, pre, 0, 0)
		return
	}
	f.send("MatmulBiasAct", matmulWork(pre, x), func(e *encoder) error {
		e.op(opMatmulBiasAct)
		e.op(byte(op))
		return f.views(e, out, pre, x, w, bias)
	})
}

var (
	_ backends.LinearActFusion    = (*Fused)(nil)
	_ backends.CrossEntropyFusion = (*Fused)(nil)
	_ backends.AdamFusion         = (*Fused)(nil)
	_ backends.MultiAdamFusion    = (*Fused)(nil)
	_ backends.LinearFusion       = (*Fused)(nil)
	_ backends.SGDFusion          = (*Fused)(nil)
)

// fusedCall decodes and runs one fused call on the server; handled
// reports whether op was one.
func (ss *session) fusedCall(op byte, d *decoder, v func() backends.View, ok *bool) (handled bool) {
	b := ss.dev.backend
	run := func(need uint64, name string, f func()) {
		if d.err != nil || !*ok {
			return
		}
		if capabilities(b)&need == 0 {
			ss.fail(fmt.Errorf("%s: the device %s does not offer it", name, b.Info()))
			return
		}
		f()
	}
	switch op {
	case opCrossEntropyForward:
		logp, nll, weight, x, target, ignore := v(), v(), v(), v(), v(), d.i()
		run(capCrossEntropy, "CrossEntropyForward", func() {
			b.(backends.CrossEntropyFusion).CrossEntropyForward(logp, nll, weight, x, target, ignore)
		})
	case opCrossEntropyBackward:
		dx, logp, weight, target, coef, ignore := v(), v(), v(), v(), v(), d.i()
		run(capCrossEntropy, "CrossEntropyBackward", func() {
			b.(backends.CrossEntropyFusion).CrossEntropyBackward(dx, logp, weight, target, coef, ignore)
		})
	case opAdamStep:
		outP, outM, outV, p, g, m, vv, h := v(), v(), v(), v(), v(), v(), v(), d.hyper()
		run(capAdam, "AdamStep", func() { b.(backends.AdamFusion).AdamStep(outP, outM, outV, p, g, m, vv, h) })
	case opAdamSteps:
		n := d.count(maxMultiAdam)
		ps, gs, ms, vs := make([]backends.View, n), make([]backends.View, n), make([]backends.View, n), make([]backends.View, n)
		hs := make([]backends.AdamHyper, n)
		for i := 0; i < n && d.err == nil; i++ {
			ps[i], gs[i], ms[i], vs[i], hs[i] = v(), v(), v(), v(), d.hyper()
		}
		run(capMultiAdam, "AdamSteps", func() { b.(backends.MultiAdamFusion).AdamSteps(ps, gs, ms, vs, hs) })
	case opSGDStep:
		outP, outBuf, p, g, buf, h := v(), v(), v(), v(), v(), d.sgdHyper()
		run(capSGD, "SGDStep", func() { b.(backends.SGDFusion).SGDStep(outP, outBuf, p, g, buf, h) })
	case opMatmulBias:
		out, x, w, bias := v(), v(), v(), v()
		run(capLinear, "MatmulBias", func() { b.(backends.LinearFusion).MatmulBias(out, x, w, bias) })
	case opMatmulBiasAct:
		u := backends.UnaryOp(d.byte1())
		out, pre, x, w, bias := v(), v(), v(), v(), v()
		run(capLinearAct, "MatmulBiasAct", func() { b.(backends.LinearActFusion).MatmulBiasAct(out, pre, x, w, bias, u) })
	default:
		return false
	}
	return true
}
