package nn

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// TransformerLayerConfig configures a TransformerEncoderLayer or a
// TransformerDecoderLayer; the zero value of each field is PyTorch's
// default.
type TransformerLayerConfig struct {
	// DimFeedforward is the hidden size of the feed-forward block; 0 means
	// 2048.
	DimFeedforward int `json:"dim_feedforward,omitempty"`
	// Dropout is the dropout probability used in training mode on the
	// attention weights, inside the feed-forward block and on each
	// sub-block's output; 0 means PyTorch's 0.1 (set NoDropout for none).
	Dropout float64 `json:"dropout,omitempty"`
	// NoDropout turns dropout off (dropout=0.0).
	NoDropout bool `json:"no_dropout,omitempty"`
	// Activation of the feed-forward block: "relu" (the default) or
	// "gelu" (the exact, erf-based GELU).
	Activation string `json:"activation,omitempty"`
	// LayerNormEps is the layer norms' epsilon; 0 means 1e-5.
	LayerNormEps float64 `json:"layer_norm_eps,omitempty"`
	// BatchFirst makes inputs and outputs [N, S, E] instead of [S, N, E].
	BatchFirst bool `json:"batch_first,omitempty"`
	// NormFirst applies each layer norm before its sub-block (pre-norm)
	// instead of after the residual addition (post-norm, the default).
	NormFirst bool `json:"norm_first,omitempty"`
	// DType is the parameters' dtype; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// normalized returns c with PyTorch's defaults filled in, checking it.
func (c TransformerLayerConfig) normalized(op string, dModel, nhead int) TransformerLayerConfig {
	if c.DimFeedforward == 0 {
		c.DimFeedforward = 2048
	}
	switch {
	case c.NoDropout:
		c.Dropout = 0
	case c.Dropout == 0:
		c.Dropout = 0.1
	}
	if c.Activation == "" {
		c.Activation = "relu"
	}
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-5
	}
	bad := ""
	switch {
	case dModel <= 0 || nhead <= 0 || dModel%nhead != 0:
		bad = fmt.Sprintf("dModel %d must be a positive multiple of nhead %d", dModel, nhead)
	case c.DimFeedforward < 0:
		bad = fmt.Sprintf("DimFeedforward %d is negative", c.DimFeedforward)
	case c.Dropout < 0 || c.Dropout >= 1:
		bad = fmt.Sprintf("Dropout %v outside [0, 1)", c.Dropout)
	case c.Activation != "relu" && c.Activation != "gelu":
		bad = fmt.Sprintf("Activation %q is not relu or gelu", c.Activation)
	case c.LayerNormEps < 0:
		bad = fmt.Sprintf("LayerNormEps %v is negative", c.LayerNormEps)
	}
	if bad != "" {
		panic(&tensor.Error{Op: op, Msg: bad, Err: tensor.ErrArgument})
	}
	return c
}

// transformerParts are the blocks both layer kinds have.
type transformerParts struct {
	linear1, linear2 *Linear
	dropout          *Dropout
	norms            []*LayerNorm
}

func newTransformerParts(dev tensor.Device, dModel, norms int, c TransformerLayerConfig) transformerParts {
	lc := LinearConfig{DType: c.DType}
	p := transformerParts{
		linear1: NewLinear(dev, dModel, c.DimFeedforward, lc),
		linear2: NewLinear(dev, c.DimFeedforward, dModel, lc),
		dropout: NewDropout(c.Dropout),
	}
	for range norms {
		ln := NewLayerNorm(dev, []int{dModel}, LayerNormConfig{Eps: c.LayerNormEps})
		setDType(ln.Weight, c.DType)
		setDType(ln.Bias, c.DType)
		p.norms = append(p.norms, ln)
	}
	return p
}

// setDType converts a parameter to dtype dt in place (keeping its id).
func setDType(p *Param, dt tensor.DType) {
	if p == nil || p.DType() == dt {
		return
	}
	d := p.Detach()
	c := d.To(dt)
	d.Release()
	p.Set(c)
}

// activate applies the feed-forward activation.
func activate(x *tensor.Tensor, activation string) *tensor.Tensor {
	if activation == "gelu" {
		return x.Gelu()
	}
	return x.Relu()
}

// fuseFeedForward holds the activations whose feed-forward blocks compute
// their first linear layer and activation in one fused call
// (tensor.LinearActivation, the same bits). ReLU gains from it: Linear(256
// → 1024) then ReLU on [2048, 256] took 0.94-0.97 of the unfused time on 1
// and 2 threads (BenchmarkLinearAct in backends/cpu, interleaved). GELU,
// compute-bound, does not: 1.00 at that layer, and the GPT benchmark's
// step was 1-2% slower fused in most interleaved runs
// (BenchmarkGPTTrainStepFusedFFN), so it stays unfused. Tests and
// benchmarks change the set.
var fuseFeedForward = map[string]bool{"relu": true}

// linearActivate returns activate(l.Forward(x), activation), through
// tensor.LinearActivation where fuseFeedForward holds the activation.
func linearActivate(l *Linear, x *tensor.Tensor, activation string) *tensor.Tensor {
	if activation != "gelu" {
		activation = "relu"
	}
	if !fuseFeedForward[activation] {
		return activate(l.Forward(x), activation)
	}
	w, b := l.operands(x)
	return tensor.LinearActivation(x, w, b, activation)
}

// checkSequence panics unless x (what names it) is a sequence of dModel
// features, batched ([seq, N, dModel] or [N, seq, dModel]) or not.
func checkSequence(layer, what, seq string, x *tensor.Tensor, dModel int, batchFirst bool) {
	layout := fmt.Sprintf("[%s, N, %d] (or [%s, %d] unbatched)", seq, dModel, seq, dModel)
	if batchFirst {
		layout = fmt.Sprintf("[N, %s, %d] (or [%s, %d] unbatched)", seq, dModel, seq, dModel)
	}
	if x == nil {
		shapeError(layer, "expects %s %s, got nil", what, layout)
	}
	if s := x.Shape(); (len(s) != 2 && len(s) != 3) || s[len(s)-1] != dModel {
		shapeError(layer, "expects %s %s, got %v", what, layout, s)
	}
}

// EncoderMasks are the optional masks of a transformer encoder's self
// attention (PyTorch's src_mask, src_key_padding_mask and is_causal); see
// AttentionOptions for their shapes and conventions.
type EncoderMasks struct {
	// Mask is src_mask: [S, S] or [N·nhead, S, S], Bool true = not allowed,
	// or float added to the scores.
	Mask *tensor.Tensor
	// KeyPaddingMask is src_key_padding_mask: [N, S] ([S] unbatched), Bool
	// true = padding, or float added to the scores.
	KeyPaddingMask *tensor.Tensor
	// IsCausal masks every position's attention to later positions (on
	// top of Mask, when both are given).
	IsCausal bool
}

// TransformerEncoderLayer is PyTorch's torch.nn.TransformerEncoderLayer:
// self-attention then a feed-forward block, linear2(dropout(activation(
// linear1(x)))), each wrapped in a residual connection with a layer norm
// after it (or before the block with NormFirst). Its sub-modules carry
// PyTorch's names (self_attn, linear1, linear2, norm1, norm2, and the
// parameterless dropout, dropout1, dropout2), so state dicts map one to
// one. Dropout acts in training mode only (Train, Eval).
type TransformerEncoderLayer struct {
	SelfAttn *MultiHeadAttention `kiln:"self_attn"`
	Linear1  *Linear             `kiln:"linear1"`
	Dropout  *Dropout            `kiln:"dropout"`
	Linear2  *Linear             `kiln:"linear2"`
	Norm1    *LayerNorm          `kiln:"norm1"`
	Norm2    *LayerNorm          `kiln:"norm2"`
	Dropout1 *Dropout            `kiln:"dropout1"`
	Dropout2 *Dropout            `kiln:"dropout2"`

	Activation string `kiln:"-"` // "relu" or "gelu"
	NormFirst  bool   `kiln:"-"`
}

// NewTransformerEncoderLayer returns an encoder layer of width dModel with
// nhead attention heads on dev, each sub-module initialised as PyTorch
// initialises it. It panics with ErrArgument when nhead does not divide
// dModel or the config is invalid (unknown activation, dropout outside
// [0, 1)).
func NewTransformerEncoderLayer(dev tensor.Device, dModel, nhead int, cfg ...TransformerLayerConfig) *TransformerEncoderLayer {
	var c TransformerLayerConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c = c.normalized("nn.NewTransformerEncoderLayer", dModel, nhead)
	p := newTransformerParts(dev, dModel, 2, c)
	return &TransformerEncoderLayer{
		SelfAttn: NewMultiHeadAttention(dev, dModel, nhead,
			MultiHeadAttentionConfig{Dropout: c.Dropout, BatchFirst: c.BatchFirst, DType: c.DType}),
		Linear1: p.linear1, Dropout: p.dropout, Linear2: p.linear2,
		Norm1: p.norms[0], Norm2: p.norms[1],
		Dropout1: NewDropout(c.Dropout), Dropout2: NewDropout(c.Dropout),
		Activation: c.Activation, NormFirst: c.NormFirst,
	}
}

// config recovers the layer's configuration from its modules.
func (l *TransformerEncoderLayer) config() TransformerLayerConfig {
	return TransformerLayerConfig{DimFeedforward: l.Linear1.Weight.Dim(0), Dropout: l.Dropout.P, NoDropout: l.Dropout.P == 0,
		Activation: l.Activation, LayerNormEps: l.Norm1.Eps, BatchFirst: l.SelfAttn.BatchFirst, NormFirst: l.NormFirst,
		DType: l.SelfAttn.InProjWeight.DType()}
}

// Forward applies the layer to src [S, N, E] ([N, S, E] with BatchFirst,
// [S, E] unbatched) without masks. It panics with a *tensor.Error naming
// nn.TransformerEncoderLayer when src does not have dModel features.
func (l *TransformerEncoderLayer) Forward(src *tensor.Tensor) *tensor.Tensor {
	return l.ForwardMasked(src, EncoderMasks{})
}

// ForwardMasked applies the layer to src with masks on its self-attention
// (see EncoderMasks), and panics as Forward does (and as
// MultiHeadAttention.Forward does for masks that do not fit).
func (l *TransformerEncoderLayer) ForwardMasked(src *tensor.Tensor, m EncoderMasks) *tensor.Tensor {
	checkSequence("TransformerEncoderLayer", "src", "S", src, l.SelfAttn.EmbedDim, l.SelfAttn.BatchFirst)
	x := src
	if l.NormFirst {
		x = x.Add(l.selfAttention(l.Norm1.Forward(x), m))
		return x.Add(l.feedForward(l.Norm2.Forward(x)))
	}
	x = l.Norm1.Forward(x.Add(l.selfAttention(x, m)))
	return l.Norm2.Forward(x.Add(l.feedForward(x)))
}

func (l *TransformerEncoderLayer) selfAttention(x *tensor.Tensor, m EncoderMasks) *tensor.Tensor {
	out, _ := l.SelfAttn.Forward(x, x, x, AttentionOptions{AttentionMask: m.Mask, KeyPaddingMask: m.KeyPaddingMask,
		IsCausal: m.IsCausal, SkipWeights: true})
	return l.Dropout1.Forward(out)
}

func (l *TransformerEncoderLayer) feedForward(x *tensor.Tensor) *tensor.Tensor {
	h := l.Dropout.Forward(linearActivate(l.Linear1, x, l.Activation))
	return l.Dropout2.Forward(l.Linear2.Forward(h))
}

// TransformerEncoder is PyTorch's torch.nn.TransformerEncoder: a stack of
// encoder layers (named layers.0, layers.1, … as in PyTorch) applied in
// turn with the same masks, then an optional final layer norm (norm).
type TransformerEncoder struct {
	Layers []*TransformerEncoderLayer `kiln:"layers"`
	Norm   *LayerNorm                 `kiln:"norm"` // nil for none
}

// NewTransformerEncoder returns a stack of numLayers encoder layers: layer
// itself is the first, and the others are copies of it (same
// configuration and, as PyTorch's deep copies, the same initial values), so
// layer must not be used elsewhere. norm, which may be nil, is applied to
// the output. It panics with ErrArgument when numLayers < 1 or layer is nil.
func NewTransformerEncoder(layer *TransformerEncoderLayer, numLayers int, norm *LayerNorm) *TransformerEncoder {
	if layer == nil || numLayers < 1 {
		panic(&tensor.Error{Op: "nn.NewTransformerEncoder", Msg: fmt.Sprintf("needs a layer and numLayers ≥ 1, got %d", numLayers),
			Err: tensor.ErrArgument})
	}
	e := &TransformerEncoder{Layers: []*TransformerEncoderLayer{layer}, Norm: norm}
	for range numLayers - 1 {
		c := NewTransformerEncoderLayer(layer.SelfAttn.InProjWeight.Device(), layer.SelfAttn.EmbedDim,
			layer.SelfAttn.NumHeads, layer.config())
		copyState("nn.NewTransformerEncoder", c, layer)
		e.Layers = append(e.Layers, c)
	}
	return e
}

// copyState copies src's parameters and training mode into dst, a module
// of the same structure.
func copyState(op string, dst, src any) {
	sd := StateDict(src)
	defer func() {
		for _, t := range sd {
			t.Release()
		}
	}()
	if _, _, err := LoadStateDict(dst, sd); err != nil {
		panic(&tensor.Error{Op: op, Msg: "copying the layer: " + err.Error(), Err: tensor.ErrArgument})
	}
	if IsTraining(src) {
		Train(dst)
	} else {
		Eval(dst)
	}
}

// Forward applies the layers and the final norm to src, shaped as for
// TransformerEncoderLayer.Forward.
func (e *TransformerEncoder) Forward(src *tensor.Tensor) *tensor.Tensor {
	return e.ForwardMasked(src, EncoderMasks{})
}

// ForwardMasked applies the layers, each with the masks m, and the final
// norm to src.
func (e *TransformerEncoder) ForwardMasked(src *tensor.Tensor, m EncoderMasks) *tensor.Tensor {
	x := src
	for _, l := range e.Layers {
		x = l.ForwardMasked(x, m)
	}
	if e.Norm != nil {
		x = e.Norm.Forward(x)
	}
	return x
}

// DecoderMasks are the optional masks of a transformer decoder (PyTorch's
// tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
// tgt_is_causal and memory_is_causal); see AttentionOptions for their
// shapes and conventions.
type DecoderMasks struct {
	// TargetMask masks the self-attention: [T, T] or [N·nhead, T, T].
	TargetMask *tensor.Tensor
	// MemoryMask masks the attention to the memory: [T, S] or
	// [N·nhead, T, S].
	MemoryMask *tensor.Tensor
	// TargetKeyPaddingMask marks padding in the target: [N, T] ([T]
	// unbatched).
	TargetKeyPaddingMask *tensor.Tensor
	// MemoryKeyPaddingMask marks padding in the memory: [N, S] ([S]
	// unbatched).
	MemoryKeyPaddingMask *tensor.Tensor
	// TargetIsCausal applies the causal mask to the self-attention (on top
	// of TargetMask, when both are given).
	TargetIsCausal bool
	// MemoryIsCausal applies the causal mask, aligned at the end of the
	// memory, to the attention to the memory.
	MemoryIsCausal bool
}

// TransformerDecoderLayer is PyTorch's torch.nn.TransformerDecoderLayer:
// self-attention over the target, attention from the target to the
// memory (the encoder's output), then a feed-forward block, each wrapped
// in a residual connection with a layer norm after it (or before the
// block with NormFirst). Its sub-modules carry PyTorch's names (self_attn,
// multihead_attn, linear1, linear2, norm1, norm2, norm3, and the
// parameterless dropout, dropout1, dropout2, dropout3).
type TransformerDecoderLayer struct {
	SelfAttn  *MultiHeadAttention `kiln:"self_attn"`
	CrossAttn *MultiHeadAttention `kiln:"multihead_attn"`
	Linear1   *Linear             `kiln:"linear1"`
	Dropout   *Dropout            `kiln:"dropout"`
	Linear2   *Linear             `kiln:"linear2"`
	Norm1     *LayerNorm          `kiln:"norm1"`
	Norm2     *LayerNorm          `kiln:"norm2"`
	Norm3     *LayerNorm          `kiln:"norm3"`
	Dropout1  *Dropout            `kiln:"dropout1"`
	Dropout2  *Dropout            `kiln:"dropout2"`
	Dropout3  *Dropout            `kiln:"dropout3"`

	Activation string `kiln:"-"` // "relu" or "gelu"
	NormFirst  bool   `kiln:"-"`
}

// NewTransformerDecoderLayer returns a decoder layer of width dModel with
// nhead attention heads on dev, initialised as PyTorch initialises it; it
// panics as NewTransformerEncoderLayer does.
func NewTransformerDecoderLayer(dev tensor.Device, dModel, nhead int, cfg ...TransformerLayerConfig) *TransformerDecoderLayer {
	var c TransformerLayerConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c = c.normalized("nn.NewTransformerDecoderLayer", dModel, nhead)
	mc := MultiHeadAttentionConfig{Dropout: c.Dropout, BatchFirst: c.BatchFirst, DType: c.DType}
	self := NewMultiHeadAttention(dev, dModel, nhead, mc)
	cross := NewMultiHeadAttention(dev, dModel, nhead, mc)
	p := newTransformerParts(dev, dModel, 3, c)
	return &TransformerDecoderLayer{
		SelfAttn: self, CrossAttn: cross,
		Linear1: p.linear1, Dropout: p.dropout, Linear2: p.linear2,
		Norm1: p.norms[0], Norm2: p.norms[1], Norm3: p.norms[2],
		Dropout1: NewDropout(c.Dropout), Dropout2: NewDropout(c.Dropout), Dropout3: NewDropout(c.Dropout),
		Activation: c.Activation, NormFirst: c.NormFirst,
	}
}

func (l *TransformerDecoderLayer) config() TransformerLayerConfig {
	return TransformerLayerConfig{DimFeedforward: l.Linear1.Weight.Dim(0), Dropout: l.Dropout.P, NoDropout: l.Dropout.P == 0,
		Activation: l.Activation, LayerNormEps: l.Norm1.Eps, BatchFirst: l.SelfAttn.BatchFirst, NormFirst: l.NormFirst,
		DType: l.SelfAttn.InProjWeight.DType()}
}

// Forward applies the layer to the target tgt [T, N, E] ([N, T, E] with
// BatchFirst, [T, E] unbatched) and the memory [S, N, E] (in the same
// layout) without masks. It panics with a *tensor.Error naming
// nn.TransformerDecoderLayer when tgt or memory does not have dModel
// features.
func (l *TransformerDecoderLayer) Forward(tgt, memory *tensor.Tensor) *tensor.Tensor {
	return l.ForwardMasked(tgt, memory, DecoderMasks{})
}

// ForwardMasked applies the layer with masks (see DecoderMasks), and
// panics as Forward does (and as MultiHeadAttention.Forward does for
// masks that do not fit).
func (l *TransformerDecoderLayer) ForwardMasked(tgt, memory *tensor.Tensor, m DecoderMasks) *tensor.Tensor {
	return l.ForwardCached(tgt, memory, m, nil)
}

// ForwardCached is ForwardMasked for incremental decoding: tgt holds only
// the new target positions, and the self-attention appends their keys and
// values to cache and attends over everything it holds (see KVCache; with
// TargetIsCausal the new positions see the cached ones). TargetMask and
// TargetKeyPaddingMask then cover all target positions so far. A nil cache
// makes it ForwardMasked.
func (l *TransformerDecoderLayer) ForwardCached(tgt, memory *tensor.Tensor, m DecoderMasks, cache *KVCache) *tensor.Tensor {
	e, bf := l.SelfAttn.EmbedDim, l.SelfAttn.BatchFirst
	checkSequence("TransformerDecoderLayer", "tgt", "T", tgt, e, bf)
	checkSequence("TransformerDecoderLayer", "memory", "S", memory, e, bf)
	x := tgt
	if l.NormFirst {
		x = x.Add(l.selfAttention(l.Norm1.Forward(x), m, cache))
		x = x.Add(l.crossAttention(l.Norm2.Forward(x), memory, m))
		return x.Add(l.feedForward(l.Norm3.Forward(x)))
	}
	x = l.Norm1.Forward(x.Add(l.selfAttention(x, m, cache)))
	x = l.Norm2.Forward(x.Add(l.crossAttention(x, memory, m)))
	return l.Norm3.Forward(x.Add(l.feedForward(x)))
}

func (l *TransformerDecoderLayer) selfAttention(x *tensor.Tensor, m DecoderMasks, cache *KVCache) *tensor.Tensor {
	out, _ := l.SelfAttn.Forward(x, x, x, AttentionOptions{AttentionMask: m.TargetMask, KeyPaddingMask: m.TargetKeyPaddingMask,
		IsCausal: m.TargetIsCausal, SkipWeights: true, Cache: cache})
	return l.Dropout1.Forward(out)
}

func (l *TransformerDecoderLayer) crossAttention(x, memory *tensor.Tensor, m DecoderMasks) *tensor.Tensor {
	out, _ := l.CrossAttn.Forward(x, memory, memory, AttentionOptions{AttentionMask: m.MemoryMask,
		KeyPaddingMask: m.MemoryKeyPaddingMask, IsCausal: m.MemoryIsCausal, SkipWeights: true})
	return l.Dropout2.Forward(out)
}

func (l *TransformerDecoderLayer) feedForward(x *tensor.Tensor) *tensor.Tensor {
	h := l.Dropout.Forward(linearActivate(l.Linear1, x, l.Activation))
	return l.Dropout3.Forward(l.Linear2.Forward(h))
}

// TransformerDecoder is PyTorch's torch.nn.TransformerDecoder: a stack of
// decoder layers (layers.0, layers.1, …) applied in turn, each to the
// previous one's output and the same memory and masks, then an optional
// final layer norm (norm).
type TransformerDecoder struct {
	Layers []*TransformerDecoderLayer `kiln:"layers"`
	Norm   *LayerNorm                 `kiln:"norm"` // nil for none
}

// NewTransformerDecoder returns a stack of numLayers decoder layers, layer
// itself first and copies of it after, as NewTransformerEncoder does.
func NewTransformerDecoder(layer *TransformerDecoderLayer, numLayers int, norm *LayerNorm) *TransformerDecoder {
	if layer == nil || numLayers < 1 {
		panic(&tensor.Error{Op: "nn.NewTransformerDecoder", Msg: fmt.Sprintf("needs a layer and numLayers ≥ 1, got %d", numLayers),
			Err: tensor.ErrArgument})
	}
	d := &TransformerDecoder{Layers: []*TransformerDecoderLayer{layer}, Norm: norm}
	for range numLayers - 1 {
		c := NewTransformerDecoderLayer(layer.SelfAttn.InProjWeight.Device(), layer.SelfAttn.EmbedDim,
			layer.SelfAttn.NumHeads, layer.config())
		copyState("nn.NewTransformerDecoder", c, layer)
		d.Layers = append(d.Layers, c)
	}
	return d
}

// Forward applies the layers and the final norm to tgt and memory, shaped
// as for TransformerDecoderLayer.Forward.
func (d *TransformerDecoder) Forward(tgt, memory *tensor.Tensor) *tensor.Tensor {
	return d.ForwardMasked(tgt, memory, DecoderMasks{})
}

// ForwardMasked applies the layers, each with the masks m, and the final
// norm.
func (d *TransformerDecoder) ForwardMasked(tgt, memory *tensor.Tensor, m DecoderMasks) *tensor.Tensor {
	return d.ForwardCached(tgt, memory, m, nil)
}

// DecoderCache holds the self-attention keys and values of every layer of
// a TransformerDecoder for incremental decoding (see
// TransformerDecoder.ForwardCached). Its zero value is an empty cache; it
// owns its tensors (see KVCache) until Reset.
type DecoderCache struct {
	Layers []KVCache
}

// Len returns the number of cached target positions.
func (c *DecoderCache) Len() int {
	if len(c.Layers) == 0 {
		return 0
	}
	return c.Layers[0].Len()
}

// Reset releases the cached tensors and empties the cache.
func (c *DecoderCache) Reset() {
	for i := range c.Layers {
		c.Layers[i].Reset()
	}
	c.Layers = nil
}

// ForwardCached is ForwardMasked for incremental (autoregressive)
// decoding: tgt holds only the new target positions (typically the last
// generated token), and each layer's self-attention attends over the
// positions cache holds plus the new ones, which it appends. With
// TargetIsCausal, decoding a sequence piece by piece gives what one
// causal call over the whole sequence gives. The attention to the memory
// is recomputed at every call. A nil cache makes it ForwardMasked.
func (d *TransformerDecoder) ForwardCached(tgt, memory *tensor.Tensor, m DecoderMasks, cache *DecoderCache) *tensor.Tensor {
	if cache != nil && len(cache.Layers) == 0 {
		cache.Layers = make([]KVCache, len(d.Layers))
	}
	if cache != nil && len(cache.Layers) != len(d.Layers) {
		panic(&tensor.Error{Op: "nn.TransformerDecoder", Msg: fmt.Sprintf("the cache holds %d layers, the decoder has %d",
			len(cache.Layers), len(d.Layers)), Err: tensor.ErrArgument})
	}
	x := tgt
	for i, l := range d.Layers {
		var c *KVCache
		if cache != nil {
			c = &cache.Layers[i]
		}
		x = l.ForwardCached(x, memory, m, c)
	}
	if d.Norm != nil {
		x = d.Norm.Forward(x)
	}
	return x
}
