package backends

import "math"

// UnaryOp names an element-wise function of one tensor, with up to two scalar
// parameters (p0, p1).
type UnaryOp uint8

// The unary operations. Parameters, where an op takes them, are noted.
const (
	Neg UnaryOp = iota
	Abs
	Sign
	Exp
	Log
	Log1p
	Sqrt
	Rsqrt
	Square
	Recip
	Erf
	Sin
	Cos
	Tan
	Tanh
	Floor
	Ceil
	Round // half to even, as torch.round
	Relu
	LeakyRelu // p0: negative slope
	Relu6
	Elu  // p0: alpha
	Selu //
	Celu // p0: alpha
	Gelu
	GeluTanh
	Sigmoid
	LogSigmoid
	HardSigmoid
	Silu
	HardSwish
	Mish
	Softplus // p0: beta, p1: threshold (linear above it)
	Softsign
	Clamp    // p0: min, p1: max (NaN bound means none)
	PowConst // x^p0
	IsNaN    // predicate: output Bool
	IsInf    // predicate: output Bool
	Not      // logical not: output Bool
	Asin
	Acos
	Atan
	Sinh
	Cosh
	Asinh
	Acosh
	Atanh
	numUnaryOps
)

// UnaryDef defines a unary op once, for every backend: F is the function, DF
// its derivative (both in float64), and Predicate says whether the output is
// Bool. Backends with their own kernels must agree with F and DF.
type UnaryDef struct {
	Name      string
	F         func(x, p0, p1 float64) float64
	DF        func(x, p0, p1 float64) float64
	Predicate bool
	// IntSafe ops keep integer inputs integer (Neg, Abs, Sign, Square, Clamp, …).
	IntSafe bool
	// DFOut, where set, is the derivative as a function of the op's output
	// y = F(x): DFOut(F(x)) = DF(x) (Exp: y, Tanh: 1 − y², Sigmoid:
	// y·(1 − y)). Autodiff then keeps y for the backward instead of x, as
	// PyTorch's does, and a backend with UnaryOutputGrad computes it from y.
	DFOut func(y, p0, p1 float64) float64
}

const (
	seluAlpha = 1.6732632423543772848170429916717
	seluScale = 1.0507009873554804934193349852946
)

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func softplus(x float64) float64 { // log(1+e^x), stable
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// UnaryOps holds the definition of every UnaryOp, indexed by the op.
var UnaryOps = [numUnaryOps]UnaryDef{
	Neg:  {Name: "neg", F: func(x, _, _ float64) float64 { return -x }, DF: func(x, _, _ float64) float64 { return -1 }, IntSafe: true},
	Abs:  {Name: "abs", F: func(x, _, _ float64) float64 { return math.Abs(x) }, DF: func(x, _, _ float64) float64 { return sign(x) }, IntSafe: true},
	Sign: {Name: "sign", F: func(x, _, _ float64) float64 { return sign(x) }, DF: func(x, _, _ float64) float64 { return 0 }, IntSafe: true},
	Exp: {Name: "exp", F: func(x, _, _ float64) float64 { return math.Exp(x) }, DF: func(x, _, _ float64) float64 { return math.Exp(x) },
		DFOut: func(y, _, _ float64) float64 { return y }},
	Log: {Name: "log", F: func(x, _, _ float64) float64 { return math.Log(x) }, DF: func(x, _, _ float64) float64 { return 1 / x }},
	Log1p: {Name: "log1p", F: func(x, _, _ float64) float64 { return math.Log1p(x) },
		DF: func(x, _, _ float64) float64 { return 1 / (1 + x) }},
	Sqrt: {Name: "sqrt", F: func(x, _, _ float64) float64 { return math.Sqrt(x) },
		DF: func(x, _, _ float64) float64 { return 0.5 / math.Sqrt(x) }},
	Rsqrt: {Name: "rsqrt", F: func(x, _, _ float64) float64 { return 1 / math.Sqrt(x) },
		DF: func(x, _, _ float64) float64 { return -0.5 / (x * math.Sqrt(x)) }},
	Square: {Name: "square", F: func(x, _, _ float64) float64 { return x * x }, DF: func(x, _, _ float64) float64 { return 2 * x }, IntSafe: true},
	Recip:  {Name: "reciprocal", F: func(x, _, _ float64) float64 { return 1 / x }, DF: func(x, _, _ float64) float64 { return -1 / (x * x) }},
	Erf: {Name: "erf", F: func(x, _, _ float64) float64 { return math.Erf(x) },
		DF: func(x, _, _ float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) }},
	Sin: {Name: "sin", F: func(x, _, _ float64) float64 { return math.Sin(x) }, DF: func(x, _, _ float64) float64 { return math.Cos(x) }},
	Cos: {Name: "cos", F: func(x, _, _ float64) float64 { return math.Cos(x) }, DF: func(x, _, _ float64) float64 { return -math.Sin(x) }},
	Tan: {Name: "tan", F: func(x, _, _ float64) float64 { return math.Tan(x) },
		DF: func(x, _, _ float64) float64 { c := math.Cos(x); return 1 / (c * c) }},
	Tanh: {Name: "tanh", F: func(x, _, _ float64) float64 { return math.Tanh(x) },
		DF:    func(x, _, _ float64) float64 { t := math.Tanh(x); return 1 - t*t },
		DFOut: func(y, _, _ float64) float64 { return 1 - y*y }},
	Floor: {Name: "floor", F: func(x, _, _ float64) float64 { return math.Floor(x) }, DF: func(x, _, _ float64) float64 { return 0 }, IntSafe: true},
	Ceil:  {Name: "ceil", F: func(x, _, _ float64) float64 { return math.Ceil(x) }, DF: func(x, _, _ float64) float64 { return 0 }, IntSafe: true},
	Round: {Name: "round", F: func(x, _, _ float64) float64 { return math.RoundToEven(x) }, DF: func(x, _, _ float64) float64 { return 0 }, IntSafe: true},
	Relu: {Name: "relu", F: func(x, _, _ float64) float64 { return math.Max(x, 0) },
		DF: func(x, _, _ float64) float64 { return b2f(x > 0) }, IntSafe: true},
	LeakyRelu: {Name: "leaky_relu",
		F: func(x, a, _ float64) float64 {
			if x > 0 {
				return x
			}
			return a * x
		},
		DF: func(x, a, _ float64) float64 {
			if x > 0 {
				return 1
			}
			return a
		}},
	Relu6: {Name: "relu6", F: func(x, _, _ float64) float64 { return math.Min(math.Max(x, 0), 6) },
		DF: func(x, _, _ float64) float64 { return b2f(x > 0 && x < 6) }},
	Elu: {Name: "elu",
		F: func(x, a, _ float64) float64 {
			if x > 0 {
				return x
			}
			return a * math.Expm1(x)
		},
		DF: func(x, a, _ float64) float64 {
			if x > 0 {
				return 1
			}
			return a * math.Exp(x)
		}},
	Selu: {Name: "selu",
		F: func(x, _, _ float64) float64 {
			if x > 0 {
				return seluScale * x
			}
			return seluScale * seluAlpha * math.Expm1(x)
		},
		DF: func(x, _, _ float64) float64 {
			if x > 0 {
				return seluScale
			}
			return seluScale * seluAlpha * math.Exp(x)
		}},
	Celu: {Name: "celu",
		F: func(x, a, _ float64) float64 { return math.Max(0, x) + math.Min(0, a*math.Expm1(x/a)) },
		DF: func(x, a, _ float64) float64 {
			if x > 0 {
				return 1
			}
			return math.Exp(x / a)
		}},
	Gelu: {Name: "gelu",
		F: func(x, _, _ float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) },
		DF: func(x, _, _ float64) float64 {
			return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
		}},
	GeluTanh: {Name: "gelu_tanh",
		F: func(x, _, _ float64) float64 {
			const c = 0.7978845608028654 // sqrt(2/pi)
			return 0.5 * x * (1 + math.Tanh(c*(x+0.044715*x*x*x)))
		},
		DF: func(x, _, _ float64) float64 {
			const c = 0.7978845608028654
			u := c * (x + 0.044715*x*x*x)
			t := math.Tanh(u)
			if t*t == 1 { // saturated: the second term is 0, though x² may overflow to inf
				return 0.5 * (1 + t)
			}
			return 0.5*(1+t) + 0.5*x*(1-t*t)*c*(1+3*0.044715*x*x)
		}},
	Sigmoid: {Name: "sigmoid", F: func(x, _, _ float64) float64 { return sigmoid(x) },
		DF:    func(x, _, _ float64) float64 { s := sigmoid(x); return s * (1 - s) },
		DFOut: func(y, _, _ float64) float64 { return y - y*y }},
	LogSigmoid: {Name: "log_sigmoid", F: func(x, _, _ float64) float64 { return -softplus(-x) },
		DF: func(x, _, _ float64) float64 { return sigmoid(-x) }},
	HardSigmoid: {Name: "hard_sigmoid", F: func(x, _, _ float64) float64 { return math.Min(math.Max(x/6+0.5, 0), 1) },
		DF: func(x, _, _ float64) float64 { return b2f(x > -3 && x < 3) / 6 }},
	Silu: {Name: "silu", F: func(x, _, _ float64) float64 { return x * sigmoid(x) },
		DF: func(x, _, _ float64) float64 { s := sigmoid(x); return s * (1 + x*(1-s)) }},
	HardSwish: {Name: "hard_swish", F: func(x, _, _ float64) float64 { return x * math.Min(math.Max(x+3, 0), 6) / 6 },
		DF: func(x, _, _ float64) float64 {
			switch {
			case x < -3:
				return 0
			case x > 3:
				return 1
			}
			return (2*x + 3) / 6
		}},
	Mish: {Name: "mish", F: func(x, _, _ float64) float64 { return x * math.Tanh(softplus(x)) },
		DF: func(x, _, _ float64) float64 {
			t := math.Tanh(softplus(x))
			return t + x*(1-t*t)*sigmoid(x)
		}},
	Softplus: {Name: "softplus",
		F: func(x, beta, thr float64) float64 {
			if x*beta > thr {
				return x
			}
			return softplus(beta*x) / beta
		},
		DF: func(x, beta, thr float64) float64 {
			if x*beta > thr {
				return 1
			}
			return sigmoid(beta * x)
		}},
	Softsign: {Name: "softsign", F: func(x, _, _ float64) float64 { return x / (1 + math.Abs(x)) },
		DF: func(x, _, _ float64) float64 { d := 1 + math.Abs(x); return 1 / (d * d) }},
	Clamp: {Name: "clamp",
		F: func(x, lo, hi float64) float64 {
			if x < lo {
				x = lo
			}
			if x > hi {
				x = hi
			}
			return x
		},
		DF: func(x, lo, hi float64) float64 { return b2f(!(x < lo) && !(x > hi)) }, IntSafe: true},
	PowConst: {Name: "pow",
		F: func(x, p, _ float64) float64 { return math.Pow(x, p) },
		DF: func(x, p, _ float64) float64 {
			if p == 0 {
				return 0
			}
			return p * math.Pow(x, p-1)
		}},
	IsNaN: {Name: "isnan", F: func(x, _, _ float64) float64 { return b2f(math.IsNaN(x)) }, Predicate: true, IntSafe: true},
	IsInf: {Name: "isinf", F: func(x, _, _ float64) float64 { return b2f(math.IsInf(x, 0)) }, Predicate: true, IntSafe: true},
	Not:   {Name: "logical_not", F: func(x, _, _ float64) float64 { return b2f(x == 0) }, Predicate: true, IntSafe: true},
	// Inverse and hyperbolic trigonometry. The derivatives are PyTorch's
	// formulas (asin: 1/√(1−x²), acosh: 1/√(x²−1), …), so they are ±Inf or
	// NaN exactly where PyTorch's are.
	Asin: {Name: "asin", F: func(x, _, _ float64) float64 { return math.Asin(x) },
		DF: func(x, _, _ float64) float64 { return 1 / math.Sqrt(1-x*x) }},
	Acos: {Name: "acos", F: func(x, _, _ float64) float64 { return math.Acos(x) },
		DF: func(x, _, _ float64) float64 { return -1 / math.Sqrt(1-x*x) }},
	Atan: {Name: "atan", F: func(x, _, _ float64) float64 { return math.Atan(x) },
		DF: func(x, _, _ float64) float64 { return 1 / (1 + x*x) }},
	Sinh: {Name: "sinh", F: func(x, _, _ float64) float64 { return math.Sinh(x) },
		DF: func(x, _, _ float64) float64 { return math.Cosh(x) }},
	Cosh: {Name: "cosh", F: func(x, _, _ float64) float64 { return math.Cosh(x) },
		DF: func(x, _, _ float64) float64 { return math.Sinh(x) }},
	Asinh: {Name: "asinh", F: func(x, _, _ float64) float64 { return math.Asinh(x) },
		DF: func(x, _, _ float64) float64 { return 1 / math.Sqrt(x*x+1) }},
	Acosh: {Name: "acosh", F: func(x, _, _ float64) float64 { return math.Acosh(x) },
		DF: func(x, _, _ float64) float64 { return 1 / math.Sqrt(x*x-1) }},
	Atanh: {Name: "atanh", F: func(x, _, _ float64) float64 { return math.Atanh(x) },
		DF: func(x, _, _ float64) float64 { return 1 / (1 - x*x) }},
}

// sign is torch.sign: ±1, ±0 for zeros, and 0 for NaN.
func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	case x != x:
		return 0
	}
	return x // keeps the sign of zero
}

// floorDivide is torch.floor_divide for floats: the quotient rounded down,
// computed from fmod as PyTorch does so that results agree at the edges
// (inf // 2 is NaN; 1.0 // 0.1 is 9, because 0.1 is slightly above a tenth).
func floorDivide(a, b float64) float64 {
	if b == 0 {
		return a / b
	}
	mod := math.Mod(a, b)
	div := (a - mod) / b
	if mod != 0 && (b < 0) != (mod < 0) {
		div--
	}
	if div == 0 {
		return math.Copysign(0, a/b)
	}
	fl := math.Floor(div)
	if div-fl > 0.5 {
		fl++
	}
	return fl
}

// String returns the op's name.
func (op UnaryOp) String() string {
	if op >= numUnaryOps {
		return "unary?"
	}
	return UnaryOps[op].Name
}

// BinaryOp names an element-wise function of two tensors.
type BinaryOp uint8

// The binary operations. Comparisons and logical ops produce Bool.
const (
	Add BinaryOp = iota
	Sub
	Mul
	Div // true division for floats; integer inputs are promoted to float above
	Rem // remainder with the sign of the divisor (Python's %, torch.remainder)
	Pow
	Maximum // NaN-propagating
	Minimum // NaN-propagating
	FloorDiv
	Eq
	Ne
	Lt
	Le
	Gt
	Ge
	And
	Or
	Xor
	Atan2  // atan2(a, b): the angle of the point (b, a), in (−π, π]
	BitAnd // bitwise and of integers (logical for Bool)
	BitOr  // bitwise or of integers
	BitXor // bitwise exclusive or of integers
	// LeftShift is a·2ᵇ on integers, wrapping: 0 for b < 0 or b ≥ 64 (Go's
	// shift by an unsigned count; the result is then rounded to the dtype).
	LeftShift
	// RightShift is the arithmetic shift a >> b on integers: the sign for
	// b < 0 or b ≥ 64.
	RightShift
	numBinaryOps
)

// BinaryDef defines a binary op for every backend.
type BinaryDef struct {
	Name      string
	F         func(a, b float64) float64
	Predicate bool // output is Bool
}

// BinaryOps holds the definition of every BinaryOp, indexed by the op.
var BinaryOps = [numBinaryOps]BinaryDef{
	Add: {Name: "add", F: func(a, b float64) float64 { return a + b }},
	Sub: {Name: "sub", F: func(a, b float64) float64 { return a - b }},
	Mul: {Name: "mul", F: func(a, b float64) float64 { return a * b }},
	Div: {Name: "div", F: func(a, b float64) float64 { return a / b }},
	Rem: {Name: "remainder", F: func(a, b float64) float64 {
		r := math.Mod(a, b)
		if r != 0 && (r < 0) != (b < 0) {
			r += b
		}
		return r
	}},
	Pow: {Name: "pow", F: math.Pow},
	Maximum: {Name: "maximum", F: func(a, b float64) float64 {
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Max(a, b)
	}},
	Minimum: {Name: "minimum", F: func(a, b float64) float64 {
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Min(a, b)
	}},
	FloorDiv: {Name: "floor_divide", F: floorDivide},
	Eq:       {Name: "eq", F: func(a, b float64) float64 { return b2f(a == b) }, Predicate: true},
	Ne:       {Name: "ne", F: func(a, b float64) float64 { return b2f(a != b) }, Predicate: true},
	Lt:       {Name: "lt", F: func(a, b float64) float64 { return b2f(a < b) }, Predicate: true},
	Le:       {Name: "le", F: func(a, b float64) float64 { return b2f(a <= b) }, Predicate: true},
	Gt:       {Name: "gt", F: func(a, b float64) float64 { return b2f(a > b) }, Predicate: true},
	Ge:       {Name: "ge", F: func(a, b float64) float64 { return b2f(a >= b) }, Predicate: true},
	And:      {Name: "logical_and", F: func(a, b float64) float64 { return b2f(a != 0 && b != 0) }, Predicate: true},
	Or:       {Name: "logical_or", F: func(a, b float64) float64 { return b2f(a != 0 || b != 0) }, Predicate: true},
	Xor:      {Name: "logical_xor", F: func(a, b float64) float64 { return b2f((a != 0) != (b != 0)) }, Predicate: true},
	Atan2:    {Name: "atan2", F: math.Atan2},
	// The bitwise ops are exact on integers in backends that compute them
	// in int64; F is their meaning on values that fit in an int64.
	BitAnd: {Name: "bitwise_and", F: func(a, b float64) float64 { return float64(int64(a) & int64(b)) }},
	BitOr:  {Name: "bitwise_or", F: func(a, b float64) float64 { return float64(int64(a) | int64(b)) }},
	BitXor: {Name: "bitwise_xor", F: func(a, b float64) float64 { return float64(int64(a) ^ int64(b)) }},
	LeftShift: {Name: "bitwise_left_shift",
		F: func(a, b float64) float64 { return float64(int64(a) << uint64(int64(b))) }},
	RightShift: {Name: "bitwise_right_shift",
		F: func(a, b float64) float64 { return float64(int64(a) >> uint64(int64(b))) }},
}

// String returns the op's name.
func (op BinaryOp) String() string {
	if op >= numBinaryOps {
		return "binary?"
	}
	return BinaryOps[op].Name
}

// ReduceOp names a reduction (Reduce, ArgReduce, Scan).
type ReduceOp uint8

// The reductions. ArgMax and ArgMin are for ArgReduce only; Sum and Prod for Scan.
const (
	Sum ReduceOp = iota
	Prod
	Max // NaN-propagating
	Min // NaN-propagating
	ArgMax
	ArgMin
)

// String returns the op's name.
func (op ReduceOp) String() string {
	return [...]string{"sum", "prod", "max", "min", "argmax", "argmin"}[op]
}
