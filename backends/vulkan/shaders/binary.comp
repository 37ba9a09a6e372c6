#version 460
// binary: out[i] = a[i] op b[i] (Backend.Binary), or with a scalar operand
// s (Backend.BinaryScalar: MODE 1 is a op s, MODE 2 is s op a), for the ops
// of backends.BinaryOps, broadcasting by stride 0.
//
// INT = 1 computes exactly in int64, as the CPU backend does for integer
// and Bool inputs (wrap-around arithmetic, Python's remainder and floor
// division, shifts that give 0 or the sign past 63, pow by squaring); an
// integer Rem or FloorDiv by zero reports error 2 and writes 0. INT = 0
// computes in double (exactly the CPU's results: + − × ÷ of float32 values
// rounded once to float32 equal float32 arithmetic; float Rem and FloorDiv
// through f64math.glsl's exact fmod, as backends.BinaryOps defines them),
// except Pow and Atan2, computed in float for Float32, Float16 and BFloat16
// (math_f64.comp computes them in double for Float64).
// Spec constants: ADT (both inputs), ODT, OP (backends.BinaryOp), MODE, INT.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int ADT_S = 0;
layout(constant_id = 1) const int ODT_S = 0;
layout(constant_id = 2) const int OP_S = 0;
layout(constant_id = 3) const int MODE_S = 0;
layout(constant_id = 4) const int INT_S = 0;
layout(constant_id = 5) const int DYN = 0; // 1: the codes below come from the arguments (one pipeline for all)
int ADT, ODT, OP, MODE, INT;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
	View out_;
	View a;
	View b;
	int64_t n;
	double sd;
	int64_t si;
	int64_t codes[5]; // ADT, ODT, OP, MODE, INT when DYN
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

const int ADD = 0, SUB = 1, MUL = 2, DIV = 3, REM = 4, POW = 5, MAXIMUM = 6, MINIMUM = 7, FLOOR_DIV = 8,
	EQ = 9, NE = 10, LT = 11, LE = 12, GT = 13, GE = 14, AND = 15, OR = 16, XOR = 17, ATAN2 = 18,
	BIT_AND = 19, BIT_OR = 20, BIT_XOR = 21, LEFT_SHIFT = 22, RIGHT_SHIFT = 23;

bool predicate() { return OP >= EQ && OP <= XOR; }

// dzero is 0.0 read at run time: Mesa 22.3's llvmpipe miscompiles ordered
// comparisons of a double with the literal 0.0 (see unary.comp).
double dzero;
#include "f64math.glsl"

bool cmpI(int64_t a, int64_t c) {
	switch (OP) {
	case EQ: return a == c;
	case NE: return a != c;
	case LT: return a < c;
	case LE: return a <= c;
	case GT: return a > c;
	case GE: return a >= c;
	case AND: return a != 0l && c != 0l;
	case OR: return a != 0l || c != 0l;
	}
	return (a != 0l) != (c != 0l); // XOR
}

bool cmpD(double a, double c) {
	switch (OP) {
	case EQ: return a == c;
	case NE: return a != c;
	case LT: return a < c;
	case LE: return a <= c;
	case GT: return a > c;
	case GE: return a >= c;
	case AND: return a != 0.0lf && c != 0.0lf;
	case OR: return a != 0.0lf || c != 0.0lf;
	}
	return (a != 0.0lf) != (c != 0.0lf); // XOR
}

int64_t opI(int64_t a, int64_t c) {
	switch (OP) {
	case ADD: return a + c;
	case SUB: return a - c;
	case MUL: return a * c;
	case MAXIMUM: return a > c ? a : c;
	case MINIMUM: return a < c ? a : c;
	case BIT_AND: return a & c;
	case BIT_OR: return a | c;
	case BIT_XOR: return a ^ c;
	case LEFT_SHIFT: return (c < 0l || c >= 64l) ? 0l : a << c;
	case RIGHT_SHIFT: return (c < 0l || c >= 64l) ? (a < 0l ? -1l : 0l) : a >> c;
	case REM: {
		if (c == 0l) { reportError(pc.err, ERR_DIV_ZERO, 0l); return 0l; }
		int64_t r = a - (a / c) * c;
		if (r != 0l && ((r < 0l) != (c < 0l))) r += c;
		return r;
	}
	case FLOOR_DIV: {
		if (c == 0l) { reportError(pc.err, ERR_DIV_ZERO, 0l); return 0l; }
		int64_t q = a / c;
		if (a - q * c != 0l && ((a < 0l) != (c < 0l))) q--;
		return q;
	}
	case POW: { // by squaring, wrapping; a negative exponent gives 0, as on the CPU
		if (c < 0l) return 0l;
		int64_t r = 1l;
		for (int64_t base = a, e = c; e > 0l; e >>= 1) {
			if ((e & 1l) == 1l) r *= base;
			base *= base;
		}
		return r;
	}
	}
	return 0l;
}

bool negD(double x) { return x < dzero || (x == dzero && 1.0lf / x < dzero); } // sign bit, for zeros too

double opD(double a, double c) {
	switch (OP) {
	case ADD: return a + c;
	case SUB: return a - c;
	case MUL: return a * c;
	case DIV: return a / c;
	case REM: return remainderD(a, c);
	case FLOOR_DIV: return floorDivideD(a, c);
	case BIT_AND: case BIT_OR: case BIT_XOR: case LEFT_SHIFT: case RIGHT_SHIFT:
		return double(opI(int64_t(a), int64_t(c))); // the definition on floats: int64(a) op int64(b)
	case MAXIMUM:
		if (isnan(a)) return a;
		if (isnan(c)) return c;
		if (a == c) return negD(a) ? c : a; // max(-0, +0) = +0
		return a > c ? a : c;
	case MINIMUM:
		if (isnan(a)) return a;
		if (isnan(c)) return c;
		if (a == c) return negD(a) ? a : c; // min(-0, +0) = -0
		return a < c ? a : c;
	}
	return a;
}

float nanF() { return uintBitsToFloat(0x7fc00000u); }
float infF() { return uintBitsToFloat(0x7f800000u); }
const float PI = 3.14159265358979323846;

float powF(float x, float p) {
	if (p == 0.0 || x == 1.0) return 1.0;
	if (isnan(x) || isnan(p)) return nanF();
	bool oddInt = floor(p) == p && mod(p, 2.0) == 1.0;
	if (x == 0.0) {
		float r = p > 0.0 ? 0.0 : infF();
		return (oddInt && floatBitsToUint(x) != 0u) ? -r : r;
	}
	if (x < 0.0) {
		if (isinf(p)) return (-x == 1.0) ? 1.0 : ((-x < 1.0) == (p > 0.0) ? 0.0 : infF());
		if (floor(p) != p) return nanF();
		float r = pow(-x, p);
		return oddInt ? -r : r;
	}
	if (p == 1.0) return x;
	if (p == 2.0) return x * x;
	if (p == 0.5) return sqrt(x);
	return pow(x, p);
}

float atan2F(float y, float x) {
	if (isnan(x) || isnan(y)) return nanF();
	if (y == 0.0) {
		bool xneg = x < 0.0 || (x == 0.0 && floatBitsToUint(x) != 0u);
		return xneg ? (floatBitsToUint(y) != 0u ? -PI : PI) : y;
	}
	if (x == 0.0) return y > 0.0 ? PI / 2.0 : -PI / 2.0;
	return atan(y, x);
}

float opF(float a, float c) { return OP == POW ? powF(a, c) : atan2F(a, c); }

void main() {
	ADT = DYN != 0 ? int(pc.args.codes[0]) : ADT_S;
	ODT = DYN != 0 ? int(pc.args.codes[1]) : ODT_S;
	OP = DYN != 0 ? int(pc.args.codes[2]) : OP_S;
	MODE = DYN != 0 ? int(pc.args.codes[3]) : MODE_S;
	INT = DYN != 0 ? int(pc.args.codes[4]) : INT_S;
	View o = pc.args.out_;
	View a = pc.args.a;
	View b = pc.args.b;
	int64_t n = pc.args.n;
	dzero = double(pc.err.pad);
	GRID_STRIDE(i, n) {
		int64_t oe = elemOffset(o, i);
		if (INT != 0) {
			int64_t x = MODE == 2 ? pc.args.si : loadI(a.addr, ADT, elemOffset(a, i));
			int64_t y = MODE == 0 ? loadI(b.addr, ADT, elemOffset(b, i)) : (MODE == 1 ? pc.args.si : loadI(a.addr, ADT, elemOffset(a, i)));
			if (predicate()) storeI(o.addr, ODT, oe, cmpI(x, y) ? 1l : 0l);
			else storeI(o.addr, ODT, oe, opI(x, y));
		} else if (OP == POW || OP == ATAN2) {
			float x = MODE == 2 ? float(pc.args.sd) : loadF(a.addr, ADT, elemOffset(a, i));
			float y = MODE == 0 ? loadF(b.addr, ADT, elemOffset(b, i)) : (MODE == 1 ? float(pc.args.sd) : loadF(a.addr, ADT, elemOffset(a, i)));
			storeF(o.addr, ODT, oe, opF(x, y));
		} else {
			double x = MODE == 2 ? pc.args.sd : loadD(a.addr, ADT, elemOffset(a, i));
			double y = MODE == 0 ? loadD(b.addr, ADT, elemOffset(b, i)) : (MODE == 1 ? pc.args.sd : loadD(a.addr, ADT, elemOffset(a, i)));
			if (predicate()) storeI(o.addr, ODT, oe, cmpD(x, y) ? 1l : 0l);
			else storeD(o.addr, ODT, oe, opD(x, y));
		}
	}
}
