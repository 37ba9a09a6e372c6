package optim

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// GradClip configures gradient clipping inside an optimizer's Step: the
// gradients are clipped as ClipGradValue and then ClipGradNorm would clip
// them, over all the parameters of the step, before the update. The
// caller's gradients are not modified (the optimizer works on clipped
// copies), unlike the functions'. The zero value clips nothing.
type GradClip struct {
	// MaxNorm rescales the gradients so that their total norm is at most
	// MaxNorm (0: no norm clipping).
	MaxNorm float64 `json:"max_norm,omitempty"`
	// NormType is the p of the p-norm: 0 means 2; math.Inf(1) is the max
	// norm (written "inf" in JSON).
	NormType float64 `json:"norm_type,omitempty"`
	// Value clips every gradient element to [−Value, Value] (0: none).
	Value float64 `json:"value,omitempty"`
}

// MarshalJSON writes c, with an infinite NormType as "inf".
func (c GradClip) MarshalJSON() ([]byte, error) {
	type plain GradClip
	var norm any
	switch {
	case math.IsInf(c.NormType, 1):
		norm = "inf"
	case c.NormType != 0:
		norm = c.NormType
	}
	return json.Marshal(struct {
		plain
		NormType any `json:"norm_type,omitempty"`
	}{plain(c), norm})
}

// UnmarshalJSON reads c, accepting "inf" for NormType.
func (c *GradClip) UnmarshalJSON(b []byte) error {
	type plain GradClip
	var v struct {
		plain
		NormType json.RawMessage `json:"norm_type,omitempty"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = GradClip(v.plain)
	if len(v.NormType) > 0 {
		var s string
		if json.Unmarshal(v.NormType, &s) == nil {
			if s != "inf" {
				return fmt.Errorf("optim.GradClip: norm_type %q: want a number or \"inf\"", s)
			}
			c.NormType = math.Inf(1)
			return nil
		}
		return json.Unmarshal(v.NormType, &c.NormType)
	}
	return nil
}

func (c GradClip) check() error {
	switch {
	case math.IsNaN(c.MaxNorm) || math.IsInf(c.MaxNorm, 0) || c.MaxNorm < 0:
		return fmt.Errorf("GradClip.MaxNorm %v out of range: %w", c.MaxNorm, ErrConfig)
	case math.IsNaN(c.Value) || math.IsInf(c.Value, 0) || c.Value < 0:
		return fmt.Errorf("GradClip.Value %v out of range: %w", c.Value, ErrConfig)
	case math.IsNaN(c.NormType) || c.NormType < 0 || math.IsInf(c.NormType, -1):
		return fmt.Errorf("GradClip.NormType %v: want a positive p or math.Inf(1): %w", c.NormType, ErrConfig)
	}
	return nil
}

func (c GradClip) normType() float64 {
	if c.NormType == 0 {
		return 2
	}
	return c.NormType
}

// apply returns gs clipped (new tensors where clipping changed them).
func (c GradClip) apply(gs []*tensor.Tensor) []*tensor.Tensor {
	if c.Value == 0 && c.MaxNorm == 0 {
		return gs
	}
	out := append([]*tensor.Tensor(nil), gs...)
	if c.Value > 0 {
		for i, g := range out {
			out[i] = g.Clamp(-c.Value, c.Value)
		}
	}
	if c.MaxNorm > 0 {
		coef := clipCoefficient(totalNorm("optim.GradClip", out, c.normType()), c.MaxNorm)
		byType := map[tensor.DType]*tensor.Tensor{coef.DType(): coef}
		for i, g := range out {
			k := byType[g.DType()]
			if k == nil {
				k = coef.To(g.DType())
				byType[g.DType()] = k
			}
			out[i] = g.Mul(k)
		}
	}
	return out
}

// ClipGradNorm rescales the gradients of params in grads, in place, so that
// their total p-norm (the norm of the vector of all their elements) is at
// most maxNorm, as torch.nn.utils.clip_grad_norm_ does: each gradient is
// multiplied by min(1, maxNorm / (total + 1e-6)). normType is p, 2 for the
// Euclidean norm, math.Inf(1) for the largest magnitude. It returns the
// total norm before clipping as a scalar tensor (reading it syncs the
// device; the clipping itself never does), in the gradients' dtype
// (Float64 if any is, else Float32 for mixed dtypes), or a Float32 zero
// when no parameter has a gradient.
//
// params is a model (its trainable parameters, nn.TrainableParams), a
// []nn.NamedParam, a []*nn.Param or a *nn.Param; parameters without a
// gradient are skipped. Gradients that share storage (Backward may hand two
// parameters views of one tensor) are clipped once. It panics with a
// *tensor.Error wrapping tensor.ErrArgument for a negative or non-finite
// maxNorm or a normType that is not positive.
func ClipGradNorm(grads *tensor.Gradients, params any, maxNorm, normType float64) *tensor.Tensor {
	const op = "optim.ClipGradNorm"
	if math.IsNaN(maxNorm) || math.IsInf(maxNorm, 0) || maxNorm < 0 {
		argError(op, "maxNorm %v out of range", maxNorm)
	}
	if math.IsNaN(normType) || normType <= 0 {
		argError(op, "normType %v: want a positive p or math.Inf(1)", normType)
	}
	ps := paramList(op, params)
	gs := gradsOf(grads, ps)
	if len(gs) == 0 {
		dev := tensor.CPU()
		if len(ps) > 0 {
			dev = ps[0].Param.Device().Inner()
		}
		return tensor.Scalar(dev, 0)
	}
	var total *tensor.Tensor
	tensor.Scope(func() {
		total = totalNorm(op, gs, normType).Keep()
		coef := clipCoefficient(total, maxNorm)
		byType := map[tensor.DType]*tensor.Tensor{coef.DType(): coef}
		inPlace(gs, func(g *tensor.Tensor) *tensor.Tensor {
			k := byType[g.DType()]
			if k == nil {
				k = coef.To(g.DType())
				byType[g.DType()] = k
			}
			return g.Mul(k)
		})
	})
	return total
}

// ClipGradValue clips every element of the gradients of params in grads,
// in place, to [−value, value], as torch.nn.utils.clip_grad_value_ does.
// params is as for ClipGradNorm. It panics with a *tensor.Error wrapping
// tensor.ErrArgument for a negative or non-finite value.
func ClipGradValue(grads *tensor.Gradients, params any, value float64) {
	const op = "optim.ClipGradValue"
	if math.IsNaN(value) || math.IsInf(value, 0) || value < 0 {
		argError(op, "value %v out of range", value)
	}
	gs := gradsOf(grads, paramList(op, params))
	tensor.Scope(func() {
		inPlace(gs, func(g *tensor.Tensor) *tensor.Tensor { return g.Clamp(-value, value) })
	})
}

func argError(op, format string, args ...any) {
	panic(&tensor.Error{Op: op, Msg: fmt.Sprintf(format, args...), Err: tensor.ErrArgument})
}

// paramList returns the parameters params describes (see ClipGradNorm).
func paramList(op string, params any) []nn.NamedParam {
	switch ps := params.(type) {
	case nil:
		argError(op, "nil params")
	case []nn.NamedParam:
		return ps
	case []*nn.Param:
		out := make([]nn.NamedParam, 0, len(ps))
		for _, p := range ps {
			if p != nil {
				out = append(out, nn.NamedParam{Param: p})
			}
		}
		return out
	case *nn.Param:
		return []nn.NamedParam{{Param: ps}}
	}
	return nn.TrainableParams(params)
}

// gradsOf returns the gradients of ps in grads, skipping those without.
func gradsOf(grads *tensor.Gradients, ps []nn.NamedParam) []*tensor.Tensor {
	var gs []*tensor.Tensor
	for _, np := range ps {
		if np.Param == nil || np.Param.Tensor == nil {
			continue
		}
		if g := grads.Get(np.Param.Tensor); g != nil {
			gs = append(gs, g)
		}
	}
	return gs
}

// totalNorm returns the normType-norm of all elements of gs, computed as
// torch.nn.utils.clip_grad_norm_ does: the norm of the per-tensor norms.
func totalNorm(op string, gs []*tensor.Tensor, normType float64) *tensor.Tensor {
	dtype := gs[0].DType()
	for _, g := range gs[1:] {
		if g.DType() != dtype {
			dtype = tensor.Float32
			for _, h := range gs {
				if h.DType() == tensor.Float64 {
					dtype = tensor.Float64
				}
			}
			break
		}
	}
	norms := make([]*tensor.Tensor, len(gs))
	for i, g := range gs {
		if !g.DType().IsFloat() {
			argError(op, "gradient of dtype %s", g.DType())
		}
		n := pNorm(g, normType)
		if n.DType() != dtype {
			n = n.To(dtype)
		}
		norms[i] = n
	}
	return pNorm(tensor.Stack(norms, 0), normType)
}

// pNorm returns the p-norm of all of t's elements.
func pNorm(t *tensor.Tensor, p float64) *tensor.Tensor {
	switch {
	case math.IsInf(p, 1):
		return t.Abs().Max()
	case p == 2:
		return t.Square().Sum().Sqrt()
	case p == 1:
		return t.Abs().Sum()
	}
	return t.Abs().PowScalar(p).Sum().PowScalar(1 / p)
}

// clipCoefficient returns min(1, maxNorm / (total + 1e-6)) as PyTorch
// computes it.
func clipCoefficient(total *tensor.Tensor, maxNorm float64) *tensor.Tensor {
	return total.AddScalar(1e-6).Reciprocal().MulScalar(maxNorm).ClampMax(1)
}

// inPlace replaces each gradient with f(gradient). Gradients sharing a
// buffer (views of one tensor) are all computed before any is written, so
// every element is transformed exactly once, from its original value.
func inPlace(gs []*tensor.Tensor, f func(g *tensor.Tensor) *tensor.Tensor) {
	type shared struct{}
	var order []any
	byBuf := map[any][]*tensor.Tensor{}
	for _, g := range gs {
		var key any = shared{}
		if b := tensor.BufferOf(g); b != nil && reflect.TypeOf(b).Comparable() {
			key = b
		}
		if _, ok := byBuf[key]; !ok {
			order = append(order, key)
		}
		byBuf[key] = append(byBuf[key], g)
	}
	for _, key := range order {
		group := byBuf[key]
		news := make([]*tensor.Tensor, len(group))
		for i, g := range group {
			news[i] = f(g)
		}
		for i, g := range group {
			g.Assign(news[i])
			news[i].Release()
		}
	}
}
