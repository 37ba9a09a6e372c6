package nn

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// The rest of torch.nn's activation modules, over the ops of the tensor
// package's activation_extra.go. As in activation.go, the zero value of
// each is PyTorch's default where PyTorch has one and a zero parameter
// would be pointless (Hardtanh{} clamps to [−1, 1], Softshrink{} and
// Hardshrink{} use lambda 0.5, RReLU{} draws slopes from [1/8, 1/3]);
// GLU and Softmin should be made with their constructors, and PReLU, the
// only one with a parameter, with NewPReLU.

// PReLUConfig configures a PReLU; the zero value is PyTorch's default.
type PReLUConfig struct {
	// Init, when not nil, is the initial slope of every channel; nil means
	// PyTorch's 0.25. (A pointer because 0 is valid: PReLU starts as ReLU.)
	Init *float64 `json:"init,omitempty"`
	// DType is the weight's dtype; zero means Float32.
	DType tensor.DType `json:"dtype,omitempty"`
}

// PReLU is x for x > 0 and a·x elsewhere with a learnable slope a,
// torch.nn.PReLU: one slope shared by every channel, or one per channel
// (dimension 1 of the input). Its state dict holds "weight" [NumParameters].
type PReLU struct {
	Weight *Param `kiln:"weight"`
}

// NewPReLU returns a PReLU on dev with numParameters slopes (1, or the
// number of channels of its inputs), each starting at 0.25 unless cfg says
// otherwise. It panics with ErrArgument when numParameters is not positive.
func NewPReLU(dev tensor.Device, numParameters int, cfg ...PReLUConfig) *PReLU {
	if numParameters <= 0 {
		panic(&tensor.Error{Op: "nn.NewPReLU", Msg: fmt.Sprintf("number of parameters must be positive, got %d", numParameters),
			Err: tensor.ErrArgument})
	}
	var c PReLUConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	init := 0.25
	if c.Init != nil {
		init = *c.Init
	}
	return &PReLU{Weight: NewParam(convert(tensor.Full(dev, init, numParameters), c.DType))}
}

// Forward applies the layer. It panics with a *tensor.Error (Op "nn.PReLU",
// ErrShape) when the layer has one slope per channel and x's dimension 1
// does not have that many, and as tensor.Prelu otherwise (x must have the
// weight's dtype).
func (p *PReLU) Forward(x *tensor.Tensor) *tensor.Tensor {
	if n := p.Weight.NumElements(); n != 1 && (x.Dims() < 2 || x.Dim(1) != n) {
		shapeError("PReLU", "has %d slopes, one per channel: expects input [N %d ...], got %v", n, n, x.Shape())
	}
	return x.Prelu(p.Weight.Tensor)
}

// GLU is the gated linear unit a·sigmoid(b) of the two halves a and b of
// its input along Dim, torch.nn.GLU. Make it with NewGLU: PyTorch's default
// dimension is −1, but the zero value's Dim is 0.
type GLU struct{ Dim int }

// NewGLU returns a GLU halving dimension dim (negative counts from the end).
func NewGLU(dim int) GLU { return GLU{Dim: dim} }

// Forward implements Module. It panics as tensor.Glu, with Op "nn.GLU"
// when x has no dimension Dim.
func (g GLU) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkDim("GLU", x, g.Dim)
	return x.Glu(g.Dim)
}

// Hardtanh clamps its input to [Min, Max], torch.nn.Hardtanh, with a zero
// gradient at and beyond the bounds; the zero value (both 0) means
// PyTorch's default, [−1, 1].
type Hardtanh struct{ Min, Max float64 }

// NewHardtanh returns a Hardtanh clamping to [min, max]. It panics with
// ErrArgument when min > max.
func NewHardtanh(min, max float64) Hardtanh {
	h := Hardtanh{Min: min, Max: max}
	h.check("nn.NewHardtanh")
	return h
}

func (h Hardtanh) check(op string) {
	if h.Min > h.Max {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("min %v is greater than max %v", h.Min, h.Max), Err: tensor.ErrArgument})
	}
}

// Forward implements Module. It panics with ErrArgument (Op "nn.Hardtanh")
// when Min > Max.
func (h Hardtanh) Forward(x *tensor.Tensor) *tensor.Tensor {
	h.check("nn.Hardtanh")
	lo, hi := h.Min, h.Max
	if lo == 0 && hi == 0 {
		lo, hi = -1, 1
	}
	return x.HardTanh(lo, hi)
}

// Threshold replaces the elements ≤ Threshold with Value,
// torch.nn.Threshold; the zero value is ReLU.
type Threshold struct{ Threshold, Value float64 }

// NewThreshold returns a Threshold.
func NewThreshold(threshold, value float64) Threshold {
	return Threshold{Threshold: threshold, Value: value}
}

// Forward implements Module; it panics as tensor.Threshold.
func (t Threshold) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Threshold(t.Threshold, t.Value) }

// Softmin is Softmax of the negated input along Dim, torch.nn.Softmin.
// Make it with NewSoftmin: the zero value's Dim is 0.
type Softmin struct{ Dim int }

// NewSoftmin returns a Softmin along dim.
func NewSoftmin(dim int) Softmin { return Softmin{Dim: dim} }

// Forward implements Module. It panics with a *tensor.Error whose Op is
// "nn.Softmin" when x has no dimension Dim, and as tensor.Softmin.
func (s Softmin) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkDim("Softmin", x, s.Dim)
	return x.Softmin(s.Dim)
}

// Softshrink is x ∓ Lambda outside [−Lambda, Lambda] and 0 inside,
// torch.nn.Softshrink; a zero Lambda means PyTorch's 0.5.
type Softshrink struct{ Lambda float64 }

// NewSoftshrink returns a Softshrink with the given lambda (≥ 0).
func NewSoftshrink(lambda float64) Softshrink { return Softshrink{Lambda: lambda} }

// Forward implements Module; it panics as tensor.SoftShrink (a negative
// Lambda is an ErrArgument).
func (s Softshrink) Forward(x *tensor.Tensor) *tensor.Tensor { return x.SoftShrink(orHalf(s.Lambda)) }

// Hardshrink is x outside [−Lambda, Lambda] and 0 inside,
// torch.nn.Hardshrink; a zero Lambda means PyTorch's 0.5.
type Hardshrink struct{ Lambda float64 }

// NewHardshrink returns a Hardshrink with the given lambda.
func NewHardshrink(lambda float64) Hardshrink { return Hardshrink{Lambda: lambda} }

// Forward implements Module; it panics as tensor.HardShrink.
func (h Hardshrink) Forward(x *tensor.Tensor) *tensor.Tensor { return x.HardShrink(orHalf(h.Lambda)) }

// Tanhshrink is x − tanh(x), torch.nn.Tanhshrink.
type Tanhshrink struct{}

// Forward implements Module.
func (Tanhshrink) Forward(x *tensor.Tensor) *tensor.Tensor { return x.TanhShrink() }

// RReLU is the randomized leaky ReLU, torch.nn.RReLU: x for x > 0 and a·x
// elsewhere, with a drawn for each element uniformly from [Lower, Upper)
// in training mode (from the input's device random stream) and fixed at
// (Lower + Upper)/2 in evaluation mode. Zero bounds mean PyTorch's
// defaults, 1/8 and 1/3. It carries a Mode, so keep it by pointer
// (NewRReLU) for Train and Eval to reach it.
type RReLU struct {
	Mode
	Lower float64 `kiln:"-"`
	Upper float64 `kiln:"-"`
}

// NewRReLU returns an RReLU drawing slopes from [lower, upper). It panics
// with ErrArgument when lower > upper.
func NewRReLU(lower, upper float64) *RReLU {
	r := &RReLU{Lower: lower, Upper: upper}
	r.bounds("nn.NewRReLU")
	return r
}

// bounds returns the slopes' range, PyTorch's default for zero bounds,
// panicking with ErrArgument for op when lower > upper.
func (r *RReLU) bounds(op string) (lower, upper float64) {
	lower, upper = r.Lower, r.Upper
	if lower == 0 && upper == 0 {
		lower, upper = 1.0/8, 1.0/3
	}
	if lower > upper {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("lower bound %v is greater than upper bound %v", lower, upper),
			Err: tensor.ErrArgument})
	}
	return lower, upper
}

// Forward implements Module. It panics with ErrArgument (Op "nn.RReLU")
// when Lower > Upper, and as tensor.Rrelu.
func (r *RReLU) Forward(x *tensor.Tensor) *tensor.Tensor {
	lower, upper := r.bounds("nn.RReLU")
	return x.Rrelu(lower, upper, r.Training())
}

func orHalf(v float64) float64 {
	if v == 0 {
		return 0.5
	}
	return v
}
