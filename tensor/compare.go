package tensor

import "github.com/kiln-ml/kiln/backends"

// Comparisons and logical ops return Bool tensors and record no gradient.
// Inputs are promoted to a common dtype first (an Int64 tensor compared
// with a Float32 one compares in Float32, as in PyTorch); NaN compares
// unequal to everything, itself included.

func (t *Tensor) compare(op string, b backends.BinaryOp, other *Tensor) *Tensor {
	return rawBinary(op, b, t, other)
}

func (t *Tensor) compareScalar(op string, b backends.BinaryOp, s float64) *Tensor {
	return rawScalar(op, b, t, s, false)
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
	return rawUnary("LogicalNot", backends.Not, t, 0, 0)
}

// And is LogicalAnd, under the name the issue tracker and Burn use.
func (t *Tensor) And(other *Tensor) *Tensor { return t.LogicalAnd(other) }

// Or is LogicalOr.
func (t *Tensor) Or(other *Tensor) *Tensor { return t.LogicalOr(other) }

// Xor is LogicalXor.
func (t *Tensor) Xor(other *Tensor) *Tensor { return t.LogicalXor(other) }

// Not is LogicalNot.
func (t *Tensor) Not() *Tensor { return t.LogicalNot() }
