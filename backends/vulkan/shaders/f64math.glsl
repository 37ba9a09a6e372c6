// f64math.glsl: double-precision exp, log and the functions built on
// them, which GLSL lacks (its exp and log take float only), and the exact
// float remainder. Include after common.glsl; the includer defines
// `double dzero` (0.0 read at run time, see unary.comp).
//
// expD: Cody–Waite reduction x = k·ln2 + r with |r| ≤ ln2/2 (ln2 split in
// two parts so k·ln2 is exact), a degree-13 Taylor polynomial for e^r
// (truncation below 1e-17) and an exact scaling by 2^k done in two
// multiplications (each by a power of two in the normal range) so that
// subnormal results round once. logD is Go's math.Log (FreeBSD's e_log.c,
// which Go's amd64 assembly computes operation for operation, and so does
// logD, `precise` against contraction): x = m·2^k with m in [√½, √2),
// f = m − 1, s = f/(2 + f), log(1 + f) = f − (f²/2 − s·(f²/2 + R(s²))) with
// a degree-14 minimax R, plus k·ln2 in two parts. Measured on lavapipe
// against Go's math.Exp and math.Log over their whole range (TestF64Math,
// 4645 values, subnormals included): exp at most 1 ulp apart, log bit for
// bit; special values (NaN, ±Inf, 0, negative logs, overflow and
// underflow) follow IEEE 754 as Go's math does. expm1D, log1pD, sigmoidD
// and softplusD build on them with the CPU backend's stable formulas;
// tanhD, powD and erfD are Go's math.Tanh, Pow and Erf; fmodD is exact.
#ifndef KILN_F64MATH_GLSL
#define KILN_F64MATH_GLSL

const double LN2_HI = 6.93147180369123816490e-01lf;
const double LN2_LO = 1.90821492927058770002e-10lf;
const double INV_LN2 = 1.44269504088896338700e+00lf;

double f64nan() { return uint64BitsToDouble(0x7ff8000000000000ul); }
double f64inf() { return uint64BitsToDouble(0x7ff0000000000000ul); }

// pow2D returns 2^k for k in [-1022, 1023], built from its bits (llvmpipe's
// ldexp overflows early).
double pow2D(int k) { return uint64BitsToDouble(uint64_t(k + 1023) << 52); }

// truncD and floorD are trunc and floor on the bits: llvmpipe (Mesa
// 22.3) on a CPU without AVX-512 returned trunc(20711473.152) unchanged, so
// that pow saw no fractional part ((-0.75)^20711473.152 gave -0, not NaN).
double truncD(double x) {
	uint64_t b = doubleBitsToUint64(x);
	int e = int((b >> 52) & 0x7fful) - 1023;
	if (e >= 52) return x; // an integer already, ±Inf or NaN
	if (e < 0) return uint64BitsToDouble(b & 0x8000000000000000ul); // |x| < 1: ±0
	return uint64BitsToDouble(b & ~(0x000ffffffffffffful >> uint(e)));
}

double floorD(double x) {
	double t = truncD(x);
	return t != x && x < dzero ? t - 1.0lf : t;
}

// roundEvenD is roundEven on the bits (llvmpipe's gave roundEven(3.5) =
// 3 and left values above 2^24 unrounded): to the nearest integer, ties
// to even, keeping the sign (−0.3 gives −0).
double roundEvenD(double x) {
	uint64_t b = doubleBitsToUint64(x);
	int e = int((b >> 52) & 0x7fful) - 1023;
	if (e >= 52) return x; // an integer already, ±Inf or NaN
	uint64_t s = b & 0x8000000000000000ul;
	if (e < -1) return uint64BitsToDouble(s); // |x| < ½
	// the significand with its leading bit, and the bits below the unit
	uint64_t m = (b & 0x000ffffffffffffful) | 0x0010000000000000ul;
	uint sh = uint(52 - e);
	uint64_t q = m >> sh, rest = m & ((1ul << sh) - 1ul), hb = 1ul << (sh - 1u);
	if (rest > hb || (rest == hb && (q & 1ul) == 1ul)) q++;
	return uint64BitsToDouble(s | doubleBitsToUint64(double(q)));
}

double expD(double x) {
	if (isnan(x)) return x;
	if (x > 709.782712893384lf) return f64inf();
	if (x < -745.1332191019412lf) return dzero;
	double k = floorD(x * INV_LN2 + 0.5lf);
	double r = (x - k * LN2_HI) - k * LN2_LO;
	double p = 1.0lf / 6227020800.0lf;           // 1/13!
	p = p * r + 1.0lf / 479001600.0lf;           // 1/12!
	p = p * r + 1.0lf / 39916800.0lf;
	p = p * r + 1.0lf / 3628800.0lf;
	p = p * r + 1.0lf / 362880.0lf;
	p = p * r + 1.0lf / 40320.0lf;
	p = p * r + 1.0lf / 5040.0lf;
	p = p * r + 1.0lf / 720.0lf;
	p = p * r + 1.0lf / 120.0lf;
	p = p * r + 1.0lf / 24.0lf;
	p = p * r + 1.0lf / 6.0lf;
	p = p * r + 0.5lf;
	p = p * r + 1.0lf;
	p = p * r + 1.0lf;
	int ki = int(k);
	int k1 = ki / 2;
	precise double y = p * pow2D(k1); // precise: keep the two scalings apart
	return y * pow2D(ki - k1);
}

double logD(double x) {
	if (isnan(x) || x < dzero) return f64nan();
	if (x == dzero) return -f64inf();
	if (isinf(x)) return x;
	int e;
	double f1 = frexp(x, e); // in [0.5, 1)
	if (f1 < 0.70710678118654752440lf) {
		f1 *= 2.0lf;
		e -= 1;
	}
	precise double f = f1 - 1.0lf;
	precise double k = double(e);
	precise double s = f / (2.0lf + f);
	precise double s2 = s * s;
	precise double s4 = s2 * s2;
	precise double t1 = s2 * (6.666666666666735130e-01lf + s4 * (2.857142874366239149e-01lf + s4 * (1.818357216161805012e-01lf +
		s4 * 1.479819860511658591e-01lf)));
	precise double t2 = s4 * (3.999999999940941908e-01lf + s4 * (2.222219843214978396e-01lf + s4 * 1.531383769920937332e-01lf));
	precise double R = t1 + t2;
	precise double hfsq = 0.5lf * f * f;
	precise double r = k * LN2_HI - ((hfsq - (s * (hfsq + R) + k * LN2_LO)) - f);
	return r;
}

double expm1D(double x) {
	if (abs(x) < 1e-5lf) return x + 0.5lf * x * x + x * x * x / 6.0lf;
	return expD(x) - 1.0lf;
}

// log1pD is log(1 + x) corrected by x/((1 + x) − 1), the rounding of 1 + x
// (Goldberg's trick). precise: without it the compiler folds (1 + x) − 1
// to x and the correction away.
double log1pD(double x) {
	precise double u = 1.0lf + x;
	if (u == 1.0lf) return x;
	if (isinf(u) || isnan(u) || u == dzero) return logD(u);
	precise double d = u - 1.0lf;
	return logD(u) * x / d;
}

// tanhD is Go's math.Tanh: Cephes' rational function below 0.625, where
// 1 − 2/(e^2z + 1) would cancel, and that form above.
double tanhD(double x) {
	double z = abs(x);
	if (z > 44.014845965556525lf) return x < dzero ? -1.0lf : 1.0lf; // ½·log(2^127)
	if (z >= 0.625lf) {
		double s = expD(2.0lf * z);
		z = 1.0lf - 2.0lf / (s + 1.0lf);
		return x < dzero ? -z : z;
	}
	if (x == 0.0lf) return x;
	double s = x * x;
	return x + x * s * ((-9.64399179425052238628e-1lf * s - 9.92877231001918586564e1lf) * s - 1.61468768441708447952e3lf) /
		(((s + 1.12811678491632931402e2lf) * s + 2.23548839060100448583e3lf) * s + 4.84406305325125486048e3lf);
}

double sigmoidD(double x) {
	if (x >= dzero) return 1.0lf / (1.0lf + expD(-x));
	double e = expD(x);
	return e / (1.0lf + e);
}

double softplusD(double x) { return x > dzero ? x + log1pD(expD(-x)) : log1pD(expD(x)); }

// signbitD reports whether x's sign bit is set (true for -0 and -NaN).
bool signbitD(double x) { return (doubleBitsToUint64(x) >> 63) != 0ul; }

// copysignD returns x with the sign of s.
double copysignD(double x, double s) {
	return uint64BitsToDouble((doubleBitsToUint64(x) & 0x7ffffffffffffffful) | (doubleBitsToUint64(s) & 0x8000000000000000ul));
}

// sqrtD is sqrt with NaN for negative x, which GLSL leaves undefined.
double sqrtD(double x) { return x < dzero ? f64nan() : sqrt(x); }

// frexpD is Go's math.Frexp: finite nonzero x = frac·2^e with |frac| in
// [½, 1), subnormals included; ±0, ±Inf and NaN return themselves, e = 0.
double frexpD(double x, out int e) {
	e = 0;
	if (x == 0.0lf || isinf(x) || isnan(x)) return x;
	uint64_t b = doubleBitsToUint64(x);
	if (((b >> 52) & 0x7fful) == 0ul) { // subnormal: scale by 2^52 (exact)
		b = doubleBitsToUint64(x * 4503599627370496.0lf);
		e = -52;
	}
	e += int((b >> 52) & 0x7fful) - 1022;
	return uint64BitsToDouble((b & 0x800ffffffffffffful) | (1022ul << 52));
}

// ldexpD is Go's math.Ldexp: frac·2^ex, rounded once where the result is
// subnormal, ±Inf past the largest double and ±0 below half the smallest.
double ldexpD(double frac, int ex) {
	if (frac == 0.0lf || isinf(frac) || isnan(frac)) return frac;
	uint64_t b = doubleBitsToUint64(frac);
	if (((b >> 52) & 0x7fful) == 0ul) {
		b = doubleBitsToUint64(frac * 4503599627370496.0lf);
		ex -= 52;
	}
	ex += int((b >> 52) & 0x7fful) - 1023;
	if (ex < -1075) return copysignD(0.0lf, frac);
	if (ex > 1023) return copysignD(f64inf(), frac);
	double m = 1.0lf;
	if (ex < -1022) { // subnormal result: build it 2^53 larger, then scale once
		ex += 53;
		m = 1.0lf / 9007199254740992.0lf;
	}
	return m * uint64BitsToDouble((b & 0x800ffffffffffffful) | (uint64_t(ex + 1023) << 52));
}

// fmodD is C's fmod and Go's math.Mod, exactly: x − n·y with n = trunc(x/y)
// computed on the integer significands by shift and subtract (musl's
// algorithm), so the result, which is always representable, is exact.
// The result has x's sign (−0 for an exact negative multiple); y = ±0, x
// = ±Inf or a NaN give NaN; y = ±Inf gives x.
double fmodD(double x, double y) {
	uint64_t ux = doubleBitsToUint64(x), uy = doubleBitsToUint64(y);
	int ex = int((ux >> 52) & 0x7fful), ey = int((uy >> 52) & 0x7fful);
	uint64_t sx = ux & 0x8000000000000000ul;
	if ((uy << 1) == 0ul || isnan(y) || ex == 0x7ff) return f64nan();
	if ((ux << 1) <= (uy << 1)) return (ux << 1) == (uy << 1) ? uint64BitsToDouble(sx) : x;
	uint64_t mx, my;
	if (ex == 0) { // subnormal: normalise the significand to bit 52
		for (uint64_t i = ux << 12; (i >> 63) == 0ul; i <<= 1) ex--;
		mx = ux << uint(1 - ex);
	} else {
		mx = (ux & 0x000ffffffffffffful) | 0x0010000000000000ul;
	}
	if (ey == 0) {
		for (uint64_t i = uy << 12; (i >> 63) == 0ul; i <<= 1) ey--;
		my = uy << uint(1 - ey);
	} else {
		my = (uy & 0x000ffffffffffffful) | 0x0010000000000000ul;
	}
	for (; ex > ey; ex--) {
		uint64_t i = mx - my;
		if ((i >> 63) == 0ul) {
			if (i == 0ul) return uint64BitsToDouble(sx);
			mx = i;
		}
		mx <<= 1;
	}
	uint64_t i = mx - my;
	if ((i >> 63) == 0ul) {
		if (i == 0ul) return uint64BitsToDouble(sx);
		mx = i;
	}
	for (; (mx >> 52) == 0ul; mx <<= 1) ex--;
	if (ex > 0) mx = (mx - 0x0010000000000000ul) | (uint64_t(ex) << 52);
	else mx >>= uint(1 - ex);
	return uint64BitsToDouble(mx | sx);
}

// remainderD is Kiln's float remainder (torch.remainder, Python's %): the
// exact fmod moved to the divisor's sign.
double remainderD(double a, double b) {
	double r = fmodD(a, b);
	if (r != 0.0lf && (r < dzero) != (b < dzero)) r += b;
	return r;
}

// floorDivideD is backends' floorDivide (torch.floor_divide on floats):
// (a − fmod(a, b))/b, one less where the remainder's sign differs from b's,
// then rounded to the nearest integer; a zero quotient takes the sign of
// a/b and b = 0 gives a/b.
double floorDivideD(double a, double b) {
	if (b == 0.0lf) return a / b;
	double m = fmodD(a, b);
	double d = (a - m) / b;
	if (m != 0.0lf && (b < dzero) != (m < dzero)) d -= 1.0lf;
	if (d == 0.0lf) return copysignD(0.0lf, a / b);
	double fl = floorD(d);
	if (d - fl > 0.5lf) fl += 1.0lf;
	return fl;
}

// isOddIntD reports whether y is an odd integer (Go's isOddInt).
bool isOddIntD(double y) {
	if (abs(y) >= 9007199254740992.0lf) return false;
	double yi = truncD(y);
	return y - yi == 0.0lf && (int64_t(yi) & 1l) == 1l;
}

// powD is Go's math.Pow, step for step: IEEE 754's special cases, then
// x^yf = exp(yf·log x) for the fractional part |yf| ≤ ½ and x^yi by
// repeated squaring of x's significand with the exponents summed apart
// (so that nothing overflows before the final ldexpD).
double powD(double x, double y) {
	if (y == 0.0lf || x == 1.0lf) return 1.0lf;
	if (y == 1.0lf) return x;
	if (isnan(x) || isnan(y)) return f64nan();
	if (isinf(x) && x < dzero && !isinf(y)) { // Pow(-Inf, y) = Pow(-0, -y)
		x = copysignD(0.0lf, -1.0lf);
		y = -y;
	}
	if (x == 0.0lf) {
		bool neg = signbitD(x) && isOddIntD(y);
		if (y < dzero) return neg ? -f64inf() : f64inf();
		return neg ? x : 0.0lf;
	}
	if (isinf(y)) {
		if (x == -1.0lf) return 1.0lf;
		return (abs(x) < 1.0lf) == (y > dzero) ? 0.0lf : f64inf();
	}
	if (isinf(x)) return y < dzero ? 0.0lf : f64inf();
	if (y == 0.5lf) return sqrtD(x);
	if (y == -0.5lf) return 1.0lf / sqrtD(x);
	double yi = truncD(abs(y));
	double yf = abs(y) - yi;
	if (yf != 0.0lf && x < dzero) return f64nan();
	if (yi >= 9.223372036854775808e18lf) { // an even integer past int64: overflow or underflow
		if (x == -1.0lf) return 1.0lf;
		return (abs(x) < 1.0lf) == (y > dzero) ? 0.0lf : f64inf();
	}
	double a1 = 1.0lf;
	int ae = 0;
	if (yf != 0.0lf) {
		if (yf > 0.5lf) {
			yf -= 1.0lf;
			yi += 1.0lf;
		}
		a1 = expD(yf * logD(x));
	}
	int xe;
	double x1 = frexpD(x, xe);
	for (int64_t i = int64_t(yi); i != 0l; i >>= 1) {
		if (xe < -4096 || 4096 < xe) { // catastrophic overflow: ldexpD saturates
			ae += xe;
			break;
		}
		if ((i & 1l) == 1l) {
			a1 *= x1;
			ae += xe;
		}
		x1 *= x1;
		xe <<= 1;
		if (x1 < 0.5lf) {
			x1 += x1;
			xe--;
		}
	}
	if (y < dzero) {
		a1 = 1.0lf / a1;
		ae = -ae;
	}
	return ldexpD(a1, ae);
}

// erfD is Go's math.Erf (FreeBSD's s_erf.c): rational approximations on
// [0, 0.84375), [0.84375, 1.25) and [1.25, 6), the last through
// exp(−z² − 0.5625)·exp((z − x)(z + x) + R/S) with z = x cut to 20
// significant bits so that z² is exact; ±1 from 6 on.
double erfD(double x) {
	if (isnan(x)) return x;
	if (isinf(x)) return x < dzero ? -1.0lf : 1.0lf;
	bool sign = x < dzero;
	if (sign) x = -x;
	double r;
	if (x < 0.84375lf) {
		if (x < 1.0lf / 268435456.0lf) { // 2^-28
			if (x < 2.848094538889218e-306lf) r = 0.125lf * (8.0lf * x + 1.02703333676410069053e+00lf * x);
			else r = x + 1.28379167095512586316e-01lf * x;
		} else {
			double z = x * x;
			double p = 1.28379167095512558561e-01lf + z * (-3.25042107247001499370e-01lf + z * (-2.84817495755985104766e-02lf +
				z * (-5.77027029648944159157e-03lf + z * -2.37630166566501626084e-05lf)));
			double q = 1.0lf + z * (3.97917223959155352819e-01lf + z * (6.50222499887672944485e-02lf + z * (5.08130628187576562776e-03lf +
				z * (1.32494738004321644526e-04lf + z * -3.96022827877536812320e-06lf))));
			r = x + x * (p / q);
		}
		return sign ? -r : r;
	}
	if (x < 1.25lf) {
		const double erx = 8.45062911510467529297e-01lf;
		double s = x - 1.0lf;
		double p = -2.36211856075265944077e-03lf + s * (4.14856118683748331666e-01lf + s * (-3.72207876035701323847e-01lf +
			s * (3.18346619901161753674e-01lf + s * (-1.10894694282396677476e-01lf + s * (3.54783043256182359371e-02lf +
			s * -2.16637559486879084300e-03lf)))));
		double q = 1.0lf + s * (1.06420880400844228286e-01lf + s * (5.40397917702171048937e-01lf + s * (7.18286544141962662868e-02lf +
			s * (1.26171219808761642112e-01lf + s * (1.36370839120290507362e-02lf + s * 1.19844998467991074170e-02lf)))));
		return sign ? -erx - p / q : erx + p / q;
	}
	if (x >= 6.0lf) return sign ? -1.0lf : 1.0lf;
	double s = 1.0lf / (x * x);
	double R, S;
	if (x < 2.857142857142857lf) { // 1/0.35
		R = -9.86494403484714822705e-03lf + s * (-6.93858572707181764372e-01lf + s * (-1.05586262253232909814e+01lf +
			s * (-6.23753324503260060396e+01lf + s * (-1.62396669462573470355e+02lf + s * (-1.84605092906711035994e+02lf +
			s * (-8.12874355063065934246e+01lf + s * -9.81432934416914548592e+00lf))))));
		S = 1.0lf + s * (1.96512716674392571292e+01lf + s * (1.37657754143519042600e+02lf + s * (4.34565877475229228821e+02lf +
			s * (6.45387271733267880336e+02lf + s * (4.29008140027567833386e+02lf + s * (1.08635005541779435134e+02lf +
			s * (6.57024977031928170135e+00lf + s * -6.04244152148580987438e-02lf)))))));
	} else {
		R = -9.86494292470009928597e-03lf + s * (-7.99283237680523006574e-01lf + s * (-1.77579549177547519889e+01lf +
			s * (-1.60636384855821916062e+02lf + s * (-6.37566443368389627722e+02lf + s * (-1.02509513161107724954e+03lf +
			s * -4.83519191608651397019e+02lf)))));
		S = 1.0lf + s * (3.03380607434824582924e+01lf + s * (3.25792512996573918826e+02lf + s * (1.53672958608443695994e+03lf +
			s * (3.19985821950859553908e+03lf + s * (2.55305040643316442583e+03lf + s * (4.74528541206955367215e+02lf +
			s * -2.24409524465858183362e+01lf))))));
	}
	double z = uint64BitsToDouble(doubleBitsToUint64(x) & 0xffffffff00000000ul);
	r = expD(-z * z - 0.5625lf) * expD((z - x) * (z + x) + R / S);
	return sign ? r / x - 1.0lf : 1.0lf - r / x;
}

#endif
