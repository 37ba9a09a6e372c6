package nn

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// Module is a layer with one input and one output, the shape most layers
// have; Sequential chains Modules. Layers with other signatures (recurrent
// layers, attention) have Forward methods of their own and are still found
// by Params, StateDict and ToDevice, which walk any struct.
type Module interface {
	Forward(x *tensor.Tensor) *tensor.Tensor
}

// shapeError panics with a *tensor.Error naming the layer, what it expected
// and what it got.
func shapeError(layer, format string, args ...any) {
	panic(&tensor.Error{Op: "nn." + layer, Msg: fmt.Sprintf(format, args...), Err: tensor.ErrShape})
}

// LinearConfig configures a Linear layer; the zero value of each field is
// PyTorch's default.
type LinearConfig struct {
	NoBias     bool         `json:"no_bias,omitempty"` // leave out the bias (PyTorch's bias=False)
	WeightInit Initializer  `json:"-"`                 // default KaimingUniform{A: √5}, as PyTorch
	BiasInit   Initializer  `json:"-"`                 // default U(−1/√in, 1/√in), as PyTorch
	DType      tensor.DType `json:"dtype,omitempty"`   // parameter dtype; zero means Float32
}

// Linear applies y = x·Wᵀ + b, with W [Out, In] and b [Out] (PyTorch's
// layout, so state dicts map one to one).
type Linear struct {
	Weight *Param `kiln:"weight"`
	Bias   *Param `kiln:"bias"` // nil without bias
}

// NewLinear returns a Linear layer from in to out features on dev, with
// PyTorch's default initialisation; an optional config changes it.
func NewLinear(dev tensor.Device, in, out int, cfg ...LinearConfig) *Linear {
	if in <= 0 || out <= 0 {
		panic(&tensor.Error{Op: "nn.NewLinear", Msg: fmt.Sprintf("features must be positive, got in=%d out=%d", in, out),
			Err: tensor.ErrArgument})
	}
	var c LinearConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	wi := c.WeightInit
	if wi == nil {
		wi = KaimingUniform{A: math.Sqrt(5)}
	}
	l := &Linear{Weight: NewParam(convert(wi.Init(dev, []int{out, in}, in, out), c.DType))}
	if !c.NoBias {
		bi := c.BiasInit
		if bi == nil {
			b := 1 / math.Sqrt(float64(in))
			bi = Uniform{Low: -b, High: b}
		}
		l.Bias = NewParam(convert(bi.Init(dev, []int{out}, in, out), c.DType))
	}
	return l
}

// convert returns t in dtype (Float32 when dtype is its zero value),
// releasing t when a copy was made.
func convert(t *tensor.Tensor, dtype tensor.DType) *tensor.Tensor {
	if dtype == t.DType() {
		return t
	}
	c := t.To(dtype).Detach()
	t.Release()
	return c
}

// Forward applies the layer to x [..., In], giving [..., Out]. It panics
// with a *tensor.Error naming the layer when x's last dimension is not In.
func (l *Linear) Forward(x *tensor.Tensor) *tensor.Tensor {
	w, b := l.operands(x)
	return tensor.Linear(x, w, b)
}

// operands checks that x has the layer's input features and returns the
// weight and the bias (nil without one).
func (l *Linear) operands(x *tensor.Tensor) (w, b *tensor.Tensor) {
	in := l.Weight.Dim(1)
	if x.Dims() == 0 || x.Dim(-1) != in {
		shapeError("Linear", "expects input [..., %d], got %v", in, x.Shape())
	}
	if l.Bias != nil {
		b = l.Bias.Tensor
	}
	return l.Weight.Tensor, b
}

// LayerNormConfig configures a LayerNorm; the zero value is PyTorch's default.
type LayerNormConfig struct {
	Eps      float64      `json:"eps,omitempty"`       // default 1e-5
	NoAffine bool         `json:"no_affine,omitempty"` // no weight and bias (elementwise_affine=False)
	NoBias   bool         `json:"no_bias,omitempty"`   // weight but no bias
	DType    tensor.DType `json:"dtype,omitempty"`     // parameter dtype; zero means Float32
}

// LayerNorm normalises over the trailing Shape dimensions, then scales by
// Weight and shifts by Bias (both shaped Shape).
type LayerNorm struct {
	Shape  []int   `kiln:"-"`
	Eps    float64 `kiln:"-"`
	Weight *Param  `kiln:"weight"`
	Bias   *Param  `kiln:"bias"`
}

// NewLayerNorm returns a LayerNorm over the trailing dimensions shape.
func NewLayerNorm(dev tensor.Device, shape []int, cfg ...LayerNormConfig) *LayerNorm {
	var c LayerNormConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.Eps == 0 {
		c.Eps = 1e-5
	}
	l := &LayerNorm{Shape: append([]int(nil), shape...), Eps: c.Eps}
	if !c.NoAffine {
		l.Weight = NewParam(convert(tensor.Ones(dev, shape...), c.DType))
		if !c.NoBias {
			l.Bias = NewParam(convert(tensor.Zeros(dev, shape...), c.DType))
		}
	}
	return l
}

// Forward normalises x, whose trailing dimensions must equal Shape.
func (l *LayerNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	xs := x.Shape()
	if len(xs) < len(l.Shape) || fmt.Sprint(xs[len(xs)-len(l.Shape):]) != fmt.Sprint(l.Shape) {
		shapeError("LayerNorm", "expects input [..., %s], got %v", trimBrackets(l.Shape), xs)
	}
	var w, b *tensor.Tensor
	if l.Weight != nil {
		w = l.Weight.Tensor
	}
	if l.Bias != nil {
		b = l.Bias.Tensor
	}
	return x.LayerNorm(l.Shape, w, b, l.Eps)
}

func trimBrackets(s []int) string {
	f := fmt.Sprint(s)
	return f[1 : len(f)-1]
}

// Dropout zeroes each element with probability P during training and
// scales the rest by 1/(1−P); in evaluation mode (Eval) it is the identity.
type Dropout struct {
	Mode
	P float64 `kiln:"-"`
}

// NewDropout returns a Dropout with drop probability p in [0, 1).
func NewDropout(p float64) *Dropout {
	if p < 0 || p >= 1 {
		panic(&tensor.Error{Op: "nn.NewDropout", Msg: fmt.Sprintf("probability %v outside [0, 1)", p), Err: tensor.ErrArgument})
	}
	return &Dropout{P: p}
}

// Forward applies dropout to x in training mode, drawing the mask from x's
// device random stream.
func (d *Dropout) Forward(x *tensor.Tensor) *tensor.Tensor {
	if !d.Training() || d.P == 0 {
		return x
	}
	return applyMask(x, x.Shape(), d.P)
}
