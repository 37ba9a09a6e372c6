package nn

import "github.com/kiln-ml/kiln/tensor"

// EmbeddingConfig configures an Embedding; the zero value is PyTorch's
// default (no padding index).
type EmbeddingConfig struct {
	// Padded marks the row PaddingIndex as padding, as PyTorch's
	// padding_idx: it starts at zeros and never receives a gradient, so it
	// stays what it is (zeros, or what a state dict loads into it).
	Padded bool `json:"padded,omitempty"`
	// PaddingIndex is the padding row when Padded; negative counts from
	// the end, as in PyTorch.
	PaddingIndex int `json:"padding_index,omitempty"`
	// WeightInit defaults to N(0, 1), as PyTorch; the padding row is
	// zeroed after it.
	WeightInit Initializer `json:"-"`
	// DType is the weight's dtype; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// Embedding is a lookup table, torch.nn.Embedding: Forward maps integer
// indices of any shape to the rows of Weight [Num, Dim].
type Embedding struct {
	Weight *Param `kiln:"weight"`
	// PaddingIndex is the padding row (in [0, Num)), or −1 for none.
	PaddingIndex int `kiln:"-"`
}

// NewEmbedding returns an Embedding of num vectors of size dim. It panics
// with ErrArgument for non-positive sizes or a padding index outside
// [−num, num).
func NewEmbedding(dev tensor.Device, num, dim int, cfg ...EmbeddingConfig) *Embedding {
	const op = "nn.NewEmbedding"
	var c EmbeddingConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if num <= 0 || dim <= 0 {
		argError(op, "sizes must be positive, got num=%d dim=%d", num, dim)
	}
	pad := -1
	if c.Padded {
		pad = c.PaddingIndex
		if pad < -num || pad >= num {
			argError(op, "padding index %d outside [%d, %d)", pad, -num, num)
		}
		if pad < 0 {
			pad += num
		}
	}
	init := c.WeightInit
	if init == nil {
		init = Normal{Mean: 0, Std: 1}
	}
	w := convert(init.Init(dev, []int{num, dim}, dim, num), c.DType)
	if pad >= 0 {
		row := w.Detach().Narrow(0, pad, 1)
		z := tensor.ZerosOf(dev.Inner(), w.DType(), 1, dim)
		row.Assign(z)
		z.Release()
		row.Release()
	}
	return &Embedding{Weight: NewParam(w), PaddingIndex: pad}
}

// Forward returns the rows of Weight picked by indices (Int64, Int32,
// Int16, Int8 or Uint8, any shape): an [..., Dim] tensor. It panics with a *tensor.Error
// whose Op is "nn.Embedding" for non-integer indices; an index outside
// [0, Num) is a device error reported at the next sync.
func (e *Embedding) Forward(indices *tensor.Tensor) *tensor.Tensor {
	if !indices.DType().IsInt() {
		dtypeError("Embedding", "expects integer indices (int64, int32, int16, int8 or uint8), got %v %s", indices.Shape(),
			indices.DType())
	}
	if e.PaddingIndex >= 0 {
		return tensor.EmbeddingPadded(e.Weight.Tensor, indices, e.PaddingIndex)
	}
	return tensor.Embedding(e.Weight.Tensor, indices)
}
