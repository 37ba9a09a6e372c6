package tensor

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// normFusion returns the backend's fused normalisation when it applies to
// x and its parameters: Float32 or Float64 throughout, and at least one
// element.
func normFusion(x *Tensor, params ...*Tensor) (backends.NormFusion, bool) {
	if !normFusable(x, params) {
		return nil, false
	}
	f, ok := x.backend().(backends.NormFusion)
	return f, ok
}

// normFusable reports whether a fused normalisation kernel may take x and
// its parameters (nil for absent ones): fusion allowed, Float32 or
// Float64 throughout, and at least one element.
func normFusable(x *Tensor, params []*Tensor) bool {
	if composeOnly.Load() || (x.dtype != Float32 && x.dtype != Float64) || x.NumElements() == 0 {
		return false
	}
	for _, p := range params {
		if p != nil && p.dtype != x.dtype {
			return false
		}
	}
	return true
}

// rows2 returns a contiguous [rows, n] view of t's elements (t contiguous).
func rows2(t *Tensor, n int) backends.View {
	v := t.view()
	v.Shape, v.Strides = []int{t.NumElements() / n, n}, []int{n, 1}
	return v
}

// flat returns a contiguous [n] view of t's elements (t contiguous), or an
// absent view for nil.
func flat(t *Tensor) backends.View {
	if t == nil {
		return backends.View{}
	}
	v := t.view()
	v.Shape, v.Strides = []int{t.NumElements()}, []int{1}
	return v
}

// normSetup makes contiguous copies (or views) of x and the parameters and
// allocates the output and the per-row statistics.
type normSetup struct {
	op            string
	x, w, b       *Tensor // contiguous
	y, mean, rstd *Tensor
	n             int
}

func newNormSetup(op string, t, weight, bias *Tensor, n int, withMean bool) *normSetup {
	s := &normSetup{op: op, n: n, x: rawContiguous(op, t), y: newTensor(op, t.dev.Inner(), t.dtype, t.shape)}
	if weight != nil {
		s.w = rawContiguous(op, weight)
	}
	if bias != nil {
		s.b = rawContiguous(op, bias)
	}
	rows := []int{t.NumElements() / n}
	if withMean {
		s.mean = newTensor(op, t.dev.Inner(), t.dtype, rows)
	}
	s.rstd = newTensor(op, t.dev.Inner(), t.dtype, rows)
	return s
}

// saved lists what the backward pass keeps.
func (s *normSetup) saved() []*Tensor { return []*Tensor{s.x, s.w, s.b, s.mean, s.rstd} }

// grads allocates the gradients the inputs (t, then weight and bias when
// present) require, shaped as they are.
func (s *normSetup) grads(t, weight, bias *Tensor) (dx, dw, db *Tensor) {
	dev := t.dev.Inner()
	if t.requiresGrad {
		dx = newTensor(s.op, dev, t.dtype, t.shape)
	}
	if weight != nil && weight.requiresGrad {
		dw = newTensor(s.op, dev, weight.dtype, weight.shape)
	}
	if bias != nil && bias.requiresGrad {
		db = newTensor(s.op, dev, bias.dtype, bias.shape)
	}
	return
}

// view2 returns rows2 of t, or an absent view for nil.
func view2(t *Tensor, n int) backends.View {
	if t == nil {
		return backends.View{}
	}
	return rows2(t, n)
}

// lnFused is LayerNorm through the backend's fused kernels: inputs are t
// and the parameters present, n the normalised elements per row.
func lnFused(op string, f backends.NormFusion, t, weight, bias *Tensor, inputs []*Tensor, n int, eps float64, attrs map[string]any) *Tensor {
	s := newNormSetup(op, t, weight, bias, n, true)
	f.LayerNormForward(rows2(s.y, n), s.mean.view(), s.rstd.view(), rows2(s.x, n), flat(s.w), flat(s.b), eps)
	return actRecord("layer_norm", attrs, s.y, inputs, s.saved(), func(g *Tensor) []*Tensor {
		gc := rawContiguous(op, g)
		defer gc.Release()
		dx, dw, db := s.grads(t, weight, bias)
		f.LayerNormBackward(view2(dx, n), flat(dw), flat(db), rows2(gc, n), rows2(s.x, n), s.mean.view(), s.rstd.view(), flat(s.w))
		grads := []*Tensor{dx}
		if weight != nil {
			grads = append(grads, dw)
		}
		if bias != nil {
			grads = append(grads, db)
		}
		return grads
	})
}

// RMSNorm normalises t over its trailing dimensions normalizedShape (which
// must equal t's last len(normalizedShape) dimensions) by their root mean
// square and scales by weight, as PyTorch's rms_norm:
// y = t / √(mean(t²) + eps) · weight. weight has shape normalizedShape, or
// is nil for no scale. eps < 0 means PyTorch's default, the machine
// epsilon of t's dtype (torch.finfo(dtype).eps).
//
// It is one graph node, "rms_norm", with gradients for t and weight,
// keeping only the per-row 1/√(mean(t²) + eps) for the backward pass.
// Where the backend has fused normalisation (backends.NormFusion: the
// CPU's) and t and weight are Float32 or Float64, each row is read once
// for its statistic and once for its output, and the backward pass is one
// kernel; elsewhere it is composed from element-wise ops and reductions.
// The result has t's dtype; Float16 and BFloat16 are computed in Float32.
// It panics with ErrShape when the shapes do not fit (the message names
// them), ErrDType for non-float tensors and ErrArgument for an empty
// normalizedShape.
func (t *Tensor) RMSNorm(normalizedShape []int, weight *Tensor, eps float64) *Tensor {
	const op = "RMSNorm"
	t.live(op)
	inputs := []*Tensor{t}
	if weight != nil {
		sameDevice(op, t, weight)
		inputs = append(inputs, weight)
	}
	k := checkNormalizedShape(op, t, normalizedShape)
	if !t.dtype.IsFloat() {
		fail(op, ErrDType, "input %s is %s; RMS norm needs floating-point tensors", shapeString(t.shape), t.dtype)
	}
	if weight != nil {
		if !weight.dtype.IsFloat() {
			fail(op, ErrDType, "weight %s is %s; RMS norm needs floating-point tensors", shapeString(weight.shape), weight.dtype)
		}
		if !sameShape(weight.shape, normalizedShape) {
			fail(op, ErrShape, "weight %s does not match normalizedShape %s", shapeString(weight.shape), shapeString(normalizedShape))
		}
	}
	if eps < 0 {
		eps = machineEpsilon(t.dtype)
	}
	n := 1
	axes := make([]int, k)
	for i := range axes {
		axes[i] = len(t.shape) - k + i
		n *= normalizedShape[i]
	}
	attrs := map[string]any{"normalized_shape": append([]int(nil), normalizedShape...), "eps": eps}
	if f, ok := normFusion(t, weight); ok {
		s := newNormSetup(op, t, weight, nil, n, false)
		f.RMSNormForward(rows2(s.y, n), s.rstd.view(), rows2(s.x, n), flat(s.w), eps)
		return actRecord("rms_norm", attrs, s.y, inputs, s.saved(), func(g *Tensor) []*Tensor {
			gc := rawContiguous(op, g)
			defer gc.Release()
			dx, dw, _ := s.grads(t, weight, nil)
			f.RMSNormBackward(view2(dx, n), flat(dw), rows2(gc, n), rows2(s.x, n), s.rstd.view(), flat(s.w))
			if weight != nil {
				return []*Tensor{dx, dw}
			}
			return []*Tensor{dx}
		})
	}
	return rmsComposed(op, t, weight, inputs, axes, n, eps, attrs)
}

// rmsComposed is RMSNorm from element-wise ops and reductions, computed in
// actComputeType(t's dtype).
func rmsComposed(op string, t, weight *Tensor, inputs []*Tensor, axes []int, n int, eps float64, attrs map[string]any) *Tensor {
	ct := actComputeType(t.dtype)
	x := rawCast(op, t, ct)
	defer x.Release()
	sq := rawUnary(op, backends.Square, x, 0, 0)
	ss := rawReduce(op, backends.Sum, sq, axes, true)
	sq.Release()
	ms := rawScalar(op, divOp, ss, float64(n), false)
	ss.Release()
	mse := rawScalar(op, addOp, ms, eps, false)
	ms.Release()
	rstd := rawUnary(op, backends.Rsqrt, mse, 0, 0)
	mse.Release()
	y := rawBinary(op, mulOp, x, rstd)
	y = lnAffine(op, y, weight, nil, ct)
	out := rawCast(op, y, t.dtype)
	y.Release()
	return actRecord("rms_norm", attrs, out, inputs, []*Tensor{rstd}, func(g *Tensor) []*Tensor {
		gc := rawCast(op, g, ct)
		defer gc.Release()
		xr := rawCast(op, t, ct)
		xhat := rawBinary(op, mulOp, xr, rstd)
		xr.Release()
		defer xhat.Release()
		grads := make([]*Tensor, len(inputs))
		if t.requiresGrad {
			// rstd·(ĝ − x̂·mean(ĝ·x̂)), ĝ = g·weight
			gh := gc.newView(gc.shape, gc.strides, gc.offset)
			if weight != nil {
				wc := rawCast(op, weight, ct)
				gh.Release()
				gh = rawBinary(op, mulOp, gc, wc)
				wc.Release()
			}
			ghx := rawBinary(op, mulOp, gh, xhat)
			s := rawReduce(op, backends.Sum, ghx, axes, true)
			ghx.Release()
			b := rawScalar(op, divOp, s, float64(n), false)
			s.Release()
			xb := rawBinary(op, mulOp, xhat, b)
			b.Release()
			d := rawBinary(op, subOp, gh, xb)
			gh.Release()
			xb.Release()
			dx := rawBinary(op, mulOp, d, rstd)
			d.Release()
			grads[0] = castGrad(dx, t)
		}
		if weight != nil && weight.requiresGrad {
			grads[1] = gradFor(rawBinary(op, mulOp, gc, xhat), weight)
		}
		return grads
	})
}

// machineEpsilon returns torch.finfo(dtype).eps: the gap between 1 and the
// next representable number.
func machineEpsilon(dtype DType) float64 {
	switch dtype {
	case Float64:
		return math.Ldexp(1, -52)
	case Float16:
		return math.Ldexp(1, -10)
	case BFloat16:
		return math.Ldexp(1, -7)
	}
	return math.Ldexp(1, -23)
}
