package tensor

import "github.com/kiln-ml/kiln/backends"

// Bitwise ops on integer tensors (and Bool where PyTorch allows it), as
// backend binary ops (backends.BitAnd, …, backends.RightShift) that the CPU
// computes exactly in int64. Operands broadcast and promote as arithmetic
// does (Int32 with Int64 gives Int64; Bool with an integer gives the
// integer). They record no gradient. A float operand panics with ErrDType,
// as in PyTorch; shapes that do not broadcast panic with ErrShape.
//
// Shift counts outside [0, bits) are undefined in PyTorch; here a left
// shift by a negative count or by 64 or more gives 0 and a right shift the
// sign (0 or −1), and counts between the dtype's width and 64 act as on
// Int64 before the result wraps to the dtype.

// bitwiseCheck panics unless every operand is an integer tensor, or Bool
// when allowBool.
func bitwiseCheck(op string, allowBool bool, ts ...*Tensor) {
	for _, t := range ts {
		t.live(op)
		if t.dtype.IsInt() || (allowBool && t.dtype == Bool) {
			continue
		}
		kinds := "integer"
		if allowBool {
			kinds = "integer or bool"
		}
		fail(op, ErrDType, "%s needs %s tensors, got %s %s", op, kinds, shapeString(t.shape), t.dtype)
	}
}

func (t *Tensor) bitwise(op string, b backends.BinaryOp, allowBool bool, other *Tensor) *Tensor {
	bitwiseCheck(op, allowBool, t, other)
	return rawBinary(op, b, t, other)
}

func (t *Tensor) bitwiseScalar(op string, b backends.BinaryOp, allowBool bool, s int64) *Tensor {
	bitwiseCheck(op, allowBool, t)
	return rawScalar(op, b, t, float64(s), false)
}

// BitwiseAnd returns t & other element-wise (logical and for Bool).
func (t *Tensor) BitwiseAnd(other *Tensor) *Tensor {
	return t.bitwise("BitwiseAnd", backends.BitAnd, true, other)
}

// BitwiseOr returns t | other element-wise (logical or for Bool).
func (t *Tensor) BitwiseOr(other *Tensor) *Tensor {
	return t.bitwise("BitwiseOr", backends.BitOr, true, other)
}

// BitwiseXor returns t ^ other element-wise (logical exclusive or for Bool).
func (t *Tensor) BitwiseXor(other *Tensor) *Tensor {
	return t.bitwise("BitwiseXor", backends.BitXor, true, other)
}

// BitwiseAndScalar returns t & s element-wise; a Bool t gives Int64.
func (t *Tensor) BitwiseAndScalar(s int64) *Tensor {
	return t.bitwiseScalar("BitwiseAndScalar", backends.BitAnd, true, s)
}

// BitwiseOrScalar returns t | s element-wise; a Bool t gives Int64.
func (t *Tensor) BitwiseOrScalar(s int64) *Tensor {
	return t.bitwiseScalar("BitwiseOrScalar", backends.BitOr, true, s)
}

// BitwiseXorScalar returns t ^ s element-wise; a Bool t gives Int64.
func (t *Tensor) BitwiseXorScalar(s int64) *Tensor {
	return t.bitwiseScalar("BitwiseXorScalar", backends.BitXor, true, s)
}

// BitwiseNot returns ~t element-wise (−t−1 for signed integers, 255−t for
// Uint8, logical not for Bool). It panics with ErrDType for a float t.
func (t *Tensor) BitwiseNot() *Tensor {
	const op = "BitwiseNot"
	bitwiseCheck(op, true, t)
	if t.dtype == Bool {
		return rawUnary(op, backends.Not, t, 0, 0)
	}
	return rawScalar(op, backends.BitXor, t, -1, false)
}

// BitwiseLeftShift returns t << other element-wise (t·2^other, wrapping
// to the dtype). It panics with ErrDType for float or Bool operands.
func (t *Tensor) BitwiseLeftShift(other *Tensor) *Tensor {
	return t.bitwise("BitwiseLeftShift", backends.LeftShift, false, other)
}

// BitwiseRightShift returns t >> other element-wise: an arithmetic shift
// (rounding towards −∞) for signed dtypes, a logical one for Uint8. It
// panics with ErrDType for float or Bool operands.
func (t *Tensor) BitwiseRightShift(other *Tensor) *Tensor {
	return t.bitwise("BitwiseRightShift", backends.RightShift, false, other)
}

// BitwiseLeftShiftScalar returns t << s element-wise (see
// BitwiseLeftShift).
func (t *Tensor) BitwiseLeftShiftScalar(s int64) *Tensor {
	return t.bitwiseScalar("BitwiseLeftShiftScalar", backends.LeftShift, false, s)
}

// BitwiseRightShiftScalar returns t >> s element-wise (see
// BitwiseRightShift).
func (t *Tensor) BitwiseRightShiftScalar(s int64) *Tensor {
	return t.bitwiseScalar("BitwiseRightShiftScalar", backends.RightShift, false, s)
}
