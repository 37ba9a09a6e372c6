package onnx

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// Element-wise operators without a Kiln primitive of their own, composed
// of ones that have one (so they differentiate): the hyperbolic and
// inverse trigonometric functions (computed in float64 and rounded back,
// as the compositions lose precision near 0 in float32), Mod, BitShift,
// IsInf, IsNaN, Shrink and Hardmax.

func init() {
	inFloat64 := func(f func(x *tensor.Tensor) *tensor.Tensor) *opDef {
		return &opDef{run: func(c *call) []*value {
			x := c.t(0)
			if !x.DType().IsFloat() {
				c.fail(tensor.ErrDType, "input is %s, want a floating dtype", x.DType())
			}
			dt := x.DType()
			return outs(f(x.To(tensor.Float64)).To(dt))
		}}
	}
	ops["Sinh"] = inFloat64(func(x *tensor.Tensor) *tensor.Tensor { return x.Exp().Sub(x.Neg().Exp()).MulScalar(0.5) })
	ops["Cosh"] = inFloat64(func(x *tensor.Tensor) *tensor.Tensor { return x.Exp().Add(x.Neg().Exp()).MulScalar(0.5) })
	// asinh(x) = sign(x)·log(|x| + √(x² + 1)), exact for either sign.
	ops["Asinh"] = inFloat64(func(x *tensor.Tensor) *tensor.Tensor {
		a := x.Abs()
		return a.Add(a.Square().AddScalar(1).Sqrt()).Log().Mul(x.Sign())
	})
	ops["Acosh"] = inFloat64(func(x *tensor.Tensor) *tensor.Tensor { return x.Add(x.Square().SubScalar(1).Sqrt()).Log() })
	ops["Atanh"] = inFloat64(func(x *tensor.Tensor) *tensor.Tensor {
		return x.AddScalar(1).Div(x.Neg().AddScalar(1)).Log().MulScalar(0.5)
	})
	ops["Atan"] = inFloat64(arctan)
	// asin(x) = atan(x / √(1 − x²)); ±1 give ±∞, whose arctangent is ±π/2.
	ops["Asin"] = inFloat64(func(x *tensor.Tensor) *tensor.Tensor { return arctan(x.Div(x.Square().Neg().AddScalar(1).Sqrt())) })
	ops["Acos"] = inFloat64(func(x *tensor.Tensor) *tensor.Tensor {
		return arctan(x.Div(x.Square().Neg().AddScalar(1).Sqrt())).Neg().AddScalar(math.Pi / 2)
	})

	ops["Mod"] = &opDef{
		run: func(c *call) []*value {
			a, b := c.t(0), c.t(1)
			r := a.Rem(b) // the sign of the divisor, as Python's %
			if c.attrInt("fmod", 0) == 0 {
				if a.DType().IsFloat() {
					c.fail(tensor.ErrArgument, "fmod=0 on %s: ONNX requires fmod=1 for floating types", a.DType())
				}
				return outs(r)
			}
			// C's fmod takes the dividend's sign: subtract the divisor
			// where the remainder's sign differs from the dividend's.
			zero := tensor.ZerosLike(r)
			fix := r.Ne(zero).LogicalAnd(r.Lt(zero).LogicalXor(a.Lt(tensor.ZerosLike(a))))
			return outs(tensor.Where(fix, r.Sub(b), r))
		},
		host: func(c *call) []*hostTensor {
			a, b := c.h(0), c.h(1)
			fmod := c.attrInt("fmod", 0) != 0
			h, err := hostMap(a.dtype, []*hostTensor{a, b}, func(v []float64) float64 {
				if fmod {
					return math.Mod(v[0], v[1])
				}
				m := math.Mod(v[0], v[1])
				if m != 0 && (m < 0) != (v[1] < 0) {
					m += v[1]
				}
				return m
			}, func(v []int64) int64 {
				if v[1] == 0 {
					return 0
				}
				m := v[0] % v[1]
				if !fmod && m != 0 && (m < 0) != (v[1] < 0) {
					m += v[1]
				}
				return m
			})
			if err != nil {
				c.fail(tensor.ErrShape, "%v", err)
			}
			return hosts(h)
		},
	}
	ops["BitShift"] = &opDef{run: func(c *call) []*value {
		x, y := c.t(0), c.t(1)
		dt := x.DType()
		if dt.IsFloat() || dt == tensor.Bool {
			c.fail(tensor.ErrDType, "input is %s, want an unsigned integer type", dt)
		}
		// x·2^y or ⌊x / 2^y⌋, exact in float64 for the values Kiln's
		// integer dtypes hold below 2^53.
		p := y.To(tensor.Float64).MulScalar(math.Ln2).Exp().Round()
		xf := x.To(tensor.Float64)
		switch d := c.attrString("direction", ""); d {
		case "LEFT":
			return outs(xf.Mul(p).To(dt))
		case "RIGHT":
			return outs(xf.Div(p).Floor().To(dt))
		default:
			c.fail(tensor.ErrArgument, "direction %q is not LEFT or RIGHT", d)
		}
		return nil
	}}
	ops["IsNaN"] = &opDef{run: func(c *call) []*value { return outs(c.t(0).IsNaN()) }}
	ops["IsInf"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		inf := x.IsInf()
		zero := tensor.ZerosLike(x)
		if c.attrInt("detect_negative", 1) == 0 {
			inf = inf.LogicalAnd(x.Gt(zero))
		}
		if c.attrInt("detect_positive", 1) == 0 {
			inf = inf.LogicalAnd(x.Lt(zero))
		}
		return outs(inf)
	}}
	ops["Shrink"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		lambd, bias := c.attrFloat("lambd", 0.5), c.attrFloat("bias", 0)
		low, high := tensor.FullLike(x, -lambd), tensor.FullLike(x, lambd)
		zero := tensor.ZerosLike(x)
		if x.DType().IsFloat() {
			return outs(tensor.Where(x.Lt(low), x.AddScalar(bias), tensor.Where(x.Gt(high), x.SubScalar(bias), zero)))
		}
		// AddScalar on integers would promote; add a tensor of x's dtype.
		b := tensor.FullLike(x, bias)
		return outs(tensor.Where(x.Lt(low), x.Add(b), tensor.Where(x.Gt(high), x.Sub(b), zero)))
	}}
	ops["Hardmax"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		shape := x.Shape()
		var axis int
		flat := x
		if c.opset >= 13 {
			axis = c.axis(c.attrInt("axis", -1), x.Dims())
		} else {
			// Before 13: the input is coerced to 2-D at axis.
			a := c.axis(c.attrInt("axis", 1), x.Dims()+1)
			rows := 1
			for _, d := range shape[:a] {
				rows *= d
			}
			flat = x.Reshape(rows, c.size(shape[a:]))
			axis = 1
		}
		n := flat.Dim(axis)
		at := flat.ArgmaxKeep(axis)
		idxShape := make([]int, flat.Dims())
		for i := range idxShape {
			idxShape[i] = 1
		}
		idxShape[axis] = n
		ar := tensor.ArangeOf(c.dev.Inner(), tensor.Int64, 0, float64(n), 1).Reshape(idxShape...)
		return outs(at.Eq(ar).To(x.DType()).Reshape(shape...))
	}}
}

// arctan computes atan(x) of a float64 tensor from Kiln's primitives:
// arguments beyond ±1 are reflected (atan x = ±π/2 − atan 1/x), the rest
// halved twice (atan x = 2·atan(x / (1 + √(1 + x²)))) to |x| ≤ tan(π/16),
// where eleven terms of the Taylor series are exact to float64's 1e-15.
func arctan(x *tensor.Tensor) *tensor.Tensor {
	a := x.Abs()
	big := a.GtScalar(1)
	// 1/|x| where |x| > 1, |x| elsewhere (never dividing by zero).
	r := tensor.Where(big, a.Reciprocal(), a)
	for range 2 {
		r = r.Div(r.Square().AddScalar(1).Sqrt().AddScalar(1))
	}
	r2 := r.Square()
	term := tensor.ZerosLike(r)
	for k := 21; k >= 1; k -= 2 {
		sign := 1.0
		if (k/2)%2 == 1 {
			sign = -1
		}
		term = term.Mul(r2).AddScalar(sign / float64(k))
	}
	v := term.Mul(r).MulScalar(4)
	v = tensor.Where(big, v.Neg().AddScalar(math.Pi/2), v)
	return v.Mul(x.Sign())
}
