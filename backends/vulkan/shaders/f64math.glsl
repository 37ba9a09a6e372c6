// f64math.glsl: double-precision exp and log, which GLSL lacks (its exp and
// log take float only). Include after common.glsl; the includer defines
// `double dzero` (0.0 read at run time, see unary.comp).
//
// expD: Cody–Waite reduction x = k·ln2 + r with |r| ≤ ln2/2 (ln2 split in
// two parts so k·ln2 is exact), a degree-13 Taylor polynomial for e^r
// (truncation below 1e-17) and an exact scaling by 2^k done in two multiplications
// (each by a power of two in the normal range) so that subnormal results
// round once. logD: x = m·2^e with m in [√½, √2),
// log m = 2·atanh(s), s = (m−1)/(m+1), |s| ≤ 0.172, by its odd series to
// s^23 (truncation below 1e-19), plus e·ln2 in two parts. Measured on
// lavapipe against Go's math.Exp and math.Log over their whole range
// (TestF64Math, 4645 values, subnormals included): at most 1 ulp apart;
// special values (NaN, ±Inf, 0, negative logs, overflow and underflow)
// follow IEEE 754 as Go's math does. expm1D, log1pD, tanhD, sigmoidD and
// softplusD build on them with the CPU backend's stable formulas.
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

double expD(double x) {
	if (isnan(x)) return x;
	if (x > 709.782712893384lf) return f64inf();
	if (x < -745.1332191019412lf) return dzero;
	double k = floor(x * INV_LN2 + 0.5lf);
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
	double m = frexp(x, e); // m in [0.5, 1)
	if (m < 0.70710678118654752440lf) {
		m *= 2.0lf;
		e -= 1;
	}
	double s = (m - 1.0lf) / (m + 1.0lf);
	double s2 = s * s;
	double q = 1.0lf / 23.0lf;
	q = q * s2 + 1.0lf / 21.0lf;
	q = q * s2 + 1.0lf / 19.0lf;
	q = q * s2 + 1.0lf / 17.0lf;
	q = q * s2 + 1.0lf / 15.0lf;
	q = q * s2 + 1.0lf / 13.0lf;
	q = q * s2 + 1.0lf / 11.0lf;
	q = q * s2 + 1.0lf / 9.0lf;
	q = q * s2 + 1.0lf / 7.0lf;
	q = q * s2 + 1.0lf / 5.0lf;
	q = q * s2 + 1.0lf / 3.0lf;
	q = q * s2 + 1.0lf;
	double de = double(e);
	return de * LN2_HI + (2.0lf * s * q + de * LN2_LO);
}

double expm1D(double x) {
	if (abs(x) < 1e-5lf) return x + 0.5lf * x * x + x * x * x / 6.0lf;
	return expD(x) - 1.0lf;
}

double log1pD(double x) {
	double u = 1.0lf + x;
	if (u == 1.0lf) return x;
	if (isinf(u) || isnan(u) || u == dzero) return logD(u);
	return logD(u) * x / (u - 1.0lf);
}

double tanhD(double x) {
	if (isnan(x)) return x;
	double z = abs(x);
	double r;
	if (z < 1e-4lf) r = z - z * z * z / 3.0lf;
	else if (z > 20.0lf) r = 1.0lf;
	else { double t = expD(-2.0lf * z); r = (1.0lf - t) / (1.0lf + t); }
	return x < dzero ? -r : r;
}

double sigmoidD(double x) {
	if (x >= dzero) return 1.0lf / (1.0lf + expD(-x));
	double e = expD(x);
	return e / (1.0lf + e);
}

double softplusD(double x) { return x > dzero ? x + log1pD(expD(-x)) : log1pD(expD(x)); }

#endif
