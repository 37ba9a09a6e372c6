package nn

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// SwiGLUConfig configures a SwiGLU; the zero value of each field is the
// default.
type SwiGLUConfig struct {
	// Bias gives the three projections biases; by default they have none,
	// as in Llama.
	Bias bool `json:"bias,omitempty"`
	// DType is the parameters' dtype; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// SwiGLU is the gated feed-forward block of Llama and PaLM (Shazeer,
// "GLU Variants Improve Transformer"):
//
//	out = W2(silu(W1·x) ⊙ W3·x)
//
// with W1 (the gate) and W3 (the up projection) from Dim to Hidden
// features and W2 (the down projection) back to Dim. The sub-modules are
// named w1, w2 and w3, as in Meta's Llama checkpoints
// (layers.{i}.feed_forward.w1.weight), and initialised as PyTorch
// initialises a Linear.
type SwiGLU struct {
	W1 *Linear `kiln:"w1"`
	W2 *Linear `kiln:"w2"`
	W3 *Linear `kiln:"w3"`
}

// NewSwiGLU returns a SwiGLU block of dim input and output features and
// hidden gated features on dev. It panics with ErrArgument for
// non-positive sizes.
func NewSwiGLU(dev tensor.Device, dim, hidden int, cfg ...SwiGLUConfig) *SwiGLU {
	var c SwiGLUConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if dim <= 0 || hidden <= 0 {
		panic(&tensor.Error{Op: "nn.NewSwiGLU", Msg: fmt.Sprintf("sizes must be positive, got dim=%d hidden=%d", dim, hidden),
			Err: tensor.ErrArgument})
	}
	lc := LinearConfig{NoBias: !c.Bias, DType: c.DType}
	return &SwiGLU{W1: NewLinear(dev, dim, hidden, lc), W2: NewLinear(dev, hidden, dim, lc), W3: NewLinear(dev, dim, hidden, lc)}
}

// Forward applies the block to x [..., Dim], giving [..., Dim]. It panics
// with a *tensor.Error naming nn.SwiGLU (ErrShape) when x's last dimension
// is not Dim.
func (s *SwiGLU) Forward(x *tensor.Tensor) *tensor.Tensor {
	dim := s.W1.Weight.Dim(1)
	if x == nil || x.Dims() == 0 || x.Dim(-1) != dim {
		var got any = "nil"
		if x != nil {
			got = x.Shape()
		}
		shapeError("SwiGLU", "expects input [..., %d], got %v", dim, got)
	}
	return s.W2.Forward(s.W1.Forward(x).Silu().Mul(s.W3.Forward(x)))
}
