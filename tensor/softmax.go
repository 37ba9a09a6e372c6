package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// Softmax returns e^(x−max)/Σe^(x−max) along dim (negative counts from the
// end), so that every slice along dim sums to 1. Subtracting the slice's
// maximum first keeps it exact for logits of any magnitude. It is one graph
// node, "softmax", whose backward is y·(g − Σ g·y). A 0-d tensor is treated
// as one element (dim 0 or −1). Float16 and BFloat16 inputs are computed in
// Float32 and rounded back. It panics with ErrDType for non-float inputs and
// ErrArgument for a dim out of range.
func (t *Tensor) Softmax(dim int) *Tensor { return t.softmax("Softmax", "softmax", dim, false) }

// LogSoftmax returns log(Softmax(dim)) computed stably as
// (x − max) − log Σ e^(x−max), without ever forming the softmax. It is one
// graph node, "log_softmax", whose backward is g − e^y·Σg. It fails like
// Softmax.
func (t *Tensor) LogSoftmax(dim int) *Tensor {
	return t.softmax("LogSoftmax", "log_softmax", dim, true)
}

func (t *Tensor) softmax(op, name string, dim int, log bool) *Tensor {
	t.live(op)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "%s of a %s tensor %s; convert it with To(tensor.Float32) first", name, t.dtype, shapeString(t.shape))
	}
	scalar := len(t.shape) == 0
	axis := normAxis(op, dim, max(len(t.shape), 1))
	x := actAsVector(t)
	defer x.Release()
	ct := actComputeType(t.dtype)
	xc := rawCast(op, x, ct)
	y := actSoftmax(op, xc, axis, log)
	xc.Release()
	out := rawCast(op, y, t.dtype)
	y.Release()
	if scalar {
		v := out.newView([]int{}, []int{}, out.offset)
		out.Release()
		out = v
	}
	saved := out.newView(out.shape, out.strides, out.offset) // the backward's own hold on y
	return actRecord(name, map[string]any{"dim": axis}, out, []*Tensor{t}, []*Tensor{saved}, func(g *Tensor) []*Tensor {
		gv, yv := actAsVector(g), actAsVector(saved)
		gc, yc := rawCast(op, gv, ct), rawCast(op, yv, ct)
		gv.Release()
		yv.Release()
		var dx *Tensor
		if log {
			dx = actLogSoftmaxBackward(op, gc, yc, axis)
		} else {
			dx = actSoftmaxBackward(op, gc, yc, axis)
		}
		gc.Release()
		yc.Release()
		if scalar {
			v := dx.newView([]int{}, []int{}, dx.offset)
			dx.Release()
			dx = v
		}
		return []*Tensor{castGrad(dx, t)}
	})
}

// actSoftmax computes softmax (or log-softmax) of x along axis with no graph.
func actSoftmax(op string, x *Tensor, axis int, log bool) *Tensor {
	if x.NumElements() == 0 {
		return newTensor(op, x.dev, x.dtype, x.shape)
	}
	m := rawReduce(op, backends.Max, x, []int{axis}, true)
	s := rawBinary(op, subOp, x, m)
	m.Release()
	e := rawUnary(op, backends.Exp, s, 0, 0)
	z := rawReduce(op, backends.Sum, e, []int{axis}, true)
	defer z.Release()
	if log {
		e.Release()
		lz := rawUnary(op, backends.Log, z, 0, 0)
		out := rawBinary(op, subOp, s, lz)
		lz.Release()
		s.Release()
		return out
	}
	s.Release()
	out := rawBinary(op, divOp, e, z)
	e.Release()
	return out
}

// actSoftmaxBackward returns y·(g − Σ_axis g·y) for softmax output y.
func actSoftmaxBackward(op string, g, y *Tensor, axis int) *Tensor {
	gy := rawBinary(op, mulOp, g, y)
	s := rawReduce(op, backends.Sum, gy, []int{axis}, true)
	gy.Release()
	d := rawBinary(op, subOp, g, s)
	s.Release()
	dx := rawBinary(op, mulOp, y, d)
	d.Release()
	return dx
}

// actLogSoftmaxBackward returns g − e^y·Σ_axis g for log-softmax output y.
func actLogSoftmaxBackward(op string, g, y *Tensor, axis int) *Tensor {
	s := rawReduce(op, backends.Sum, g, []int{axis}, true)
	p := rawUnary(op, backends.Exp, y, 0, 0)
	ps := rawBinary(op, mulOp, p, s)
	p.Release()
	s.Release()
	dx := rawBinary(op, subOp, g, ps)
	ps.Release()
	return dx
}

// actAsVector returns a new view of t, with a 0-d tensor seen as one
// element of a 1-D tensor.
func actAsVector(t *Tensor) *Tensor {
	if len(t.shape) == 0 {
		return t.newView([]int{1}, []int{1}, t.offset)
	}
	return t.newView(t.shape, t.strides, t.offset)
}

// actComputeType is the dtype the composite ops compute in: Float32 for
// the 16-bit floats (whose rounding would spoil sums and exponentials),
// the input's own otherwise.
func actComputeType(d DType) DType {
	if d == Float16 || d == BFloat16 {
		return Float32
	}
	return d
}

// actRecord is record for ops whose backward holds tensors saved from the
// forward pass: when no graph is recorded they are released at once.
func actRecord(op string, attrs map[string]any, out *Tensor, inputs, saved []*Tensor, backward func(g *Tensor) []*Tensor) *Tensor {
	r := record(op, attrs, out, inputs, backward)
	if r.node == nil {
		for _, s := range saved {
			if s != nil {
				s.Release()
			}
		}
	}
	return r
}
