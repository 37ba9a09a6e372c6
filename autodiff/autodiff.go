package autodiff

import (
	"sync/atomic"
)

// Value is a gradient or saved value handled by the engine. The engine never
// looks inside; package tensor stores *tensor.Tensor values here.
type Value = any

// BackwardFunc maps the gradient of a node's output to the gradients of its
// inputs, one per input (nil where an input needs none).
type BackwardFunc func(grad Value) []Value

// Node is one recorded operation: the op that produced a tensor, what it was
// applied to and how to send gradients back through it. Nodes form a DAG from
// outputs to inputs; nothing points from an input to its consumers, so the
// garbage collector frees a graph once no output tensor holds it.
type Node struct {
	ID     uint64         // unique, increasing in creation order
	Op     string         // op name, e.g. "matmul", "conv2d", "leaf"
	Attrs  map[string]any // op attributes (axes, strides, …) for graphs and export
	Inputs []*Node        // producers of the op's inputs; nil for a constant input
	Scope  string         // dotted module path the op ran in ("" at top level)
	Shape  []int          // output shape
	DType  string         // output dtype name

	// RequiresGrad is true for leaves that want gradients and for every
	// node with such a leaf upstream.
	RequiresGrad bool
	// Leaf marks a tensor the user created (a parameter or input), whose
	// gradient Backward returns.
	Leaf bool
	// Const is the value of a leaf that does not require a gradient (a
	// constant an op was given), so exporters can write it; nil for other
	// nodes.
	Const Value

	backward BackwardFunc
}

var nextID atomic.Uint64

// NewLeaf returns a leaf node for a tensor that wants gradients when
// requiresGrad is true, or a constant input node otherwise.
func NewLeaf(shape []int, dtype string, requiresGrad bool) *Node {
	return &Node{ID: nextID.Add(1), Op: "leaf", Shape: shape, DType: dtype, RequiresGrad: requiresGrad, Leaf: true}
}

// NewNode records an op. RequiresGrad is derived from the inputs; backward
// is kept only when it is needed.
func NewNode(op string, attrs map[string]any, inputs []*Node, shape []int, dtype string, backward BackwardFunc) *Node {
	n := &Node{ID: nextID.Add(1), Op: op, Attrs: attrs, Inputs: inputs, Shape: shape, DType: dtype}
	for _, in := range inputs {
		if in != nil && in.RequiresGrad {
			n.RequiresGrad = true
			break
		}
	}
	if n.RequiresGrad {
		n.backward = backward
	}
	return n
}

// Ops tells the engine how to combine and free gradient values.
type Ops interface {
	// Add returns a + b (both gradients of the same node).
	Add(a, b Value) Value
	// Release frees a gradient the engine no longer needs.
	Release(v Value)
}

// Backward propagates seed (the gradient of root's output) to every node
// that requires gradients, in reverse topological order, and returns the
// accumulated gradients of the leaves. Gradients of interior nodes are
// released as soon as they have been passed on, so peak memory stays near
// that of the forward pass.
func Backward(root *Node, seed Value, ops Ops) map[*Node]Value {
	return BackwardNotify(root, seed, ops, nil)
}

// BackwardNotify is Backward that also calls final(leaf, grad) for every
// leaf as soon as its gradient is final: every node that uses the leaf has
// passed its gradient back, so nothing later in the pass adds to it. Leaves
// are announced in the order the pass completes them, roughly the reverse
// of the order the forward pass used them; that is what lets data-parallel
// training start communicating a layer's gradients while the pass goes on
// through the layers before it. final runs on the calling goroutine and
// must not release grad, which is also in the returned map.
func BackwardNotify(root *Node, seed Value, ops Ops, final func(leaf *Node, grad Value)) map[*Node]Value {
	order := topoOrder(root)
	grads := map[*Node]Value{root: seed}
	leaves := map[*Node]Value{}
	// order has inputs before consumers; walk it backwards.
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		g, ok := grads[n]
		if !ok {
			continue
		}
		delete(grads, n)
		if n.Leaf {
			leaves[n] = g
			if final != nil {
				final(n, g)
			}
			continue
		}
		if n.backward == nil {
			if n != root {
				ops.Release(g)
			}
			continue
		}
		ins := n.backward(g)
		if n != root {
			ops.Release(g)
		}
		for k, in := range n.Inputs {
			if in == nil || !in.RequiresGrad || k >= len(ins) || ins[k] == nil {
				if k < len(ins) && ins[k] != nil {
					ops.Release(ins[k])
				}
				continue
			}
			if prev, ok := grads[in]; ok {
				sum := ops.Add(prev, ins[k])
				ops.Release(prev)
				ops.Release(ins[k])
				grads[in] = sum
			} else {
				grads[in] = ins[k]
			}
		}
	}
	return leaves
}

// topoOrder returns the nodes reachable from root that require gradients,
// each after all of its inputs.
func topoOrder(root *Node) []*Node {
	var order []*Node
	seen := map[*Node]bool{}
	type frame struct {
		n    *Node
		next int
	}
	stack := []frame{{n: root}}
	seen[root] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(top.n.Inputs) {
			in := top.n.Inputs[top.next]
			top.next++
			if in != nil && in.RequiresGrad && !seen[in] {
				seen[in] = true
				stack = append(stack, frame{n: in})
			}
			continue
		}
		order = append(order, top.n)
		stack = stack[:len(stack)-1]
	}
	return order
}

// Walk visits every node reachable from roots (including constant inputs),
// each once, inputs before consumers. It is how graphs are drawn and exported.
func Walk(roots []*Node, visit func(*Node)) {
	seen := map[*Node]bool{}
	var rec func(n *Node)
	rec = func(n *Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		for _, in := range n.Inputs {
			rec(in)
		}
		visit(n)
	}
	for _, r := range roots {
		rec(r)
	}
}
