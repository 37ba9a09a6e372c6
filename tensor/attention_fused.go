package tensor

import (
	"sort"

	"github.com/kiln-ml/kiln/backends"
)

// sdpaFusion returns the backend's fused attention when it applies to
// ScaledDotProductAttention's arguments: Float32 or Float64, at least one
// query and one key (the composition's empty cases are left to it), and no
// float mask that needs its own gradient (that gradient is the Lq×Lk
// score gradient the fused kernels exist not to build).
func sdpaFusion(q, mask *Tensor, lq, lk int) (backends.AttentionFusion, bool) {
	if composeOnly.Load() || (q.dtype != Float32 && q.dtype != Float64) || lq == 0 || lk == 0 {
		return nil, false
	}
	if mask != nil && mask.dtype != Bool && mask.requiresGrad {
		return nil, false
	}
	f, ok := q.backend().(backends.AttentionFusion)
	return f, ok
}

// sdpaFused is ScaledDotProductAttention through the backend's fused
// kernels, for scores of shape scores ([batch…, Lq, Lk], the mask's
// broadcast included). The output and the gradients are laid out in memory
// as q (and k, v) are, so that heads split from a projection and merged
// again afterwards ([N, L, H, Dh] memory seen as [N, H, L, Dh]) are never
// copied.
func sdpaFused(op string, f backends.AttentionFusion, q, k, v, mask *Tensor, scores []int, scale float64, causal bool) *Tensor {
	r := len(scores)
	batch := scores[:r-2]
	lq, lk := scores[r-2], scores[r-1]
	d, dv := q.shape[len(q.shape)-1], v.shape[len(v.shape)-1]
	with := func(tail ...int) []int { return append(append([]int(nil), batch...), tail...) }
	g := backends.AttentionGeometry{Batch: backends.NumElements(batch), Lq: lq, Lk: lk, D: d, Dv: dv, Scale: scale, Causal: causal}

	qu, ku, vu := rowsInPlace(op, q), rowsInPlace(op, k), rowsInPlace(op, v)
	views := func() (qv, kv, vv, mv backends.View) {
		qv, kv, vv = qu.broadcastView(with(lq, d)), ku.broadcastView(with(lk, d)), vu.broadcastView(with(lk, dv))
		if mask != nil {
			mv = mask.broadcastView(scores)
		}
		return
	}
	dev := q.dev.Inner()
	out := sdpaLike(op, dev, qu, with(lq, dv))
	lse := newTensor(op, dev, q.dtype, with(lq))
	qv, kv, vv, mv := views()
	f.AttentionForward(out.view(), lse.view(), qv, kv, vv, mv, g)
	kept := out.newView(out.shape, out.strides, out.offset) // the backward pass's, whatever the caller releases

	attrs := map[string]any{"scale": scale, "causal": causal}
	res := actRecord("scaled_dot_product_attention", attrs, out, nnInputs(q, k, v, mask), []*Tensor{kept, lse, qu, ku, vu},
		func(gr *Tensor) []*Tensor {
			gu := rowsInPlace(op, gr)
			defer gu.Release()
			grads := make([]*Tensor, 3, 4)
			var dqv, dkv, dvv backends.View
			if q.requiresGrad {
				grads[0] = sdpaLike(op, dev, qu, with(lq, d))
				dqv = grads[0].view()
			}
			if k.requiresGrad {
				grads[1] = sdpaLike(op, dev, ku, with(lk, d))
				dkv = grads[1].view()
			}
			if v.requiresGrad {
				grads[2] = sdpaLike(op, dev, vu, with(lk, dv))
				dvv = grads[2].view()
			}
			if dqv.Buf != nil || dkv.Buf != nil || dvv.Buf != nil {
				qv, kv, vv, mv := views()
				f.AttentionBackward(dqv, dkv, dvv, qv, kv, vv, mv, kept.view(), gu.broadcastView(with(lq, dv)), lse.view(), g)
			}
			for i, x := range []*Tensor{q, k, v} {
				if grads[i] != nil {
					grads[i] = gradFor(grads[i], x)
				}
			}
			if mask != nil {
				grads = append(grads, nil)
			}
			return grads
		})
	return res
}

// rowsInPlace returns t as the fused attention kernels read it, which is
// rows in place: a new view of t where its last dimension is contiguous
// (or has one element), else a contiguous copy.
func rowsInPlace(op string, t *Tensor) *Tensor {
	if n := len(t.shape); t.shape[n-1] > 1 && t.strides[n-1] != 1 {
		return rawContiguous(op, t)
	}
	return t.newView(t.shape, t.strides, t.offset)
}

// sdpaLike returns a new tensor of shape [batch…, rows, cols] whose
// dimensions lie in memory in the order of like's strides (like
// broadcasts to the same batch dimensions; its broadcast dimensions go
// outermost), the last dimension innermost: out laid out as q, and each
// gradient as its input, so that a permuted view of contiguous memory
// gets a permuted view back.
func sdpaLike(op string, dev Device, like *Tensor, shape []int) *Tensor {
	r := len(shape)
	lshape := append(append([]int(nil), shape[:r-2]...), like.shape[len(like.shape)-2:]...)
	ls := like.broadcastView(lshape).Strides
	order := make([]int, r-1)
	for i := range order {
		order[i] = i
	}
	key := func(i int) int {
		if ls[i] == 0 || lshape[i] == 1 {
			return -1 // broadcast and single dimensions: outermost, in order
		}
		return 1
	}
	sort.SliceStable(order, func(a, b int) bool {
		ka, kb := key(order[a]), key(order[b])
		if ka != kb {
			return ka < kb
		}
		return ka > 0 && ls[order[a]] > ls[order[b]]
	})
	mem := make([]int, r)
	for i, dim := range order {
		mem[i] = shape[dim]
	}
	mem[r-1] = shape[r-1]
	t := newTensor(op, dev, like.dtype, mem)
	strides := make([]int, r)
	strides[r-1] = 1
	for i, dim := range order {
		strides[dim] = t.strides[i]
	}
	v := t.newView(append([]int(nil), shape...), strides, 0)
	t.Release()
	return v
}
