package nn

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// MultiHeadAttentionConfig configures a MultiHeadAttention; the zero value
// of each field is PyTorch's default.
type MultiHeadAttentionConfig struct {
	// Dropout is the probability of dropout on the attention weights in
	// training mode; default 0.
	Dropout float64 `json:"dropout,omitempty"`
	// NoBias leaves out in_proj_bias and out_proj.bias (PyTorch's
	// bias=False).
	NoBias bool `json:"no_bias,omitempty"`
	// BatchFirst makes the inputs and the output [N, L, E] instead of
	// [L, N, E].
	BatchFirst bool `json:"batch_first,omitempty"`
	// DType is the parameters' dtype; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// MultiHeadAttention is PyTorch's torch.nn.MultiheadAttention: the query,
// key and value are projected by the rows of InProjWeight [3E, E] (query,
// key, value in that order) plus InProjBias [3E], split into NumHeads
// heads of E/NumHeads features, attended per head with
// softmax(q·kᵀ/√(E/NumHeads) + mask)·v, merged, and projected by OutProj.
// The parameters carry PyTorch's names (in_proj_weight, in_proj_bias,
// out_proj.weight, out_proj.bias), so state dicts map one to one.
//
// Keys and values must have EmbedDim features, as the query (PyTorch's
// kdim = vdim = embed_dim; the separate q_proj_weight, k_proj_weight and
// v_proj_weight of other sizes are not supported), and add_bias_kv and
// add_zero_attn are not supported.
type MultiHeadAttention struct {
	Mode
	EmbedDim   int     `kiln:"-"`
	NumHeads   int     `kiln:"-"`
	Dropout    float64 `kiln:"-"`
	BatchFirst bool    `kiln:"-"`

	InProjWeight *Param  `kiln:"in_proj_weight"`
	InProjBias   *Param  `kiln:"in_proj_bias"` // nil with NoBias
	OutProj      *Linear `kiln:"out_proj"`
}

// NewMultiHeadAttention returns an attention layer over embedDim features
// split into numHeads heads, on dev, initialised as PyTorch does:
// InProjWeight Xavier-uniform, both biases zero, OutProj.Weight as a
// Linear's. It panics with ErrArgument when the sizes are not positive,
// numHeads does not divide embedDim, or Dropout is outside [0, 1).
func NewMultiHeadAttention(dev tensor.Device, embedDim, numHeads int, cfg ...MultiHeadAttentionConfig) *MultiHeadAttention {
	var c MultiHeadAttentionConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	const op = "nn.NewMultiHeadAttention"
	if embedDim <= 0 || numHeads <= 0 || embedDim%numHeads != 0 {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("embedDim %d must be a positive multiple of numHeads %d", embedDim, numHeads),
			Err: tensor.ErrArgument})
	}
	if c.Dropout < 0 || c.Dropout >= 1 {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("Dropout %v outside [0, 1)", c.Dropout), Err: tensor.ErrArgument})
	}
	m := &MultiHeadAttention{EmbedDim: embedDim, NumHeads: numHeads, Dropout: c.Dropout, BatchFirst: c.BatchFirst}
	m.InProjWeight = NewParam(convert(XavierUniform{}.Init(dev, []int{3 * embedDim, embedDim}, embedDim, 3*embedDim), c.DType))
	lc := LinearConfig{NoBias: c.NoBias, DType: c.DType}
	if !c.NoBias {
		m.InProjBias = NewParam(tensor.ZerosOf(dev, c.DType, 3*embedDim))
		lc.BiasInit = Zeros{}
	}
	m.OutProj = NewLinear(dev, embedDim, embedDim, lc)
	return m
}

// AttentionOptions are the optional arguments of MultiHeadAttention's
// Forward; the zero value is PyTorch's defaults (no masks, averaged
// attention weights returned).
type AttentionOptions struct {
	// KeyPaddingMask marks keys to ignore: [N, S] ([S] for unbatched
	// input), Bool with true = ignore (padding), as PyTorch's
	// key_padding_mask, or a float mask added to the scores.
	KeyPaddingMask *tensor.Tensor
	// AttentionMask restricts which keys each query may attend to:
	// [L, S], or [N·NumHeads, L, S] for a mask per sequence and head. A
	// Bool mask is true where attending is NOT allowed (PyTorch's
	// MultiheadAttention convention; tensor.ScaledDotProductAttention's
	// bool masks are the opposite); a float mask is added to the scores.
	AttentionMask *tensor.Tensor
	// IsCausal masks out the future: query i may attend to key j only when
	// j ≤ i + S − L, the causal mask aligned at the end of the keys (the
	// usual lower triangle when L = S; with a cache, the new queries see
	// every cached key and the new keys up to themselves). It combines
	// with the other masks.
	IsCausal bool
	// SkipWeights returns no attention weights (PyTorch's
	// need_weights=False), which lets Forward use the fused
	// tensor.ScaledDotProductAttention when no dropout applies.
	SkipWeights bool
	// PerHeadWeights returns the weights of every head, [N, NumHeads, L, S],
	// instead of their mean over the heads (average_attn_weights=False).
	PerHeadWeights bool
	// Cache, when not nil, makes Forward append this call's projected keys
	// and values to it and attend over everything it holds: incremental
	// decoding (see KVCache).
	Cache *KVCache
}

// KVCache holds the keys and values a MultiHeadAttention has projected in
// earlier calls, for incremental (autoregressive) decoding: pass the same
// cache in AttentionOptions.Cache at every step with only the new tokens
// as query, key and value, and each step attends over all the tokens so
// far without projecting the earlier ones again. With IsCausal the new
// tokens see the cached ones and the new ones up to themselves, so feeding
// a sequence in pieces gives what one causal call over the whole sequence
// gives. Masks given with a cache cover all the keys, cached and new
// (S = Len() after the call).
//
// The cache owns its tensors: they belong to no Scope, so it outlives the
// Scope of each decoding step, and Reset frees them. They are kept outside
// the autodiff graph: gradients flow to the current call's keys and values,
// not through the cache into earlier calls. Each call copies the cache
// (tensor.Cat), so decoding S tokens one at a time copies O(S²) elements
// in all. A cache serves one attention layer and one batch;
// TransformerDecoder keeps one per layer in a DecoderCache.
type KVCache struct {
	Key   *tensor.Tensor // [N, NumHeads, S, EmbedDim/NumHeads]; nil while empty
	Value *tensor.Tensor // as Key
}

// Len returns the number of cached positions S.
func (c *KVCache) Len() int {
	if c == nil || c.Key == nil {
		return 0
	}
	return c.Key.Dim(2)
}

// Reset releases the cached keys and values and empties the cache.
func (c *KVCache) Reset() {
	if c.Key != nil {
		c.Key.Release()
		c.Value.Release()
	}
	c.Key, c.Value = nil, nil
}

// extend appends k and v [N, H, S', Dh] to the cache and returns all the
// keys and values, with k's and v's graph.
func (c *KVCache) extend(k, v *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
	kAll, vAll := k, v
	if c.Key != nil {
		cs, ks := c.Key.Shape(), k.Shape()
		if cs[0] != ks[0] || cs[1] != ks[1] || cs[3] != ks[3] {
			shapeError("MultiHeadAttention", "KV cache holds keys %v [N heads S head_dim], which do not fit new keys %v", cs, ks)
		}
		kAll = tensor.Cat([]*tensor.Tensor{c.Key, k}, 2)
		vAll = tensor.Cat([]*tensor.Tensor{c.Value, v}, 2)
	}
	var nk, nv *tensor.Tensor
	tensor.NoScope(func() { nk, nv = kAll.Detach(), vAll.Detach() })
	c.Reset()
	c.Key, c.Value = nk, nv
	return kAll, vAll
}

// layout describes the sequence layout the layer expects, for messages.
func (m *MultiHeadAttention) layout(seq string) string {
	if m.BatchFirst {
		return fmt.Sprintf("[N, %s, %d] (or [%s, %d] unbatched)", seq, m.EmbedDim, seq, m.EmbedDim)
	}
	return fmt.Sprintf("[%s, N, %d] (or [%s, %d] unbatched)", seq, m.EmbedDim, seq, m.EmbedDim)
}

// toBatchFirst validates an input and returns it as [N, L, E].
func (m *MultiHeadAttention) toBatchFirst(name, seq string, x *tensor.Tensor) *tensor.Tensor {
	if x == nil {
		shapeError("MultiHeadAttention", "expects %s %s, got nil", name, m.layout(seq))
	}
	s := x.Shape()
	if (len(s) != 2 && len(s) != 3) || s[len(s)-1] != m.EmbedDim {
		shapeError("MultiHeadAttention", "expects %s %s, got %v", name, m.layout(seq), s)
	}
	if !x.DType().IsFloat() {
		panic(&tensor.Error{Op: "nn.MultiHeadAttention", Msg: fmt.Sprintf("expects a floating-point %s, got %s", name, x.DType()),
			Err: tensor.ErrDType})
	}
	switch {
	case len(s) == 2:
		return x.Unsqueeze(0)
	case !m.BatchFirst:
		return x.Transpose(0, 1)
	}
	return x
}

// Forward attends from query to key and value and returns the output, in
// query's layout, and the attention weights.
//
// query is [L, N, E] ([N, L, E] with BatchFirst), or [L, E] unbatched; key
// and value are [S, N, E] (or [N, S, E], or [S, E]), one shape for both.
// Passing the same tensor as query, key and value (self-attention) makes
// one projection of all three; heads are views of the projections, and
// with SkipWeights, no dropout and a causal mask alone
// (IsCausal, as many keys as queries) the attention is
// tensor.ScaledDotProductAttention with its own causal mask, which fused
// kernels apply without building it (for self-attention with no cache,
// tensor.PackedSelfAttention on the projection, whose gradient they then
// write whole). The weights are [N, L, S] (the mean over
// the heads; [N, NumHeads, L, S] with PerHeadWeights; no batch dimension
// for unbatched input), after dropout as PyTorch returns them, and nil
// with SkipWeights. A query that may attend to no key gives NaN, as in
// PyTorch.
//
// It panics with a *tensor.Error naming nn.MultiHeadAttention, what it
// expected and what it got (ErrShape, or ErrDType for non-float inputs
// and masks of other dtypes) when an input, a mask or the cache does not
// fit.
func (m *MultiHeadAttention) Forward(query, key, value *tensor.Tensor, opts ...AttentionOptions) (out, weights *tensor.Tensor) {
	var o AttentionOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	E, H := m.EmbedDim, m.NumHeads
	dh := E / H
	q3 := m.toBatchFirst("query", "L", query)
	k3 := m.toBatchFirst("key", "S", key)
	v3 := m.toBatchFirst("value", "S", value)
	batched := query.Dims() == 3
	if key.Dims() != query.Dims() || fmt.Sprint(key.Shape()) != fmt.Sprint(value.Shape()) || k3.Dim(0) != q3.Dim(0) {
		shapeError("MultiHeadAttention", "expects key and value of one shape, with query's batch size: query %v, key %v, value %v",
			query.Shape(), key.Shape(), value.Shape())
	}
	n, l := q3.Dim(0), q3.Dim(1)

	w := m.InProjWeight.Tensor
	var b *tensor.Tensor
	if m.InProjBias != nil {
		b = m.InProjBias.Tensor
	}
	// proj applies the rows [i·E, (i+rows)·E) of the input projection.
	proj := func(x *tensor.Tensor, i, rows int) *tensor.Tensor {
		wi, bi := w, b
		if rows != 3 {
			wi = w.Narrow(0, i*E, rows*E)
			if b != nil {
				bi = b.Narrow(0, i*E, rows*E)
			}
		}
		return tensor.Linear(x, wi, bi)
	}
	dropout := m.Training() && m.Dropout > 0
	if packSelfAttention && query == key && key == value && o.SkipWeights && !dropout && o.Cache == nil && o.AttentionMask == nil &&
		o.KeyPaddingMask == nil {
		// self-attention with at most the causal mask: the heads stay in
		// the projection, whose gradient the fused kernels then write
		// whole (see tensor.PackedSelfAttention)
		attn := tensor.PackedSelfAttention(proj(q3, 0, 3), H, tensor.AttentionConfig{Causal: o.IsCausal})
		return m.finish(attn, batched), nil
	}
	var q, k, v *tensor.Tensor
	switch {
	case query == key && key == value:
		qkv := proj(q3, 0, 3)
		q, k, v = qkv.Narrow(-1, 0, E), qkv.Narrow(-1, E, E), qkv.Narrow(-1, 2*E, E)
	case key == value:
		q = proj(q3, 0, 1)
		kv := proj(k3, 1, 2)
		k, v = kv.Narrow(-1, 0, E), kv.Narrow(-1, E, E)
	default:
		q, k, v = proj(q3, 0, 1), proj(k3, 1, 1), proj(v3, 2, 1)
	}
	heads := func(x *tensor.Tensor) *tensor.Tensor { // [N, L, E] → [N, H, L, Dh]
		return x.Reshape(n, x.Dim(1), H, dh).Permute(0, 2, 1, 3)
	}
	q, k, v = heads(q), heads(k), heads(v)
	if o.Cache != nil {
		k, v = o.Cache.extend(k, v)
	}
	s := k.Dim(2)
	// a causal mask alone over as many keys as queries is SDPA's own, which
	// fused kernels apply without building it (and skip the tiles it hides)
	causalOnly := o.SkipWeights && !dropout && o.IsCausal && o.AttentionMask == nil && o.KeyPaddingMask == nil && l == s
	var mask *tensor.Tensor
	if !causalOnly {
		mask = m.scoreMask(o, n, l, s, batched, q)
	}

	var attn, p *tensor.Tensor
	if o.SkipWeights && !dropout {
		attn = tensor.ScaledDotProductAttention(q, k, v, mask, tensor.AttentionConfig{Causal: causalOnly})
	} else {
		scores := q.Matmul(k.Transpose(-1, -2)).MulScalar(1 / math.Sqrt(float64(dh)))
		if mask != nil {
			scores = scores.Add(mask)
		}
		p = scores.Softmax(-1)
		if dropout {
			p = (&Dropout{P: m.Dropout}).Forward(p)
		}
		attn = p.Matmul(v)
	}
	out = m.finish(attn.Permute(0, 2, 1, 3).Reshape(n, l, E), batched)
	if o.SkipWeights {
		return out, nil
	}
	if !o.PerHeadWeights {
		p = p.Mean(1)
	}
	if !batched {
		p = p.Squeeze(0)
	}
	return out, p
}

// packSelfAttention makes self-attention with at most a causal mask keep
// its heads in the projection (tensor.PackedSelfAttention); tests and
// benchmarks turn it off to compare with the heads split by Narrow.
var packSelfAttention = true

// finish projects the merged heads attn [N, L, E] with OutProj and
// returns the result in the layout of the query.
func (m *MultiHeadAttention) finish(attn *tensor.Tensor, batched bool) *tensor.Tensor {
	out := m.OutProj.Forward(attn)
	switch {
	case !batched:
		out = out.Squeeze(0)
	case !m.BatchFirst:
		out = out.Transpose(0, 1)
	}
	return out
}

// scoreMask combines the attention mask, the key padding mask and the
// causal mask into one additive float mask that broadcasts against the
// scores [N, H, L, S], or returns nil when there is none.
func (m *MultiHeadAttention) scoreMask(o AttentionOptions, n, l, s int, batched bool, q *tensor.Tensor) *tensor.Tensor {
	dev, dt := q.Device(), q.DType()
	var mask *tensor.Tensor
	add := func(t *tensor.Tensor) {
		if mask == nil {
			mask = t
		} else {
			mask = mask.Add(t)
		}
	}
	if am := o.AttentionMask; am != nil {
		switch {
		case am.Dims() == 2 && am.Dim(0) == l && am.Dim(1) == s:
		case am.Dims() == 3 && am.Dim(0) == n*m.NumHeads && am.Dim(1) == l && am.Dim(2) == s:
			am = am.Reshape(n, m.NumHeads, l, s)
		default:
			shapeError("MultiHeadAttention", "expects an attention mask [L, S] = %v or [N·heads, L, S] = %v, got %v",
				[]int{l, s}, []int{n * m.NumHeads, l, s}, am.Shape())
		}
		add(additiveMask("attention mask", am, dev, dt))
	}
	if kp := o.KeyPaddingMask; kp != nil {
		want := []int{n, s}
		if !batched {
			want = []int{s}
		}
		if fmt.Sprint(kp.Shape()) != fmt.Sprint(want) {
			shapeError("MultiHeadAttention", "expects a key padding mask %v ([N, S], or [S] unbatched), got %v", want, kp.Shape())
		}
		add(additiveMask("key padding mask", kp.Reshape(n, 1, 1, s), dev, dt))
	}
	if o.IsCausal {
		add(additiveMask("causal mask", causalMask(dev, l, s), dev, dt))
	}
	return mask
}

// causalMask returns the Bool mask [l, s] that is true where query i may
// NOT attend to key j: j > i + s − l.
func causalMask(dev tensor.Device, l, s int) *tensor.Tensor {
	blocked := make([]bool, l*s)
	for i := range l {
		for j := range s {
			blocked[i*s+j] = j > i+s-l
		}
	}
	return tensor.FromBools(dev.Inner(), blocked, l, s)
}

// additiveMask turns a Bool mask (true = not allowed) into 0 and −∞ of
// dtype dt, and returns a float mask in dtype dt.
func additiveMask(what string, mask *tensor.Tensor, dev tensor.Device, dt tensor.DType) *tensor.Tensor {
	switch {
	case mask.DType() == tensor.Bool:
		return tensor.ZerosOf(dev.Inner(), dt, mask.Shape()...).MaskedFill(mask, math.Inf(-1))
	case mask.DType().IsFloat():
		if mask.DType() != dt {
			return mask.To(dt)
		}
		return mask
	}
	panic(&tensor.Error{Op: "nn.MultiHeadAttention", Msg: fmt.Sprintf("expects a bool or float %s, got %s", what, mask.DType()),
		Err: tensor.ErrDType})
}
