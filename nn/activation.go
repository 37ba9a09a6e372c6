package nn

import (
	"github.com/kiln-ml/kiln/tensor"
)

// Activation modules wrap the tensor package's activation ops so that they
// can sit in a Sequential, as torch.nn's activation modules do. They hold
// no state, so they are values: nn.ReLU{} is a module, and the zero value
// of each is PyTorch's default (LeakyReLU{} has slope 0.01, ELU{} alpha 1,
// GELU{} the exact form, Softplus{} beta 1 and threshold 20), except
// Softmax and LogSoftmax, whose dimension should be given (NewSoftmax).

// ReLU is max(x, 0), torch.nn.ReLU.
type ReLU struct{}

// Forward implements Module.
func (ReLU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Relu() }

// LeakyReLU is x for x > 0 and NegativeSlope·x elsewhere,
// torch.nn.LeakyReLU. A zero NegativeSlope means PyTorch's default 0.01
// (a slope of exactly 0 is ReLU).
type LeakyReLU struct{ NegativeSlope float64 }

// NewLeakyReLU returns a LeakyReLU with the given negative slope.
func NewLeakyReLU(slope float64) LeakyReLU { return LeakyReLU{NegativeSlope: slope} }

// Forward implements Module.
func (l LeakyReLU) Forward(x *tensor.Tensor) *tensor.Tensor {
	s := l.NegativeSlope
	if s == 0 {
		s = 0.01
	}
	return x.LeakyRelu(s)
}

// ReLU6 is min(max(x, 0), 6), torch.nn.ReLU6.
type ReLU6 struct{}

// Forward implements Module.
func (ReLU6) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Relu6() }

// ELU is x for x > 0 and Alpha·(eˣ − 1) elsewhere, torch.nn.ELU; a zero
// Alpha means 1.
type ELU struct{ Alpha float64 }

// NewELU returns an ELU with the given alpha.
func NewELU(alpha float64) ELU { return ELU{Alpha: alpha} }

// Forward implements Module.
func (e ELU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Elu(orOne(e.Alpha)) }

// SELU is the self-normalising ELU, torch.nn.SELU.
type SELU struct{}

// Forward implements Module.
func (SELU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Selu() }

// CELU is max(0, x) + min(0, Alpha·(e^(x/Alpha) − 1)), torch.nn.CELU; a
// zero Alpha means 1.
type CELU struct{ Alpha float64 }

// NewCELU returns a CELU with the given alpha.
func NewCELU(alpha float64) CELU { return CELU{Alpha: alpha} }

// Forward implements Module.
func (c CELU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Celu(orOne(c.Alpha)) }

// GELU is x·Φ(x), torch.nn.GELU: Approximate "" or "none" computes Φ
// exactly, "tanh" uses the tanh approximation.
type GELU struct{ Approximate string }

// NewGELU returns a GELU; approximate is "none" or "tanh". It panics with
// ErrArgument for other values.
func NewGELU(approximate string) GELU {
	g := GELU{Approximate: approximate}
	g.check("nn.NewGELU")
	return g
}

func (g GELU) check(op string) {
	switch g.Approximate {
	case "", "none", "tanh":
		return
	}
	argError(op, "approximate %q must be \"none\" or \"tanh\"", g.Approximate)
}

// Forward implements Module. It panics with ErrArgument (Op "nn.GELU")
// for an unknown Approximate.
func (g GELU) Forward(x *tensor.Tensor) *tensor.Tensor {
	g.check("nn.GELU")
	if g.Approximate == "tanh" {
		return x.GeluTanh()
	}
	return x.Gelu()
}

// Sigmoid is 1/(1 + e⁻ˣ), torch.nn.Sigmoid.
type Sigmoid struct{}

// Forward implements Module.
func (Sigmoid) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Sigmoid() }

// LogSigmoid is log(sigmoid(x)), torch.nn.LogSigmoid.
type LogSigmoid struct{}

// Forward implements Module.
func (LogSigmoid) Forward(x *tensor.Tensor) *tensor.Tensor { return x.LogSigmoid() }

// Hardsigmoid is min(max(x/6 + 1/2, 0), 1), torch.nn.Hardsigmoid.
type Hardsigmoid struct{}

// Forward implements Module.
func (Hardsigmoid) Forward(x *tensor.Tensor) *tensor.Tensor { return x.HardSigmoid() }

// SiLU is x·sigmoid(x), torch.nn.SiLU.
type SiLU struct{}

// Forward implements Module.
func (SiLU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Silu() }

// Hardswish is x·min(max(x + 3, 0), 6)/6, torch.nn.Hardswish.
type Hardswish struct{}

// Forward implements Module.
func (Hardswish) Forward(x *tensor.Tensor) *tensor.Tensor { return x.HardSwish() }

// Mish is x·tanh(softplus(x)), torch.nn.Mish.
type Mish struct{}

// Forward implements Module.
func (Mish) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Mish() }

// Softplus is log(1 + e^(Beta·x))/Beta, and x where Beta·x > Threshold,
// torch.nn.Softplus; zero values mean PyTorch's defaults, Beta 1 and
// Threshold 20.
type Softplus struct{ Beta, Threshold float64 }

// NewSoftplus returns a Softplus with the given beta and threshold.
func NewSoftplus(beta, threshold float64) Softplus { return Softplus{Beta: beta, Threshold: threshold} }

// Forward implements Module.
func (s Softplus) Forward(x *tensor.Tensor) *tensor.Tensor {
	t := s.Threshold
	if t == 0 {
		t = 20
	}
	return x.Softplus(orOne(s.Beta), t)
}

// Softsign is x/(1 + |x|), torch.nn.Softsign.
type Softsign struct{}

// Forward implements Module.
func (Softsign) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Softsign() }

// Tanh is the hyperbolic tangent, torch.nn.Tanh.
type Tanh struct{}

// Forward implements Module.
func (Tanh) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Tanh() }

// Softmax normalises exponentials along Dim (negative counts from the
// end), torch.nn.Softmax. Make it with NewSoftmax: the zero value's Dim is
// 0, the batch dimension of most inputs.
type Softmax struct{ Dim int }

// NewSoftmax returns a Softmax along dim.
func NewSoftmax(dim int) Softmax { return Softmax{Dim: dim} }

// Forward implements Module. It panics with a *tensor.Error whose Op is
// "nn.Softmax" when x has no dimension Dim.
func (s Softmax) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkDim("Softmax", x, s.Dim)
	return x.Softmax(s.Dim)
}

// LogSoftmax is the logarithm of Softmax along Dim, torch.nn.LogSoftmax;
// make it with NewLogSoftmax.
type LogSoftmax struct{ Dim int }

// NewLogSoftmax returns a LogSoftmax along dim.
func NewLogSoftmax(dim int) LogSoftmax { return LogSoftmax{Dim: dim} }

// Forward implements Module; it fails as Softmax.Forward, with Op
// "nn.LogSoftmax".
func (s LogSoftmax) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkDim("LogSoftmax", x, s.Dim)
	return x.LogSoftmax(s.Dim)
}

// Identity returns its input, torch.nn.Identity: a placeholder where a
// model's layer is optional.
type Identity struct{}

// Forward implements Module.
func (Identity) Forward(x *tensor.Tensor) *tensor.Tensor { return x }

func orOne(v float64) float64 {
	if v == 0 {
		return 1
	}
	return v
}

// checkDim panics unless dim is a dimension of x (a 0-d tensor has one,
// as in PyTorch).
func checkDim(layer string, x *tensor.Tensor, dim int) {
	n := max(x.Dims(), 1)
	if dim < -n || dim >= n {
		shapeError(layer, "expects input with dimension %d, got %v", dim, x.Shape())
	}
}
