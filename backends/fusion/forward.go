package fusion

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
)

// before takes the lock for a kernel that is not fused, running the
// pending group first when the kernel names one of its buffers (kernels on
// other buffers commute with the group, which keeps growing). The caller
// runs the kernel and unlocks.
func (b *Backend) before(views ...backends.View) {
	b.mu.Lock()
	b.stats.Passthrough++
	for _, v := range views {
		if v.Buf != nil && b.bufs[v.Buf] != nil {
			b.flushLocked()
			return
		}
	}
}

// beforeFused takes the lock for an optional fused kernel, after running
// the pending group.
func (b *Backend) beforeFused() {
	b.mu.Lock()
	b.stats.Passthrough++
	b.flushLocked()
}

// ArgReduce implements backends.Backend (not fused).
func (b *Backend) ArgReduce(op backends.ReduceOp, out, x backends.View, axis int) {
	b.before(out, x)
	defer b.mu.Unlock()
	b.inner.ArgReduce(op, b.real(out), b.real(x), axis)
}

// Scan implements backends.Backend (not fused).
func (b *Backend) Scan(op backends.ReduceOp, out, x backends.View, axis int) {
	b.before(out, x)
	defer b.mu.Unlock()
	b.inner.Scan(op, b.real(out), b.real(x), axis)
}

// Sort implements backends.Backend (not fused).
func (b *Backend) Sort(values, indices, x backends.View, axis int, descending bool) {
	b.before(values, indices, x)
	defer b.mu.Unlock()
	b.inner.Sort(b.real(values), b.real(indices), b.real(x), axis, descending)
}

// Matmul implements backends.Backend (not fused).
func (b *Backend) Matmul(out, x, y backends.View) {
	b.before(out, x, y)
	defer b.mu.Unlock()
	b.inner.Matmul(b.real(out), b.real(x), b.real(y))
}

// Gather implements backends.Backend (not fused).
func (b *Backend) Gather(out, x, index backends.View, axis int) {
	b.before(out, x, index)
	defer b.mu.Unlock()
	b.inner.Gather(b.real(out), b.real(x), b.real(index), axis)
}

// Scatter implements backends.Backend (not fused).
func (b *Backend) Scatter(out, index, src backends.View, axis int, add bool) {
	b.before(out, index, src)
	defer b.mu.Unlock()
	b.inner.Scatter(b.real(out), b.real(index), b.real(src), axis, add)
}

// Im2Col implements backends.Backend (not fused).
func (b *Backend) Im2Col(out, x backends.View, g backends.ConvGeometry) {
	b.before(out, x)
	defer b.mu.Unlock()
	b.inner.Im2Col(b.real(out), b.real(x), g)
}

// Col2Im implements backends.Backend (not fused).
func (b *Backend) Col2Im(out, cols backends.View, g backends.ConvGeometry) {
	b.before(out, cols)
	defer b.mu.Unlock()
	b.inner.Col2Im(b.real(out), b.real(cols), g)
}

// Random implements backends.Backend (not fused: an element's value
// depends on its position in the whole of out).
func (b *Backend) Random(out backends.View, kind backends.RandomKind, seed, counter uint64, p0, p1 float64) {
	b.before(out)
	defer b.mu.Unlock()
	b.inner.Random(b.real(out), kind, seed, counter, p0, p1)
}

// wrapped returns the wrapped backend as F, or records a sticky error
// naming op when it is not one. Called with b.mu held.
func wrapped[F any](b *Backend, op, what string) (F, bool) {
	f, ok := b.inner.(F)
	if !ok && b.err == nil {
		b.err = fmt.Errorf("fusion: %s: the wrapped backend has no %s", op, what)
	}
	return f, ok
}

// MaxPool2d implements backends.Fusion by forwarding, after the group.
func (b *Backend) MaxPool2d(out, indices, x backends.View, g backends.ConvGeometry) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.Fusion](b, "maxpool2d", "fused pooling"); ok {
		f.MaxPool2d(b.real(out), b.real(indices), b.real(x), g)
	}
}

// MaxPool2dGrad implements backends.Fusion by forwarding, after the group.
func (b *Backend) MaxPool2dGrad(dx, dy, indices backends.View, g backends.ConvGeometry) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.Fusion](b, "maxpool2d grad", "fused pooling"); ok {
		f.MaxPool2dGrad(b.real(dx), b.real(dy), b.real(indices), g)
	}
}

// Conv2d implements backends.ConvFusion by forwarding, after the group.
func (b *Backend) Conv2d(out, x, w backends.View, g backends.ConvGeometry) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.ConvFusion](b, "conv2d", "fused convolution"); ok {
		f.Conv2d(b.real(out), b.real(x), b.real(w), g)
	}
}

// Conv2dInputGrad implements backends.ConvFusion by forwarding, after the
// group.
func (b *Backend) Conv2dInputGrad(dx, dy, w backends.View, g backends.ConvGeometry) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.ConvFusion](b, "conv2d input grad", "fused convolution"); ok {
		f.Conv2dInputGrad(b.real(dx), b.real(dy), b.real(w), g)
	}
}

// Conv2dWeightGrad implements backends.ConvFusion by forwarding, after the
// group.
func (b *Backend) Conv2dWeightGrad(dw, dy, x backends.View, g backends.ConvGeometry) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.ConvFusion](b, "conv2d weight grad", "fused convolution"); ok {
		f.Conv2dWeightGrad(b.real(dw), b.real(dy), b.real(x), g)
	}
}

// CrossEntropyForward implements backends.CrossEntropyFusion by
// forwarding, after the group.
func (b *Backend) CrossEntropyForward(logp, nll, weight, x, target backends.View, ignore int64) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.CrossEntropyFusion](b, "cross entropy", "fused cross-entropy"); ok {
		f.CrossEntropyForward(b.real(logp), b.real(nll), b.real(weight), b.real(x), b.real(target), ignore)
	}
}

// CrossEntropyBackward implements backends.CrossEntropyFusion by
// forwarding, after the group.
func (b *Backend) CrossEntropyBackward(dx, logp, weight, target, coef backends.View, ignore int64) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.CrossEntropyFusion](b, "cross entropy grad", "fused cross-entropy"); ok {
		f.CrossEntropyBackward(b.real(dx), b.real(logp), b.real(weight), b.real(target), b.real(coef), ignore)
	}
}

// AdamStep implements backends.AdamFusion by forwarding, after the group.
func (b *Backend) AdamStep(outP, outM, outV, p, g, m, v backends.View, h backends.AdamHyper) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.AdamFusion](b, "adam", "fused Adam"); ok {
		f.AdamStep(b.real(outP), b.real(outM), b.real(outV), b.real(p), b.real(g), b.real(m), b.real(v), h)
	}
}

// SGDStep implements backends.SGDFusion by forwarding, after the group.
func (b *Backend) SGDStep(outP, outBuf, p, g, buf backends.View, h backends.SGDHyper) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.SGDFusion](b, "sgd", "fused SGD"); ok {
		f.SGDStep(b.real(outP), b.real(outBuf), b.real(p), b.real(g), b.real(buf), h)
	}
}

// AdamSteps implements backends.MultiAdamFusion by forwarding, after the
// group.
func (b *Backend) AdamSteps(ps, gs, ms, vs []backends.View, hs []backends.AdamHyper) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.MultiAdamFusion](b, "adam", "fused multi-tensor Adam"); ok {
		f.AdamSteps(b.reals(ps), b.reals(gs), b.reals(ms), b.reals(vs), hs)
	}
}

// AttentionForward implements backends.AttentionFusion by forwarding,
// after the group.
func (b *Backend) AttentionForward(out, lse, q, k, v, mask backends.View, g backends.AttentionGeometry) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.AttentionFusion](b, "attention", "fused attention"); ok {
		f.AttentionForward(b.real(out), b.real(lse), b.real(q), b.real(k), b.real(v), b.real(mask), g)
	}
}

// AttentionBackward implements backends.AttentionFusion by forwarding,
// after the group.
func (b *Backend) AttentionBackward(dq, dk, dv, q, k, v, mask, out, dout, lse backends.View, g backends.AttentionGeometry) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.AttentionFusion](b, "attention grad", "fused attention"); ok {
		f.AttentionBackward(b.real(dq), b.real(dk), b.real(dv), b.real(q), b.real(k), b.real(v), b.real(mask), b.real(out), b.real(dout), b.real(lse), g)
	}
}

// LayerNormForward implements backends.NormFusion by forwarding, after
// the group.
func (b *Backend) LayerNormForward(y, mean, rstd, x, weight, bias backends.View, eps float64) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.NormFusion](b, "layer norm", "fused normalisation"); ok {
		f.LayerNormForward(b.real(y), b.real(mean), b.real(rstd), b.real(x), b.real(weight), b.real(bias), eps)
	}
}

// LayerNormBackward implements backends.NormFusion by forwarding, after
// the group.
func (b *Backend) LayerNormBackward(dx, dweight, dbias, dy, x, mean, rstd, weight backends.View) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.NormFusion](b, "layer norm grad", "fused normalisation"); ok {
		f.LayerNormBackward(b.real(dx), b.real(dweight), b.real(dbias), b.real(dy), b.real(x), b.real(mean), b.real(rstd), b.real(weight))
	}
}

// RMSNormForward implements backends.NormFusion by forwarding, after the
// group.
func (b *Backend) RMSNormForward(y, rstd, x, weight backends.View, eps float64) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.NormFusion](b, "rms norm", "fused normalisation"); ok {
		f.RMSNormForward(b.real(y), b.real(rstd), b.real(x), b.real(weight), eps)
	}
}

// RMSNormBackward implements backends.NormFusion by forwarding, after the
// group.
func (b *Backend) RMSNormBackward(dx, dweight, dy, x, rstd, weight backends.View) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.NormFusion](b, "rms norm grad", "fused normalisation"); ok {
		f.RMSNormBackward(b.real(dx), b.real(dweight), b.real(dy), b.real(x), b.real(rstd), b.real(weight))
	}
}

// EmbeddingForward implements backends.EmbeddingFusion by forwarding,
// after the group.
func (b *Backend) EmbeddingForward(out, w, index backends.View) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.EmbeddingFusion](b, "embedding", "fused embedding"); ok {
		f.EmbeddingForward(b.real(out), b.real(w), b.real(index))
	}
}

// EmbeddingBackward implements backends.EmbeddingFusion by forwarding,
// after the group.
func (b *Backend) EmbeddingBackward(dw, dy, index backends.View, skip int) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.EmbeddingFusion](b, "embedding grad", "fused embedding"); ok {
		f.EmbeddingBackward(b.real(dw), b.real(dy), b.real(index), skip)
	}
}

// MatmulBias implements backends.LinearFusion by forwarding, after the
// group.
func (b *Backend) MatmulBias(out, x, w, bias backends.View) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.LinearFusion](b, "linear", "fused linear"); ok {
		f.MatmulBias(b.real(out), b.real(x), b.real(w), b.real(bias))
	}
}

// MatmulBiasAct implements backends.LinearActFusion by forwarding, after
// the group.
func (b *Backend) MatmulBiasAct(out, pre, x, w, bias backends.View, op backends.UnaryOp) {
	b.beforeFused()
	defer b.mu.Unlock()
	if f, ok := wrapped[backends.LinearActFusion](b, "linear act", "fused linear activation"); ok {
		f.MatmulBiasAct(b.real(out), b.real(pre), b.real(x), b.real(w), b.real(bias), op)
	}
}

// The interfaces a Backend serves (by forwarding to the wrapped backend).
var (
	_ backends.Backend            = (*Backend)(nil)
	_ backends.Fusion             = (*Backend)(nil)
	_ backends.ConvFusion         = (*Backend)(nil)
	_ backends.CrossEntropyFusion = (*Backend)(nil)
	_ backends.AdamFusion         = (*Backend)(nil)
	_ backends.MultiAdamFusion    = (*Backend)(nil)
	_ backends.SGDFusion          = (*Backend)(nil)
	_ backends.AttentionFusion    = (*Backend)(nil)
	_ backends.NormFusion         = (*Backend)(nil)
	_ backends.EmbeddingFusion    = (*Backend)(nil)
	_ backends.LinearFusion       = (*Backend)(nil)
	_ backends.LinearActFusion    = (*Backend)(nil)
)
