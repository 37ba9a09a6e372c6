package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// Activation functions. Each is one element-wise op from the shared table
// backends.UnaryOps (its F and DF are the forward and the derivative every
// backend uses), recorded as one graph node whose backward is g·f'(x).
// Integer inputs are computed in Float32, except by Relu, which keeps them.
// At a kink the derivative is PyTorch's: Relu, Relu6, HardSigmoid have 0
// there, LeakyRelu, Elu, Selu and Celu take the left-hand slope, HardSwish
// the middle piece at both ends.

// LeakyRelu returns x where x > 0 and slope·x elsewhere (PyTorch's
// leaky_relu, whose usual slope is 0.01).
func (t *Tensor) LeakyRelu(slope float64) *Tensor {
	return t.unaryOp("LeakyRelu", backends.LeakyRelu, slope, 0)
}

// Relu6 returns min(max(x, 0), 6) element-wise.
func (t *Tensor) Relu6() *Tensor { return t.unaryOp("Relu6", backends.Relu6, 0, 0) }

// Elu returns x where x > 0 and alpha·(eˣ − 1) elsewhere (PyTorch's usual
// alpha is 1).
func (t *Tensor) Elu(alpha float64) *Tensor { return t.unaryOp("Elu", backends.Elu, alpha, 0) }

// Selu returns scale·Elu(x, alpha) with the self-normalising constants
// alpha ≈ 1.6733 and scale ≈ 1.0507.
func (t *Tensor) Selu() *Tensor { return t.unaryOp("Selu", backends.Selu, 0, 0) }

// Celu returns max(0, x) + min(0, alpha·(e^(x/alpha) − 1)) element-wise
// (PyTorch's usual alpha is 1). It panics with ErrArgument when alpha is 0.
func (t *Tensor) Celu(alpha float64) *Tensor {
	if alpha == 0 {
		fail("Celu", ErrArgument, "alpha cannot be 0")
	}
	return t.unaryOp("Celu", backends.Celu, alpha, 0)
}

// Gelu returns x·Φ(x), Φ the standard normal distribution function computed
// exactly with erf (PyTorch's gelu with approximate="none").
func (t *Tensor) Gelu() *Tensor { return t.unaryOp("Gelu", backends.Gelu, 0, 0) }

// GeluTanh returns the tanh approximation of Gelu,
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (PyTorch's approximate="tanh").
func (t *Tensor) GeluTanh() *Tensor { return t.unaryOp("GeluTanh", backends.GeluTanh, 0, 0) }

// LogSigmoid returns log(1/(1+e⁻ˣ)) element-wise, computed without overflow
// for inputs of any magnitude.
func (t *Tensor) LogSigmoid() *Tensor { return t.unaryOp("LogSigmoid", backends.LogSigmoid, 0, 0) }

// HardSigmoid returns min(max(x/6 + 1/2, 0), 1) element-wise.
func (t *Tensor) HardSigmoid() *Tensor { return t.unaryOp("HardSigmoid", backends.HardSigmoid, 0, 0) }

// Silu returns x·sigmoid(x) element-wise (also called swish).
func (t *Tensor) Silu() *Tensor { return t.unaryOp("Silu", backends.Silu, 0, 0) }

// HardSwish returns x·min(max(x + 3, 0), 6)/6 element-wise.
func (t *Tensor) HardSwish() *Tensor { return t.unaryOp("HardSwish", backends.HardSwish, 0, 0) }

// Mish returns x·tanh(softplus(x)) element-wise.
func (t *Tensor) Mish() *Tensor { return t.unaryOp("Mish", backends.Mish, 0, 0) }

// Softplus returns log(1 + e^(beta·x))/beta element-wise, and x itself where
// beta·x > threshold (for numerical stability), as PyTorch's softplus, whose
// defaults are beta 1 and threshold 20: x.Softplus(1, 20). It panics with
// ErrArgument when beta is 0.
func (t *Tensor) Softplus(beta, threshold float64) *Tensor {
	if beta == 0 {
		fail("Softplus", ErrArgument, "beta cannot be 0")
	}
	return t.unaryOp("Softplus", backends.Softplus, beta, threshold)
}

// Softsign returns x/(1 + |x|) element-wise.
func (t *Tensor) Softsign() *Tensor { return t.unaryOp("Softsign", backends.Softsign, 0, 0) }
