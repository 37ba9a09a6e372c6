package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// Linear returns x·weightᵀ + bias, PyTorch's linear layer: x is [..., in]
// (any number of leading dimensions, or just [in]), weight is [out, in]
// (PyTorch's layout) and bias, which may be nil, is [out]; the result is
// [..., out]. It is one graph node, "linear", whose backward gives
// dx = g·weight, dweight = gᵀ·x summed over the leading dimensions and
// dbias = Σg. Mixed float dtypes promote as in Matmul. It panics with
// ErrShape when the shapes do not fit (the message names them) and with
// ErrDType for non-float tensors. On a BFloat16 Autocast view, with
// float32 inputs and a backend that multiplies in bfloat16 (the CPU's),
// it is one bfloat16 product (inputs rounded to bfloat16, float32 sums)
// with a Float32 result and Float32 gradients, a "linear" node with the
// attribute autocast "bfloat16".
func Linear(x, weight, bias *Tensor) *Tensor {
	const op = "Linear"
	if mm, ok := autocastBF16(x, weight, bias); ok {
		linearCheck(op, x, weight, bias)
		return linearBF16(mm, x, weight, bias)
	}
	if bias != nil {
		if in, ok := autocastInputs(x, weight, bias); ok {
			return Linear(in[0], in[1], in[2])
		}
	} else if in, ok := autocastInputs(x, weight); ok {
		return Linear(in[0], in[1], nil)
	}
	linearCheck(op, x, weight, bias)
	y, fused := linearFused(op, x, weight, bias)
	if !fused {
		wt := weight.transposeView(0, 1)
		y = rawMatmul(op, x, wt)
		wt.Release()
		if bias != nil {
			yb := rawBinary(op, addOp, y, bias)
			y.Release()
			y = yb
		}
	}
	return recordLinear(op, x, weight, bias, y)
}

// recordLinear records y = x·weightᵀ + bias (bias may be nil), computed
// by Linear or LinearActivation, as a "linear" node with its backward.
func recordLinear(op string, x, weight, bias, y *Tensor) *Tensor {
	inputs := []*Tensor{x, weight}
	if bias != nil {
		inputs = append(inputs, bias)
	}
	out, in := weight.shape[0], weight.shape[1]
	attrs := map[string]any{"in_features": in, "out_features": out, "bias": bias != nil}
	return record("linear", attrs, y, inputs, func(g *Tensor) []*Tensor {
		grads := make([]*Tensor, len(inputs))
		if bias != nil && bias.requiresGrad { // first, while g is freshest in cache
			grads[2] = gradFor(g.newView(g.shape, g.strides, g.offset), bias)
		}
		if x.requiresGrad {
			grads[0] = gradFor(rawMatmul(op, g, weight), x)
		}
		if weight.requiresGrad {
			g2 := rawReshape(op, g, []int{-1, out})
			x2 := rawReshape(op, x, []int{-1, in})
			g2t := g2.transposeView(0, 1)
			grads[1] = gradFor(rawMatmul(op, g2t, x2), weight)
			g2t.Release()
			g2.Release()
			x2.Release()
		}
		return grads
	})
}

// linearCheck panics unless Linear's inputs are on one device, floating
// point and of fitting shapes.
func linearCheck(op string, x, weight, bias *Tensor) {
	inputs := []*Tensor{x, weight}
	if bias != nil {
		inputs = append(inputs, bias)
	}
	sameDevice(op, inputs...)
	for _, in := range inputs {
		if !in.dtype.IsFloat() {
			fail(op, ErrDType, "input %s, weight %s%s: all must be floating point, got %s",
				x.dtype, weight.dtype, linBiasDType(bias), in.dtype)
		}
	}
	if len(weight.shape) != 2 {
		fail(op, ErrShape, "weight %s must be 2-D [out in]", shapeString(weight.shape))
	}
	out, in := weight.shape[0], weight.shape[1]
	if len(x.shape) == 0 || x.shape[len(x.shape)-1] != in {
		fail(op, ErrShape, "input %s must end with the %d input features of weight %s", shapeString(x.shape), in, shapeString(weight.shape))
	}
	if bias != nil && !sameShape(bias.shape, []int{out}) {
		fail(op, ErrShape, "bias %s does not match the %d output features of weight %s", shapeString(bias.shape), out, shapeString(weight.shape))
	}
}

func linBiasDType(bias *Tensor) string {
	if bias == nil {
		return ""
	}
	return ", bias " + bias.dtype.String()
}

// Dot returns the inner product Σ tᵢ·otherᵢ of two 1-D tensors of the same
// length and dtype, as a 0-d tensor (PyTorch's dot). It is one graph node,
// "dot". It panics with ErrShape unless both are 1-D of equal length and
// with ErrDType when their dtypes differ.
func (t *Tensor) Dot(other *Tensor) *Tensor {
	const op = "Dot"
	sameDevice(op, t, other)
	if len(t.shape) != 1 || len(other.shape) != 1 || t.shape[0] != other.shape[0] {
		fail(op, ErrShape, "dot needs two 1-D tensors of equal length, got %s and %s", shapeString(t.shape), shapeString(other.shape))
	}
	if t.dtype != other.dtype {
		fail(op, ErrDType, "dot of %s and %s: both must have the same dtype", t.dtype, other.dtype)
	}
	var out *Tensor
	if t.dtype.IsFloat() {
		out = rawMatmul(op, t, other)
	} else {
		// Integers and bools: exact products summed in Int64, then the
		// input dtype (PyTorch keeps it).
		p := rawBinary(op, mulOp, t, other)
		s := rawReduce(op, backends.Sum, p, []int{0}, false)
		p.Release()
		out = rawCast(op, s, t.dtype)
		s.Release()
	}
	return record("dot", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		var ga, gb *Tensor
		if t.requiresGrad {
			ga = gradFor(rawBinary(op, mulOp, g, other), t)
		}
		if other.requiresGrad {
			gb = gradFor(rawBinary(op, mulOp, g, t), other)
		}
		return []*Tensor{ga, gb}
	})
}

// Outer returns the outer product tᵢ·otherⱼ of two 1-D tensors, an
// [len(t), len(other)] matrix (PyTorch's outer; dtypes promote). It is one
// graph node, "outer". It panics with ErrShape unless both are 1-D.
func (t *Tensor) Outer(other *Tensor) *Tensor {
	const op = "Outer"
	sameDevice(op, t, other)
	if len(t.shape) != 1 || len(other.shape) != 1 {
		fail(op, ErrShape, "outer needs two 1-D tensors, got %s and %s", shapeString(t.shape), shapeString(other.shape))
	}
	col := t.newView([]int{t.shape[0], 1}, []int{t.strides[0], 0}, t.offset)
	out := rawBinary(op, mulOp, col, other)
	col.Release()
	return record("outer", nil, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		var ga, gb *Tensor
		if t.requiresGrad {
			ga = gradFor(rawMatmul(op, g, other), t)
		}
		if other.requiresGrad {
			gtr := g.transposeView(0, 1)
			gb = gradFor(rawMatmul(op, gtr, t), other)
			gtr.Release()
		}
		return []*Tensor{ga, gb}
	})
}
