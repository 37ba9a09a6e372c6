package nn

import (
	"github.com/kiln-ml/kiln/tensor"
	"slices"
)

// BilinearConfig configures a Bilinear layer; the zero value is PyTorch's
// default.
type BilinearConfig struct {
	NoBias bool `json:"no_bias,omitempty"` // leave out the bias (bias=False)
	// WeightInit defaults to U(−1/√In1, 1/√In1), as PyTorch; it is told
	// the fans of Fans(weight shape).
	WeightInit Initializer `json:"-"`
	// BiasInit defaults to the same uniform distribution.
	BiasInit Initializer  `json:"-"`
	DType    tensor.DType `json:"dtype,omitempty"` // parameter dtype; zero means Float32
}

// Bilinear applies y_k = x1ᵀ·W_k·x2 + b_k, torch.nn.Bilinear, with Weight
// [Out, In1, In2] and Bias [Out].
type Bilinear struct {
	Weight *Param `kiln:"weight"`
	Bias   *Param `kiln:"bias"` // nil without bias
}

// NewBilinear returns a Bilinear layer from in1 and in2 features to out,
// with PyTorch's default initialisation. It panics with ErrArgument for
// non-positive sizes.
func NewBilinear(dev tensor.Device, in1, in2, out int, cfg ...BilinearConfig) *Bilinear {
	var c BilinearConfig
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if in1 <= 0 || in2 <= 0 || out <= 0 {
		argError("nn.NewBilinear", "features must be positive, got in1=%d in2=%d out=%d", in1, in2, out)
	}
	shape := []int{out, in1, in2}
	fanIn, fanOut := Fans(shape)
	bd := fanBound(in1)
	def := Uniform{Low: -bd, High: bd}
	l := &Bilinear{Weight: initParam(dev, c.WeightInit, def, shape, fanIn, fanOut, c.DType)}
	if !c.NoBias {
		l.Bias = initParam(dev, c.BiasInit, def, []int{out}, fanIn, fanOut, c.DType)
	}
	return l
}

// Forward combines x1 [..., In1] and x2 [..., In2], whose leading
// dimensions must be equal, into [..., Out]. It panics with a
// *tensor.Error whose Op is "nn.Bilinear" when the feature sizes or the
// leading dimensions do not fit.
func (l *Bilinear) Forward(x1, x2 *tensor.Tensor) *tensor.Tensor {
	out, in1, in2 := l.Weight.Dim(0), l.Weight.Dim(1), l.Weight.Dim(2)
	s1, s2 := x1.Shape(), x2.Shape()
	if len(s1) == 0 || len(s2) == 0 || s1[len(s1)-1] != in1 || s2[len(s2)-1] != in2 ||
		!slices.Equal(s1[:len(s1)-1], s2[:len(s2)-1]) {
		shapeError("Bilinear", "expects inputs [..., %d] and [..., %d] with equal leading dimensions, got %v and %v",
			in1, in2, s1, s2)
	}
	lead := s1[:len(s1)-1]
	b := 1
	for _, d := range lead {
		b *= d
	}
	// x1·W as one matrix product: W [Out, In1, In2] → [In1, Out·In2].
	w := l.Weight.Permute(1, 0, 2).Reshape(in1, out*in2)
	t := x1.Reshape(b, in1).Matmul(w).Reshape(b, out, in2)
	y := t.Mul(x2.Reshape(b, 1, in2)).Sum(2)
	if l.Bias != nil {
		y = y.Add(l.Bias.Tensor)
	}
	return y.Reshape(append(append([]int(nil), lead...), out)...)
}
