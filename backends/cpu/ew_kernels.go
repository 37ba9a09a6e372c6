package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Contiguous element-wise kernels. Each takes an output slice and input
// slices that are either as long as the output (a vector) or of length 1 (a
// broadcast scalar); the drivers in unary.go and binary.go reduce every
// strided or broadcast layout to these by gathering rows into scratch.
//
// Exactness: the op definitions in backends/elementwise.go compute in
// float64 and round the result to the output dtype. For float32 the kernels
// below use float32 arithmetic only where that gives the same bits: +, -, ×,
// ÷ and square root of float32 operands are correctly rounded in float64 and
// rounding that to float32 equals the float32 operation (float64 carries
// more than 2·24+2 bits), and min, max, comparisons, negation, abs and relu
// are exact. Every other op is computed in float64 (by the definition's own
// F and DF, or the same math function) and rounded once, except the
// transcendental activations, which Unary and UnaryGrad send to the float32
// kernels of transcendental.go before they reach these loops.

type float interface{ ~float32 | ~float64 }

// fillSlice sets every element of s to v.
func fillSlice[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// vecs reports how the inputs of a binary kernel are laid out.
func vecs(n, na, nb int) (aVec, bVec bool) { return na == n && n != 1, nb == n && n != 1 }

// binaryFloat computes the arithmetic op (not a predicate) on floats. It
// reports false for ops it has no typed loop for.
func binaryFloat[T float](op backends.BinaryOp, o, a, b []T) bool {
	n := len(o)
	if n > 1 && len(a) == 1 && len(b) == 1 { // both broadcast: one value
		if !binaryFloat(op, o[:1], a, b) {
			return false
		}
		fillSlice(o[1:], o[0])
		return true
	}
	aVec, bVec := vecs(n, len(a), len(b))
	switch {
	case aVec && bVec, n == 1:
		a, b = a[:n], b[:n]
		switch op {
		case backends.Add:
			for i := range o {
				o[i] = a[i] + b[i]
			}
		case backends.Sub:
			for i := range o {
				o[i] = a[i] - b[i]
			}
		case backends.Mul:
			for i := range o {
				o[i] = a[i] * b[i]
			}
		case backends.Div:
			for i := range o {
				o[i] = a[i] / b[i]
			}
		case backends.Maximum: // Go's max is NaN-propagating and orders -0 < +0, like math.Max
			for i := range o {
				o[i] = max(a[i], b[i])
			}
		case backends.Minimum:
			for i := range o {
				o[i] = min(a[i], b[i])
			}
		default:
			return false
		}
	case aVec: // b is a scalar
		a = a[:n]
		s := b[0]
		switch op {
		case backends.Add:
			for i, v := range a {
				o[i] = v + s
			}
		case backends.Sub:
			for i, v := range a {
				o[i] = v - s
			}
		case backends.Mul:
			for i, v := range a {
				o[i] = v * s
			}
		case backends.Div:
			for i, v := range a {
				o[i] = v / s
			}
		case backends.Maximum:
			for i, v := range a {
				o[i] = max(v, s)
			}
		case backends.Minimum:
			for i, v := range a {
				o[i] = min(v, s)
			}
		default:
			return false
		}
	default: // a is a scalar
		b = b[:n]
		s := a[0]
		switch op {
		case backends.Add:
			for i, v := range b {
				o[i] = s + v
			}
		case backends.Sub:
			for i, v := range b {
				o[i] = s - v
			}
		case backends.Mul:
			for i, v := range b {
				o[i] = s * v
			}
		case backends.Div:
			for i, v := range b {
				o[i] = s / v
			}
		case backends.Maximum:
			for i, v := range b {
				o[i] = max(s, v)
			}
		case backends.Minimum:
			for i, v := range b {
				o[i] = min(s, v)
			}
		default:
			return false
		}
	}
	return true
}

// binaryF64 computes any non-predicate op on float64 values with the op's
// definition (typed loops where there are any).
func binaryF64(op backends.BinaryOp, o, a, b []float64) {
	if binaryFloat(op, o, a, b) {
		return
	}
	n := len(o)
	if n > 1 && len(a) == 1 && len(b) == 1 {
		binaryF64(op, o[:1], a, b)
		fillSlice(o[1:], o[0])
		return
	}
	aVec, bVec := vecs(n, len(a), len(b))
	var f func(a, b float64) float64
	switch op {
	case backends.Pow:
		f = math.Pow
	default:
		f = backends.BinaryOps[op].F
	}
	switch {
	case aVec && bVec, n == 1:
		a, b = a[:n], b[:n]
		for i := range o {
			o[i] = f(a[i], b[i])
		}
	case aVec:
		s := b[0]
		for i, v := range a[:n] {
			o[i] = f(v, s)
		}
	default:
		s := a[0]
		for i, v := range b[:n] {
			o[i] = f(s, v)
		}
	}
}

// flipCompare returns the op that gives the same answer with its operands
// swapped (s < x is x > s).
func flipCompare(op backends.BinaryOp) backends.BinaryOp {
	switch op {
	case backends.Lt:
		return backends.Gt
	case backends.Le:
		return backends.Ge
	case backends.Gt:
		return backends.Lt
	case backends.Ge:
		return backends.Le
	}
	return op // symmetric
}

// b2u is 1 for true and 0 for false.
func b2u(c bool) uint8 {
	if c {
		return 1
	}
	return 0
}

// compare computes a predicate op (comparison or logical) into Bool bytes.
func compare[T float | ~int64](op backends.BinaryOp, o []uint8, a, b []T) {
	n := len(o)
	if n > 1 && len(a) == 1 && len(b) == 1 {
		compare(op, o[:1], a, b)
		fillSlice(o[1:], o[0])
		return
	}
	aVec, bVec := vecs(n, len(a), len(b))
	if !aVec && bVec { // scalar op vector: swap operands
		a, b, op = b, a, flipCompare(op)
		aVec, bVec = true, false
	}
	if aVec && bVec || n == 1 {
		a, b = a[:n], b[:n]
		switch op {
		case backends.Eq:
			for i := range o {
				o[i] = b2u(a[i] == b[i])
			}
		case backends.Ne:
			for i := range o {
				o[i] = b2u(a[i] != b[i])
			}
		case backends.Lt:
			for i := range o {
				o[i] = b2u(a[i] < b[i])
			}
		case backends.Le:
			for i := range o {
				o[i] = b2u(a[i] <= b[i])
			}
		case backends.Gt:
			for i := range o {
				o[i] = b2u(a[i] > b[i])
			}
		case backends.Ge:
			for i := range o {
				o[i] = b2u(a[i] >= b[i])
			}
		case backends.And:
			for i := range o {
				o[i] = b2u(a[i] != 0 && b[i] != 0)
			}
		case backends.Or:
			for i := range o {
				o[i] = b2u(a[i] != 0 || b[i] != 0)
			}
		case backends.Xor:
			for i := range o {
				o[i] = b2u((a[i] != 0) != (b[i] != 0))
			}
		default:
			panic("cpu: not a predicate: " + op.String())
		}
		return
	}
	a = a[:n]
	s := b[0]
	switch op {
	case backends.Eq:
		for i, v := range a {
			o[i] = b2u(v == s)
		}
	case backends.Ne:
		for i, v := range a {
			o[i] = b2u(v != s)
		}
	case backends.Lt:
		for i, v := range a {
			o[i] = b2u(v < s)
		}
	case backends.Le:
		for i, v := range a {
			o[i] = b2u(v <= s)
		}
	case backends.Gt:
		for i, v := range a {
			o[i] = b2u(v > s)
		}
	case backends.Ge:
		for i, v := range a {
			o[i] = b2u(v >= s)
		}
	case backends.And:
		for i, v := range a {
			o[i] = b2u(v != 0 && s != 0)
		}
	case backends.Or:
		for i, v := range a {
			o[i] = b2u(v != 0 || s != 0)
		}
	case backends.Xor:
		for i, v := range a {
			o[i] = b2u((v != 0) != (s != 0))
		}
	default:
		panic("cpu: not a predicate: " + op.String())
	}
}

// binaryI64 computes an op that has an exact integer form (intBinary).
func binaryI64(op backends.BinaryOp, o, a, b []int64) {
	n := len(o)
	if n > 1 && len(a) == 1 && len(b) == 1 {
		binaryI64(op, o[:1], a, b)
		fillSlice(o[1:], o[0])
		return
	}
	aVec, bVec := vecs(n, len(a), len(b))
	if aVec && bVec || n == 1 {
		a, b = a[:n], b[:n]
		switch op {
		case backends.Add:
			for i := range o {
				o[i] = a[i] + b[i]
			}
		case backends.Sub:
			for i := range o {
				o[i] = a[i] - b[i]
			}
		case backends.Mul:
			for i := range o {
				o[i] = a[i] * b[i]
			}
		default:
			for i := range o {
				o[i], _ = intBinary(op, a[i], b[i])
			}
		}
		return
	}
	if aVec {
		s := b[0]
		switch op {
		case backends.Add:
			for i, v := range a[:n] {
				o[i] = v + s
			}
		case backends.Mul:
			for i, v := range a[:n] {
				o[i] = v * s
			}
		default:
			for i, v := range a[:n] {
				o[i], _ = intBinary(op, v, s)
			}
		}
		return
	}
	s := a[0]
	for i, v := range b[:n] {
		o[i], _ = intBinary(op, s, v)
	}
}

// intBinary computes op on integers exactly; ok is false for ops that have
// no integer form (Div, and Pow with a negative exponent, are done in float).
func intBinary(op backends.BinaryOp, a, c int64) (int64, bool) {
	switch op {
	case backends.Add:
		return a + c, true
	case backends.Sub:
		return a - c, true
	case backends.Mul:
		return a * c, true
	case backends.Maximum:
		return max(a, c), true
	case backends.Minimum:
		return min(a, c), true
	case backends.BitAnd:
		return a & c, true
	case backends.BitOr:
		return a | c, true
	case backends.BitXor:
		return a ^ c, true
	case backends.LeftShift:
		return a << uint64(c), true
	case backends.RightShift:
		return a >> uint64(c), true
	case backends.Rem:
		if c == 0 {
			return 0, true
		}
		r := a % c
		if r != 0 && (r < 0) != (c < 0) {
			r += c
		}
		return r, true
	case backends.FloorDiv:
		if c == 0 {
			return 0, true
		}
		q := a / c
		if (a%c != 0) && ((a < 0) != (c < 0)) {
			q--
		}
		return q, true
	case backends.Pow:
		if c < 0 {
			return 0, false
		}
		r := int64(1)
		for base, e := a, c; e > 0; e >>= 1 {
			if e&1 == 1 {
				r *= base
			}
			base *= base
		}
		return r, true
	}
	return 0, false
}

// hasIntForm reports whether intBinary handles op.
func hasIntForm(op backends.BinaryOp) bool {
	_, ok := intBinary(op, 1, 1)
	return ok
}

// unaryFloat applies op to x (same length as o) for float32 or float64.
func unaryFloat[T float](op backends.UnaryOp, o, x []T, p0, p1 float64) {
	x = x[:len(o)]
	switch op {
	case backends.Neg:
		for i, v := range x {
			o[i] = -v
		}
	case backends.Abs:
		for i, v := range x {
			o[i] = T(math.Abs(float64(v)))
		}
	case backends.Relu: // math.Max(x, 0): NaN stays NaN, -0 becomes +0
		for i, v := range x {
			o[i] = max(v, 0)
		}
	case backends.Square:
		for i, v := range x {
			o[i] = v * v
		}
	case backends.Sqrt:
		for i, v := range x {
			o[i] = T(math.Sqrt(float64(v)))
		}
	case backends.Exp:
		for i, v := range x {
			o[i] = T(math.Exp(float64(v)))
		}
	case backends.Log:
		for i, v := range x {
			o[i] = T(math.Log(float64(v)))
		}
	case backends.Tanh:
		for i, v := range x {
			o[i] = T(math.Tanh(float64(v)))
		}
	default:
		f := backends.UnaryOps[op].F
		for i, v := range x {
			o[i] = T(f(float64(v), p0, p1))
		}
	}
}

// unaryGradFloat computes g·op'(x) into o; x and g are vectors or scalars.
func unaryGradFloat[T float](op backends.UnaryOp, o, x, g []T, p0, p1 float64) {
	n := len(o)
	xVec, gVec := vecs(n, len(x), len(g))
	if op == backends.Relu && (xVec || n == 1) && (gVec || n == 1) {
		// g·[x > 0] in T is exact: g·1 = g and g·0 is ±0 or NaN either way.
		x, g = x[:n], g[:n]
		if o32, ok := any(o).([]float32); ok {
			reluGradF32(o32, any(x).([]float32), any(g).([]float32))
			return
		}
		for i := range o {
			var d T
			if x[i] > 0 {
				d = 1
			}
			o[i] = g[i] * d
		}
		return
	}
	df := backends.UnaryOps[op].DF
	switch {
	case xVec && gVec, n == 1:
		x, g = x[:n], g[:n]
		for i := range o {
			o[i] = T(float64(g[i]) * df(float64(x[i]), p0, p1))
		}
	case xVec:
		s := float64(g[0])
		for i, v := range x[:n] {
			o[i] = T(s * df(float64(v), p0, p1))
		}
	case gVec:
		d := df(float64(x[0]), p0, p1)
		for i, v := range g[:n] {
			o[i] = T(float64(v) * d)
		}
	default:
		v := T(float64(g[0]) * df(float64(x[0]), p0, p1))
		for i := range o {
			o[i] = v
		}
	}
}

// reluGradF32 is g·[x > 0] without a branch per element: the sign of x is
// unpredictable in training, and a mispredicted branch costs more than the
// whole element. x > 0 holds exactly when x's bits, read as a signed
// integer, lie in (0, +Inf's bits]; the comparison is done with shifts and
// turned into the bits of 1.0 or 0.0.
func reluGradF32(o, x, g []float32) {
	x, g = x[:len(o)], g[:len(o)]
	if done := vecReluGrad(o, x, g); done > 0 {
		o, x, g = o[done:], x[done:], g[done:]
	}
	for i := range o {
		b := int64(int32(math.Float32bits(x[i])))
		positive := uint32((-b)>>63) & uint32((b-0x7f800001)>>63) // b > 0 && b ≤ 0x7f800000
		o[i] = g[i] * math.Float32frombits(positive&0x3f800000)
	}
}
