package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// AdamSteps is AdamStep for many parameters at once, each updated in place
// (cfgs[i].InPlace is implied) with its own gradient, state and
// configuration; it returns the new states. Where the backend offers a
// multi-tensor update (backends.MultiAdamFusion: the CPU's) and every
// parameter takes the fused update (Float32 or Float64, contiguous, no
// AMSGrad, all on one device), one kernel call updates all of them, the
// elements of every parameter cut into chunks of one size, so a small
// parameter costs no call of its own; otherwise each parameter goes through
// AdamStep. Either way the results are AdamStep's, bit for bit. It panics
// with ErrArgument when the slices' lengths differ, and as AdamStep does
// for a parameter that does not fit its gradient.
func AdamSteps(ps, gs []*Tensor, states []AdamState, cfgs []AdamConfig) []AdamState {
	const op = "AdamSteps"
	n := len(ps)
	if len(gs) != n || len(states) != n || len(cfgs) != n {
		fail(op, ErrArgument, "%d parameters, %d gradients, %d states and %d configurations: want one of each per parameter",
			n, len(gs), len(states), len(cfgs))
	}
	out := make([]AdamState, n)
	if n == 0 {
		return out
	}
	f, fused := ps[0].backend().(backends.MultiAdamFusion)
	for i, p := range ps {
		nnLive(op, nil, p, gs[i])
		if !p.dtype.IsFloat() || p.dtype != gs[i].dtype || !sameShape(p.shape, gs[i].shape) {
			fail(op, ErrShape, "parameter %d %s %s and gradient %s %s must be floats of one shape and dtype", i,
				shapeString(p.shape), p.dtype, shapeString(gs[i].shape), gs[i].dtype)
		}
		if _, ok := adamFusion(p, gs[i], states[i], cfgs[i]); !ok || p.dev.st != ps[0].dev.st {
			fused = false
		}
	}
	if !fused || composeOnly.Load() {
		for i, p := range ps {
			cfg := cfgs[i]
			cfg.InPlace = true
			_, out[i] = AdamStep(p, gs[i], states[i], cfg)
		}
		return out
	}
	pv, gv, mv, vv := make([]backends.View, n), make([]backends.View, n), make([]backends.View, n), make([]backends.View, n)
	hs := make([]backends.AdamHyper, n)
	for i, p := range ps {
		hs[i] = adamHyper(op, cfgs[i], states[i], p.dtype)
		st := states[i]
		if hs[i].First {
			dev := p.dev.NoGrad()
			st = AdamState{ExpAvg: newTensor(op, dev, p.dtype, p.shape), ExpAvgSq: newTensor(op, dev, p.dtype, p.shape)}
		}
		out[i] = AdamState{ExpAvg: st.ExpAvg, ExpAvgSq: st.ExpAvgSq}
		pv[i], gv[i], mv[i], vv[i] = p.view(), gs[i].view(), st.ExpAvg.view(), st.ExpAvgSq.view()
	}
	f.AdamSteps(pv, gv, mv, vv, hs)
	return out
}
