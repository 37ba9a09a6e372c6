package tensor

import (
	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/backends"
)

// Tracing. An exporter (onnx.Export) reads the graph a forward pass
// records, but an autodiff device records only the ops that carry a
// gradient: a loss's mask computed by a comparison, the class indices of
// an integer target, a detached copy would be missing from it, their
// values frozen as constants. TraceInput marks the inputs of a trace; every op
// applied to a traced tensor then records a node, the ones that carry no
// gradient included (comparisons and logical ops, integer casts, OneHot,
// Any and All, Detach, and the differentiable ops on integer tensors), and
// its result is traced in turn. Nothing changes for tensors that are not
// traced: those ops test a field of their inputs, no global state.

// TraceInput marks t as an input of a trace and returns t: every op applied to
// t, or to a tensor computed from it, records a graph node even where no
// gradient flows (see the list above), so that the whole computation from
// t is in the graph. Gradients are unchanged: nodes that carry none pass
// none back. An integer t gets a constant leaf node of its own. It panics
// with ErrDevice unless t lives on an autodiff device view
// (Device.Autodiff).
func (t *Tensor) TraceInput() *Tensor {
	t.live("TraceInput")
	if !t.dev.IsAutodiff() {
		fail("TraceInput", ErrDevice, "tensor %s is on %s, which records no graph; move it to the device's Autodiff view first",
			shapeString(t.shape), t.dev)
	}
	if t.node == nil {
		t.node = autodiff.NewLeaf(t.Shape(), t.dtype.String(), false)
		t.node.Const = t
	}
	t.traced = true
	return t
}

// IsTraced reports whether t is a TraceInput input or was computed from one.
func (t *Tensor) IsTraced() bool { return t.traced }

// traced reports whether any of ts is traced.
func anyTraced(ts ...*Tensor) bool {
	for _, t := range ts {
		if t.traced {
			return true
		}
	}
	return false
}

// recordTraced attaches a node for op, which carries no gradient, to out
// when an input is traced (and none sits on a NoGrad view), and returns
// out. Callers test their inputs' traced field first, so that an op
// outside a trace pays nothing more.
func recordTraced(op string, attrs map[string]any, out *Tensor, inputs ...*Tensor) *Tensor {
	if !anyTraced(inputs...) {
		return out
	}
	for _, in := range inputs {
		if in.dev.noGrad {
			return out
		}
	}
	out.node = autodiff.NewNode(op, attrs, graphInputs(inputs), out.Shape(), out.dtype.String(), nil)
	// No gradient reaches or passes this node, whatever its inputs.
	out.node.RequiresGrad = false
	out.node.Scope = currentModuleScope()
	out.traced = true
	out.dev = out.dev.Autodiff()
	notifyObservers(out.node)
	return out
}

// compareAttrs are the attributes of a traced comparison: the dtype both
// operands are compared in, and the scalar of a …Scalar comparison.
func compareAttrs(ct backends.DType, scalar *float64) map[string]any {
	a := map[string]any{"dtype": ct.String()}
	if scalar != nil {
		a["scalar"] = *scalar
	}
	return a
}
