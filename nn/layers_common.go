package nn

import (
	"fmt"
	"math"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// argError panics with a *tensor.Error (ErrArgument) naming the
// constructor or method op.
func argError(op, format string, args ...any) {
	panic(&tensor.Error{Op: op, Msg: fmt.Sprintf(format, args...), Err: tensor.ErrArgument})
}

// dtypeError panics with a *tensor.Error (ErrDType) naming the layer.
func dtypeError(layer, format string, args ...any) {
	panic(&tensor.Error{Op: "nn." + layer, Msg: fmt.Sprintf(format, args...), Err: tensor.ErrDType})
}

// initParam makes a parameter of the given shape with init (or def when
// init is nil), converted to dtype (zero: Float32). fanIn and fanOut are
// what the initializer is told.
func initParam(dev tensor.Device, init, def Initializer, shape []int, fanIn, fanOut int, dtype tensor.DType) *Param {
	if init == nil {
		init = def
	}
	return NewParam(convert(init.Init(dev, shape, fanIn, fanOut), dtype))
}

// fanBound returns 1/√fan, the bound of PyTorch's default bias
// initialisation (and of a few weights).
func fanBound(fan int) float64 {
	if fan <= 0 {
		return 0
	}
	return 1 / math.Sqrt(float64(fan))
}

// perDim expands a configuration list to one value per spatial dimension:
// empty means def, one value applies to every dimension. It panics with
// ErrArgument (naming op and the field) for another length or a value
// below lo.
func perDim(op, field string, v []int, spatial, def, lo int) []int {
	out := make([]int, spatial)
	switch len(v) {
	case 0:
		for i := range out {
			out[i] = def
		}
	case 1:
		for i := range out {
			out[i] = v[0]
		}
	case spatial:
		copy(out, v)
	default:
		argError(op, "%s %v must hold 1 or %d values", field, v, spatial)
	}
	for _, x := range out {
		if x < lo {
			argError(op, "%s %v: values must be at least %d", field, v, lo)
		}
	}
	return out
}

// dimsString formats a shape pattern such as "N, 3, H, W".
func dimsString(parts ...any) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", ")
}

// optional returns p's tensor, or nil for a nil Param.
func optional(p *Param) *tensor.Tensor {
	if p == nil {
		return nil
	}
	return p.Tensor
}

// channelShape returns [1, c, 1, …] of the given rank, the shape that
// broadcasts a per-channel vector over [N, C, …].
func channelShape(c, rank int) []int {
	s := make([]int, rank)
	for i := range s {
		s[i] = 1
	}
	s[1] = c
	return s
}

// requireFloat panics with ErrDType naming the layer unless x is floating
// point.
func requireFloat(layer string, x *tensor.Tensor) {
	if !x.DType().IsFloat() {
		dtypeError(layer, "expects floating-point input, got %v %s", x.Shape(), x.DType())
	}
}
