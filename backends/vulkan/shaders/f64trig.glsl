// f64trig.glsl: double-precision trigonometric, inverse trigonometric and
// hyperbolic functions, which GLSL has for float only. Include after
// f64math.glsl (they build on its expD, logD, log1pD and sqrtD).
//
// Each is Go's math package's algorithm (Cephes' and FreeBSD's msun), step
// for step and with its constants, so that the device agrees with the CPU
// backend to an ulp or two rather than merely to the conformance tolerance:
// sin, cos and tan reduce x to z = x − j·π/4 with π/4 in three parts
// (Cody–Waite, exact for |x| < 2^29) and, from 2^29 on, with 4/π's bits
// (Payne–Hanek, Go's trigReduce: a 64×192-bit product of the significand
// with the bits of 4/π that matter for x's exponent), then evaluate
// Cephes' polynomials on |z| ≤ π/4. atan is Cephes' rational function after
// reduction to [0, 0.66]; asin and acos go through it. sinh and cosh are
// Hart & Cheney's rational function below ½ and exp above; asinh, acosh and
// atanh are FreeBSD's log and log1p forms. TestF64Math measures each
// against Go's over dense sweeps; doc.go records the worst ulps.
#ifndef KILN_F64TRIG_GLSL
#define KILN_F64TRIG_GLSL

const double PI_D = 3.141592653589793lf;
const double PIO2_D = 1.5707963267948966lf;
const double PIO4_D = 0.7853981633974483lf;

// The bits of 4/π (Go's mPi4): 4/π = Σ MPI4[i]·2^(−64·i), i from 0.
const uint64_t MPI4[20] = uint64_t[20](
	0x0000000000000001ul, 0x45f306dc9c882a53ul, 0xf84eafa3ea69bb81ul, 0xb6c52b3278872083ul,
	0xfca2c757bd778ac3ul, 0x6e48dc74849ba5c0ul, 0x0c925dd413a32439ul, 0xfc3bd63962534e7dul,
	0xd1046bea5d768909ul, 0xd338e04d68befc82ul, 0x7323ac7306a673e9ul, 0x3908bf177bf25076ul,
	0x3ff12fffbc0b301ful, 0xde5e2316b414da3eul, 0xda6cfd9e4f96136eul, 0x9e8c7ecd3cbfd45aul,
	0xea4f758fd7cbe2f6ul, 0x7a0e73ef14a525d4ul, 0xd7f6bf623f1aba10ul, 0xac06608df8f6d757ul);

// shl64 and shr64 shift by s in [0, 64], giving 0 for 64 as Go does (GLSL
// leaves a shift by the width undefined).
uint64_t shl64(uint64_t v, uint s) { return s >= 64u ? 0ul : v << s; }
uint64_t shr64(uint64_t v, uint s) { return s >= 64u ? 0ul : v >> s; }

// mul64 returns the 128-bit product of a and b (Go's bits.Mul64).
void mul64(uint64_t a, uint64_t b, out uint64_t hi, out uint64_t lo) {
	uint64_t a0 = a & 0xfffffffful, a1 = a >> 32, b0 = b & 0xfffffffful, b1 = b >> 32;
	uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0;
	uint64_t mid = (p00 >> 32) + (p01 & 0xfffffffful) + (p10 & 0xfffffffful);
	hi = a1 * b1 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
	lo = a * b;
}

// clz64 counts the leading zero bits of v (64 for 0).
uint clz64(uint64_t v) {
	uint h = uint(v >> 32), l = uint(v);
	if (h != 0u) return uint(31 - findMSB(h));
	if (l != 0u) return uint(63 - findMSB(l));
	return 64u;
}

// trigReduceD is Go's trigReduce (Payne–Hanek) for x ≥ 2^29: it returns
// z = x − j·π/4 and the octant j (0 to 7, odd octants mapped to the next
// even one, z then negative), from the product of x's significand with
// the 192 bits of 4/π that line up with its exponent.
double trigReduceD(double x, out uint j) {
	uint64_t ix = doubleBitsToUint64(x);
	int ex = int((ix >> 52) & 0x7fful) - 1023 - 52;
	ix = (ix & 0x000ffffffffffffful) | 0x0010000000000000ul;
	uint digit = uint(ex + 61) / 64u, bs = uint(ex + 61) % 64u;
	uint64_t z0 = shl64(MPI4[digit], bs) | shr64(MPI4[digit + 1u], 64u - bs);
	uint64_t z1 = shl64(MPI4[digit + 1u], bs) | shr64(MPI4[digit + 2u], 64u - bs);
	uint64_t z2 = shl64(MPI4[digit + 2u], bs) | shr64(MPI4[digit + 3u], 64u - bs);
	uint64_t z2hi, z2lo, z1hi, z1lo;
	mul64(z2, ix, z2hi, z2lo);
	mul64(z1, ix, z1hi, z1lo);
	uint64_t lo = z1lo + z2hi;
	uint64_t hi = z0 * ix + z1hi + (lo < z1lo ? 1ul : 0ul);
	j = uint(hi >> 61);
	hi = (hi << 3) | (lo >> 61);
	uint lz = clz64(hi);
	uint64_t e = uint64_t(1023u - (lz + 1u));
	hi = shl64(hi, lz + 1u) | shr64(lo, 64u - (lz + 1u));
	hi = (hi >> 12) | (e << 52);
	double z = uint64BitsToDouble(hi);
	if ((j & 1u) == 1u) {
		j = (j + 1u) & 7u;
		z -= 1.0lf;
	}
	return z * PIO4_D;
}

// trigD returns sin x (kind 0), cos x (kind 1) or tan x (kind 2), as Go's
// math.Sin, Cos and Tan compute them (one function, so that a shader
// inlines the reduction once): ±0 stays ±0 for sin and tan; ±Inf and NaN
// give NaN.
double trigD(double x, int kind) {
	if (isnan(x)) return x;
	if (isinf(x)) return f64nan();
	if (x == 0.0lf && kind != 1) return x;
	bool sign = kind != 1 && signbitD(x);
	x = abs(x);
	uint j;
	double z;
	if (x >= 536870912.0lf) { // 2^29: y·PI4A below would no longer be exact
		z = trigReduceD(x, j);
	} else {
		j = uint(x * 1.2732395447351628lf); // x/(π/4), truncated
		double y = double(j);
		if ((j & 1u) == 1u) { // odd octants to the next even one
			j++;
			y += 1.0lf;
		}
		j &= 7u;
		z = ((x - y * 7.85398125648498535156e-1lf) - y * 3.77489470793079817668e-8lf) - y * 2.69515142907905952645e-15lf;
	}
	double zz = z * z;
	if (kind == 2) {
		double r = z;
		if (zz > 1e-14lf) {
			r = z + z * (zz * ((-1.30936939181383777646e4lf * zz + 1.15351664838587416140e6lf) * zz - 1.79565251976484877988e7lf) /
				((((zz + 1.36812963470692954678e4lf) * zz - 1.32089234440210967447e6lf) * zz + 2.50083801823357915839e7lf) * zz -
				5.38695755929454629881e7lf));
		}
		if ((j & 2u) == 2u) r = -1.0lf / r;
		return sign ? -r : r;
	}
	if (j > 3u) {
		j -= 4u;
		sign = !sign;
	}
	if (kind == 1 && j > 1u) sign = !sign;
	double r;
	if ((j == 1u || j == 2u) == (kind == 1)) { // the sine polynomial
		r = z + z * zz * (((((1.58962301576546568060e-10lf * zz - 2.50507477628578072866e-8lf) * zz + 2.75573136213857245213e-6lf) * zz -
			1.98412698295895385996e-4lf) * zz + 8.33333333332211858878e-3lf) * zz - 1.66666666666666307295e-1lf);
	} else { // the cosine polynomial
		r = 1.0lf - 0.5lf * zz + zz * zz * (((((-1.13585365213876817300e-11lf * zz + 2.08757008419747316778e-9lf) * zz -
			2.75573141792967388112e-7lf) * zz + 2.48015872888517045348e-5lf) * zz - 1.38888888888730564116e-3lf) * zz +
			4.16666666666665929218e-2lf);
	}
	return sign ? -r : r;
}

// satanD is Go's satan: atan of x ≥ 0 by Cephes' rational function after
// reducing x to [0, 0.66] (x, (x − 1)/(x + 1) or 1/x).
double satanD(double x) {
	const double MOREBITS = 6.123233995736765886130e-17lf; // π/2 = PIO2_D + MOREBITS
	int part = x <= 0.66lf ? 0 : (x > 2.41421356237309504880lf ? 2 : 1); // 2.414… = tan(3π/8)
	double t = part == 0 ? x : (part == 2 ? 1.0lf / x : (x - 1.0lf) / (x + 1.0lf));
	double z = t * t;
	z = z * ((((-8.750608600031904122785e-01lf * z - 1.615753718733365076637e+01lf) * z - 7.500855792314704667340e+01lf) * z -
		1.228866684490136173410e+02lf) * z - 6.485021904942025371773e+01lf) /
		(((((z + 2.485846490142306297962e+01lf) * z + 1.650270098316988542046e+02lf) * z + 4.328810604912902668951e+02lf) * z +
		4.853903996359136964868e+02lf) * z + 1.945506571482613964425e+02lf);
	z = t * z + t;
	if (part == 0) return z;
	if (part == 2) return PIO2_D - z + MOREBITS;
	return PIO4_D + z + 0.5lf * MOREBITS;
}

// atanD is Go's math.Atan.
double atanD(double x) {
	if (x == 0.0lf) return x;
	double r = satanD(abs(x));
	return x < dzero ? -r : r;
}

// asinD is Go's math.Asin: atan(x/√(1 − x²)), or π/2 − atan(√(1 − x²)/x)
// above 0.7; NaN outside [−1, 1].
double asinD(double x) {
	if (x == 0.0lf) return x;
	bool sign = x < dzero;
	if (sign) x = -x;
	if (x > 1.0lf) return f64nan();
	double t = sqrt(1.0lf - x * x);
	t = x > 0.7lf ? PIO2_D - satanD(t / x) : satanD(x / t);
	return sign ? -t : t;
}

// acosD is Go's math.Acos: π/2 − asin x.
double acosD(double x) { return PIO2_D - asinD(x); }

// atan2D is Go's math.Atan2, with every signed-zero and infinite case of
// IEEE 754.
double atan2D(double y, double x) {
	if (isnan(y) || isnan(x)) return f64nan();
	if (y == 0.0lf) return (x >= dzero && !signbitD(x)) ? copysignD(0.0lf, y) : copysignD(PI_D, y);
	if (x == 0.0lf) return copysignD(PIO2_D, y);
	if (isinf(x)) {
		if (x > dzero) return isinf(y) ? copysignD(PIO4_D, y) : copysignD(0.0lf, y);
		return isinf(y) ? copysignD(2.356194490192345lf, y) : copysignD(PI_D, y);
	}
	if (isinf(y)) return copysignD(PIO2_D, y);
	double q = atanD(y / x);
	if (x < dzero) return q <= dzero ? q + PI_D : q - PI_D;
	return q;
}

// sinhD is Go's math.Sinh: Hart & Cheney's rational function (#2029) up to
// ½, (e^x − e^−x)/2 above and e^x/2 from 21 on.
double sinhD(double x) {
	bool sign = x < dzero;
	if (sign) x = -x;
	double t;
	if (x > 0.5lf) {
		double ex = expD(x);
		t = x > 21.0lf ? ex * 0.5lf : (ex - 1.0lf / ex) * 0.5lf;
	} else {
		double sq = x * x;
		t = (((-0.2630563213397497062819489e+2lf * sq - 0.2894211355989563807284660366e+4lf) * sq - 0.8991272022039509355398013511e+5lf) * sq -
			0.6307673640497716991184787251e+6lf) * x;
		t = t / (((sq - 0.173678953558233699533450911e+3lf) * sq + 0.1521517378790019070696485176e+5lf) * sq - 0.6307673640497716991212077277e+6lf);
	}
	return sign ? -t : t;
}

// coshD is Go's math.Cosh: (e^x + e^−x)/2, e^|x|/2 from 21 on.
double coshD(double x) {
	x = abs(x);
	double ex = expD(x);
	return x > 21.0lf ? ex * 0.5lf : (ex + 1.0lf / ex) * 0.5lf;
}

// asinhD is Go's math.Asinh (FreeBSD's s_asinh.c).
double asinhD(double x) {
	if (isnan(x) || isinf(x)) return x;
	bool sign = x < dzero;
	if (sign) x = -x;
	double t;
	if (x > 268435456.0lf) t = logD(x) + 6.93147180559945286227e-01lf; // 2^28
	else if (x > 2.0lf) t = logD(2.0lf * x + 1.0lf / (sqrt(x * x + 1.0lf) + x));
	else if (x < 1.0lf / 268435456.0lf) t = x;
	else t = log1pD(x + x * x / (1.0lf + sqrt(1.0lf + x * x)));
	return sign ? -t : t;
}

// acoshD is Go's math.Acosh (FreeBSD's e_acosh.c); NaN below 1.
double acoshD(double x) {
	if (x < 1.0lf || isnan(x)) return f64nan();
	if (x == 1.0lf) return 0.0lf;
	if (x >= 268435456.0lf) return logD(x) + 6.93147180559945286227e-01lf;
	if (x > 2.0lf) return logD(2.0lf * x - 1.0lf / (x + sqrt(x * x - 1.0lf)));
	double t = x - 1.0lf;
	return log1pD(t + sqrt(2.0lf * t + t * t));
}

// atanhD is Go's math.Atanh (FreeBSD's e_atanh.c); ±Inf at ±1, NaN beyond.
double atanhD(double x) {
	if (x < -1.0lf || x > 1.0lf || isnan(x)) return f64nan();
	if (x == 1.0lf) return f64inf();
	if (x == -1.0lf) return -f64inf();
	bool sign = x < dzero;
	if (sign) x = -x;
	double t;
	if (x < 1.0lf / 268435456.0lf) t = x;
	else if (x < 0.5lf) {
		t = x + x;
		t = 0.5lf * log1pD(t + t * x / (1.0lf - x));
	} else t = 0.5lf * log1pD((x + x) / (1.0lf - x));
	return sign ? -t : t;
}

#endif
