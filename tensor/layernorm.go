package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// LayerNorm normalises t over its trailing dimensions normalizedShape (which
// must equal t's last len(normalizedShape) dimensions), as PyTorch's
// layer_norm: y = (x − mean)/√(var + eps)·weight + bias, with the biased
// variance (divided by the number of normalised elements). weight and bias
// have shape normalizedShape and may each be nil (no scale, no shift).
//
// It is one graph node, "layer_norm", with gradients for t, weight and bias;
// it keeps only the per-row mean and 1/√(var + eps) for the backward pass.
// Where the backend has fused normalisation (backends.NormFusion: the
// CPU's) and t and the parameters are Float32 or Float64, each row is read
// once for its statistics and once for its output, and the backward pass
// is one kernel (the parameters' gradients summed per fixed chunk of rows,
// then across chunks in order); it agrees with the composition within
// rounding. The result has t's dtype; Float16 and BFloat16 are computed
// in Float32.
// It panics with ErrShape when the shapes do not fit (the message names
// them), ErrDType for non-float tensors and ErrArgument for an empty
// normalizedShape or a negative eps.
func (t *Tensor) LayerNorm(normalizedShape []int, weight, bias *Tensor, eps float64) *Tensor {
	const op = "LayerNorm"
	t.live(op)
	inputs := []*Tensor{t}
	for _, p := range []*Tensor{weight, bias} {
		if p != nil {
			sameDevice(op, t, p)
			inputs = append(inputs, p)
		}
	}
	k := checkNormalizedShape(op, t, normalizedShape)
	for _, p := range []struct {
		name string
		t    *Tensor
	}{{"input", t}, {"weight", weight}, {"bias", bias}} {
		if p.t == nil {
			continue
		}
		if !p.t.dtype.IsFloat() {
			fail(op, ErrDType, "%s %s is %s; layer norm needs floating-point tensors", p.name, shapeString(p.t.shape), p.t.dtype)
		}
		if p.t != t && !sameShape(p.t.shape, normalizedShape) {
			fail(op, ErrShape, "%s %s does not match normalizedShape %s", p.name, shapeString(p.t.shape), shapeString(normalizedShape))
		}
	}
	if eps < 0 {
		fail(op, ErrArgument, "eps %v is negative", eps)
	}
	rank := len(t.shape)
	axes := make([]int, k)
	n := 1
	for i := range axes {
		axes[i] = rank - k + i
		n *= t.shape[rank-k+i]
	}
	if f, ok := normFusion(t, weight, bias); ok {
		attrs := map[string]any{"normalized_shape": append([]int(nil), normalizedShape...), "eps": eps}
		return lnFused(op, f, t, weight, bias, inputs, n, eps, attrs)
	}
	ct := actComputeType(t.dtype)
	x := rawCast(op, t, ct)
	defer x.Release()

	// mean and rstd have t's shape with the normalised dimensions set to 1.
	s := rawReduce(op, backends.Sum, x, axes, true)
	mean := rawScalar(op, divOp, s, float64(n), false)
	s.Release()
	xc := rawBinary(op, subOp, x, mean)
	sq := rawUnary(op, backends.Square, xc, 0, 0)
	vs := rawReduce(op, backends.Sum, sq, axes, true)
	sq.Release()
	v := rawScalar(op, divOp, vs, float64(n), false)
	vs.Release()
	ve := rawScalar(op, addOp, v, eps, false)
	v.Release()
	rstd := rawUnary(op, backends.Rsqrt, ve, 0, 0)
	ve.Release()
	y := rawBinary(op, mulOp, xc, rstd)
	xc.Release()
	y = lnAffine(op, y, weight, bias, ct)
	out := rawCast(op, y, t.dtype)
	y.Release()

	attrs := map[string]any{"normalized_shape": append([]int(nil), normalizedShape...), "eps": eps}
	return actRecord("layer_norm", attrs, out, inputs, []*Tensor{mean, rstd}, func(g *Tensor) []*Tensor {
		gc := rawCast(op, g, ct)
		defer gc.Release()
		xr := rawCast(op, t, ct)
		xm := rawBinary(op, subOp, xr, mean)
		xr.Release()
		xhat := rawBinary(op, mulOp, xm, rstd)
		xm.Release()
		defer xhat.Release()
		grads := make([]*Tensor, len(inputs))
		if t.requiresGrad {
			grads[0] = castGrad(lnInputGrad(op, gc, xhat, rstd, weight, axes, n), t)
		}
		i := 1
		if weight != nil {
			if weight.requiresGrad {
				grads[i] = gradFor(rawBinary(op, mulOp, gc, xhat), weight)
			}
			i++
		}
		if bias != nil && bias.requiresGrad {
			grads[i] = gradFor(gc.newView(gc.shape, gc.strides, gc.offset), bias)
		}
		return grads
	})
}

// lnAffine returns y·weight + bias (either may be nil), consuming y.
func lnAffine(op string, y, weight, bias *Tensor, ct DType) *Tensor {
	for i, p := range []*Tensor{weight, bias} {
		if p == nil {
			continue
		}
		pc := rawCast(op, p, ct)
		b := mulOp
		if i == 1 {
			b = addOp
		}
		r := rawBinary(op, b, y, pc)
		pc.Release()
		y.Release()
		y = r
	}
	return y
}

// lnInputGrad returns rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) with ĝ = g·weight,
// the means taken over the normalised axes (n elements).
func lnInputGrad(op string, g, xhat, rstd, weight *Tensor, axes []int, n int) *Tensor {
	gh := g.newView(g.shape, g.strides, g.offset)
	if weight != nil {
		wc := rawCast(op, weight, g.dtype)
		gh.Release()
		gh = rawBinary(op, mulOp, g, wc)
		wc.Release()
	}
	defer gh.Release()
	mean := func(x *Tensor) *Tensor {
		s := rawReduce(op, backends.Sum, x, axes, true)
		m := rawScalar(op, divOp, s, float64(n), false)
		s.Release()
		return m
	}
	a := mean(gh)
	ghx := rawBinary(op, mulOp, gh, xhat)
	b := mean(ghx)
	ghx.Release()
	xb := rawBinary(op, mulOp, xhat, b)
	b.Release()
	d := rawBinary(op, subOp, gh, a)
	a.Release()
	d2 := rawBinary(op, subOp, d, xb)
	d.Release()
	xb.Release()
	dx := rawBinary(op, mulOp, d2, rstd)
	d2.Release()
	return dx
}

// checkNormalizedShape panics unless normalizedShape names trailing
// dimensions of t (at least one), as layer and RMS norm need; it returns
// how many.
func checkNormalizedShape(op string, t *Tensor, normalizedShape []int) int {
	k := len(normalizedShape)
	if k == 0 {
		fail(op, ErrArgument, "normalizedShape is empty; it must name at least one trailing dimension of %s", shapeString(t.shape))
	}
	if k > len(t.shape) || !sameShape(t.shape[len(t.shape)-k:], normalizedShape) {
		fail(op, ErrShape, "input %s does not end with normalizedShape %s", shapeString(t.shape), shapeString(normalizedShape))
	}
	return k
}
