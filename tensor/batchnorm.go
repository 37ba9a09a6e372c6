package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// BatchNorm normalises each channel of t [N, C, …] over the batch and the
// positions (every dimension but 1) with that channel's mean and biased
// variance, then scales by weight and shifts by bias (both [C], either may
// be nil), as PyTorch's batch_norm in training mode:
// y = (x − mean)/√(var + eps)·weight + bias. It also returns the batch's
// mean and biased variance ([C], t's dtype, outside the graph), from which
// a layer updates its running statistics.
//
// It has gradients for t, weight and bias. Where the backend has fused
// batch normalisation (backends.BatchNormFusion: the CPU's) and t and the
// parameters are Float32 or Float64 of one dtype, it is one graph node,
// "batch_norm": the forward pass reads t twice and the backward pass reads
// t and the output gradient twice, keeping only the per-channel mean and
// 1/√(var + eps); the statistics are summed in float64, so it agrees with
// the composition within rounding (about 1e-7 relative in float32).
// Elsewhere, and when traced for export, it is composed from reductions
// and element-wise ops, whose gradients autodiff derives. The output has t's
// dtype. It panics with ErrShape unless t has at least 2 dimensions and
// weight and bias are [C], with ErrDType for non-float tensors, and with
// ErrArgument for a negative eps. (A channel of one value has variance 0:
// refusing it in training, as PyTorch does, is the layer's business.)
func (t *Tensor) BatchNorm(weight, bias *Tensor, eps float64) (y, mean, variance *Tensor) {
	const op = "BatchNorm"
	t.live(op)
	inputs := []*Tensor{t}
	for _, p := range []*Tensor{weight, bias} {
		if p != nil {
			sameDevice(op, t, p)
			inputs = append(inputs, p)
		}
	}
	if len(t.shape) < 2 {
		fail(op, ErrShape, "input %s has fewer than 2 dimensions; batch norm needs [N, C, …]", shapeString(t.shape))
	}
	c := t.shape[1]
	for _, p := range []struct {
		name string
		t    *Tensor
	}{{"input", t}, {"weight", weight}, {"bias", bias}} {
		if p.t == nil {
			continue
		}
		if !p.t.dtype.IsFloat() {
			fail(op, ErrDType, "%s %s is %s; batch norm needs floating-point tensors", p.name, shapeString(p.t.shape), p.t.dtype)
		}
		if p.name != "input" && !sameShape(p.t.shape, []int{c}) {
			fail(op, ErrShape, "%s %s does not match the %d channels of input %s", p.name, shapeString(p.t.shape), c, shapeString(t.shape))
		}
	}
	if eps < 0 {
		fail(op, ErrArgument, "eps %v is negative", eps)
	}
	attrs := map[string]any{"eps": eps}
	// a traced call (ONNX export) is composed, so that the exported graph
	// holds the primitive ops, which have ONNX forms
	traced := t.traced || (weight != nil && weight.traced) || (bias != nil && bias.traced)
	if f, ok := batchNormFusion(t, weight, bias); ok && !traced {
		return bnFused(op, f, t, weight, bias, inputs, eps, attrs)
	}
	return bnComposed(t, weight, bias, eps)
}

// batchNormFusion returns the backend's fused batch normalisation when it
// applies: Float32 or Float64 throughout, and at least one element.
func batchNormFusion(x *Tensor, params ...*Tensor) (backends.BatchNormFusion, bool) {
	if !normFusable(x, params) {
		return nil, false
	}
	f, ok := x.backend().(backends.BatchNormFusion)
	return f, ok
}

// ncs returns a contiguous [N, C, S] view of t's elements (t contiguous,
// [N, C, …]), or an absent view for nil.
func ncs(t *Tensor, shape []int) backends.View {
	if t == nil {
		return backends.View{}
	}
	v := t.view()
	n, c := shape[0], shape[1]
	s := backends.NumElements(shape[2:])
	v.Shape, v.Strides = []int{n, c, s}, []int{c * s, s, 1}
	return v
}

// bnFused is BatchNorm through the backend's fused kernels.
func bnFused(op string, f backends.BatchNormFusion, t, weight, bias *Tensor, inputs []*Tensor, eps float64, attrs map[string]any) (y, mean, variance *Tensor) {
	dev := t.dev.Inner()
	c := []int{t.shape[1]}
	x := rawContiguous(op, t)
	var w, b *Tensor
	if weight != nil {
		w = rawContiguous(op, weight)
	}
	if bias != nil {
		b = rawContiguous(op, bias)
	}
	out := newTensor(op, dev, t.dtype, t.shape)
	m := newTensor(op, dev, t.dtype, c)
	rstd := newTensor(op, dev, t.dtype, c)
	variance = newTensor(op, dev, t.dtype, c)
	f.BatchNormForward(ncs(out, t.shape), m.view(), variance.view(), rstd.view(), ncs(x, t.shape), flat(w), flat(b), eps)
	// the caller owns the returned mean; the backward pass keeps its own
	mean = newTensor(op, dev, t.dtype, c)
	mean.backend().Copy(mean.view(), m.view())
	if b != nil {
		b.Release() // the backward pass does not need the bias
	}
	y = actRecord("batch_norm", attrs, out, inputs, []*Tensor{x, w, m, rstd}, func(g *Tensor) []*Tensor {
		gc := rawContiguous(op, g)
		defer gc.Release()
		var dx, dw, db *Tensor
		if t.requiresGrad {
			dx = newTensor(op, dev, t.dtype, t.shape)
		}
		if weight != nil && weight.requiresGrad {
			dw = newTensor(op, dev, weight.dtype, weight.shape)
		}
		if bias != nil && bias.requiresGrad {
			db = newTensor(op, dev, bias.dtype, bias.shape)
		}
		f.BatchNormBackward(ncs(dx, t.shape), flat(dw), flat(db), ncs(gc, t.shape), ncs(x, t.shape), m.view(), rstd.view(), flat(w))
		grads := []*Tensor{dx}
		if weight != nil {
			grads = append(grads, dw)
		}
		if bias != nil {
			grads = append(grads, db)
		}
		return grads
	})
	return y, mean, variance
}

// bnComposed is BatchNorm from differentiable tensor ops: the centred
// input serves both the biased variance (the mean of its squares: the
// two-pass formula) and the output, and the weight folds into the
// per-channel scale, so that the full-size tensor is multiplied once.
func bnComposed(t, weight, bias *Tensor, eps float64) (y, mean, variance *Tensor) {
	rank, c := len(t.shape), t.shape[1]
	dims := []int{0}
	shape := []int{1, c}
	for d := 2; d < rank; d++ {
		dims = append(dims, d)
		shape = append(shape, 1)
	}
	m := t.MeanKeep(dims...)
	centred := t.Sub(m)
	v := centred.Square().MeanKeep(dims...)
	scale := v.AddScalar(eps).Rsqrt()
	if weight != nil {
		scale = scale.Mul(weight.Reshape(shape...))
	}
	y = centred.Mul(scale)
	if bias != nil {
		y = y.Add(bias.Reshape(shape...))
	}
	if y.dtype != t.dtype {
		y = y.To(t.dtype)
	}
	return y, m.Detach().Reshape(c), v.Detach().Reshape(c)
}
