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

// TruncatedNormal draws from N(Mean, Std²) restricted to [A, B], as
// torch.nn.init.trunc_normal_. A and B are absolute bounds, not multiples
// of Std; zero values mean PyTorch's defaults (Std 1, and A, B = −2, 2
// when both are 0).
//
// It samples by inverting the distribution function: uniform draws from
// the device's random stream (so dev.Seed makes them reproducible) are
// mapped on the host, in float64, through the normal quantile function
// restricted to [Φ((A−Mean)/Std), Φ((B−Mean)/Std)], working in the lower
// tail (mirroring an interval above the mean) so that truncations far
// from the mean keep their precision. Every value lies in [A, B]. Init
// panics with ErrArgument unless A < B and Std > 0.
type TruncatedNormal struct{ Mean, Std, A, B float64 }

// Init implements Initializer.
func (tn TruncatedNormal) Init(dev tensor.Device, shape []int, _, _ int) *tensor.Tensor {
	std, a, b := tn.Std, tn.A, tn.B
	if std == 0 {
		std = 1
	}
	if a == 0 && b == 0 {
		a, b = -2, 2
	}
	if !(a < b) || std < 0 {
		argError("nn.TruncatedNormal", "needs A < B and Std > 0, got A=%v B=%v Std=%v", a, b, std)
	}
	// Standardised bounds, mirrored below the mean when the interval lies
	// above it: the lower tail's probabilities carry full precision.
	lo, hi := (a-tn.Mean)/std, (b-tn.Mean)/std
	mirror := lo > 0
	if mirror {
		lo, hi = -hi, -lo
	}
	pl, ph := normalCDF(lo), normalCDF(hi)
	u := tensor.Uniform(dev.Inner(), 0, 1, shape...)
	vals := u.Float64s()
	u.Release()
	out := make([]float32, len(vals))
	for i, v := range vals {
		z := normalQuantile(pl + (ph-pl)*v)
		if mirror {
			z = -z
		}
		out[i] = float32(min(max(tn.Mean+std*z, a), b))
	}
	return tensor.FromFloat32s(dev, out, shape...).Reshape(shape...)
}

// normalCDF is Φ(z), accurate in the lower tail.
func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// normalQuantile is Φ⁻¹(p), accurate for small p.
func normalQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// Orthogonal makes a (semi-)orthogonal matrix times Gain (a zero Gain
// means 1), as torch.nn.init.orthogonal_: a weight shaped [rows, …] is
// viewed as rows × (the product of the other sizes); its rows are
// orthonormal when there are fewer rows than columns, its columns
// otherwise.
//
// It draws a standard normal matrix from the device's random stream and
// orthonormalises it on the host in float64 with a Householder QR
// decomposition, fixing the signs so that R has a positive diagonal (which
// makes the result Haar-distributed, as PyTorch's is). Init panics with
// ErrArgument for shapes of fewer than 2 dimensions.
type Orthogonal struct{ Gain float64 }

// Init implements Initializer.
func (o Orthogonal) Init(dev tensor.Device, shape []int, _, _ int) *tensor.Tensor {
	if len(shape) < 2 {
		argError("nn.Orthogonal", "needs a shape of at least 2 dimensions, got %v", shape)
	}
	gain := o.Gain
	if gain == 0 {
		gain = 1
	}
	rows := shape[0]
	cols := 1
	for _, s := range shape[1:] {
		cols *= s
	}
	if rows == 0 || cols == 0 {
		return tensor.Zeros(dev, shape...)
	}
	g := tensor.Randn(dev.Inner(), rows, cols)
	a := g.Float64s()
	g.Release()
	// Work on a tall m×n matrix (m ≥ n): the transpose when rows < cols.
	m, n := rows, cols
	if rows < cols {
		a = transposed(a, rows, cols)
		m, n = cols, rows
	}
	q := householderQ(a, m, n)
	out := make([]float32, rows*cols)
	for i := range m {
		for j := range n {
			v := gain * q[i*n+j]
			if rows < cols {
				out[j*cols+i] = float32(v) // back to rows × cols
			} else {
				out[i*cols+j] = float32(v)
			}
		}
	}
	return tensor.FromFloat32s(dev, out, rows*cols).Reshape(shape...)
}

func transposed(a []float64, r, c int) []float64 {
	t := make([]float64, len(a))
	for i := range r {
		for j := range c {
			t[j*r+i] = a[i*c+j]
		}
	}
	return t
}

// householderQ returns the m×n factor Q (row-major) of the thin QR
// decomposition A = Q·R of the row-major m×n matrix a (m ≥ n; a is
// overwritten), with the signs of Q's columns chosen so that R's diagonal
// is positive.
func householderQ(a []float64, m, n int) []float64 {
	vs := make([][]float64, n)
	sign := make([]float64, n)
	for k := range n {
		// Reflect column k below the diagonal onto a multiple of e_k.
		var norm float64
		for i := k; i < m; i++ {
			norm += a[i*n+k] * a[i*n+k]
		}
		norm = math.Sqrt(norm)
		alpha := -norm
		if a[k*n+k] < 0 {
			alpha = norm
		}
		v := make([]float64, m-k)
		for i := k; i < m; i++ {
			v[i-k] = a[i*n+k]
		}
		v[0] -= alpha
		var vn float64
		for _, x := range v {
			vn += x * x
		}
		vn = math.Sqrt(vn)
		if vn > 0 {
			for i := range v {
				v[i] /= vn
			}
			for j := k; j < n; j++ { // A[k:, j] −= 2·v·(vᵀ·A[k:, j])
				var d float64
				for i := k; i < m; i++ {
					d += v[i-k] * a[i*n+j]
				}
				for i := k; i < m; i++ {
					a[i*n+j] -= 2 * d * v[i-k]
				}
			}
		} else {
			v = nil // column already zero below the diagonal
		}
		vs[k] = v
		// R's diagonal entry is now a[k][k]; a zero one counts as positive.
		sign[k] = 1
		if a[k*n+k] < 0 {
			sign[k] = -1
		}
	}
	// Q = H_0·H_1·…·H_{n−1} applied to the first n columns of the identity.
	q := make([]float64, m*n)
	for j := range n {
		q[j*n+j] = 1
	}
	for k := n - 1; k >= 0; k-- {
		v := vs[k]
		if v == nil {
			continue
		}
		for j := range n {
			var d float64
			for i := k; i < m; i++ {
				d += v[i-k] * q[i*n+j]
			}
			for i := k; i < m; i++ {
				q[i*n+j] -= 2 * d * v[i-k]
			}
		}
	}
	for i := range m {
		for j := range n {
			q[i*n+j] *= sign[j]
		}
	}
	return q
}
