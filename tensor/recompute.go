package tensor

import (
	"fmt"

	"github.com/kiln-ml/kiln/autodiff"
)

// Checkpoint runs fn(inputs, params) without keeping its intermediate
// results for the backward pass, and returns its output as one graph node,
// "checkpoint", whose inputs are inputs followed by params. Backward runs fn
// again on the saved inputs and params, with recording on, and
// back-propagates through that recomputation: gradients are those of fn
// itself, while the forward pass holds only fn's inputs and output instead
// of every activation inside it (torch.utils.checkpoint, Burn's
// checkpointing). The cost is a second forward pass of fn during Backward.
//
// params must list every tensor that requires gradients and that fn uses
// besides inputs (a module's parameters): their gradients flow through the
// checkpoint node to them. fn should compute with the params it is given:
// in the recomputation they are fresh leaf views of the same data, so the
// pass stops there even when a param is itself computed (a weight plus a
// low-rank update); fn may instead read a param that is a leaf from its
// closure, and its gradient still arrives.
// Random ops in fn draw the same numbers in the recomputation: the random
// streams of the devices of inputs and params are rewound to where they
// stood when fn first ran, and put back afterwards (random draws made on
// those devices by other goroutines at the same time break this). State
// that fn updates as a side effect (batch-norm running statistics) is
// updated a second time by the recomputation, as in PyTorch.
//
// When no input or param requires gradients, or one sits on a NoGrad view,
// Checkpoint just returns fn(inputs). fn runs inside a Scope: every tensor
// it creates except its output is released when it returns. Checkpoint
// panics with ErrArgument (Op "tensor.Checkpoint") when fn is nil, there
// are no inputs, an input or param is nil, or fn returns nil, and with
// ErrReleased for a released input. The recomputation panics with
// ErrArgument during Backward when fn used a tensor that requires gradients
// and is in neither inputs nor params (its gradient would be lost).
func Checkpoint(fn func(inputs, params []*Tensor) *Tensor, inputs, params []*Tensor) *Tensor {
	const op = "Checkpoint"
	if fn == nil {
		fail(op, ErrArgument, "nil function")
	}
	if len(inputs) == 0 {
		fail(op, ErrArgument, "no inputs: a checkpointed function needs at least one input tensor")
	}
	all := make([]*Tensor, 0, len(inputs)+len(params))
	all = append(all, inputs...)
	all = append(all, params...)
	need, noGrad := false, false
	var gradDev Device
	for i, t := range all {
		if t == nil {
			what := fmt.Sprintf("input %d", i)
			if i >= len(inputs) {
				what = fmt.Sprintf("param %d", i-len(inputs))
			}
			fail(op, ErrArgument, "%s is nil", what)
		}
		t.live(op)
		noGrad = noGrad || t.dev.noGrad
		if t.requiresGrad && !need {
			need, gradDev = true, t.dev
		}
	}
	need = need && !noGrad
	if !need {
		out := fn(inputs, params)
		if out == nil {
			fail(op, ErrArgument, "the function returned nil")
		}
		return out
	}
	rng := saveRNG(all)
	// Forward: fn sees views on NoGrad devices, so nothing it computes is
	// recorded, and its temporaries are released when it returns.
	var out *Tensor
	Scope(func() {
		free := make([]*Tensor, len(inputs))
		for i, in := range inputs {
			v := in.newView(in.shape, in.strides, in.offset)
			v.dev = in.dev.NoGrad()
			free[i] = v
		}
		y := fn(free, params)
		if y == nil {
			fail(op, ErrArgument, "the function returned nil")
		}
		y.live(op)
		out = y.newView(y.shape, y.strides, y.offset)
		out.dev = gradDev
		out.Keep()
	})
	backward := func(g *Tensor) []*Tensor {
		return recomputeBackward(fn, inputs, params, rng, g)
	}
	return record("checkpoint", map[string]any{"inputs": len(inputs), "params": len(params)}, out, all, backward)
}

// rngState is the random-stream position of each device a checkpointed
// function may draw from.
type rngState map[*deviceState][2]uint64

func saveRNG(ts []*Tensor) rngState {
	s := rngState{}
	for _, t := range ts {
		st := t.dev.st
		if _, ok := s[st]; !ok {
			s[st] = [2]uint64{st.seed.Load(), st.counter.Load()}
		}
	}
	return s
}

func (s rngState) restore() {
	for st, v := range s {
		st.seed.Store(v[0])
		st.counter.Store(v[1])
	}
}

// recomputeBackward runs fn again from inputs, recording, with the random
// streams rewound to rng, and back-propagates g through it. It returns one
// gradient per input and param (nil where none).
func recomputeBackward(fn func(inputs, params []*Tensor) *Tensor, inputs, params []*Tensor, rng rngState, g *Tensor) []*Tensor {
	const op = "Checkpoint"
	now := rngState{}
	for st := range rng {
		now[st] = [2]uint64{st.seed.Load(), st.counter.Load()}
	}
	rng.restore()
	defer now.restore()

	res := make([]*Tensor, len(inputs)+len(params))
	Scope(func() {
		all := append(append([]*Tensor(nil), inputs...), params...)
		leaves := make([]*Tensor, len(all))
		for i, in := range all {
			v := in.newView(in.shape, in.strides, in.offset)
			if in.requiresGrad {
				v.dev = in.dev.Autodiff()
				v.requiresGrad = true
				v.node = autodiff.NewLeaf(v.Shape(), v.dtype.String(), true)
			}
			leaves[i] = v
		}
		y := fn(leaves[:len(inputs)], leaves[len(inputs):])
		if y == nil {
			fail(op, ErrArgument, "the function returned nil in the recomputation")
		}
		if !y.requiresGrad || y.node == nil {
			return // the output does not depend on anything differentiable
		}
		if !sameShape(y.shape, g.shape) {
			fail(op, ErrShape, "the recomputation gave %s, the first run %s: the function must be deterministic",
				shapeString(y.shape), shapeString(g.shape))
		}
		grads := autodiff.Backward(y.node, g, engineOps{})
		index := make(map[*autodiff.Node]int, len(res))
		for i, v := range leaves {
			if v.node != nil && v.requiresGrad {
				index[v.node] = i
			}
		}
		for i, p := range params { // a leaf param read from fn's closure
			if p.node != nil && p.node.Leaf && p.requiresGrad {
				if _, dup := index[p.node]; !dup {
					index[p.node] = len(inputs) + i
				}
			}
		}
		var stray int
		for n, v := range grads {
			gt := v.(*Tensor)
			i, ok := index[n]
			if !ok {
				stray++
				gt.Release()
				continue
			}
			if gt == g { // fn returned an input unchanged
				gt = g.newView(g.shape, g.strides, g.offset)
			}
			if res[i] != nil { // a param used both as given and from the closure
				sum := rawBinary("Checkpoint", addOp, res[i], gt)
				res[i].Release()
				gt.Release()
				gt = sum
			}
			res[i] = gt.Keep()
		}
		if stray > 0 {
			for _, r := range res {
				r.Release()
			}
			fail(op, ErrArgument, "the function used %d tensor(s) that require gradients but are neither inputs nor params; "+
				"pass them in params (a module's parameters) so their gradients are not lost", stray)
		}
	})
	return res
}
