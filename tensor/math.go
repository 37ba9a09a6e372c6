package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// This file holds element-wise math beyond the four arithmetic operators:
// powers, remainders, floor division, maximum/minimum, clamping and the
// unary functions of the shared op table. Dtypes follow PyTorch's promotion
// (backends.Promote for two tensors, backends.PromoteScalar for a tensor and
// a Go number, where an integral float64 counts as an integer scalar).

// mathScalarTensor returns a 0-d tensor holding v, to broadcast in Where.
func mathScalarTensor(op string, dev Device, dtype DType, v float64) *Tensor {
	return rawFull(op, dev, dtype, []int{}, v)
}

// mathWhere returns cond ? a : b broadcast to shape, in a's dtype and on
// a's device view (b must share the dtype; cond must be Bool), with no
// graph.
func mathWhere(op string, cond, a, b *Tensor, shape []int) *Tensor {
	out := newTensor(op, a.dev, a.dtype, shape)
	out.backend().Where(out.view(), cond.broadcastView(shape), a.broadcastView(shape), b.broadcastView(shape))
	return out
}

// mathMaskZero returns cond ? 0 : x (zero where cond holds), consuming x.
func mathMaskZero(op string, cond, x *Tensor) *Tensor {
	z := mathScalarTensor(op, x.dev, x.dtype, 0)
	shape := broadcastShapes(op, cond.shape, x.shape)
	out := mathWhere(op, cond, z, x, shape)
	z.Release()
	x.Release()
	return out
}

// mathKeepZero returns cond ? x : 0, consuming x.
func mathKeepZero(op string, cond, x *Tensor) *Tensor {
	z := mathScalarTensor(op, x.dev, x.dtype, 0)
	shape := broadcastShapes(op, cond.shape, x.shape)
	out := mathWhere(op, cond, x, z, shape)
	z.Release()
	x.Release()
	return out
}

// mathConsume applies f to x and releases x: chains raw steps without
// naming every temporary.
func mathConsume(x *Tensor, f func(x *Tensor) *Tensor) *Tensor {
	out := f(x)
	x.Release()
	return out
}

// mathIsIntegral reports whether s counts as an integer scalar for type
// promotion (the convention rawScalar uses).
func mathIsIntegral(s float64) bool { return s == math.Trunc(s) && !math.IsInf(s, 0) }

// Pow returns t raised to the power other, element-wise with broadcasting
// and type promotion (integer tensors stay integer; negative integer
// exponents of integer bases give 0 rather than PyTorch's error, which
// would need a data-dependent check). The gradient follows PyTorch: the
// base gets g·e·xᵉ⁻¹ (0 where e = 0), the exponent g·xᵉ·ln x (0 where x = 0
// and e ≥ 0). It panics on mismatched shapes or devices.
func (t *Tensor) Pow(other *Tensor) *Tensor {
	out := rawBinary("Pow", backends.Pow, t, other)
	return record("pow", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		var ga, gb *Tensor
		if t.requiresGrad {
			// g · e · x^(e−1), zero where e == 0
			em1 := rawScalar("Pow", subOp, other, 1, false)
			p := rawBinary("Pow", backends.Pow, t, em1)
			em1.Release()
			d := mathConsume(p, func(p *Tensor) *Tensor { return rawBinary("Pow", mulOp, p, other) })
			d = mathConsume(d, func(d *Tensor) *Tensor { return rawBinary("Pow", mulOp, g, d) })
			ez := rawScalar("Pow", backends.Eq, other, 0, false)
			d = mathMaskZero("Pow", ez, d)
			ez.Release()
			ga = gradFor(d, t)
		}
		if other.requiresGrad {
			// g · xᵉ · ln x, zero where x == 0 and e ≥ 0
			lx := rawUnary("Pow", backends.Log, t, 0, 0)
			d := mathConsume(lx, func(lx *Tensor) *Tensor { return rawBinary("Pow", mulOp, out, lx) })
			d = mathConsume(d, func(d *Tensor) *Tensor { return rawBinary("Pow", mulOp, g, d) })
			xz := rawScalar("Pow", backends.Eq, t, 0, false)
			ep := rawScalar("Pow", backends.Ge, other, 0, false)
			m := rawBinary("Pow", backends.And, xz, ep)
			xz.Release()
			ep.Release()
			d = mathMaskZero("Pow", m, d)
			m.Release()
			gb = gradFor(d, other)
		}
		return []*Tensor{ga, gb}
	})
}

// PowScalar returns t raised to the power p element-wise. Float tensors
// keep their dtype; integer and bool tensors stay integer (bool becomes
// Int64) for an integral p ≥ 0 and become Float32 for a fractional p, as in
// PyTorch. It panics with ErrArgument for a negative integral p on an
// integer tensor (PyTorch's "integers to negative integer powers").
func (t *Tensor) PowScalar(p float64) *Tensor {
	t.live("PowScalar")
	if t.dtype.IsFloat() {
		return t.unaryOp("PowScalar", backends.PowConst, p, 0)
	}
	if !mathIsIntegral(p) {
		x := rawCast("PowScalar", t, Float32)
		out := rawUnary("PowScalar", backends.PowConst, x, p, 0)
		x.Release()
		return out
	}
	if p < 0 {
		fail("PowScalar", ErrArgument, "integer tensor (%s) to the negative integer power %v is not allowed; convert it to a float type first", t.dtype, p)
	}
	return rawScalar("PowScalar", backends.Pow, t, p, false)
}

// ScalarPow returns base raised to the power of each element of exponent
// (torch.pow(base, exponent) with a number as the base): 2^t is
// ScalarPow(2, t). An integral base with an integer tensor gives an integer
// tensor; otherwise the result is float, as in PyTorch. The gradient is
// g·baseᵉ·ln base (0 where base is 0 and e ≥ 0, as PyTorch defines it).
func ScalarPow(base float64, exponent *Tensor) *Tensor {
	exponent.live("ScalarPow")
	out := rawScalar("ScalarPow", backends.Pow, exponent, base, true)
	return record("scalar_pow", map[string]any{"base": base}, out, []*Tensor{exponent}, func(g *Tensor) []*Tensor {
		d := rawScalar("ScalarPow", mulOp, out, math.Log(base), false)
		d = mathConsume(d, func(d *Tensor) *Tensor { return rawBinary("ScalarPow", mulOp, g, d) })
		if base == 0 {
			ep := rawScalar("ScalarPow", backends.Ge, exponent, 0, false)
			d = mathMaskZero("ScalarPow", ep, d)
			ep.Release()
		}
		return []*Tensor{gradFor(d, exponent)}
	})
}

// Rem returns the element-wise remainder of t ÷ other with the sign of the
// divisor (torch.remainder, Python's %), broadcasting with type promotion.
// Integer tensors are computed exactly. An integer remainder by zero is an
// error, as PyTorch's ZeroDivisionError, but the divisor lives on the
// device and ops are asynchronous, so it is not raised here: the device
// records it and the next synchronisation point reports it (Device.Sync
// returns, and host reads such as Int64s panic with, an error matching
// both ErrDeviceFailed and ErrDivideByZero); the elements concerned are
// unspecified. Gradients: g for t, −g·⌊t/other⌋ for other.
func (t *Tensor) Rem(other *Tensor) *Tensor {
	out := rawBinary("Rem", backends.Rem, t, other)
	return record("remainder", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		var ga, gb *Tensor
		if t.requiresGrad {
			ga = gradFor(g.newView(g.shape, g.strides, g.offset), t)
		}
		if other.requiresGrad {
			q := rawBinary("Rem", backends.FloorDiv, t, other)
			d := mathConsume(q, func(q *Tensor) *Tensor { return rawBinary("Rem", mulOp, g, q) })
			d = mathConsume(d, func(d *Tensor) *Tensor { return rawUnary("Rem", backends.Neg, d, 0, 0) })
			gb = gradFor(d, other)
		}
		return []*Tensor{ga, gb}
	})
}

// RemScalar returns the remainder of t ÷ s with the sign of s (see Rem).
// For an integer t and s = 0 the divisor is known on the host, so it
// panics at once with a *Error matching ErrDivideByZero. Its gradient is g.
func (t *Tensor) RemScalar(s float64) *Tensor {
	out := rawScalar("RemScalar", backends.Rem, t, s, false)
	return record("remainder_scalar", map[string]any{"scalar": s}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(g.newView(g.shape, g.strides, g.offset), t)}
	})
}

// FloorDivide returns ⌊t ÷ other⌋ element-wise with broadcasting and type
// promotion (integers exactly, rounding toward −∞ as PyTorch 1.13 does).
// An integer division by zero is reported at the next synchronisation
// point as an error matching ErrDeviceFailed and ErrDivideByZero, as for
// Rem. Floats are
// computed as floor(t/other), which can differ from PyTorch's fmod-based
// result in the last place (1.0 // 0.1 in float64) and for infinite
// dividends. The result is piecewise constant: no gradient flows through
// it (PyTorch raises instead).
func (t *Tensor) FloorDivide(other *Tensor) *Tensor {
	return rawBinary("FloorDivide", backends.FloorDiv, t, other)
}

// FloorDivideScalar returns ⌊t ÷ s⌋ element-wise (see FloorDivide). For an
// integer t and s = 0 it panics at once with a *Error matching
// ErrDivideByZero.
func (t *Tensor) FloorDivideScalar(s float64) *Tensor {
	return rawScalar("FloorDivideScalar", backends.FloorDiv, t, s, false)
}

// Maximum returns the element-wise maximum of t and other, broadcasting
// with type promotion. NaN propagates. Gradient as PyTorch 1.13: the larger
// input gets g, each gets g/2 on ties, and both get g where a NaN is
// involved.
func (t *Tensor) Maximum(other *Tensor) *Tensor { return t.extremum("Maximum", true, other) }

// Minimum returns the element-wise minimum of t and other (see Maximum).
func (t *Tensor) Minimum(other *Tensor) *Tensor { return t.extremum("Minimum", false, other) }

func (t *Tensor) extremum(op string, isMax bool, other *Tensor) *Tensor {
	b, name := backends.Minimum, "minimum"
	// lose[0] is the comparison under which t loses, lose[1] other.
	lose := [2]backends.BinaryOp{backends.Gt, backends.Lt}
	if isMax {
		b, name = backends.Maximum, "maximum"
		lose = [2]backends.BinaryOp{backends.Lt, backends.Gt}
	}
	out := rawBinary(op, b, t, other)
	return record(name, nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		eq := rawBinary(op, backends.Eq, t, other)
		half := rawScalar(op, divOp, g, 2, false)
		base := mathWhere(op, eq, half, g, g.shape)
		eq.Release()
		half.Release()
		var gs [2]*Tensor
		for i, in := range []*Tensor{t, other} {
			if !in.requiresGrad {
				continue
			}
			l := rawBinary(op, lose[i], t, other)
			d := mathMaskZero(op, l, base.newView(base.shape, base.strides, base.offset))
			l.Release()
			gs[i] = gradFor(d, in)
		}
		base.Release()
		return gs[:]
	})
}

// Clamp limits every element of t to [min, max]. A NaN bound means no bound
// on that side (ClampMin and ClampMax use this; PyTorch 1.13's CPU kernel
// ignores NaN bounds the same way); min > max gives max everywhere, as in
// PyTorch. Integer tensors stay integer unless a bound is fractional or
// infinite, which gives Float32. NaN elements stay NaN. The gradient is g
// where min ≤ x ≤ max and 0 elsewhere (and at NaN), as in PyTorch.
func (t *Tensor) Clamp(min, max float64) *Tensor { return t.clamp("Clamp", min, max) }

// ClampMin returns max(t, min) element-wise (torch.clamp(t, min=min)).
func (t *Tensor) ClampMin(min float64) *Tensor { return t.clamp("ClampMin", min, math.NaN()) }

// ClampMax returns min(t, max) element-wise (torch.clamp(t, max=max)).
func (t *Tensor) ClampMax(max float64) *Tensor { return t.clamp("ClampMax", math.NaN(), max) }

func (t *Tensor) clamp(op string, lo, hi float64) *Tensor {
	t.live(op)
	x := t
	if !t.dtype.IsFloat() {
		float := false
		for _, b := range []float64{lo, hi} {
			float = float || (!math.IsNaN(b) && !mathIsIntegral(b))
		}
		if ct := backends.PromoteScalar(t.dtype, float, Float32); ct != t.dtype {
			x = rawCast(op, t, ct)
			defer x.Release()
		}
	}
	out := rawUnary(op, backends.Clamp, x, lo, hi)
	attrs := map[string]any{}
	if !math.IsNaN(lo) {
		attrs["min"] = lo
	}
	if !math.IsNaN(hi) {
		attrs["max"] = hi
	}
	return record("clamp", attrs, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		// out == x exactly where min ≤ x ≤ max (false at NaN).
		in := rawBinary(op, backends.Eq, out, t)
		d := mathKeepZero(op, in, g.newView(g.shape, g.strides, g.offset))
		in.Release()
		return []*Tensor{castGrad(d, t)}
	})
}

// Abs returns |x| element-wise (integers stay integer). Its gradient is
// g·sign(x), 0 at x = 0 as in PyTorch.
func (t *Tensor) Abs() *Tensor { return t.unaryOp("Abs", backends.Abs, 0, 0) }

// Sign returns −1, 0 or 1 by the sign of each element, and 0 for NaN as in
// PyTorch; integer and bool tensors keep their dtype. Its gradient is 0.
func (t *Tensor) Sign() *Tensor {
	t.live("Sign")
	out := rawUnary("Sign", backends.Sign, t, 0, 0)
	if t.dtype.IsFloat() {
		// The shared op table keeps NaN (NumPy's choice); PyTorch gives 0.
		nan := rawUnary("Sign", backends.IsNaN, t, 0, 0)
		out = mathMaskZero("Sign", nan, out)
		nan.Release()
	}
	return record("sign", nil, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{rawFull("Sign", g.dev, t.dtype, t.shape, 0)}
	})
}

// Log1p returns ln(1 + x) element-wise, accurate for small x.
func (t *Tensor) Log1p() *Tensor { return t.unaryOp("Log1p", backends.Log1p, 0, 0) }

// Sqrt returns √x element-wise (NaN for x < 0; integers give Float32).
func (t *Tensor) Sqrt() *Tensor { return t.unaryOp("Sqrt", backends.Sqrt, 0, 0) }

// Rsqrt returns 1/√x element-wise.
func (t *Tensor) Rsqrt() *Tensor { return t.unaryOp("Rsqrt", backends.Rsqrt, 0, 0) }

// Reciprocal returns 1/x element-wise (integers give Float32).
func (t *Tensor) Reciprocal() *Tensor { return t.unaryOp("Reciprocal", backends.Recip, 0, 0) }

// Erf returns the error function element-wise.
func (t *Tensor) Erf() *Tensor { return t.unaryOp("Erf", backends.Erf, 0, 0) }

// Sin returns the sine element-wise (radians).
func (t *Tensor) Sin() *Tensor { return t.unaryOp("Sin", backends.Sin, 0, 0) }

// Cos returns the cosine element-wise (radians).
func (t *Tensor) Cos() *Tensor { return t.unaryOp("Cos", backends.Cos, 0, 0) }

// Tan returns the tangent element-wise (radians).
func (t *Tensor) Tan() *Tensor { return t.unaryOp("Tan", backends.Tan, 0, 0) }

// Floor rounds each element down to an integer value (integer tensors are
// returned unchanged in value). Its gradient is 0.
func (t *Tensor) Floor() *Tensor { return t.unaryOp("Floor", backends.Floor, 0, 0) }

// Ceil rounds each element up to an integer value. Its gradient is 0.
func (t *Tensor) Ceil() *Tensor { return t.unaryOp("Ceil", backends.Ceil, 0, 0) }

// Round rounds each element to the nearest integer value, halves to even
// (torch.round). Its gradient is 0.
func (t *Tensor) Round() *Tensor { return t.unaryOp("Round", backends.Round, 0, 0) }

// IsNaN returns a Bool tensor that is true where t is NaN (never for
// integer tensors). It records no gradient.
func (t *Tensor) IsNaN() *Tensor {
	t.live("IsNaN")
	return rawUnary("IsNaN", backends.IsNaN, t, 0, 0)
}

// IsInf returns a Bool tensor that is true where t is +∞ or −∞. It records
// no gradient.
func (t *Tensor) IsInf() *Tensor {
	t.live("IsInf")
	return rawUnary("IsInf", backends.IsInf, t, 0, 0)
}

// Recip is Reciprocal (1/x element-wise).
func (t *Tensor) Recip() *Tensor { return t.Reciprocal() }
