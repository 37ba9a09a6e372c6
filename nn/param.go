package nn

import (
	"fmt"
	"sync/atomic"

	"github.com/kiln-ml/kiln/tensor"
)

// Param is a tensor that belongs to a model: a trainable parameter (a
// layer's weight), or a buffer, non-trainable state that is saved in state
// dicts (batch norm's running statistics).
//
// Param embeds the tensor, so layer code uses it directly
// (l.Weight.Matmul(x)); p.Tensor is the *tensor.Tensor itself. Assign to
// p.Tensor only through Set, which keeps the gradient flag and the id.
//
// Every Param has an id, unique in the process and kept for its lifetime
// (Set, ToDevice and freezing keep it), by which optimizers key their state.
// Make Params with NewParam or NewBuffer: the zero Param has id 0 and no
// tensor.
type Param struct {
	*tensor.Tensor
	id     uint64
	buffer bool
	frozen bool
}

var lastParamID atomic.Uint64

// NewParam returns a trainable parameter holding t. When t lives on an
// autodiff device view (Device.Autodiff) and is floating point, NewParam
// calls t.RequireGrad, so Backward computes its gradient; integer tensors
// never require gradients (make them buffers instead). The Param takes t as
// it is: t keeps its Scope membership, so build models outside the Scopes
// of training steps. NewParam panics with a *tensor.Error (ErrArgument or
// ErrReleased) when t is nil or released.
func NewParam(t *tensor.Tensor) *Param {
	checkTensor("nn.NewParam", t)
	p := &Param{id: lastParamID.Add(1)}
	p.Tensor = p.prepare(t)
	return p
}

// NewBuffer returns a buffer holding t: model state that is saved and
// loaded with the parameters and moved by ToDevice, but never trained and
// never given a gradient (a tensor that requires one is detached first).
// It panics like NewParam.
func NewBuffer(t *tensor.Tensor) *Param {
	checkTensor("nn.NewBuffer", t)
	p := &Param{id: lastParamID.Add(1), buffer: true}
	p.Tensor = p.prepare(t)
	return p
}

// ID returns p's identity: unique among the Params of the process and
// unchanged by Set, ToDevice, Freeze and loading state.
func (p *Param) ID() uint64 { return p.id }

// IsBuffer reports whether p is a buffer (see NewBuffer).
func (p *Param) IsBuffer() bool { return p.buffer }

// Frozen reports whether p is a parameter excluded from training (see
// SetFrozen). Buffers are never frozen.
func (p *Param) Frozen() bool { return p.frozen }

// Trainable reports whether an optimizer should update p: a parameter that
// is not frozen.
func (p *Param) Trainable() bool { return !p.buffer && !p.frozen }

// SetFrozen freezes (true) or unfreezes (false) the parameter p. A frozen
// parameter keeps its value and its place in state dicts but does not
// require gradients, so Backward neither computes its gradient nor
// back-propagates through ops whose only differentiable inputs are frozen
// (fine-tuning a head on a frozen backbone costs no backbone gradients),
// and TrainableParams leaves it out.
//
// Freezing a parameter on an autodiff device replaces p.Tensor with a view
// of the same storage outside any graph; that view belongs to the model,
// not to any Scope (release a model with Release). Unfreezing makes p.Tensor
// require gradients again. SetFrozen on a buffer does nothing: buffers are
// never trained.
func (p *Param) SetFrozen(frozen bool) {
	if p.buffer || p.frozen == frozen {
		return
	}
	p.frozen = frozen
	cur := p.Tensor
	if cur == nil || cur.Released() {
		return
	}
	if frozen {
		if cur.RequiresGrad() {
			var d *tensor.Tensor
			outsideScopes(func() { d = cur.Detach() })
			p.Tensor = d
			cur.Release()
		}
		return
	}
	p.Tensor = p.prepare(cur)
}

// Set replaces p's value with t, keeping p's id: after a device move, or to
// install new weights of another shape. A trainable parameter's new value
// requires gradients when it lives on an autodiff device (as in NewParam);
// a frozen parameter or a buffer gets a view of t outside any graph when t
// requires gradients. The tensor p held before is released (unless it is t)
// since the Param owned it; storage that t shares with it stays alive.
// Set panics with a *tensor.Error when t is nil or released.
func (p *Param) Set(t *tensor.Tensor) {
	checkTensor("nn.Param.Set", t)
	old := p.Tensor
	p.Tensor = p.prepare(t)
	if old != nil && old != p.Tensor && old != t {
		old.Release()
	}
}

// prepare returns t as p should hold it: requiring gradients for a
// trainable parameter on an autodiff view, detached for frozen parameters
// and buffers that were handed a tensor inside a graph.
func (p *Param) prepare(t *tensor.Tensor) *tensor.Tensor {
	if p.Trainable() {
		if t.Device().IsAutodiff() && t.DType().IsFloat() {
			t.RequireGrad()
		}
		return t
	}
	if t.RequiresGrad() {
		return t.Detach()
	}
	return t
}

// String describes p: its kind and id, then the tensor.
func (p *Param) String() string {
	if p == nil {
		return "nn.Param(nil)"
	}
	kind := "param"
	switch {
	case p.buffer:
		kind = "buffer"
	case p.frozen:
		kind = "frozen param"
	}
	return fmt.Sprintf("%s #%d: %v", kind, p.id, p.Tensor)
}

// checkTensor panics unless t is a live tensor.
func checkTensor(op string, t *tensor.Tensor) {
	if t == nil {
		panic(&tensor.Error{Op: op, Msg: "nil tensor", Err: tensor.ErrArgument})
	}
	if t.Released() {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("tensor %v %s was released", t.Shape(), t.DType()),
			Err: tensor.ErrReleased})
	}
}

// outsideScopes runs fn so that the tensors it creates belong to no Scope:
// nn uses it for the tensors it creates in place of a model's (ToDevice,
// SetFrozen), which must outlive the Scope of whatever step happens to move
// or freeze the model.
func outsideScopes(fn func()) { tensor.NoScope(fn) }
