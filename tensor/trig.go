package tensor

import "github.com/kiln-ml/kiln/backends"

// Inverse and hyperbolic trigonometry. Each is one backend unary op
// (backends.UnaryOps) with its own backward rule; integer and bool tensors
// give Float32, as in PyTorch. Outside an op's domain (|x| > 1 for Asin,
// Acos, Atanh; x < 1 for Acosh) the result is NaN, as in PyTorch; these
// functions never panic on values, only on a released tensor.

// Asin returns the arcsine element-wise, in [−π/2, π/2].
func (t *Tensor) Asin() *Tensor { return t.unaryOp("Asin", backends.Asin, 0, 0) }

// Acos returns the arccosine element-wise, in [0, π].
func (t *Tensor) Acos() *Tensor { return t.unaryOp("Acos", backends.Acos, 0, 0) }

// Atan returns the arctangent element-wise, in (−π/2, π/2).
func (t *Tensor) Atan() *Tensor { return t.unaryOp("Atan", backends.Atan, 0, 0) }

// Sinh returns the hyperbolic sine element-wise.
func (t *Tensor) Sinh() *Tensor { return t.unaryOp("Sinh", backends.Sinh, 0, 0) }

// Cosh returns the hyperbolic cosine element-wise.
func (t *Tensor) Cosh() *Tensor { return t.unaryOp("Cosh", backends.Cosh, 0, 0) }

// Asinh returns the inverse hyperbolic sine element-wise.
func (t *Tensor) Asinh() *Tensor { return t.unaryOp("Asinh", backends.Asinh, 0, 0) }

// Acosh returns the inverse hyperbolic cosine element-wise (NaN below 1).
func (t *Tensor) Acosh() *Tensor { return t.unaryOp("Acosh", backends.Acosh, 0, 0) }

// Atanh returns the inverse hyperbolic tangent element-wise (±Inf at ±1,
// NaN beyond).
func (t *Tensor) Atanh() *Tensor { return t.unaryOp("Atanh", backends.Atanh, 0, 0) }

// Atan2 returns atan2(t, other) element-wise: the angle in (−π, π] of the
// point (other, t), with broadcasting and type promotion (integer and bool
// inputs give Float32), as torch.atan2. Its gradient is other/(t²+other²)
// for t and −t/(t²+other²) for other. It panics with ErrShape when the
// shapes do not broadcast and ErrDevice when the tensors live on different
// devices.
func (t *Tensor) Atan2(other *Tensor) *Tensor {
	const op = "Atan2"
	sameDevice(op, t, other)
	y, x := t, other
	if !backends.Promote(t.dtype, other.dtype).IsFloat() {
		y, x = rawCast(op, t, Float32), rawCast(op, other, Float32)
		defer y.Release()
		defer x.Release()
	}
	out := rawBinary(op, backends.Atan2, y, x)
	return record("atan2", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		// r = t² + other², broadcast to out's shape.
		ys := rawUnary(op, backends.Square, y, 0, 0)
		xs := rawUnary(op, backends.Square, x, 0, 0)
		r := rawBinary(op, addOp, ys, xs)
		ys.Release()
		xs.Release()
		gr := rawBinary(op, divOp, g, r)
		r.Release()
		var gy, gx *Tensor
		if t.requiresGrad {
			gy = gradFor(rawBinary(op, mulOp, gr, x), t)
		}
		if other.requiresGrad {
			d := rawBinary(op, mulOp, gr, y)
			gx = gradFor(mathConsume(d, func(d *Tensor) *Tensor { return rawUnary(op, backends.Neg, d, 0, 0) }), other)
		}
		gr.Release()
		return []*Tensor{gy, gx}
	})
}
