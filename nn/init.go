package nn

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// Initializer makes the initial value of a parameter. fanIn and fanOut are
// the layer's fan-in and fan-out as PyTorch computes them (for a weight
// [out, in, k…]: in·∏k and out·∏k). Initializers are plain structs, so a
// layer config holding one serialises to JSON.
type Initializer interface {
	// Init returns a Float32 tensor of the given shape on dev.
	Init(dev tensor.Device, shape []int, fanIn, fanOut int) *tensor.Tensor
}

// Fans returns PyTorch's fan-in and fan-out of a weight shaped [out, in, k…]
// (a 1-D shape has fan-in and fan-out equal to its length).
func Fans(shape []int) (fanIn, fanOut int) {
	switch len(shape) {
	case 0:
		return 1, 1
	case 1:
		return shape[0], shape[0]
	}
	rf := 1
	for _, k := range shape[2:] {
		rf *= k
	}
	return shape[1] * rf, shape[0] * rf
}

// Constant fills with Value.
type Constant struct{ Value float64 }

// Init implements Initializer.
func (c Constant) Init(dev tensor.Device, shape []int, _, _ int) *tensor.Tensor {
	return tensor.Full(dev, c.Value, shape...)
}

// Zeros fills with 0.
type Zeros struct{}

// Init implements Initializer.
func (Zeros) Init(dev tensor.Device, shape []int, _, _ int) *tensor.Tensor {
	return tensor.Zeros(dev, shape...)
}

// Ones fills with 1.
type Ones struct{}

// Init implements Initializer.
func (Ones) Init(dev tensor.Device, shape []int, _, _ int) *tensor.Tensor {
	return tensor.Ones(dev, shape...)
}

// Uniform draws from U[Low, High).
type Uniform struct{ Low, High float64 }

// Init implements Initializer.
func (u Uniform) Init(dev tensor.Device, shape []int, _, _ int) *tensor.Tensor {
	return tensor.Uniform(dev, u.Low, u.High, shape...)
}

// Normal draws from N(Mean, Std²).
type Normal struct{ Mean, Std float64 }

// Init implements Initializer.
func (n Normal) Init(dev tensor.Device, shape []int, _, _ int) *tensor.Tensor {
	return tensor.Normal(dev, n.Mean, n.Std, shape...)
}

// Gain returns PyTorch's recommended gain (torch.nn.init.calculate_gain)
// for a nonlinearity: "linear", "conv", "sigmoid" (1), "tanh" (5/3), "relu"
// (√2), "leaky_relu" (√(2/(1+slope²))), "selu" (3/4). It panics with
// ErrArgument for other names.
func Gain(nonlinearity string, slope float64) float64 {
	switch nonlinearity {
	case "", "linear", "conv1d", "conv2d", "conv3d", "conv", "sigmoid", "identity":
		return 1
	case "tanh":
		return 5.0 / 3
	case "relu":
		return math.Sqrt2
	case "leaky_relu":
		return math.Sqrt(2 / (1 + slope*slope))
	case "selu":
		return 0.75
	}
	panic(&tensor.Error{Op: "nn.Gain", Msg: fmt.Sprintf("unknown nonlinearity %q", nonlinearity), Err: tensor.ErrArgument})
}

// KaimingUniform is He initialisation from a uniform distribution,
// torch.nn.init.kaiming_uniform_: bound = gain·√(3/fan), with gain from
// Nonlinearity ("leaky_relu" by default, using A as the slope) and fan the
// fan-in (or the fan-out with FanOut). KaimingUniform{A: √5} is PyTorch's
// default for Linear and Conv weights.
type KaimingUniform struct {
	A            float64
	FanOut       bool
	Nonlinearity string
}

func (k KaimingUniform) std(fanIn, fanOut int) float64 {
	nl := k.Nonlinearity
	if nl == "" {
		nl = "leaky_relu"
	}
	fan := fanIn
	if k.FanOut {
		fan = fanOut
	}
	return Gain(nl, k.A) / math.Sqrt(float64(max(fan, 1)))
}

// Init implements Initializer.
func (k KaimingUniform) Init(dev tensor.Device, shape []int, fanIn, fanOut int) *tensor.Tensor {
	b := math.Sqrt(3) * k.std(fanIn, fanOut)
	return tensor.Uniform(dev, -b, b, shape...)
}

// KaimingNormal is He initialisation from a normal distribution with
// std = gain/√fan (torch.nn.init.kaiming_normal_); fields as KaimingUniform.
type KaimingNormal struct {
	A            float64
	FanOut       bool
	Nonlinearity string
}

// Init implements Initializer.
func (k KaimingNormal) Init(dev tensor.Device, shape []int, fanIn, fanOut int) *tensor.Tensor {
	return tensor.Normal(dev, 0, KaimingUniform(k).std(fanIn, fanOut), shape...)
}

// XavierUniform is Glorot initialisation: U(−b, b) with
// b = Gain·√(6/(fanIn+fanOut)); a zero Gain means 1.
type XavierUniform struct{ Gain float64 }

// Init implements Initializer.
func (x XavierUniform) Init(dev tensor.Device, shape []int, fanIn, fanOut int) *tensor.Tensor {
	g := x.Gain
	if g == 0 {
		g = 1
	}
	b := g * math.Sqrt(6/float64(fanIn+fanOut))
	return tensor.Uniform(dev, -b, b, shape...)
}

// XavierNormal is Glorot initialisation: N(0, std²) with
// std = Gain·√(2/(fanIn+fanOut)); a zero Gain means 1.
type XavierNormal struct{ Gain float64 }

// Init implements Initializer.
func (x XavierNormal) Init(dev tensor.Device, shape []int, fanIn, fanOut int) *tensor.Tensor {
	g := x.Gain
	if g == 0 {
		g = 1
	}
	return tensor.Normal(dev, 0, g*math.Sqrt(2/float64(fanIn+fanOut)), shape...)
}
