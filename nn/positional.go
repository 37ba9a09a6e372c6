package nn

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// PositionalEncodingConfig configures a PositionalEncoding; the zero value
// of each field is the default.
type PositionalEncodingConfig struct {
	// MaxLen is the longest sequence (counting ForwardAt's offset) the
	// encoding accepts; 0 means 5000, as in PyTorch's tutorial module.
	MaxLen int `json:"max_len,omitempty"`
	// Dropout is the dropout probability applied to the sum in training
	// mode; default 0 (PyTorch's tutorial uses 0.1).
	Dropout float64 `json:"dropout,omitempty"`
	// BatchFirst makes the input [N, T, D] instead of [T, N, D].
	BatchFirst bool `json:"batch_first,omitempty"`
}

// PositionalEncoding adds the sinusoidal position encoding of "Attention
// Is All You Need" to a sequence of DModel features, then applies
// dropout:
//
//	PE[pos, 2i]   = sin(pos / 10000^(2i/DModel))
//	PE[pos, 2i+1] = cos(pos / 10000^(2i/DModel))
//
// as PyTorch's tutorial module (torch.nn has none) computes it, but in
// float64 before rounding to the input's dtype, which keeps late positions
// accurate. It has no parameters: the table is computed for each call (no
// buffer named "pe" appears in state dicts, and moving a model needs
// nothing).
type PositionalEncoding struct {
	DModel     int      `kiln:"-"`
	MaxLen     int      `kiln:"-"`
	BatchFirst bool     `kiln:"-"`
	Dropout    *Dropout `kiln:"dropout"`
}

// NewPositionalEncoding returns the encoding for dModel features. It
// panics with ErrArgument when dModel is not a positive even number, MaxLen
// is negative or Dropout is outside [0, 1).
func NewPositionalEncoding(dModel int, cfg ...PositionalEncodingConfig) *PositionalEncoding {
	var c PositionalEncodingConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if dModel <= 0 || dModel%2 != 0 || c.MaxLen < 0 {
		panic(&tensor.Error{Op: "nn.NewPositionalEncoding", Msg: fmt.Sprintf("dModel %d must be positive and even, MaxLen %d not negative",
			dModel, c.MaxLen), Err: tensor.ErrArgument})
	}
	if c.MaxLen == 0 {
		c.MaxLen = 5000
	}
	return &PositionalEncoding{DModel: dModel, MaxLen: c.MaxLen, BatchFirst: c.BatchFirst, Dropout: NewDropout(c.Dropout)}
}

// Forward returns x plus the encoding of positions 0…T−1, with dropout in
// training mode. x is [T, N, DModel] ([N, T, DModel] with BatchFirst) or
// [T, DModel] unbatched. It panics with a *tensor.Error naming
// nn.PositionalEncoding (ErrShape) when x has another shape or T exceeds
// MaxLen, and with ErrDType for a non-float x.
func (p *PositionalEncoding) Forward(x *tensor.Tensor) *tensor.Tensor { return p.ForwardAt(x, 0) }

// ForwardAt is Forward for a sequence that starts at position start, as
// the new tokens of an incremental decoding step do.
func (p *PositionalEncoding) ForwardAt(x *tensor.Tensor, start int) *tensor.Tensor {
	layout := fmt.Sprintf("[T, N, %d] (or [T, %d] unbatched)", p.DModel, p.DModel)
	if p.BatchFirst {
		layout = fmt.Sprintf("[N, T, %d] (or [T, %d] unbatched)", p.DModel, p.DModel)
	}
	if x == nil {
		shapeError("PositionalEncoding", "expects input %s, got nil", layout)
	}
	s := x.Shape()
	if (len(s) != 2 && len(s) != 3) || s[len(s)-1] != p.DModel {
		shapeError("PositionalEncoding", "expects input %s, got %v", layout, s)
	}
	checkFloat("PositionalEncoding", x)
	seq := 0
	if len(s) == 3 && p.BatchFirst {
		seq = 1
	}
	t := s[seq]
	if start < 0 || start+t > p.MaxLen {
		shapeError("PositionalEncoding", "positions %d…%d of input %v exceed MaxLen %d", start, start+t-1, s, p.MaxLen)
	}
	table := make([]float64, t*p.DModel)
	for pos := range t {
		for i := 0; i < p.DModel; i += 2 {
			a := float64(start+pos) * math.Exp(-math.Log(10000)*float64(i)/float64(p.DModel))
			table[pos*p.DModel+i] = math.Sin(a)
			table[pos*p.DModel+i+1] = math.Cos(a)
		}
	}
	shape := []int{t, p.DModel}
	if len(s) == 3 && !p.BatchFirst {
		shape = []int{t, 1, p.DModel}
	}
	pe := hostTable(x, table, shape)
	return p.Dropout.Forward(x.Add(pe))
}

// hostTable uploads values computed on the host to x's device, in x's
// dtype.
func hostTable(x *tensor.Tensor, values []float64, shape []int) *tensor.Tensor {
	t := tensor.FromFloat64s(x.Device().Inner(), values, shape...).Reshape(shape...)
	if x.DType() != tensor.Float64 {
		t = t.To(x.DType())
	}
	return t
}

// checkFloat panics with ErrDType unless x is floating point.
func checkFloat(layer string, x *tensor.Tensor) {
	if !x.DType().IsFloat() {
		panic(&tensor.Error{Op: "nn." + layer, Msg: fmt.Sprintf("expects a floating-point input, got %s", x.DType()),
			Err: tensor.ErrDType})
	}
}

// RotaryEncodingConfig configures a RotaryEncoding; the zero value of each
// field is the default.
type RotaryEncodingConfig struct {
	// Base is the base of the rotation frequencies θ_i = Base^(−2i/Dim); 0
	// means 10000.
	Base float64 `json:"base,omitempty"`
	// HalfSplit pairs feature i with feature i + Dim/2 (the "rotate_half"
	// layout of Hugging Face's Llama and GPT-NeoX) instead of the default
	// adjacent pairs (2i, 2i+1), the layout of Meta's Llama reference code
	// and Burn's RotaryEncoding. Weights converted from one layout to the
	// other permute the rows of the query and key projections.
	HalfSplit bool `json:"half_split,omitempty"`
}

// RotaryEncoding is rotary position embedding (RoPE, RoFormer): each pair
// of features (a, b) of the vector at position m is rotated by the angle
// m·θ_i,
//
//	a' = a·cos(m·θ_i) − b·sin(m·θ_i)
//	b' = a·sin(m·θ_i) + b·cos(m·θ_i),    θ_i = Base^(−2i/Dim),
//
// so the dot product of a rotated query and key depends on their relative
// position. Pairs are adjacent features (2i, 2i+1) by default, or (i,
// i + Dim/2) with HalfSplit. It is applied to the queries and keys of
// attention, per head: inputs are [..., T, Dim], the sequence on the
// second-to-last dimension ([N, heads, T, head_dim]; transpose a
// [N, T, heads, head_dim] tensor first). The angles are computed in
// float64 for each call; there are no parameters and no length limit.
type RotaryEncoding struct {
	Dim       int     `kiln:"-"`
	Base      float64 `kiln:"-"`
	HalfSplit bool    `kiln:"-"`
}

// NewRotaryEncoding returns the rotary encoding of dim features (a head's
// dimension). It panics with ErrArgument when dim is not a positive even
// number or Base is negative.
func NewRotaryEncoding(dim int, cfg ...RotaryEncodingConfig) *RotaryEncoding {
	var c RotaryEncodingConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if dim <= 0 || dim%2 != 0 || c.Base < 0 {
		panic(&tensor.Error{Op: "nn.NewRotaryEncoding", Msg: fmt.Sprintf("dim %d must be positive and even, Base %v not negative",
			dim, c.Base), Err: tensor.ErrArgument})
	}
	if c.Base == 0 {
		c.Base = 10000
	}
	return &RotaryEncoding{Dim: dim, Base: c.Base, HalfSplit: c.HalfSplit}
}

// Forward rotates x [..., T, Dim] for positions 0…T−1. It panics with a
// *tensor.Error naming nn.RotaryEncoding (ErrShape) when x has fewer than
// two dimensions or its last is not Dim, and with ErrDType for a non-float
// x.
func (r *RotaryEncoding) Forward(x *tensor.Tensor) *tensor.Tensor { return r.ForwardAt(x, 0) }

// ForwardAt rotates x for positions start…start+T−1, as the new tokens of
// an incremental decoding step (with a KVCache) need. It panics as
// Forward does, and with ErrArgument for a negative start.
func (r *RotaryEncoding) ForwardAt(x *tensor.Tensor, start int) *tensor.Tensor {
	if x == nil {
		shapeError("RotaryEncoding", "expects input [..., T, %d], got nil", r.Dim)
	}
	s := x.Shape()
	if len(s) < 2 || s[len(s)-1] != r.Dim {
		shapeError("RotaryEncoding", "expects input [..., T, %d], got %v", r.Dim, s)
	}
	checkFloat("RotaryEncoding", x)
	if start < 0 {
		panic(&tensor.Error{Op: "nn.RotaryEncoding", Msg: fmt.Sprintf("start position %d is negative", start), Err: tensor.ErrArgument})
	}
	t, d, half := s[len(s)-2], r.Dim, r.Dim/2
	// x' = x ⊙ cos + partner(x) ⊙ sin, with the sign of each sine folded
	// into the table: the first of a pair gets −sin, the second +sin.
	cos := make([]float64, t*d)
	sin := make([]float64, t*d)
	for pos := range t {
		for i := range half {
			a := float64(start+pos) * math.Pow(r.Base, -2*float64(i)/float64(d))
			first, second := 2*i, 2*i+1
			if r.HalfSplit {
				first, second = i, i+half
			}
			row := pos * d
			cos[row+first], cos[row+second] = math.Cos(a), math.Cos(a)
			sin[row+first], sin[row+second] = -math.Sin(a), math.Sin(a)
		}
	}
	var partner *tensor.Tensor
	if r.HalfSplit {
		partner = x.Roll(half, -1) // (x_{i+D/2}, …, x_0, …)
	} else {
		pairs := append(s[:len(s)-1:len(s)-1], half, 2)
		partner = x.Reshape(pairs...).Flip(-1).Reshape(s...) // (x_1, x_0, x_3, x_2, …)
	}
	return x.Mul(hostTable(x, cos, []int{t, d})).Add(partner.Mul(hostTable(x, sin, []int{t, d})))
}
