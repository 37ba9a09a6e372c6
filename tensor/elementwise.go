package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

const (
	addOp = backends.Add
	subOp = backends.Sub
	mulOp = backends.Mul
	divOp = backends.Div
)

// sameDevice panics unless every tensor lives on one physical device.
func sameDevice(op string, ts ...*Tensor) {
	for _, t := range ts {
		t.live(op)
	}
	for _, t := range ts[1:] {
		if t.dev.st != ts[0].dev.st {
			fail(op, ErrDevice, "tensors on different devices: %s and %s (move one with ToDevice)", ts[0].dev, t.dev)
		}
	}
}

// broadcastShapes returns the NumPy broadcast of a and b, panicking with
// ErrShape for op when they do not broadcast.
func broadcastShapes(op string, a, b []int) []int {
	out, dim := broadcastShape(a, b)
	if out == nil {
		n := max(len(a), len(b))
		fail(op, ErrShape, "shapes %s and %s cannot be broadcast together (dimension %d: %d vs %d)",
			shapeString(a), shapeString(b), dim, dimFromEnd(a, n, dim), dimFromEnd(b, n, dim))
	}
	return out
}

// broadcastShape returns the NumPy broadcast of a and b, or nil and the
// first dimension (of the broadcast rank) where they conflict.
func broadcastShape(a, b []int) ([]int, int) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range n {
		da, db := dimFromEnd(a, n, i), dimFromEnd(b, n, i)
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, i
		}
	}
	return out, -1
}

// dimFromEnd returns dimension i of shape aligned right to rank n (1 for
// the implied leading dimensions).
func dimFromEnd(shape []int, n, i int) int {
	if j := len(shape) - n + i; j >= 0 {
		return shape[j]
	}
	return 1
}

// broadcastView returns t's view expanded to shape (stride 0 on repeated
// dimensions), without allocating.
func (t *Tensor) broadcastView(shape []int) backends.View {
	v := t.view()
	if sameShape(t.shape, shape) {
		return v
	}
	strides := make([]int, len(shape))
	off := len(shape) - len(t.shape)
	for i := range shape {
		j := i - off
		if j >= 0 && t.shape[j] == shape[i] {
			strides[i] = t.strides[j]
		}
	}
	v.Shape, v.Strides = shape, strides
	return v
}

// rawFull allocates a tensor filled with v, with no graph.
func rawFull(op string, dev Device, dtype DType, shape []int, v float64) *Tensor {
	out := newTensor(op, dev, dtype, shape)
	out.backend().Fill(out.view(), v)
	return out
}

// rawCast returns t converted to dtype (t itself, as a new view, when it
// already has it), with no graph.
func rawCast(op string, t *Tensor, dtype DType) *Tensor {
	if t.dtype == dtype {
		return t.newView(t.shape, t.strides, t.offset)
	}
	out := newTensor(op, t.dev, dtype, t.shape)
	out.backend().Copy(out.view(), t.view())
	return out
}

// rawContiguous returns t itself as a new view when it is contiguous, else a
// contiguous copy.
func rawContiguous(op string, t *Tensor) *Tensor {
	if t.IsContiguous() {
		return t.newView(t.shape, t.strides, t.offset)
	}
	out := newTensor(op, t.dev, t.dtype, t.shape)
	out.backend().Copy(out.view(), t.view())
	return out
}

// floatType returns the float dtype an op on t computes in: t's own when it
// is a float, else the default Float32.
func floatType(d DType) DType {
	if d.IsFloat() {
		return d
	}
	return Float32
}

// rawUnary applies a unary op with no graph. Non-float inputs of ops that
// are not IntSafe are computed in Float32.
func rawUnary(op string, u backends.UnaryOp, x *Tensor, p0, p1 float64) *Tensor {
	def := backends.UnaryOps[u]
	in := x
	if !def.IntSafe && !x.dtype.IsFloat() {
		in = rawCast(op, x, Float32)
		defer in.Release()
	}
	outType := in.dtype
	if def.Predicate {
		outType = Bool
	}
	out := newTensor(op, x.dev, outType, x.shape)
	out.backend().Unary(u, out.view(), in.view(), p0, p1)
	return out
}

// rawUnaryGrad computes g·u'(x) with no graph.
func rawUnaryGrad(op string, u backends.UnaryOp, x, g *Tensor, p0, p1 float64) *Tensor {
	out := newTensor(op, g.dev, g.dtype, g.shape)
	out.backend().UnaryGrad(u, out.view(), x.broadcastView(g.shape), g.view(), p0, p1)
	return out
}

// rawBinary applies a binary op with broadcasting and type promotion, with
// no graph.
func rawBinary(op string, b backends.BinaryOp, x, y *Tensor) *Tensor {
	sameDevice(op, x, y)
	shape := broadcastShapes(op, x.shape, y.shape)
	ct := backends.Promote(x.dtype, y.dtype)
	if b == divOp && !ct.IsFloat() {
		ct = Float32 // true division
	}
	def := backends.BinaryOps[b]
	if b == backends.And || b == backends.Or || b == backends.Xor {
		ct = Bool
	}
	xc, yc := x, y
	if x.dtype != ct {
		xc = rawCast(op, x, ct)
		defer xc.Release()
	}
	if y.dtype != ct {
		yc = rawCast(op, y, ct)
		defer yc.Release()
	}
	outType := ct
	if def.Predicate {
		outType = Bool
	}
	out := newTensor(op, x.dev, outType, shape)
	out.backend().Binary(b, out.view(), xc.broadcastView(shape), yc.broadcastView(shape))
	return out
}

// rawScalar applies x op s (s op x when reverse) with no graph.
func rawScalar(op string, b backends.BinaryOp, x *Tensor, s float64, reverse bool) *Tensor {
	x.live(op)
	isFloat := s != math.Trunc(s) || math.IsInf(s, 0) || math.IsNaN(s)
	ct := backends.PromoteScalar(x.dtype, isFloat, Float32)
	if b == divOp && !ct.IsFloat() {
		ct = Float32
	}
	if (b == backends.Rem || b == backends.FloorDiv) && !ct.IsFloat() && !reverse && s == 0 {
		fail(op, ErrDivideByZero, "integer %s of %s %s by zero", backends.BinaryOps[b].Name, shapeString(x.shape), x.dtype)
	}
	def := backends.BinaryOps[b]
	xc := x
	if x.dtype != ct {
		xc = rawCast(op, x, ct)
		defer xc.Release()
	}
	outType := ct
	if def.Predicate {
		outType = Bool
	}
	out := newTensor(op, x.dev, outType, x.shape)
	out.backend().BinaryScalar(b, out.view(), xc.view(), s, reverse)
	return out
}

// sumTo reduces a broadcast gradient g back to shape (the backward of
// broadcasting), returning g itself when no reduction is needed.
func sumTo(g *Tensor, shape []int) *Tensor {
	if sameShape(g.shape, shape) {
		return g
	}
	var axes []int
	off := len(g.shape) - len(shape)
	for i := range g.shape {
		if i < off || (shape[i-off] == 1 && g.shape[i] != 1) {
			axes = append(axes, i)
		}
	}
	r := rawReduce("sum_to", backends.Sum, g, axes, true)
	if off == 0 {
		return r
	}
	v := r.newView(shape, backends.RowMajorStrides(shape), r.offset)
	r.Release()
	return v
}

// castGrad returns g converted to x's dtype (gradients have their input's dtype).
func castGrad(g *Tensor, x *Tensor) *Tensor {
	if g.dtype == x.dtype {
		return g
	}
	c := rawCast("grad", g, x.dtype)
	g.Release()
	return c
}

// gradFor reduces a broadcast gradient to x's shape and dtype; it consumes g.
func gradFor(g, x *Tensor) *Tensor {
	r := sumTo(g, x.shape)
	if r != g {
		g.Release()
	}
	return castGrad(r, x)
}

// Add returns t + other, broadcasting.
func (t *Tensor) Add(other *Tensor) *Tensor {
	out := rawBinary("Add", addOp, t, other)
	return record("add", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		return []*Tensor{gradFor(g.newView(g.shape, g.strides, g.offset), t), gradFor(g.newView(g.shape, g.strides, g.offset), other)}
	})
}

// Sub returns t − other, broadcasting.
func (t *Tensor) Sub(other *Tensor) *Tensor {
	out := rawBinary("Sub", subOp, t, other)
	return record("sub", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		return []*Tensor{gradFor(g.newView(g.shape, g.strides, g.offset), t), gradFor(rawUnary("Sub", backends.Neg, g, 0, 0), other)}
	})
}

// Mul returns t × other element-wise, broadcasting.
func (t *Tensor) Mul(other *Tensor) *Tensor {
	out := rawBinary("Mul", mulOp, t, other)
	return record("mul", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		var ga, gb *Tensor
		if t.requiresGrad {
			ga = gradFor(rawBinary("Mul", mulOp, g, other), t)
		}
		if other.requiresGrad {
			gb = gradFor(rawBinary("Mul", mulOp, g, t), other)
		}
		return []*Tensor{ga, gb}
	})
}

// Div returns t ÷ other element-wise, broadcasting. Integer inputs give a
// float result (true division), as in PyTorch.
func (t *Tensor) Div(other *Tensor) *Tensor {
	out := rawBinary("Div", divOp, t, other)
	return record("div", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		var ga, gb *Tensor
		if t.requiresGrad {
			ga = gradFor(rawBinary("Div", divOp, g, other), t)
		}
		if other.requiresGrad {
			// d(a/b)/db = −a/b² = −out/b
			q := rawBinary("Div", divOp, out, other)
			m := rawBinary("Div", mulOp, g, q)
			q.Release()
			gb = gradFor(rawUnary("Div", backends.Neg, m, 0, 0), other)
			m.Release()
		}
		return []*Tensor{ga, gb}
	})
}

// AddScalar returns t + s.
func (t *Tensor) AddScalar(s float64) *Tensor {
	out := rawScalar("AddScalar", addOp, t, s, false)
	return record("add_scalar", map[string]any{"scalar": s}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(g, t)}
	})
}

// SubScalar returns t − s.
func (t *Tensor) SubScalar(s float64) *Tensor { return t.AddScalar(-s) }

// MulScalar returns t × s.
func (t *Tensor) MulScalar(s float64) *Tensor {
	out := rawScalar("MulScalar", mulOp, t, s, false)
	return record("mul_scalar", map[string]any{"scalar": s}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(rawScalar("MulScalar", mulOp, g, s, false), t)}
	})
}

// DivScalar returns t ÷ s.
func (t *Tensor) DivScalar(s float64) *Tensor {
	out := rawScalar("DivScalar", divOp, t, s, false)
	return record("div_scalar", map[string]any{"scalar": s}, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(rawScalar("DivScalar", divOp, g, s, false), t)}
	})
}

// unaryOp runs a differentiable unary op from the shared table and records
// its backward as g·f'(x).
func (t *Tensor) unaryOp(name string, u backends.UnaryOp, p0, p1 float64) *Tensor {
	t.live(name)
	out := rawUnary(name, u, t, p0, p1)
	var attrs map[string]any
	if p0 != 0 || p1 != 0 {
		attrs = map[string]any{"p0": p0, "p1": p1}
	}
	if outputGrad(u, out) {
		return record(backends.UnaryOps[u].Name, attrs, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
			return []*Tensor{castGrad(rawUnaryGradOutput(name, u, out, g), t)}
		})
	}
	return record(backends.UnaryOps[u].Name, attrs, out, []*Tensor{t}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(rawUnaryGrad(name, u, t, g, p0, p1), t)}
	})
}

// outputGrad reports whether the backward of u, whose result is out, is
// computed from out rather than from its input: where u's derivative is a
// function of its output (backends.UnaryDef.DFOut: Exp, Tanh, Sigmoid) and
// out's backend computes it (backends.UnaryOutputGrad), as PyTorch's
// autograd does. The graph then holds out, which the next op usually holds
// anyway, instead of the input, and the backward pass reads y and g at
// memory speed instead of recomputing the function. Elsewhere (the fusion
// decorator, CUDA, remote devices) the backward is UnaryGrad of the input,
// as before.
func outputGrad(u backends.UnaryOp, out *Tensor) bool {
	if backends.UnaryOps[u].DFOut == nil || !out.dtype.IsFloat() {
		return false
	}
	_, ok := out.backend().(backends.UnaryOutputGrad)
	return ok
}

// rawUnaryGradOutput computes g·u'(x) from y = u(x) (see outputGrad), with
// no graph.
func rawUnaryGradOutput(op string, u backends.UnaryOp, y, g *Tensor) *Tensor {
	out := newTensor(op, g.dev, g.dtype, g.shape)
	out.backend().(backends.UnaryOutputGrad).UnaryGradOutput(u, out.view(), y.broadcastView(g.shape), g.view())
	return out
}

// Neg returns −t.
func (t *Tensor) Neg() *Tensor { return t.unaryOp("Neg", backends.Neg, 0, 0) }

// Exp returns eˣ element-wise.
func (t *Tensor) Exp() *Tensor { return t.unaryOp("Exp", backends.Exp, 0, 0) }

// Log returns the natural logarithm element-wise.
func (t *Tensor) Log() *Tensor { return t.unaryOp("Log", backends.Log, 0, 0) }

// Tanh returns the hyperbolic tangent element-wise.
func (t *Tensor) Tanh() *Tensor { return t.unaryOp("Tanh", backends.Tanh, 0, 0) }

// Sigmoid returns 1/(1+e⁻ˣ) element-wise.
func (t *Tensor) Sigmoid() *Tensor { return t.unaryOp("Sigmoid", backends.Sigmoid, 0, 0) }

// Relu returns max(x, 0) element-wise.
func (t *Tensor) Relu() *Tensor { return t.unaryOp("Relu", backends.Relu, 0, 0) }

// Square returns x² element-wise.
func (t *Tensor) Square() *Tensor { return t.unaryOp("Square", backends.Square, 0, 0) }
