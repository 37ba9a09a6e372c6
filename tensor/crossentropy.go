package tensor

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
)

// CrossEntropyOptions configures CrossEntropyFromLogits. Its zero value is
// PyTorch's defaults: no class weights, ignore_index −100, no label
// smoothing, reduction "mean".
type CrossEntropyOptions struct {
	// Weight, when not nil, is a float tensor [C] of per-class weights.
	// No gradient flows to it.
	Weight *Tensor
	// IgnoreIndex, when not nil, is the class-index target value whose
	// positions contribute neither loss nor gradient; nil means PyTorch's
	// −100. (A pointer, because 0 is a valid class: to ignore class 0 write
	// `zero := 0; opts.IgnoreIndex = &zero`.) Probability targets accept
	// only negative values, as in PyTorch.
	IgnoreIndex *int
	// LabelSmoothing in [0, 1] mixes the target with the uniform
	// distribution over the C classes: (1 − s)·target + s/C.
	LabelSmoothing float64
	// Reduction is "mean" (the default when empty), "sum" or "none". With
	// class-index targets "mean" is PyTorch's weighted mean: the sum of the
	// losses divided by the sum of the target classes' weights over the
	// positions not ignored (NaN when every position is ignored).
	Reduction string
}

// defaultIgnoreIndex is PyTorch's ignore_index default.
const defaultIgnoreIndex = -100

// CrossEntropyFromLogits returns the cross-entropy between the classes
// scored by logits (unnormalised log-probabilities) and target, with
// PyTorch's semantics (torch.nn.functional.cross_entropy). logits is [C],
// [N, C] or [N, C, d1, …]: the classes are dimension 1 (0 for [C]). target
// is either
//   - Int64 class indices with logits' shape minus the class dimension
//     ([N, d1, …], or 0-d for [C] logits), each in [0, C) or equal to the
//     ignore index, or
//   - class probabilities with logits' shape and dtype.
//
// The result is 0-d for "mean" and "sum", and target-shaped (positions
// [N, d1, …]) for "none". It is one graph node, "cross_entropy", computed
// from a stable log-softmax; gradients flow to logits and, for probability
// targets, to target.
//
// It panics with ErrShape or ErrDType when the tensors do not fit (the
// message names their shapes and dtypes) and with ErrArgument for a bad
// option. A class index out of range is detected by the device: it is
// reported, like other device errors, at the next read or Sync.
func CrossEntropyFromLogits(logits, target *Tensor, opts CrossEntropyOptions) *Tensor {
	const op = "CrossEntropyFromLogits"
	logits.live(op)
	target.live(op)
	sameDevice(op, logits, target)
	weight := opts.Weight
	inputs := []*Tensor{logits, target}
	if weight != nil {
		sameDevice(op, logits, weight)
		inputs = append(inputs, weight)
	}
	if !logits.dtype.IsFloat() {
		fail(op, ErrDType, "logits %s are %s; they must be floating point", shapeString(logits.shape), logits.dtype)
	}
	rank := len(logits.shape)
	if rank == 0 {
		fail(op, ErrShape, "logits must be [C], [N C] or [N C d1 ...], got a 0-d tensor")
	}
	ca := 0 // the class axis
	if rank > 1 {
		ca = 1
	}
	c := logits.shape[ca]
	reduction := opts.Reduction
	switch reduction {
	case "":
		reduction = "mean"
	case "mean", "sum", "none":
	default:
		fail(op, ErrArgument, "reduction %q is not \"mean\", \"sum\" or \"none\"", opts.Reduction)
	}
	eps := opts.LabelSmoothing
	if !(eps >= 0 && eps <= 1) {
		fail(op, ErrArgument, "label smoothing %v is outside [0, 1]", eps)
	}
	ignore := defaultIgnoreIndex
	if opts.IgnoreIndex != nil {
		ignore = *opts.IgnoreIndex
	}
	if weight != nil {
		if !weight.dtype.IsFloat() {
			fail(op, ErrDType, "class weights %s are %s; they must be floating point", shapeString(weight.shape), weight.dtype)
		}
		if !sameShape(weight.shape, []int{c}) {
			fail(op, ErrShape, "class weights %s do not match the %d classes of logits %s", shapeString(weight.shape), c, shapeString(logits.shape))
		}
	}
	positions := keptShape(logits.shape, []int{ca}, false)
	probs := target.dtype.IsFloat()
	switch {
	case probs:
		if !sameShape(target.shape, logits.shape) {
			fail(op, ErrShape, "probability target %s does not match logits %s (class-index targets must be int64 %s)",
				shapeString(target.shape), shapeString(logits.shape), shapeString(positions))
		}
		if target.dtype != logits.dtype {
			fail(op, ErrDType, "probability target is %s but logits are %s; convert one with To", target.dtype, logits.dtype)
		}
		if ignore >= 0 {
			fail(op, ErrArgument, "ignore index %d is not supported for probability targets", ignore)
		}
	case target.dtype != Int64:
		fail(op, ErrDType, "target %s is %s; it must be int64 class indices %s or %s probabilities %s",
			shapeString(target.shape), target.dtype, shapeString(positions), logits.dtype, shapeString(logits.shape))
	case !sameShape(target.shape, positions):
		fail(op, ErrShape, "class-index target %s does not match logits %s: want %s (logits without the class dimension %d)",
			shapeString(target.shape), shapeString(logits.shape), shapeString(positions), ca)
	}

	ce := &ceState{op: op, logits: logits, target: target, ca: ca, c: c, eps: eps,
		ignore: ignore, reduction: reduction, ct: actComputeType(logits.dtype)}
	fusion, fused := ceFusion(ce, weight, probs)
	var loss *Tensor
	if fused {
		loss = ce.forwardFused(fusion)
	} else {
		x := rawCast(op, logits, ce.ct)
		ce.logp = actSoftmax(op, x, ca, true)
		x.Release()
		if weight != nil {
			ce.wc = rawCast(op, weight, ce.ct)
		}
		if probs {
			loss = ce.forwardProbs()
		} else {
			loss = ce.forwardIndices()
		}
	}
	out := rawCast(op, loss, logits.dtype)
	loss.Release()
	attrs := map[string]any{"reduction": reduction, "ignore_index": ignore, "label_smoothing": eps, "probabilities": probs}
	return actRecord("cross_entropy", attrs, out, inputs, ce.saved(), func(g *Tensor) []*Tensor {
		gc := rawCast(op, g, ce.ct)
		defer gc.Release()
		grads := make([]*Tensor, len(inputs))
		switch {
		case fused:
			grads[0] = ce.backwardFused(fusion, gc)
		case probs:
			grads[0], grads[1] = ce.backwardProbs(gc)
		default:
			grads[0] = ce.backwardIndices(gc)
		}
		return grads
	})
}

// ceFusion returns the backend's fused cross-entropy when it applies:
// class-index targets for logits [N, C] of at most
// backends.CrossEntropyMaxClasses classes, without class weights or label
// smoothing.
func ceFusion(ce *ceState, weight *Tensor, probs bool) (backends.CrossEntropyFusion, bool) {
	l := ce.logits
	if composeOnly.Load() || probs || weight != nil || ce.eps != 0 || len(l.shape) != 2 ||
		ce.c > backends.CrossEntropyMaxClasses || (ce.ct != Float32 && ce.ct != Float64) {
		return nil, false
	}
	f, ok := l.backend().(backends.CrossEntropyFusion)
	return f, ok
}

// forwardFused computes the loss for class-index targets with the
// backend's fused kernel: it gives the log-softmax and the per-row losses
// and weights (0 for ignored rows), which reduce as in the composition.
func (ce *ceState) forwardFused(f backends.CrossEntropyFusion) *Tensor {
	op := ce.op
	xc := rawCast(op, ce.logits, ce.ct)
	x := rawContiguous(op, xc)
	xc.Release()
	tk := rawContiguous(op, ce.target)
	k := ce.kept()
	ce.positions = float64(backends.NumElements(k))
	ce.logp = newTensor(op, x.dev, ce.ct, x.shape)
	nll := newTensor(op, x.dev, ce.ct, k)
	ce.weff = newTensor(op, x.dev, ce.ct, k)
	f.CrossEntropyForward(ce.logp.view(), nll.view(), ce.weff.view(), x.view(), tk.view(), int64(ce.ignore))
	x.Release()
	ce.idx = tk // the targets, for the backward kernel
	if ce.reduction == "mean" {
		ce.den = rawReduce(op, backends.Sum, ce.weff, ceAllAxes(ce.weff), false)
	}
	return ce.reduce(nll, ce.den)
}

// backwardFused returns the gradient with respect to logits from the
// backend's fused kernel, given g's share of each row (coefficient).
func (ce *ceState) backwardFused(f backends.CrossEntropyFusion, g *Tensor) *Tensor {
	coef := ce.coefficient(g, ce.den, 1)
	defer coef.Release()
	cc := rawContiguous(ce.op, coef)
	defer cc.Release()
	d := newTensor(ce.op, ce.logp.dev, ce.ct, ce.logp.shape)
	f.CrossEntropyBackward(d.view(), ce.logp.view(), ce.weff.view(), ce.idx.view(), cc.view(), int64(ce.ignore))
	return castGrad(d, ce.logits)
}

// ceState holds one cross-entropy call's inputs and what its backward pass
// needs from the forward pass.
type ceState struct {
	op                   string
	logits, target       *Tensor
	ca, c                int // class axis and number of classes
	eps                  float64
	ignore               int
	reduction            string
	ct                   DType   // compute dtype
	logp                 *Tensor // log-softmax of logits, [N C d…]
	wc                   *Tensor // weight in ct, or nil
	idx, keep, weff, den *Tensor // class indices only: see forwardIndices
	positions            float64 // number of positions, N·d1·…
}

func (ce *ceState) saved() []*Tensor {
	return []*Tensor{ce.logp, ce.wc, ce.idx, ce.keep, ce.weff, ce.den}
}

// kept returns the positions' shape with the class axis kept as 1.
func (ce *ceState) kept() []int {
	return keptShape(ce.logits.shape, []int{ce.ca}, true)
}

// weightView returns wc as a view broadcastable against logits: [1 C 1 …].
func (ce *ceState) weightView() *Tensor {
	shape := make([]int, len(ce.logits.shape))
	strides := make([]int, len(shape))
	for i := range shape {
		shape[i] = 1
	}
	shape[ce.ca], strides[ce.ca] = ce.c, ce.wc.strides[0]
	return ce.wc.newView(shape, strides, ce.wc.offset)
}

// reduce applies the reduction to per-position losses l [N 1 d…] (consumed),
// dividing a mean by den (a 0-d tensor) or, when den is nil, by the number
// of positions.
func (ce *ceState) reduce(l *Tensor, den *Tensor) *Tensor {
	switch ce.reduction {
	case "none":
		p := keptShape(ce.logits.shape, []int{ce.ca}, false)
		v := rawReshape(ce.op, l, p)
		l.Release()
		return v
	}
	s := rawReduce(ce.op, backends.Sum, l, ceAllAxes(l), false)
	l.Release()
	if ce.reduction == "sum" {
		return s
	}
	var m *Tensor
	if den != nil {
		m = rawBinary(ce.op, divOp, s, den)
	} else {
		m = rawScalar(ce.op, divOp, s, ce.positions, false)
	}
	s.Release()
	return m
}

// forwardIndices computes the loss for class-index targets. With
// nll = −w[t]·logp[t] and smooth = −Σ_c w_c·logp[c] at each position not
// ignored (0 at ignored ones), the per-position loss is
// (1 − ε)·nll + ε/C·smooth; "mean" divides the sum by Σ w[t] over the
// positions kept (their number without class weights).
func (ce *ceState) forwardIndices() *Tensor {
	op := ce.op
	k := ce.kept()
	ce.positions = float64(backends.NumElements(k))
	tk := rawReshape(op, ce.target, k)
	defer tk.Release()
	ce.keep = rawScalar(op, backends.Ne, tk, float64(ce.ignore), false)
	// Negative targets would wrap around in Gather: send them past the end
	// so that the device reports them as out of range.
	neg := rawScalar(op, backends.Lt, tk, 0, false)
	past := rawFull(op, tk.dev, Int64, []int{}, float64(ce.c))
	i1 := actWhere(op, neg, past, tk)
	neg.Release()
	past.Release()
	zeroI := rawFull(op, tk.dev, Int64, []int{}, 0)
	ce.idx = actWhere(op, ce.keep, i1, zeroI)
	i1.Release()
	zeroI.Release()

	zero := rawFull(op, tk.dev, ce.ct, []int{}, 0)
	defer zero.Release()
	picked := actGather(op, ce.logp, ce.idx, ce.ca)
	if ce.wc != nil {
		wb := ce.weightView()
		full := wb.newView(ce.logits.Shape(), wb.broadcastView(ce.logits.shape).Strides, wb.offset)
		wb.Release()
		wt := actGather(op, full, ce.idx, ce.ca)
		full.Release()
		ce.weff = actWhere(op, ce.keep, wt, zero)
		p := rawBinary(op, mulOp, picked, wt)
		wt.Release()
		picked.Release()
		picked = p
	} else {
		ce.weff = rawCast(op, ce.keep, ce.ct)
	}
	negPicked := rawUnary(op, backends.Neg, picked, 0, 0)
	picked.Release()
	nll := actWhere(op, ce.keep, negPicked, zero)
	negPicked.Release()
	if ce.reduction == "mean" {
		ce.den = rawReduce(op, backends.Sum, ce.weff, ceAllAxes(ce.weff), false)
	}
	if ce.eps == 0 {
		return ce.reduce(nll, ce.den)
	}
	lp := ce.logp.newView(ce.logp.shape, ce.logp.strides, ce.logp.offset)
	if ce.wc != nil {
		wb := ce.weightView()
		lp.Release()
		lp = rawBinary(op, mulOp, ce.logp, wb)
		wb.Release()
	}
	ls := rawReduce(op, backends.Sum, lp, []int{ce.ca}, true)
	lp.Release()
	nls := rawUnary(op, backends.Neg, ls, 0, 0)
	ls.Release()
	smooth := actWhere(op, ce.keep, nls, zero)
	nls.Release()
	a := rawScalar(op, mulOp, nll, 1-ce.eps, false)
	nll.Release()
	b := rawScalar(op, mulOp, smooth, ce.eps/float64(ce.c), false)
	smooth.Release()
	l := rawBinary(op, addOp, a, b)
	a.Release()
	b.Release()
	return ce.reduce(l, ce.den)
}

// coefficient returns g's share for each position [N 1 d…] (or a 0-d
// tensor for "sum" and "mean"), divided by den (nil: the number of
// positions) for "mean", and scaled by s.
func (ce *ceState) coefficient(g, den *Tensor, s float64) *Tensor {
	var r *Tensor
	switch ce.reduction {
	case "none":
		r = rawReshape(ce.op, g, ce.kept())
	case "sum":
		r = g.newView(g.shape, g.strides, g.offset)
	default:
		if den != nil {
			r = rawBinary(ce.op, divOp, g, den)
		} else {
			r = rawScalar(ce.op, divOp, g, ce.positions, false)
		}
	}
	sr := rawScalar(ce.op, mulOp, r, s, false)
	r.Release()
	return sr
}

// backwardIndices returns the gradient with respect to logits for
// class-index targets. With A = α·w[t] (0 where ignored) and B = β (0 where
// ignored), α and β the upstream gradient's shares of the nll and smoothing
// terms, dlogp = −A·onehot(t) − B·w, and dlogits = dlogp − p·Σ_c dlogp =
// p·(A + B·Σw) − B·w − A·onehot(t).
func (ce *ceState) backwardIndices(g *Tensor) *Tensor {
	op := ce.op
	alpha := ce.coefficient(g, ce.den, 1-ce.eps)
	a := rawBinary(op, mulOp, alpha, ce.weff) // [N 1 d…]
	alpha.Release()
	coef := a.newView(a.shape, a.strides, a.offset)
	var b *Tensor
	if ce.eps > 0 {
		beta := ce.coefficient(g, ce.den, ce.eps/float64(ce.c))
		keepF := rawCast(op, ce.keep, ce.ct)
		b = rawBinary(op, mulOp, beta, keepF)
		beta.Release()
		keepF.Release()
		var bs *Tensor
		if ce.wc != nil {
			sw := rawReduce(op, backends.Sum, ce.wc, []int{0}, false)
			bs = rawBinary(op, mulOp, b, sw)
			sw.Release()
		} else {
			bs = rawScalar(op, mulOp, b, float64(ce.c), false)
		}
		c2 := rawBinary(op, addOp, coef, bs)
		coef.Release()
		bs.Release()
		coef = c2
	}
	p := rawUnary(op, backends.Exp, ce.logp, 0, 0)
	d := rawBinary(op, mulOp, p, coef)
	p.Release()
	coef.Release()
	if b != nil {
		bw := b
		if ce.wc != nil {
			wv := ce.weightView()
			bw = rawBinary(op, mulOp, b, wv)
			wv.Release()
			b.Release()
		}
		d2 := rawBinary(op, subOp, d, bw)
		d.Release()
		bw.Release()
		d = d2
	}
	na := rawUnary(op, backends.Neg, a, 0, 0)
	a.Release()
	d.backend().Scatter(d.view(), ce.idx.view(), na.view(), ce.ca, true)
	na.Release()
	return castGrad(d, ce.logits)
}

// forwardProbs computes the loss for probability targets: with
// t' = (1 − ε)·target + ε/C, each position's loss is −Σ_c w_c·t'_c·logp_c,
// and "mean" divides by the number of positions.
func (ce *ceState) forwardProbs() *Tensor {
	op := ce.op
	ce.positions = float64(backends.NumElements(ce.kept()))
	tw := ce.smoothedWeightedTarget()
	prod := rawBinary(op, mulOp, ce.logp, tw)
	tw.Release()
	s := rawReduce(op, backends.Sum, prod, []int{ce.ca}, true)
	prod.Release()
	l := rawUnary(op, backends.Neg, s, 0, 0)
	s.Release()
	return ce.reduce(l, nil)
}

// smoothedWeightedTarget returns w·((1 − ε)·target + ε/C) in ct.
func (ce *ceState) smoothedWeightedTarget() *Tensor {
	op := ce.op
	t := rawCast(op, ce.target, ce.ct)
	if ce.eps > 0 {
		a := rawScalar(op, mulOp, t, 1-ce.eps, false)
		t.Release()
		t = rawScalar(op, addOp, a, ce.eps/float64(ce.c), false)
		a.Release()
	}
	if ce.wc != nil {
		wv := ce.weightView()
		tw := rawBinary(op, mulOp, t, wv)
		wv.Release()
		t.Release()
		t = tw
	}
	return t
}

// backwardProbs returns the gradients with respect to logits and target for
// probability targets: with γ the upstream gradient's share of each
// position and t'_w = w·t', dlogits = γ·(p·Σ_c t'_w − t'_w) and
// dtarget = −γ·(1 − ε)·w·logp.
func (ce *ceState) backwardProbs(g *Tensor) (dLogits, dTarget *Tensor) {
	op := ce.op
	gamma := ce.coefficient(g, nil, 1)
	defer gamma.Release()
	if ce.logits.requiresGrad {
		tw := ce.smoothedWeightedTarget()
		s := rawReduce(op, backends.Sum, tw, []int{ce.ca}, true)
		p := rawUnary(op, backends.Exp, ce.logp, 0, 0)
		ps := rawBinary(op, mulOp, p, s)
		p.Release()
		s.Release()
		d := rawBinary(op, subOp, ps, tw)
		ps.Release()
		tw.Release()
		dl := rawBinary(op, mulOp, d, gamma)
		d.Release()
		dLogits = castGrad(dl, ce.logits)
	}
	if ce.target.requiresGrad {
		lp := ce.logp.newView(ce.logp.shape, ce.logp.strides, ce.logp.offset)
		if ce.wc != nil {
			wv := ce.weightView()
			lp.Release()
			lp = rawBinary(op, mulOp, ce.logp, wv)
			wv.Release()
		}
		gs := rawScalar(op, mulOp, gamma, -(1 - ce.eps), false)
		dt := rawBinary(op, mulOp, lp, gs)
		lp.Release()
		gs.Release()
		dTarget = castGrad(dt, ce.target)
	}
	return dLogits, dTarget
}

// ceAllAxes lists every axis of t.
func ceAllAxes(t *Tensor) []int {
	axes := make([]int, len(t.shape))
	for i := range axes {
		axes[i] = i
	}
	return axes
}

// actWhere returns cond ? a : b element-wise with broadcasting; a and b
// share a dtype. No graph.
func actWhere(op string, cond, a, b *Tensor) *Tensor {
	if a.dtype != b.dtype {
		panic(fmt.Sprintf("tensor: actWhere of %s and %s", a.dtype, b.dtype))
	}
	shape := broadcastShapes(op, broadcastShapes(op, cond.shape, a.shape), b.shape)
	out := newTensor(op, a.dev, a.dtype, shape)
	out.backend().Where(out.view(), cond.broadcastView(shape), a.broadcastView(shape), b.broadcastView(shape))
	return out
}

// actGather returns x gathered along axis at the Int64 indices idx (whose
// shape is x's with axis of any size). Indices out of range are a device
// error reported at the next sync. No graph.
func actGather(op string, x, idx *Tensor, axis int) *Tensor {
	out := newTensor(op, x.dev, x.dtype, idx.shape)
	out.backend().Gather(out.view(), x.view(), idx.view(), axis)
	return out
}
