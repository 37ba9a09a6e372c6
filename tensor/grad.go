package tensor

import (
	"slices"
	"sync/atomic"

	"github.com/kiln-ml/kiln/autodiff"
)

// record attaches a graph node for op to out when some input requires
// gradients and none sits on a NoGrad view; backward maps out's gradient to
// one gradient per input (nil where none is needed). It returns out.
//
// Backward rules run outside recording: they must use the package's raw
// helpers (rawBinary, rawUnary, …), never public ops, on tensors that carry
// no graph.
func record(op string, attrs map[string]any, out *Tensor, inputs []*Tensor, backward func(g *Tensor) []*Tensor) *Tensor {
	need, traced := false, false
	for _, in := range inputs {
		if in.dev.casting && !out.dev.casting {
			out.dev.autocast, out.dev.casting = in.dev.autocast, true
		}
	}
	for _, in := range inputs {
		if in.dev.noGrad {
			out.dev = out.dev.NoGrad()
			return out
		}
		if in.requiresGrad {
			need = true
		}
		if in.traced {
			traced = true
		}
	}
	if !need && !traced {
		return out
	}
	// A traced op on tensors that carry no gradient (the integer target of a
	// loss, a mask) records a node all the same, so that an exporter sees
	// it (see TraceInput); NewNode gives it no backward.
	out.node = autodiff.NewNode(op, attrs, graphInputs(inputs), out.Shape(), out.dtype.String(), func(g autodiff.Value) []autodiff.Value {
		gt := g.(*Tensor)
		gs := backward(gt)
		res := make([]autodiff.Value, len(gs))
		for i, x := range gs {
			if x == nil {
				continue
			}
			// The engine releases each gradient once: hand it distinct
			// tensors even where a rule passes g through or repeats one.
			alias := x == gt
			for _, y := range gs[:i] {
				alias = alias || x == y
			}
			if alias {
				x = x.newView(x.shape, x.strides, x.offset)
			}
			res[i] = x
		}
		return res
	})
	out.node.Scope = currentModuleScope()
	out.requiresGrad = need
	out.traced = traced
	out.dev = out.dev.Autodiff()
	notifyObservers(out.node)
	return out
}

// graphInputs returns the graph nodes of an op's inputs, giving each input
// without one a constant leaf that holds its value.
func graphInputs(inputs []*Tensor) []*autodiff.Node {
	nodes := make([]*autodiff.Node, len(inputs))
	for i, in := range inputs {
		if in.node == nil {
			in.node = autodiff.NewLeaf(in.Shape(), in.dtype.String(), false)
			in.node.Const = in
		}
		nodes[i] = in.node
	}
	return nodes
}

// moduleScope names the module scope of new graph nodes; nil (the
// default) names none, at the cost of one atomic load per recorded op.
var moduleScope atomic.Pointer[func() string]

// currentModuleScope is the scope new graph nodes are recorded in: what the
// function installed by SetModuleScopeFunc returns, "" without one.
func currentModuleScope() string {
	if f := moduleScope.Load(); f != nil {
		return (*f)()
	}
	return ""
}

// SetModuleScopeFunc installs the function that names the module scope new
// graph nodes are recorded in (Node.Scope); nil removes it. onnx.Export
// installs one while it traces, to name the module that ran an op without
// an ONNX form. The function is called on every recorded op, from any
// goroutine.
func SetModuleScopeFunc(f func() string) {
	if f == nil {
		moduleScope.Store(nil)
		return
	}
	moduleScope.Store(&f)
}

// RequireGrad marks t as a leaf whose gradient Backward computes, and returns
// t. t must live on an autodiff device view (Device.Autodiff).
func (t *Tensor) RequireGrad() *Tensor {
	t.live("RequireGrad")
	if !t.dev.IsAutodiff() {
		fail("RequireGrad", ErrDevice, "tensor %s is on %s, which does not record gradients; create it on dev.Autodiff()",
			shapeString(t.shape), t.dev)
	}
	if !t.dtype.IsFloat() {
		fail("RequireGrad", ErrDType, "only floating-point tensors can require gradients, not %s", t.dtype)
	}
	if !t.requiresGrad || t.node == nil || !t.node.Leaf {
		t.node = autodiff.NewLeaf(t.Shape(), t.dtype.String(), true)
		t.requiresGrad = true
	}
	return t
}

// RequiresGrad reports whether gradients flow back to or through t.
func (t *Tensor) RequiresGrad() bool { return t.requiresGrad }

// Detach returns a view of t's data outside any graph: no gradients flow
// through it. On a traced tensor (see TraceInput) the view is recorded as a
// "detach" node that passes no gradient, so that an exporter sees where
// its value comes from.
func (t *Tensor) Detach() *Tensor {
	t.live("Detach")
	out := t.newView(t.shape, t.strides, t.offset)
	if t.traced {
		// Still no gradient, but the exporter must see where the value
		// comes from (an Identity), not a constant.
		return recordTraced("detach", nil, out, t)
	}
	return out
}

// Gradients holds the gradients a Backward call computed, by leaf tensor.
type Gradients struct {
	byNode map[*autodiff.Node]*Tensor
}

// Get returns the gradient of leaf t, or nil when t received none.
func (g *Gradients) Get(t *Tensor) *Tensor {
	if g == nil || t == nil || t.node == nil {
		return nil
	}
	return g.byNode[t.node]
}

// Len returns the number of gradients held.
func (g *Gradients) Len() int { return len(g.byNode) }

// Release frees every gradient held.
func (g *Gradients) Release() {
	for _, t := range g.byNode {
		t.Release()
	}
	g.byNode = nil
}

// Grad returns t's gradient in grads, or nil when t received none.
func (t *Tensor) Grad(grads *Gradients) *Tensor { return grads.Get(t) }

type engineOps struct{}

func (engineOps) Add(a, b autodiff.Value) autodiff.Value {
	return rawBinary("backward", addOp, a.(*Tensor), b.(*Tensor))
}
func (engineOps) Release(v autodiff.Value) { v.(*Tensor).Release() }

// Backward computes the gradients of t with respect to every leaf that
// requires them (RequireGrad), seeding with ones (so for a non-scalar t it
// computes the gradient of t.Sum()). Gradients have the shape and dtype of
// their leaves. The graph is kept: Backward may be called again.
func (t *Tensor) Backward() *Gradients {
	t.live("Backward")
	if !t.requiresGrad || t.node == nil {
		fail("Backward", ErrNoGradient, "tensor %s does not depend on any tensor that requires gradients "+
			"(call RequireGrad on parameters of an autodiff device)", shapeString(t.shape))
	}
	seed := rawFull("Backward", t.dev.Inner(), t.dtype, t.shape, 1)
	grads := t.BackwardWith(seed)
	if grads.Get(t) != seed { // t itself a leaf: the seed is its gradient
		seed.Release()
	}
	return grads
}

// BackwardNotify is Backward that also calls final(i, g) on the calling
// goroutine as soon as the gradient g of watch[i] is final, while the pass
// goes on: every operation that used watch[i] has passed its gradient
// back. Gradients become final roughly in the reverse of the order the
// forward pass used their leaves; data-parallel training uses that to
// all-reduce the last layers' gradients while the pass computes the first
// layers'. Leaves of watch that receive no gradient are not announced.
// final may read g and hand it to another goroutine to read or overwrite
// in place, but must not release it: g is also in the returned Gradients.
func (t *Tensor) BackwardNotify(watch []*Tensor, final func(i int, g *Tensor)) *Gradients {
	t.live("BackwardNotify")
	if !t.requiresGrad || t.node == nil {
		fail("BackwardNotify", ErrNoGradient, "tensor %s does not depend on any tensor that requires gradients "+
			"(call RequireGrad on parameters of an autodiff device)", shapeString(t.shape))
	}
	index := make(map[*autodiff.Node]int, len(watch))
	for i, w := range watch {
		if w != nil && w.node != nil {
			if _, dup := index[w.node]; !dup {
				index[w.node] = i
			}
		}
	}
	seed := rawFull("BackwardNotify", t.dev.Inner(), t.dtype, t.shape, 1)
	leaves := autodiff.BackwardNotify(t.node, seed, engineOps{}, func(n *autodiff.Node, g autodiff.Value) {
		if i, ok := index[n]; ok {
			final(i, g.(*Tensor))
		}
	})
	grads := &Gradients{byNode: make(map[*autodiff.Node]*Tensor, len(leaves))}
	for n, v := range leaves {
		grads.byNode[n] = v.(*Tensor)
	}
	if grads.Get(t) != seed {
		seed.Release()
	}
	return grads
}

// BackwardWith is Backward seeded with grad (the gradient of some scalar
// with respect to t), which must have t's shape.
func (t *Tensor) BackwardWith(grad *Tensor) *Gradients {
	t.live("BackwardWith")
	grad.live("BackwardWith")
	if !sameShape(grad.shape, t.shape) {
		fail("BackwardWith", ErrShape, "gradient %s does not match tensor %s", shapeString(grad.shape), shapeString(t.shape))
	}
	if t.node == nil || !t.requiresGrad {
		fail("BackwardWith", ErrNoGradient, "tensor %s does not require gradients", shapeString(t.shape))
	}
	leaves := autodiff.Backward(t.node, grad, engineOps{})
	out := &Gradients{byNode: make(map[*autodiff.Node]*Tensor, len(leaves))}
	for n, v := range leaves {
		out.byNode[n] = v.(*Tensor)
	}
	return out
}

func sameShape(a, b []int) bool { return slices.Equal(a, b) }
