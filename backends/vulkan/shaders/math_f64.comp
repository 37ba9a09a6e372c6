#version 460
// math_f64: the transcendental element-wise functions in double, for
// Float64 and integer inputs (unary.comp and binary.comp compute them in
// float for Float32, Float16 and BFloat16): KIND 0 is Backend.Unary
// (out[i] = op(x[i]; p0, p1)), KIND 1 Backend.UnaryGrad (out[i] =
// y[i]·op'(x[i])), for sin, cos, tan, their inverses and hyperbolics, erf,
// gelu, gelu_tanh, mish and pow; KIND 2 is Backend.Binary (out[i] = x[i]
// op y[i]) and KINDs 3 and 4 Backend.BinaryScalar (x op s, s op x, s in
// p0) for pow and atan2. The functions are Go's math package's algorithms
// (f64math.glsl, f64trig.glsl); the composites follow backends.UnaryOps'
// formulas operation for operation.
// Spec constants: XDT, ODT, OP (backends.UnaryOp, or BinaryOp for KIND ≥ 2),
// KIND, YDT.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int XDT_S = 0;
layout(constant_id = 1) const int ODT_S = 0;
layout(constant_id = 2) const int OP_S = 0;
layout(constant_id = 3) const int KIND_S = 0;
layout(constant_id = 4) const int YDT_S = 0;
layout(constant_id = 5) const int DYN = 0; // 1: the codes below come from the arguments (one pipeline for all)
int XDT, ODT, OP, KIND, YDT;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
	View out_;
	View x;
	View y;
	int64_t n;
	double p0;
	double p1;
	int64_t codes[5]; // XDT, ODT, OP, KIND, YDT when DYN
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

// Unary op codes (backends.UnaryOp) handled here.
const int ERF = 10, SIN = 11, COS = 12, TAN = 13, GELU = 24, GELU_TANH = 25, MISH = 31, POW = 35, ASIN = 39,
	ACOS = 40, ATAN = 41, SINH = 42, COSH = 43, ASINH = 44, ACOSH = 45, ATANH = 46;
// Binary op codes (backends.BinaryOp).
const int BPOW = 5; // the other, BATAN2 = 18

// dzero is 0.0 read at run time: Mesa 22.3's llvmpipe miscompiles ordered
// comparisons of a double with the literal 0.0 (see unary.comp).
double dzero;
#include "f64math.glsl"
#include "f64trig.glsl"

const int EXP = 3, TANH = 14;
const double GC = 0.7978845608028654lf; // √(2/π), gelu_tanh's constant

// fnD returns the long function f of x (and of p, for pow and atan2): every
// call of one sits in this one switch, so that the shader holds each once.
double fnD(int f, double x, double p) {
	switch (f) {
	case SIN: return trigD(x, 0);
	case COS: return trigD(x, 1);
	case TAN: return trigD(x, 2);
	case ASIN: return asinD(x);
	case ACOS: return acosD(x);
	case ATAN: return atanD(x);
	case SINH: return sinhD(x);
	case COSH: return coshD(x);
	case ASINH: return asinhD(x);
	case ACOSH: return acoshD(x);
	case ATANH: return atanhD(x);
	case ERF: return erfD(x);
	case EXP: return expD(x);
	case TANH: return tanhD(x);
	case POW: return powD(x, p);
	}
	return atan2D(x, p); // BATAN2, as -1
}

// unaryD returns op(x; p0, p1) or, with grad, g·op'(x): the one long
// function the op needs (cos for sin', erf for gelu, tanh(softplus) for
// mish, …) through fnD, then the op's formula around it.
double unaryD(bool grad, double x, double g, double p0) {
	int f = OP;
	double fx = x, fp = p0;
	switch (OP) {
	case SIN: case TAN: if (grad) f = COS; break;
	case COS: if (grad) f = SIN; break;
	case SINH: if (grad) f = COSH; break;
	case COSH: if (grad) f = SINH; break;
	case ERF: if (grad) { f = EXP; fx = -x * x; } break;
	case GELU: f = ERF; fx = x / 1.4142135623730951lf; break;
	case GELU_TANH: f = TANH; fx = GC * (x + 0.044715lf * x * x * x); break;
	case MISH: f = TANH; fx = softplusD(x); break;
	case POW: if (grad) fp = p0 - 1.0lf; break;
	case ASIN: case ACOS: case ATAN: case ASINH: case ACOSH: case ATANH: if (grad) f = -2; break; // algebraic
	}
	double v = f == -2 ? 0.0lf : fnD(f, fx, fp);
	if (!grad) {
		switch (OP) {
		case GELU: case GELU_TANH: return 0.5lf * x * (1.0lf + v);
		case MISH: return x * v;
		}
		return v;
	}
	double d = v; // sin' = cos, sinh' = cosh, cosh' = sinh
	switch (OP) {
	case COS: d = -v; break;
	case TAN: d = 1.0lf / (v * v); break;
	case ERF: d = 1.1283791670955126lf * v; break; // 2/√π
	case GELU: d = 0.5lf * (1.0lf + v) + x * expD(-0.5lf * x * x) / 2.5066282746310002lf; break; // √(2π)
	case GELU_TANH:
		// saturated: the second term is 0, though x² may overflow to inf
		d = v * v == 1.0lf ? 0.5lf * (1.0lf + v) : 0.5lf * (1.0lf + v) + 0.5lf * x * (1.0lf - v * v) * GC * (1.0lf + 0.134145lf * x * x);
		break;
	case MISH: d = v + x * (1.0lf - v * v) * sigmoidD(x); break;
	case POW: d = p0 == 0.0lf ? 0.0lf : p0 * v; break;
	case ASIN: d = 1.0lf / sqrtD(1.0lf - x * x); break;
	case ACOS: d = -1.0lf / sqrtD(1.0lf - x * x); break;
	case ATAN: d = 1.0lf / (1.0lf + x * x); break;
	case ASINH: d = 1.0lf / sqrtD(x * x + 1.0lf); break;
	case ACOSH: d = 1.0lf / sqrtD(x * x - 1.0lf); break;
	case ATANH: d = 1.0lf / (1.0lf - x * x); break;
	}
	return g * d;
}

void main() {
	XDT = DYN != 0 ? int(pc.args.codes[0]) : XDT_S;
	ODT = DYN != 0 ? int(pc.args.codes[1]) : ODT_S;
	OP = DYN != 0 ? int(pc.args.codes[2]) : OP_S;
	KIND = DYN != 0 ? int(pc.args.codes[3]) : KIND_S;
	YDT = DYN != 0 ? int(pc.args.codes[4]) : YDT_S;
	View o = pc.args.out_;
	View x = pc.args.x;
	View y = pc.args.y;
	int64_t n = pc.args.n;
	double p0 = pc.args.p0;
	dzero = double(pc.err.pad);
	GRID_STRIDE(i, n) {
		double a = loadD(x.addr, XDT, elemOffset(x, i));
		double r;
		if (KIND < 2) {
			double g = KIND == 1 ? loadD(y.addr, YDT, elemOffset(y, i)) : 1.0lf;
			r = unaryD(KIND == 1, a, g, p0);
		} else {
			double b = KIND == 2 ? loadD(y.addr, YDT, elemOffset(y, i)) : p0;
			if (KIND == 4) { double t = a; a = b; b = t; }
			r = fnD(OP == BPOW ? POW : -1, a, b);
		}
		storeD(o.addr, ODT, elemOffset(o, i), r);
	}
}
