package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Comparisons and logical ops return Bool tensors and record no gradient
// (on a traced tensor they record a node that carries none; see TraceInput).
// Inputs are promoted to a common dtype first (an Int64 tensor compared
// with a Float32 one compares in Float32, as in PyTorch); NaN compares
// unequal to everything, itself included.

func (t *Tensor) compare(op string, b backends.BinaryOp, other *Tensor) *Tensor {
	out := rawBinary(op, b, t, other)
	if t.traced || other.traced {
		ct := backends.Promote(t.dtype, other.dtype)
		if b == backends.And || b == backends.Or || b == backends.Xor {
			ct = Bool
		}
		return recordTraced(tracedOps[op], compareAttrs(ct, nil), out, t, other)
	}
	return out
}

func (t *Tensor) compareScalar(op string, b backends.BinaryOp, s float64) *Tensor {
	out := rawScalar(op, b, t, s, false)
	if t.traced {
		isFloat := s != math.Trunc(s) || math.IsInf(s, 0) || math.IsNaN(s)
		return recordTraced(tracedOps[op], compareAttrs(backends.PromoteScalar(t.dtype, isFloat, Float32), &s), out, t)
	}
	return out
}

// tracedOps names the graph nodes of traced comparisons and logical ops.
var tracedOps = map[string]string{
	"Eq": "eq", "Ne": "ne", "Lt": "lt", "Le": "le", "Gt": "gt", "Ge": "ge",
	"EqScalar": "eq_scalar", "NeScalar": "ne_scalar", "LtScalar": "lt_scalar", "LeScalar": "le_scalar",
	"GtScalar": "gt_scalar", "GeScalar": "ge_scalar",
	"LogicalAnd": "logical_and", "LogicalOr": "logical_or", "LogicalXor": "logical_xor",
}

// Eq returns t == other element-wise as Bool, broadcasting. It panics on
// shapes that do not broadcast or tensors on different devices.
func (t *Tensor) Eq(other *Tensor) *Tensor { return t.compare("Eq", backends.Eq, other) }

// Ne returns t != other element-wise as Bool (true where either is NaN).
func (t *Tensor) Ne(other *Tensor) *Tensor { return t.compare("Ne", backends.Ne, other) }

// Lt returns t < other element-wise as Bool, broadcasting.
func (t *Tensor) Lt(other *Tensor) *Tensor { return t.compare("Lt", backends.Lt, other) }

// Le returns t ≤ other element-wise as Bool, broadcasting.
func (t *Tensor) Le(other *Tensor) *Tensor { return t.compare("Le", backends.Le, other) }

// Gt returns t > other element-wise as Bool, broadcasting.
func (t *Tensor) Gt(other *Tensor) *Tensor { return t.compare("Gt", backends.Gt, other) }

// Ge returns t ≥ other element-wise as Bool, broadcasting.
func (t *Tensor) Ge(other *Tensor) *Tensor { return t.compare("Ge", backends.Ge, other) }

// EqScalar returns t == s element-wise as Bool. A fractional s compares an
// integer tensor in Float32, as in PyTorch.
func (t *Tensor) EqScalar(s float64) *Tensor { return t.compareScalar("EqScalar", backends.Eq, s) }

// NeScalar returns t != s element-wise as Bool.
func (t *Tensor) NeScalar(s float64) *Tensor { return t.compareScalar("NeScalar", backends.Ne, s) }

// LtScalar returns t < s element-wise as Bool.
func (t *Tensor) LtScalar(s float64) *Tensor { return t.compareScalar("LtScalar", backends.Lt, s) }

// LeScalar returns t ≤ s element-wise as Bool.
func (t *Tensor) LeScalar(s float64) *Tensor { return t.compareScalar("LeScalar", backends.Le, s) }

// GtScalar returns t > s element-wise as Bool.
func (t *Tensor) GtScalar(s float64) *Tensor { return t.compareScalar("GtScalar", backends.Gt, s) }

// GeScalar returns t ≥ s element-wise as Bool.
func (t *Tensor) GeScalar(s float64) *Tensor { return t.compareScalar("GeScalar", backends.Ge, s) }

// LogicalAnd returns t ∧ other element-wise as Bool (torch.logical_and),
// broadcasting. Inputs of any dtype count as true where non-zero (NaN is
// true).
func (t *Tensor) LogicalAnd(other *Tensor) *Tensor {
	return t.compare("LogicalAnd", backends.And, other)
}

// LogicalOr returns t ∨ other element-wise as Bool (torch.logical_or).
func (t *Tensor) LogicalOr(other *Tensor) *Tensor { return t.compare("LogicalOr", backends.Or, other) }

// LogicalXor returns t ⊕ other element-wise as Bool (torch.logical_xor).
func (t *Tensor) LogicalXor(other *Tensor) *Tensor {
	return t.compare("LogicalXor", backends.Xor, other)
}

// LogicalNot returns ¬t element-wise as Bool (torch.logical_not): true
// where t is zero.
func (t *Tensor) LogicalNot() *Tensor {
	t.live("LogicalNot")
	out := rawUnary("LogicalNot", backends.Not, t, 0, 0)
	if t.traced {
		return recordTraced("logical_not", nil, out, t)
	}
	return out
}

// And is LogicalAnd, under the name the issue tracker and Burn use.
func (t *Tensor) And(other *Tensor) *Tensor { return t.LogicalAnd(other) }

// Or is LogicalOr.
func (t *Tensor) Or(other *Tensor) *Tensor { return t.LogicalOr(other) }

// Xor is LogicalXor.
func (t *Tensor) Xor(other *Tensor) *Tensor { return t.LogicalXor(other) }

// Not is LogicalNot.
func (t *Tensor) Not() *Tensor { return t.LogicalNot() }
