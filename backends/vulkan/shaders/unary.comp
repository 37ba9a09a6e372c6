#version 460
// unary: out[i] = op(x[i]) (Backend.Unary) or, with GRAD, out[i] =
// g[i]·op'(x[i]) (Backend.UnaryGrad), for every op of backends.UnaryOps.
//
// Ops that are exact in double (sign, abs, sqrt, rounding, the piecewise
// linear activations, clamp, predicates) compute in double for every dtype,
// exactly as the CPU backend does, and so do exp, log and the activations
// built on them (f64math.glsl) for Float64 and integer inputs. The other
// transcendental ops compute in float for Float32, Float16 and BFloat16
// (math_f64.comp computes them in double for Float64 and integers), with
// the numerically stable forms the CPU uses (expm1, log1p, a sigmoid that
// never overflows); erf is Numerical Recipes' erfc (fractional error below
// 1.2e-7). Domain errors give NaN explicitly, as GLSL leaves them undefined.
// Spec constants: XDT, ODT, OP (backends.UnaryOp), GRAD, GDT.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int XDT_S = 0;
layout(constant_id = 1) const int ODT_S = 0;
layout(constant_id = 2) const int OP_S = 0;
layout(constant_id = 3) const int GRAD_S = 0;
layout(constant_id = 4) const int GDT_S = 0;
layout(constant_id = 5) const int DYN = 0; // 1: the codes below come from the arguments (one pipeline for all)
int XDT, ODT, OP, GRAD, GDT;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
	View out_;
	View x;
	View g;
	int64_t n;
	double p0;
	double p1;
	int64_t codes[5]; // XDT, ODT, OP, GRAD, GDT when DYN
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

const int NEG = 0, ABS = 1, SIGN = 2, EXP = 3, LOG = 4, LOG1P = 5, SQRT = 6, RSQRT = 7, SQUARE = 8, RECIP = 9,
	ERF = 10, SIN = 11, COS = 12, TAN = 13, TANH = 14, FLOOR = 15, CEIL = 16, ROUND = 17, RELU = 18,
	LEAKY_RELU = 19, RELU6 = 20, ELU = 21, SELU = 22, CELU = 23, GELU = 24, GELU_TANH = 25, SIGMOID = 26,
	LOG_SIGMOID = 27, HARD_SIGMOID = 28, SILU = 29, HARD_SWISH = 30, MISH = 31, SOFTPLUS = 32, SOFTSIGN = 33,
	CLAMP = 34, POW = 35, ISNAN = 36, ISINF = 37, NOT = 38, ASIN = 39, ACOS = 40, ATAN = 41, SINH = 42,
	COSH = 43, ASINH = 44, ACOSH = 45, ATANH = 46;

// f64Op reports whether OP has a double form through f64math.glsl, used for
// Float64 and integer inputs.
bool f64Op() {
	switch (OP) {
	case EXP: case LOG: case LOG1P: case TANH: case SIGMOID: case LOG_SIGMOID: case SILU: case SOFTPLUS:
	case ELU: case SELU: case CELU:
		return true;
	}
	return false;
}

// inDouble reports whether OP computes in double rather than float: the ops
// exact in double for every dtype, and f64Op ops for Float64 and integers.
bool inDouble() {
	if (f64Op() && XDT != DT_F32 && XDT != DT_F16 && XDT != DT_BF16) return true;
	switch (OP) {
	case NEG: case ABS: case SIGN: case SQRT: case RSQRT: case SQUARE: case RECIP: case FLOOR: case CEIL:
	case ROUND: case RELU: case LEAKY_RELU: case RELU6: case HARD_SIGMOID: case HARD_SWISH: case SOFTSIGN:
	case CLAMP: case ISNAN: case ISINF: case NOT:
		return true;
	}
	return false;
}

const double SELU_ALPHA = 1.6732632423543772848170429916717lf;
const double SELU_SCALE = 1.0507009873554804934193349852946lf;

// dzero is 0.0, read from memory at run time: Mesa 22.3's llvmpipe
// miscompiles ordered comparisons of a double with the literal 0.0 (x > 0.0
// is true for negative x), so the double path compares with this instead.
double dzero;
#include "f64math.glsl"

double nanD() { return uint64BitsToDouble(0x7ff8000000000000ul); }
float nanF() { return uintBitsToFloat(0x7fc00000u); }
float infF() { return uintBitsToFloat(0x7f800000u); }

double b2d(bool b) { return b ? 1.0lf : 0.0lf; }
float b2f(bool b) { return b ? 1.0 : 0.0; }

double maxNaN(double x, double y) { return isnan(x) ? x : (x > y ? x : y); }
double minNaN(double x, double y) { return isnan(x) ? x : (x < y ? x : y); }

double fwdD(double x, double p0, double p1) {
	switch (OP) {
	case NEG: return -x;
	case ABS: return abs(x);
	case SIGN: return x > dzero ? 1.0lf : (x < dzero ? -1.0lf : (isnan(x) ? 0.0lf : x));
	case SQRT: return sqrtD(x);
	case RSQRT: return 1.0lf / sqrtD(x);
	case SQUARE: return x * x;
	case RECIP: return 1.0lf / x;
	case FLOOR: return floorD(x);
	case CEIL: return -floorD(-x);
	case ROUND: return roundEvenD(x);
	case RELU: return maxNaN(x, dzero);
	case LEAKY_RELU: return x > dzero ? x : p0 * x;
	case RELU6: return minNaN(maxNaN(x, dzero), 6.0lf);
	case HARD_SIGMOID: return minNaN(maxNaN(x / 6.0lf + 0.5lf, dzero), 1.0lf);
	case HARD_SWISH: return x * minNaN(maxNaN(x + 3.0lf, dzero), 6.0lf) / 6.0lf;
	case SOFTSIGN: return x / (1.0lf + abs(x));
	case CLAMP: { double y = x; if (y < p0) y = p0; if (y > p1) y = p1; return y; }
	case ISNAN: return b2d(isnan(x));
	case ISINF: return b2d(isinf(x));
	case NOT: return b2d(x == 0.0lf);
	case EXP: return expD(x);
	case LOG: return logD(x);
	case LOG1P: return x < -1.0lf ? nanD() : log1pD(x);
	case TANH: return tanhD(x);
	case SIGMOID: return sigmoidD(x);
	case LOG_SIGMOID: return -softplusD(-x);
	case SILU: return x * sigmoidD(x);
	case SOFTPLUS: return x * p0 > p1 ? x : softplusD(p0 * x) / p0;
	case ELU: return x > dzero ? x : p0 * expm1D(x);
	case SELU: return x > dzero ? SELU_SCALE * x : SELU_SCALE * SELU_ALPHA * expm1D(x);
	case CELU: return maxNaN(x, dzero) + min(dzero, p0 * expm1D(x / p0));
	}
	return nanD();
}

double gradD(double x, double p0, double p1) {
	switch (OP) {
	case NEG: return -1.0lf;
	case ABS: case SIGN: return OP == ABS ? (x > dzero ? 1.0lf : (x < dzero ? -1.0lf : (isnan(x) ? 0.0lf : x))) : 0.0lf;
	case SQRT: return 0.5lf / sqrtD(x);
	case RSQRT: return -0.5lf / (x * sqrtD(x));
	case SQUARE: return 2.0lf * x;
	case RECIP: return -1.0lf / (x * x);
	case FLOOR: case CEIL: case ROUND: return 0.0lf;
	case RELU: return b2d(x > dzero);
	case LEAKY_RELU: return x > dzero ? 1.0lf : p0;
	case RELU6: return b2d(x > dzero && x < 6.0lf);
	case HARD_SIGMOID: return b2d(x > -3.0lf && x < 3.0lf) / 6.0lf;
	case HARD_SWISH: return x < -3.0lf ? 0.0lf : (x > 3.0lf ? 1.0lf : (2.0lf * x + 3.0lf) / 6.0lf);
	case SOFTSIGN: { double d = 1.0lf + abs(x); return 1.0lf / (d * d); }
	case CLAMP: return b2d(!(x < p0) && !(x > p1));
	case EXP: return expD(x);
	case LOG: return 1.0lf / x;
	case LOG1P: return 1.0lf / (1.0lf + x);
	case TANH: { double t = tanhD(x); return 1.0lf - t * t; }
	case SIGMOID: { double sg = sigmoidD(x); return sg * (1.0lf - sg); }
	case LOG_SIGMOID: return sigmoidD(-x);
	case SILU: { double sg = sigmoidD(x); return sg * (1.0lf + x * (1.0lf - sg)); }
	case SOFTPLUS: return x * p0 > p1 ? 1.0lf : sigmoidD(p0 * x);
	case ELU: return x > dzero ? 1.0lf : p0 * expD(x);
	case SELU: return x > dzero ? SELU_SCALE : SELU_SCALE * SELU_ALPHA * expD(x);
	case CELU: return x > dzero ? 1.0lf : expD(x / p0);
	}
	return nanD();
}

float logF(float x) {
	if (isnan(x) || x < 0.0) return nanF();
	if (x == 0.0) return -infF();
	if (isinf(x)) return x;
	return log(x);
}

float log1pF(float x) {
	float u = 1.0 + x;
	if (u == 1.0) return x;
	if (isinf(u) || isnan(u)) return logF(u);
	return logF(u) * x / (u - 1.0);
}

float expm1F(float x) {
	if (abs(x) < 1e-5) return x + 0.5 * x * x;
	return exp(x) - 1.0;
}

float erfF(float x) {
	if (isnan(x)) return x;
	float z = abs(x);
	float t = 1.0 / (1.0 + 0.5 * z);
	float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
		t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
	if (z < 0.5) { // the series is accurate where 1 - r cancels
		float z2 = x * x;
		return x * 1.1283791671 * (1.0 - z2 * (1.0 / 3.0 - z2 * (0.1 - z2 * (1.0 / 42.0 - z2 / 216.0))));
	}
	return x >= 0.0 ? 1.0 - r : r - 1.0;
}

float tanhF(float x) {
	if (isnan(x)) return x;
	float z = abs(x);
	float r;
	if (z < 0.004) r = z * (1.0 - z * z / 3.0);
	else { float t = exp(-2.0 * z); r = (1.0 - t) / (1.0 + t); }
	return x < 0.0 ? -r : r;
}

float sigmoidF(float x) {
	if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
	float e = exp(x);
	return e / (1.0 + e);
}

float softplusF(float x) { return x > 0.0 ? x + log1pF(exp(-x)) : log1pF(exp(x)); }

float powF(float x, float p) {
	if (p == 0.0 || x == 1.0) return 1.0;
	if (isnan(x) || isnan(p)) return nanF();
	bool oddInt = floor(p) == p && mod(p, 2.0) == 1.0;
	if (x == 0.0) {
		float r = p > 0.0 ? 0.0 : infF();
		return (oddInt && floatBitsToUint(x) != 0u) ? -r : r;
	}
	if (x < 0.0) {
		if (floor(p) != p) return nanF();
		float r = pow(-x, p);
		return oddInt ? -r : r;
	}
	if (p == 1.0) return x;
	if (p == 2.0) return x * x;
	if (p == 0.5) return sqrt(x);
	return pow(x, p);
}

// asin and acos through atan, which llvmpipe computes more accurately.
float asinF(float x) { return abs(x) > 1.0 ? nanF() : atan(x, sqrt((1.0 - x) * (1.0 + x))); }
float acosF(float x) { return abs(x) > 1.0 ? nanF() : atan(sqrt((1.0 - x) * (1.0 + x)), x); }
float acoshF(float x) { return x < 1.0 ? nanF() : log(x + sqrt(x * x - 1.0)); }
float asinhF(float x) { float z = abs(x); float r = z < 1e-3 ? z : log(z + sqrt(z * z + 1.0)); return x < 0.0 ? -r : r; }
float atanhF(float x) {
	float z = abs(x);
	if (z > 1.0) return nanF();
	if (z == 1.0) return x * infF();
	float r = z < 1e-3 ? z : 0.5 * log1pF(2.0 * z / (1.0 - z));
	return x < 0.0 ? -r : r;
}
float sinhF(float x) { return abs(x) < 1e-3 ? x : 0.5 * (exp(x) - exp(-x)); }
float coshF(float x) { return 0.5 * (exp(x) + exp(-x)); }

float fwdF(float x, float p0, float p1) {
	switch (OP) {
	case EXP: return exp(x);
	case LOG: return logF(x);
	case LOG1P: return x < -1.0 ? nanF() : log1pF(x);
	case ERF: return erfF(x);
	case SIN: return sin(x);
	case COS: return cos(x);
	case TAN: return tan(x);
	case TANH: return tanhF(x);
	case ELU: return x > 0.0 ? x : p0 * expm1F(x);
	case SELU: return x > 0.0 ? float(SELU_SCALE) * x : float(SELU_SCALE * SELU_ALPHA) * expm1F(x);
	case CELU: return max(0.0, x) + min(0.0, p0 * expm1F(x / p0));
	case GELU: return 0.5 * x * (1.0 + erfF(x * 0.70710678118654752));
	case GELU_TANH: return 0.5 * x * (1.0 + tanhF(0.7978845608028654 * (x + 0.044715 * x * x * x)));
	case SIGMOID: return sigmoidF(x);
	case LOG_SIGMOID: return -softplusF(-x);
	case SILU: return x * sigmoidF(x);
	case MISH: return x * tanhF(softplusF(x));
	case SOFTPLUS: return x * p0 > p1 ? x : softplusF(p0 * x) / p0;
	case POW: return powF(x, p0);
	case ASIN: return asinF(x);
	case ACOS: return acosF(x);
	case ATAN: return atan(x);
	case SINH: return sinhF(x);
	case COSH: return coshF(x);
	case ASINH: return asinhF(x);
	case ACOSH: return acoshF(x);
	case ATANH: return atanhF(x);
	}
	return nanF();
}

float gradF(float x, float p0, float p1) {
	switch (OP) {
	case EXP: return exp(x);
	case LOG: return 1.0 / x;
	case LOG1P: return 1.0 / (1.0 + x);
	case ERF: return 1.1283791670955126 * exp(-x * x);
	case SIN: return cos(x);
	case COS: return -sin(x);
	case TAN: { float c = cos(x); return 1.0 / (c * c); }
	case TANH: { float t = tanhF(x); return 1.0 - t * t; }
	case ELU: return x > 0.0 ? 1.0 : p0 * exp(x);
	case SELU: return x > 0.0 ? float(SELU_SCALE) : float(SELU_SCALE * SELU_ALPHA) * exp(x);
	case CELU: return x > 0.0 ? 1.0 : exp(x / p0);
	case GELU: return 0.5 * (1.0 + erfF(x * 0.70710678118654752)) + x * exp(-0.5 * x * x) * 0.3989422804014327;
	case GELU_TANH: {
		const float c = 0.7978845608028654;
		float t = tanhF(c * (x + 0.044715 * x * x * x));
		if (t * t == 1.0) return 0.5 * (1.0 + t);
		return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
	}
	case SIGMOID: { float s = sigmoidF(x); return s * (1.0 - s); }
	case LOG_SIGMOID: return sigmoidF(-x);
	case SILU: { float s = sigmoidF(x); return s * (1.0 + x * (1.0 - s)); }
	case MISH: { float t = tanhF(softplusF(x)); return t + x * (1.0 - t * t) * sigmoidF(x); }
	case SOFTPLUS: return x * p0 > p1 ? 1.0 : sigmoidF(p0 * x);
	case POW: return p0 == 0.0 ? 0.0 : p0 * powF(x, p0 - 1.0);
	case ASIN: return 1.0 / sqrt(1.0 - x * x);
	case ACOS: return -1.0 / sqrt(1.0 - x * x);
	case ATAN: return 1.0 / (1.0 + x * x);
	case SINH: return coshF(x);
	case COSH: return sinhF(x);
	case ASINH: return 1.0 / sqrt(x * x + 1.0);
	case ACOSH: return 1.0 / sqrt(x * x - 1.0);
	case ATANH: return 1.0 / (1.0 - x * x);
	}
	return nanF();
}

void main() {
	XDT = DYN != 0 ? int(pc.args.codes[0]) : XDT_S;
	ODT = DYN != 0 ? int(pc.args.codes[1]) : ODT_S;
	OP = DYN != 0 ? int(pc.args.codes[2]) : OP_S;
	GRAD = DYN != 0 ? int(pc.args.codes[3]) : GRAD_S;
	GDT = DYN != 0 ? int(pc.args.codes[4]) : GDT_S;
	View o = pc.args.out_;
	View x = pc.args.x;
	View g = pc.args.g;
	int64_t n = pc.args.n;
	double p0 = pc.args.p0;
	double p1 = pc.args.p1;
	dzero = double(pc.err.pad);
	GRID_STRIDE(i, n) {
		int64_t xe = elemOffset(x, i);
		int64_t oe = elemOffset(o, i);
		if (inDouble()) {
			double v = loadD(x.addr, XDT, xe);
			double r = GRAD != 0 ? loadD(g.addr, GDT, elemOffset(g, i)) * gradD(v, p0, p1) : fwdD(v, p0, p1);
			storeD(o.addr, ODT, oe, r);
		} else {
			float v = loadF(x.addr, XDT, xe);
			float r = GRAD != 0 ? loadF(g.addr, GDT, elemOffset(g, i)) * gradF(v, float(p0), float(p1)) : fwdF(v, float(p0), float(p1));
			storeF(o.addr, ODT, oe, r);
		}
	}
}
