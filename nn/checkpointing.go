package nn

import (
	"github.com/kiln-ml/kiln/tensor"
)

// Gradient checkpointing: a checkpointed module keeps only its input during
// the forward pass and recomputes its activations when Backward reaches it
// (torch.utils.checkpoint; Burn's checkpointing strategies). Training then
// holds one tensor per checkpointed block instead of every intermediate of
// every block, for the price of a second forward pass of each block.
// Gradients are those of the plain model: the recomputation replays the
// same dropout masks (see tensor.Checkpoint).

// Checkpoint returns fn(x) computed without keeping fn's intermediate
// activations for the backward pass, which recomputes them (see
// tensor.Checkpoint). The parameters fn uses must belong to modules (any
// models, as Params takes them): the trainable ones that require gradients
// receive theirs through the checkpoint. Without gradients to compute (no
// input or parameter requires them) it is fn(x). It panics with a
// *tensor.Error wrapping ErrArgument when fn (Op "nn.Checkpoint") or x (Op
// "tensor.Checkpoint") is nil, and during Backward when fn used a tensor requiring gradients that is
// neither x nor a parameter of modules.
func Checkpoint(fn func(x *tensor.Tensor) *tensor.Tensor, x *tensor.Tensor, modules ...any) *tensor.Tensor {
	if fn == nil {
		argError("nn.Checkpoint", "nil function")
	}
	// The parameters are passed to tensor.Checkpoint, which hands the
	// recomputation fresh leaf views of them; they are put in the Params
	// for the call, so the layers, which read their Params, compute with
	// them. That also makes a parameter that is itself computed (a LoRA
	// weight W + s·B·A, put in the Param by LoRA.Run, which has put W back
	// by the time Backward recomputes) recompute as it was computed.
	var owners []*Param
	var params []*tensor.Tensor
	seen := map[*Param]bool{}
	for _, m := range modules {
		for _, np := range Params(m) {
			t := np.Param.Tensor
			if t != nil && !t.Released() && t.RequiresGrad() && !seen[np.Param] {
				seen[np.Param] = true
				owners = append(owners, np.Param)
				params = append(params, t)
			}
		}
	}
	return tensor.Checkpoint(func(in, ps []*tensor.Tensor) *tensor.Tensor {
		saved := make([]*tensor.Tensor, len(owners))
		for i, p := range owners {
			saved[i], p.Tensor = p.Tensor, ps[i]
		}
		defer func() {
			for i, p := range owners {
				p.Tensor = saved[i]
			}
		}()
		return fn(in[0])
	}, []*tensor.Tensor{x}, params)
}

// Checkpointed runs the module it holds with gradient checkpointing: in
// training mode its Forward is Checkpoint(Module.Forward, x, Module); in
// evaluation mode (Eval on the Checkpointed, or on a module holding it),
// where nothing is trained, it is Module.Forward, so evaluation and ONNX
// export (which traces in evaluation mode) see the plain module. Wrapping a module adds
// the segment "Module" to its parameters' names; to checkpoint the layers
// of a model while keeping its state-dict names, use CheckpointedSequential
// or CheckpointedEncoder.
type Checkpointed struct {
	Mode
	Module Module
}

// NewCheckpointed returns m wrapped in a Checkpointed. It panics with
// ErrArgument when m is nil.
func NewCheckpointed(m Module) *Checkpointed {
	if m == nil {
		argError("nn.NewCheckpointed", "nil module")
	}
	return &Checkpointed{Module: m}
}

// Forward applies the wrapped module to x, checkpointed.
func (c *Checkpointed) Forward(x *tensor.Tensor) *tensor.Tensor {
	if !c.Training() || !IsTraining(c.Module) {
		return c.Module.Forward(x)
	}
	return Checkpoint(c.Module.Forward, x, c.Module)
}

// CheckpointedSequential is a Sequential whose layers each run
// checkpointed in training mode (IsTraining of the whole sequence, so the
// mode of its first mode-carrying layer, such as a Dropout; a sequence with
// none is always in training mode and exports to ONNX only converted back
// to a Sequential): the forward pass keeps each layer's input and output only.
// It is a slice of modules as Sequential is, so its state-dict names are
// Sequential's ("0.weight", …); convert between the two with a type
// conversion (CheckpointedSequential(seq), Sequential(cs)). Checkpoint
// layers that compute much from little (transformer blocks, residual
// stages); a checkpointed activation alone saves nothing, since its input
// is kept anyway.
type CheckpointedSequential []Module

// Forward applies the layers in order, each checkpointed; errors are those
// of Sequential.Forward.
func (s CheckpointedSequential) Forward(x *tensor.Tensor) *tensor.Tensor {
	if !IsTraining(Sequential(s)) {
		return Sequential(s).Forward(x)
	}
	wrapped := make(Sequential, len(s))
	for i, l := range s {
		wrapped[i] = checkpointedLayer{l}
	}
	return wrapped.Forward(x)
}

// checkpointedLayer runs one layer of a CheckpointedSequential.
type checkpointedLayer struct{ m Module }

func (c checkpointedLayer) Forward(x *tensor.Tensor) *tensor.Tensor {
	return Checkpoint(c.m.Forward, x, c.m)
}

// CheckpointedEncoder is a TransformerEncoder whose layers each run
// checkpointed in training mode (see Checkpointed; the final norm runs
// normally). It embeds the encoder, so
// its parameters keep the encoder's names (layers.0.self_attn.…) and
// state dicts load into either.
type CheckpointedEncoder struct {
	*TransformerEncoder
}

// NewCheckpointedEncoder returns e with checkpointed layers; e itself is
// shared, not copied. It panics with ErrArgument when e is nil.
func NewCheckpointedEncoder(e *TransformerEncoder) *CheckpointedEncoder {
	if e == nil {
		argError("nn.NewCheckpointedEncoder", "nil encoder")
	}
	return &CheckpointedEncoder{TransformerEncoder: e}
}

// Forward applies the checkpointed layers and the final norm to src, as
// TransformerEncoder.Forward does.
func (c *CheckpointedEncoder) Forward(src *tensor.Tensor) *tensor.Tensor {
	return c.ForwardMasked(src, EncoderMasks{})
}

// ForwardMasked applies the checkpointed layers, each with the masks m,
// and the final norm to src, as TransformerEncoder.ForwardMasked does.
func (c *CheckpointedEncoder) ForwardMasked(src *tensor.Tensor, m EncoderMasks) *tensor.Tensor {
	if !IsTraining(c.TransformerEncoder) {
		return c.TransformerEncoder.ForwardMasked(src, m)
	}
	x := src
	for _, l := range c.Layers {
		x = Checkpoint(func(h *tensor.Tensor) *tensor.Tensor { return l.ForwardMasked(h, m) }, x, l)
	}
	if c.Norm != nil {
		x = c.Norm.Forward(x)
	}
	return x
}
