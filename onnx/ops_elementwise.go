package onnx

import (
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// Element-wise operators: arithmetic with NumPy broadcasting (computed on
// the host when every input is a small host value, which is how shape
// arithmetic runs), activations, comparisons, logic and casts.

func init() {
	binary := func(dev func(c *call, a, b *tensor.Tensor) *tensor.Tensor, f func(a, b float64) float64, fi func(a, b int64) int64) *opDef {
		return &opDef{
			run: func(c *call) []*value { return outs(dev(c, c.t(0), c.t(1))) },
			host: func(c *call) []*hostTensor {
				a, b := c.h(0), c.h(1)
				var ff func(v []int64) int64
				if fi != nil {
					ff = func(v []int64) int64 { return fi(v[0], v[1]) }
				}
				h, err := hostMap(a.dtype, []*hostTensor{a, b}, func(v []float64) float64 { return f(v[0], v[1]) }, ff)
				if err != nil {
					c.fail(tensor.ErrShape, "%v", err)
				}
				return hosts(h)
			},
		}
	}
	ops["Add"] = binary(func(c *call, a, b *tensor.Tensor) *tensor.Tensor { return a.Add(b) },
		func(a, b float64) float64 { return a + b }, func(a, b int64) int64 { return a + b })
	ops["Sub"] = binary(func(c *call, a, b *tensor.Tensor) *tensor.Tensor { return a.Sub(b) },
		func(a, b float64) float64 { return a - b }, func(a, b int64) int64 { return a - b })
	ops["Mul"] = binary(func(c *call, a, b *tensor.Tensor) *tensor.Tensor { return a.Mul(b) },
		func(a, b float64) float64 { return a * b }, func(a, b int64) int64 { return a * b })
	ops["Div"] = binary(divide, func(a, b float64) float64 { return a / b }, func(a, b int64) int64 {
		if b == 0 {
			return 0
		}
		return a / b
	})
	ops["Pow"] = &opDef{
		run: func(c *call) []*value {
			x := c.t(0)
			if y := c.in[1]; y.h != nil && y.h.size() == 1 && len(y.h.shape) <= x.Dims() && x.DType().IsFloat() {
				return outs(x.PowScalar(y.h.at(0)))
			}
			y := c.t(1)
			if y.DType() != x.DType() {
				y = y.To(x.DType())
			}
			return outs(x.Pow(y))
		},
		host: func(c *call) []*hostTensor {
			a, b := c.h(0), c.h(1)
			h, err := hostMap(a.dtype, []*hostTensor{a, b}, func(v []float64) float64 { return math.Pow(v[0], v[1]) }, nil)
			if err != nil {
				c.fail(tensor.ErrShape, "%v", err)
			}
			return hosts(h)
		},
	}
	ops["Max"] = variadic(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Maximum(b) }, math.Max, false)
	ops["Min"] = variadic(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Minimum(b) }, math.Min, false)
	ops["Sum"] = variadic(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Add(b) }, func(a, b float64) float64 { return a + b }, false)
	ops["Mean"] = variadic(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Add(b) }, func(a, b float64) float64 { return a + b }, true)

	compare := func(dev func(a, b *tensor.Tensor) *tensor.Tensor, f func(a, b float64) bool) *opDef {
		return &opDef{
			run: func(c *call) []*value { return outs(dev(c.t(0), c.t(1))) },
			host: func(c *call) []*hostTensor {
				h, err := hostMap(tensor.Bool, []*hostTensor{c.h(0), c.h(1)}, func(v []float64) float64 { return b2f(f(v[0], v[1])) }, nil)
				if err != nil {
					c.fail(tensor.ErrShape, "%v", err)
				}
				return hosts(h)
			},
		}
	}
	ops["Equal"] = compare(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Eq(b) }, func(a, b float64) bool { return a == b })
	ops["Less"] = compare(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Lt(b) }, func(a, b float64) bool { return a < b })
	ops["LessOrEqual"] = compare(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Le(b) }, func(a, b float64) bool { return a <= b })
	ops["Greater"] = compare(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Gt(b) }, func(a, b float64) bool { return a > b })
	ops["GreaterOrEqual"] = compare(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Ge(b) }, func(a, b float64) bool { return a >= b })
	ops["And"] = compare(func(a, b *tensor.Tensor) *tensor.Tensor { return a.LogicalAnd(b) }, func(a, b float64) bool { return a != 0 && b != 0 })
	ops["Or"] = compare(func(a, b *tensor.Tensor) *tensor.Tensor { return a.LogicalOr(b) }, func(a, b float64) bool { return a != 0 || b != 0 })
	ops["Xor"] = compare(func(a, b *tensor.Tensor) *tensor.Tensor { return a.LogicalXor(b) }, func(a, b float64) bool { return (a != 0) != (b != 0) })

	unary := func(dev func(c *call, x *tensor.Tensor) *tensor.Tensor, f func(c *call, x float64) float64) *opDef {
		d := &opDef{run: func(c *call) []*value { return outs(dev(c, c.t(0))) }}
		if f != nil {
			d.host = func(c *call) []*hostTensor {
				x := c.h(0)
				out := newHost(x.dtype, x.shape)
				for k := range x.size() {
					out.set(k, f(c, x.at(k)))
				}
				return hosts(out)
			}
		}
		return d
	}
	ops["Neg"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Neg() }, func(_ *call, x float64) float64 { return -x })
	ops["Abs"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Abs() }, func(_ *call, x float64) float64 { return math.Abs(x) })
	ops["Sqrt"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Sqrt() }, func(_ *call, x float64) float64 { return math.Sqrt(x) })
	ops["Exp"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Exp() }, func(_ *call, x float64) float64 { return math.Exp(x) })
	ops["Log"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Log() }, func(_ *call, x float64) float64 { return math.Log(x) })
	ops["Reciprocal"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Reciprocal() }, func(_ *call, x float64) float64 { return 1 / x })
	ops["Floor"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Floor() }, func(_ *call, x float64) float64 { return math.Floor(x) })
	ops["Ceil"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Ceil() }, func(_ *call, x float64) float64 { return math.Ceil(x) })
	ops["Round"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Round() }, func(_ *call, x float64) float64 { return math.RoundToEven(x) })
	ops["Sign"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Sign() }, func(_ *call, x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	})
	ops["Sin"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Sin() }, nil)
	ops["Cos"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Cos() }, nil)
	ops["Tan"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Tan() }, nil)
	ops["Erf"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Erf() }, nil)
	ops["Tanh"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Tanh() }, nil)
	ops["Sigmoid"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Sigmoid() }, nil)
	ops["Relu"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Relu() }, func(_ *call, x float64) float64 { return math.Max(x, 0) })
	ops["LeakyRelu"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.LeakyRelu(c.attrFloat("alpha", 0.01)) }, nil)
	ops["Elu"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Elu(c.attrFloat("alpha", 1)) }, nil)
	ops["Celu"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Celu(c.attrFloat("alpha", 1)) }, nil)
	ops["Selu"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor {
		const alpha, gamma = 1.67326319217681884765625, 1.05070102214813232421875
		a, g := c.attrFloat("alpha", alpha), c.attrFloat("gamma", gamma)
		if float32(a) == float32(alpha) && float32(g) == float32(gamma) {
			return x.Selu()
		}
		// gamma·(x > 0 ? x : alpha·(eˣ − 1)) = gamma·(relu(x) + alpha·elu₁(min(x, 0))).
		return x.Relu().Add(x.ClampMax(0).Elu(1).MulScalar(a)).MulScalar(g)
	}, nil)
	ops["Gelu"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor {
		if c.attrString("approximate", "none") == "tanh" {
			return x.GeluTanh()
		}
		return x.Gelu()
	}, nil)
	ops["HardSigmoid"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor {
		return x.MulScalar(c.attrFloat("alpha", 0.2)).AddScalar(c.attrFloat("beta", 0.5)).Clamp(0, 1)
	}, nil)
	ops["HardSwish"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.HardSwish() }, nil)
	ops["Softplus"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Softplus(1, 20) }, nil)
	ops["Softsign"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Softsign() }, nil)
	ops["Mish"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor { return x.Mish() }, nil)
	ops["ThresholdedRelu"] = unary(func(c *call, x *tensor.Tensor) *tensor.Tensor {
		return x.Mul(x.GtScalar(c.attrFloat("alpha", 1)).To(x.DType()))
	}, nil)
	ops["Identity"] = &opDef{
		run:  func(c *call) []*value { x := c.t(0); return outs(x.Reshape(x.Shape()...)) },
		host: func(c *call) []*hostTensor { return hosts(c.h(0)) },
	}
	ops["Not"] = &opDef{
		run: func(c *call) []*value { return outs(c.t(0).LogicalNot()) },
		host: func(c *call) []*hostTensor {
			x := c.h(0)
			out := newHost(tensor.Bool, x.shape)
			for k := range x.size() {
				out.set(k, b2f(x.at(k) == 0))
			}
			return hosts(out)
		},
	}
	ops["PRelu"] = &opDef{run: func(c *call) []*value {
		x, slope := c.t(0), c.t(1)
		if slope.Dims() == 1 && x.Dims() > 2 && slope.Dim(0) == x.Dim(1) && slope.Dim(0) != x.Dim(x.Dims()-1) {
			// Opset 7+ broadcasts numpy-style; exporters sometimes give a
			// per-channel [C] slope for [N, C, …] input.
			shape := make([]int, x.Dims()-1)
			for i := range shape {
				shape[i] = 1
			}
			shape[0] = slope.Dim(0)
			slope = slope.Reshape(shape...)
		}
		return outs(x.Relu().Sub(slope.Mul(x.Neg().Relu())))
	}}
	ops["Clip"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			lo, hi := clipBounds(c)
			return outs(c.t(0).Clamp(lo, hi))
		},
		host: func(c *call) []*hostTensor {
			lo, hi := clipBounds(c)
			x := c.h(0)
			out := newHost(x.dtype, x.shape)
			for k := range x.size() {
				v := x.at(k)
				if !math.IsNaN(lo) {
					v = math.Max(v, lo)
				}
				if !math.IsNaN(hi) {
					v = math.Min(v, hi)
				}
				out.set(k, v)
			}
			return hosts(out)
		},
	}
	ops["Where"] = &opDef{
		run: func(c *call) []*value {
			cond := c.t(0)
			if cond.DType() != tensor.Bool {
				cond = cond.NeScalar(0)
			}
			return outs(tensor.Where(cond, c.t(1), c.t(2)))
		},
		host: func(c *call) []*hostTensor {
			h, err := hostMap(c.h(1).dtype, []*hostTensor{c.h(0), c.h(1), c.h(2)}, func(v []float64) float64 {
				if v[0] != 0 {
					return v[1]
				}
				return v[2]
			}, func(v []int64) int64 {
				if v[0] != 0 {
					return v[1]
				}
				return v[2]
			})
			if err != nil {
				c.fail(tensor.ErrShape, "%v", err)
			}
			return hosts(h)
		},
	}
	castTo := func(c *call) tensor.DType {
		if c.node.OpType == "CastLike" {
			return c.tensorIn(1).dtype()
		}
		to := int32(c.attrInt("to", 0))
		if to == TypeString {
			return dtypeString
		}
		dt, err := kilnDType(to)
		if err != nil {
			c.fail(tensor.ErrDType, "%v", err)
		}
		return dt
	}
	cast := &opDef{
		run: func(c *call) []*value {
			if dt := castTo(c); dt == dtypeString || c.tensorIn(0).dtype() == dtypeString {
				return []*value{{h: castStrings(c, c.h(0), dt)}}
			}
			x, dt := c.t(0), castTo(c)
			if x.DType() == dt {
				return outs(x.Reshape(x.Shape()...))
			}
			return outs(x.To(dt))
		},
		host: func(c *call) []*hostTensor {
			if dt := castTo(c); dt == dtypeString || c.h(0).dtype == dtypeString {
				return hosts(castStrings(c, c.h(0), dt))
			}
			return hosts(c.h(0).cast(castTo(c)))
		},
		check: checkCast,
	}
	ops["Cast"] = cast
	ops["CastLike"] = &opDef{run: cast.run, host: cast.host, role: staticInputs(1)}
}

func checkCast(n *NodeProto, attrs map[string]*AttributeProto, _ int64) string {
	if n.OpType != "Cast" {
		return ""
	}
	a := attrs["to"]
	if a == nil {
		return "no 'to' attribute"
	}
	if _, err := kilnDType(int32(a.I)); err != nil && a.I != TypeString {
		return "to=" + DataTypeName(int32(a.I))
	}
	return ""
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// divide is ONNX Div: true division for floats, truncating division for
// integers (Kiln's Div of integers is true division).
func divide(c *call, a, b *tensor.Tensor) *tensor.Tensor {
	if a.DType().IsFloat() || b.DType().IsFloat() {
		return a.Div(b)
	}
	q := a.To(tensor.Float64).Div(b.To(tensor.Float64))
	return q.Abs().Floor().Mul(q.Sign()).To(a.DType())
}

// variadic builds Max, Min, Sum and Mean over any number of inputs.
func variadic(f func(a, b *tensor.Tensor) *tensor.Tensor, hf func(a, b float64) float64, mean bool) *opDef {
	return &opDef{
		run: func(c *call) []*value {
			acc := c.t(0)
			n := 1
			for k := 1; k < len(c.in); k++ {
				if c.has(k) {
					acc = f(acc, c.t(k))
					n++
				}
			}
			if mean {
				acc = acc.DivScalar(float64(n))
			} else if n == 1 {
				acc = acc.Reshape(acc.Shape()...)
			}
			return outs(acc)
		},
		host: func(c *call) []*hostTensor {
			var ins []*hostTensor
			for k := range c.in {
				if c.has(k) {
					ins = append(ins, c.h(k))
				}
			}
			h, err := hostMap(ins[0].dtype, ins, func(v []float64) float64 {
				acc := v[0]
				for _, x := range v[1:] {
					acc = hf(acc, x)
				}
				if mean {
					acc /= float64(len(v))
				}
				return acc
			}, nil)
			if err != nil {
				c.fail(tensor.ErrShape, "%v", err)
			}
			return hosts(h)
		},
	}
}

// clipBounds returns Clip's bounds (NaN for none): attributes before opset
// 11, optional inputs from 11.
func clipBounds(c *call) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	if c.opset < 11 {
		lo = c.attrFloat("min", math.Inf(-1))
		hi = c.attrFloat("max", math.Inf(1))
		return lo, hi
	}
	if c.has(1) {
		lo = c.scalar(1)
	}
	if c.has(2) {
		hi = c.scalar(2)
	}
	return lo, hi
}
