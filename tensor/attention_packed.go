package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// PackedSelfAttention returns multi-head scaled dot-product self-attention
// over a packed projection: qkv [..., L, 3·E] holds each position's query,
// key and value features in that order (E = heads·D each, head by head),
// as one Linear projection of a transformer layer's input gives them, and
// the result [..., L, E] is ScaledDotProductAttention of the heads with the
// heads merged back. It computes, within rounding, what
//
//	part := func(i int) *Tensor { // [..., L, E] → [..., heads, L, D]
//		return qkv.Narrow(-1, i*E, E).Reshape(..., L, heads, D).Transpose(-3, -2)
//	}
//	ScaledDotProductAttention(part(0), part(1), part(2), nil, cfg).Transpose(-3, -2).Reshape(..., L, E)
//
// computes.
//
// With the backend's fused attention (backends.AttentionFusion) and a
// Float32 or Float64 qkv it is one graph node, "packed_self_attention",
// whose gradient is qkv's whole: the kernels write the query, key and value
// gradients into its three parts, where the composition builds a
// zero-filled gradient of qkv's size for each part and adds the three (in
// a GPT-style training step, 2% of the time on the CPU). Elsewhere, and
// when traced for export, it is the composition above. It panics with
// ErrShape when qkv has fewer than 2 dimensions or its last one is not a
// multiple of 3·heads, ErrArgument when heads is not positive or cfg has
// a non-zero DropoutP, and ErrDType for a non-float qkv.
func PackedSelfAttention(qkv *Tensor, heads int, cfg AttentionConfig) *Tensor {
	const op = "PackedSelfAttention"
	nnLive(op, nil, qkv)
	if heads <= 0 {
		fail(op, ErrArgument, "heads %d must be positive", heads)
	}
	r := len(qkv.shape)
	if r < 2 || qkv.shape[r-1]%(3*heads) != 0 {
		fail(op, ErrShape, "qkv %s must be [..., L, 3·heads·D] (heads %d)", shapeString(qkv.shape), heads)
	}
	if !qkv.dtype.IsFloat() {
		fail(op, ErrDType, "qkv must be floating, got %s", qkv.dtype)
	}
	if cfg.DropoutP != 0 {
		fail(op, ErrArgument, "DropoutP %v: dropout inside attention is not supported; apply Dropout to the output", cfg.DropoutP)
	}
	l, e := qkv.shape[r-2], qkv.shape[r-1]/3
	d := e / heads
	batch := qkv.shape[:r-2]
	if f, ok := sdpaFusion(qkv, nil, l, l); ok && !qkv.traced && d > 0 {
		scale := cfg.Scale
		if scale == 0 {
			scale = 1 / math.Sqrt(float64(d))
		}
		return packedAttentionFused(op, f, qkv, heads, scale, cfg.Causal)
	}
	with := func(tail ...int) []int { return append(append([]int(nil), batch...), tail...) }
	part := func(i int) *Tensor {
		return qkv.Narrow(-1, i*e, e).Reshape(with(l, heads, d)...).Transpose(-3, -2)
	}
	attn := ScaledDotProductAttention(part(0), part(1), part(2), nil, cfg)
	return attn.Transpose(-3, -2).Reshape(with(l, e)...)
}

// packedAttentionFused is PackedSelfAttention through the backend's fused
// kernels: q, k and v are views of qkv (its rows copied first when its
// features are not contiguous), the output [..., L, heads, D] is
// contiguous, and the backward pass writes the three gradients as views of
// one tensor of qkv's shape.
func packedAttentionFused(op string, f backends.AttentionFusion, qkv *Tensor, heads int, scale float64, causal bool) *Tensor {
	r := len(qkv.shape)
	l, e := qkv.shape[r-2], qkv.shape[r-1]/3
	d := e / heads
	batch := qkv.shape[:r-2]
	with := func(tail ...int) []int { return append(append([]int(nil), batch...), tail...) }
	g := backends.AttentionGeometry{Batch: backends.NumElements(batch) * heads, Lq: l, Lk: l, D: d, Dv: d, Scale: scale, Causal: causal}

	// headsOf returns the E features of t's rows from feature i·E on (t
	// [..., L, 3·E] or, with i = 0, [..., L, E]; features contiguous) as
	// [..., heads, L, D]
	headsOf := func(t *Tensor, i int) backends.View {
		v := t.view()
		v.Shape = with(heads, l, d)
		v.Strides = append(append([]int(nil), t.strides[:r-2]...), d, t.strides[r-2], 1)
		v.Offset += i * e
		return v
	}
	qu := rowsInPlace(op, qkv)
	dev := qkv.dev.Inner()
	out := newTensor(op, dev, qkv.dtype, with(l, e))
	lse := newTensor(op, dev, qkv.dtype, with(heads, l))
	f.AttentionForward(headsOf(out, 0), lse.view(), headsOf(qu, 0), headsOf(qu, 1), headsOf(qu, 2), backends.View{}, g)
	kept := out.newView(out.shape, out.strides, out.offset) // the backward pass's, whatever the caller releases

	attrs := map[string]any{"heads": heads, "scale": scale, "causal": causal}
	return actRecord("packed_self_attention", attrs, out, []*Tensor{qkv}, []*Tensor{kept, lse, qu},
		func(gr *Tensor) []*Tensor {
			gu := rowsInPlace(op, gr)
			defer gu.Release()
			dqkv := newTensor(op, dev, qkv.dtype, qkv.shape)
			f.AttentionBackward(headsOf(dqkv, 0), headsOf(dqkv, 1), headsOf(dqkv, 2), headsOf(qu, 0), headsOf(qu, 1),
				headsOf(qu, 2), backends.View{}, headsOf(kept, 0), headsOf(gu, 0), lse.view(), g)
			return []*Tensor{gradFor(dqkv, qkv)}
		})
}
