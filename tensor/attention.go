package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// AttentionConfig configures ScaledDotProductAttention. Its zero value is
// PyTorch's default: no causal mask, scale 1/√D, no dropout.
type AttentionConfig struct {
	// Causal lets query i attend only to keys j ≤ i (the lower triangle
	// aligned at the top-left corner, as PyTorch's is_causal). It cannot be
	// combined with an explicit mask, as in PyTorch.
	Causal bool `json:"causal,omitempty"`
	// Scale multiplies the scores q·kᵀ. 0 means 1/√D, D being the last
	// dimension of q.
	Scale float64 `json:"scale,omitempty"`
	// DropoutP is the dropout probability on the attention weights. It must
	// be 0: dropout inside attention is not supported (apply Dropout to the
	// output instead). The field exists so configurations mirror PyTorch's.
	DropoutP float64 `json:"dropout_p,omitempty"`
}

// ScaledDotProductAttention returns softmax(q·kᵀ·scale + mask)·v for
// q [..., Lq, D], k [..., Lk, D] and v [..., Lk, Dv] (batch dimensions
// broadcast), an [..., Lq, Dv] result, as PyTorch 2's
// torch.nn.functional.scaled_dot_product_attention. mask may be nil, a Bool
// tensor (true = may attend, PyTorch 2's convention) or an additive float
// tensor of q's dtype (which may require gradients, e.g. a learned
// position bias); it broadcasts against [..., Lq, Lk]. A query row that may
// attend to nothing gives NaN, as PyTorch's reference computation does.
//
// It is one graph node, "scaled_dot_product_attention". Where the backend
// has fused attention (backends.AttentionFusion: the CPU's) and q is
// Float32 or Float64, it runs a tile of queries and keys at a time with an
// online softmax, never holding the [..., Lq, Lk] scores, and its backward
// pass recomputes each tile's probabilities from the log-sum-exp of the
// scores kept by the forward pass; the result is then laid out in memory
// as q is (heads split from a [N, L, H·D] projection come back as a view
// of [N, L, H, Dv]), and agrees with the composition within rounding. A
// float mask that requires gradients, empty sequences and other dtypes
// take the composed path, which keeps the attention probabilities from
// the forward pass for the backward pass. It panics with ErrShape when the
// shapes do not fit (the message names them), ErrDType for non-float or
// mixed dtypes and ErrArgument for a causal mask combined with an explicit
// one or a non-zero DropoutP.
func ScaledDotProductAttention(q, k, v, mask *Tensor, cfg AttentionConfig) *Tensor {
	const op = "ScaledDotProductAttention"
	nnLive(op, mask, q, k, v)
	for _, t := range []*Tensor{q, k, v} {
		if len(t.shape) < 2 {
			fail(op, ErrShape, "q %s, k %s and v %s must each have at least 2 dimensions", shapeString(q.shape),
				shapeString(k.shape), shapeString(v.shape))
		}
	}
	if !q.dtype.IsFloat() || k.dtype != q.dtype || v.dtype != q.dtype {
		fail(op, ErrDType, "q, k and v must share one floating dtype, got %s, %s and %s", q.dtype, k.dtype, v.dtype)
	}
	rq, rk, rv := len(q.shape), len(k.shape), len(v.shape)
	lq, d := q.shape[rq-2], q.shape[rq-1]
	lk := k.shape[rk-2]
	if k.shape[rk-1] != d {
		fail(op, ErrShape, "q %s and k %s differ in their last dimension", shapeString(q.shape), shapeString(k.shape))
	}
	if v.shape[rv-2] != lk {
		fail(op, ErrShape, "k %s and v %s differ in sequence length (dimension -2)", shapeString(k.shape), shapeString(v.shape))
	}
	batch := nnBroadcastOrFail(op, "q", q.shape[:rq-2], "k", k.shape[:rk-2], q, k, v)
	batch = nnBroadcastOrFail(op, "q and k", batch, "v", v.shape[:rv-2], q, k, v)
	scores := append(append([]int(nil), batch...), lq, lk)
	if mask != nil {
		if mask.dtype != Bool && mask.dtype != q.dtype {
			fail(op, ErrDType, "mask is %s; it must be bool or q's dtype %s", mask.dtype, q.dtype)
		}
		if cfg.Causal {
			fail(op, ErrArgument, "an explicit mask cannot be combined with Causal (as in PyTorch)")
		}
		full := nnBroadcast(scores, mask.shape)
		if full == nil {
			fail(op, ErrShape, "mask %s does not broadcast to the attention scores %s (q %s, k %s)", shapeString(mask.shape),
				shapeString(scores), shapeString(q.shape), shapeString(k.shape))
		}
		scores = full
	}
	if cfg.DropoutP != 0 {
		fail(op, ErrArgument, "DropoutP %v: dropout inside attention is not supported; apply Dropout to the output", cfg.DropoutP)
	}
	scale := cfg.Scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(d))
	}
	if f, ok := sdpaFusion(q, mask, lq, lk); ok {
		return sdpaFused(op, f, q, k, v, mask, scores, scale, cfg.Causal)
	}

	kt := k.transposeView(-1, -2)
	qk := rawMatmul(op, q, kt)
	kt.Release()
	s := rawScalar(op, mulOp, qk, scale, false)
	qk.Release()
	switch {
	case mask != nil && mask.dtype == Bool:
		s = nnMaskFill(op, s, mask)
	case mask != nil:
		s2 := rawBinary(op, addOp, s, mask)
		s.Release()
		s = s2
	case cfg.Causal:
		tril := make([]float64, lq*lk)
		for i := range lq {
			for j := 0; j <= i && j < lk; j++ {
				tril[i*lk+j] = 1
			}
		}
		cm := nnHostTensor(op, q.dev, Bool, []int{lq, lk}, tril)
		s = nnMaskFill(op, s, cm)
		cm.Release()
	}
	p := nnSoftmaxLast(op, s)
	s.Release()
	out := rawMatmul(op, p, v)

	attrs := map[string]any{"scale": scale, "causal": cfg.Causal}
	out = record("scaled_dot_product_attention", attrs, out, nnInputs(q, k, v, mask), func(g *Tensor) []*Tensor {
		grads := make([]*Tensor, 3, 4)
		if v.requiresGrad {
			pt := p.transposeView(-1, -2)
			grads[2] = gradFor(rawMatmul(op, pt, g), v)
			pt.Release()
		}
		maskGrad := mask != nil && mask.dtype != Bool && mask.requiresGrad
		if q.requiresGrad || k.requiresGrad || maskGrad {
			// ds = p ⊙ (dp − Σⱼ dp ⊙ p), the softmax backward
			vt := v.transposeView(-1, -2)
			dp := rawMatmul(op, g, vt)
			vt.Release()
			pdp := rawBinary(op, mulOp, p, dp)
			sum := rawReduce(op, backends.Sum, pdp, []int{len(pdp.shape) - 1}, true)
			pdp.Release()
			diff := rawBinary(op, subOp, dp, sum)
			dp.Release()
			sum.Release()
			ds := rawBinary(op, mulOp, p, diff)
			diff.Release()
			if q.requiresGrad {
				m := rawMatmul(op, ds, k)
				grads[0] = gradFor(rawScalar(op, mulOp, m, scale, false), q)
				m.Release()
			}
			if k.requiresGrad {
				dst := ds.transposeView(-1, -2)
				m := rawMatmul(op, dst, q)
				dst.Release()
				grads[1] = gradFor(rawScalar(op, mulOp, m, scale, false), k)
				m.Release()
			}
			if mask != nil {
				var dm *Tensor
				if maskGrad {
					dm = gradFor(ds.newView(ds.shape, ds.strides, ds.offset), mask)
				}
				grads = append(grads, dm)
			}
			ds.Release()
		} else if mask != nil {
			grads = append(grads, nil)
		}
		return grads
	})
	if out.node == nil {
		p.Release()
	}
	return out
}

// nnBroadcast returns the broadcast of a and b, or nil when they do not
// broadcast.
func nnBroadcast(a, b []int) []int {
	out, _ := broadcastShape(a, b)
	return out
}

func nnBroadcastOrFail(op, an string, a []int, bn string, b []int, q, k, v *Tensor) []int {
	out := nnBroadcast(a, b)
	if out == nil {
		fail(op, ErrShape, "batch dimensions of %s and %s do not broadcast (q %s, k %s, v %s)", an, bn,
			shapeString(q.shape), shapeString(k.shape), shapeString(v.shape))
	}
	return out
}

// nnMaskFill returns s where mask (Bool, broadcastable) is true and −∞
// elsewhere, consuming s.
func nnMaskFill(op string, s, mask *Tensor) *Tensor {
	shape := nnBroadcast(s.shape, mask.shape)
	ninf := rawFull(op, s.dev, s.dtype, []int{}, math.Inf(-1))
	out := newTensor(op, s.dev, s.dtype, shape)
	out.backend().Where(out.view(), mask.broadcastView(shape), s.broadcastView(shape), ninf.broadcastView(shape))
	ninf.Release()
	s.Release()
	return out
}

// nnSoftmaxLast returns the softmax of s over its last axis, computed
// stably (the row maximum is subtracted first), with no graph.
func nnSoftmaxLast(op string, s *Tensor) *Tensor {
	last := []int{len(s.shape) - 1}
	m := rawReduce(op, backends.Max, s, last, true)
	d := rawBinary(op, subOp, s, m)
	m.Release()
	e := rawUnary(op, backends.Exp, d, 0, 0)
	d.Release()
	z := rawReduce(op, backends.Sum, e, last, true)
	p := rawBinary(op, divOp, e, z)
	e.Release()
	z.Release()
	return p
}
