package cpu

// GELU's forward pass, x·Φ(x), in float32 for |x| ≤ 3 from a table of
// polynomials (the AVX-512 kernel geluTableF32AVX512Pairs; the scalar
// model geluTableF32Model in the tests has the same steps): [-3, 3] is cut
// into geluTabN intervals of geluTabStep, and on interval i, centred on
// c_i = -3 + (i + ½)·geluTabStep, Φ(x) is its Taylor polynomial of degree
// 7 in t = x - c_i. Its remainder is below 3e-13, against the 4e-11 that a
// quarter ulp of Φ(-3) allows. The kernel computes
//
//	i = min(trunc(x·16/3 + 16), 31), c = i·0.1875 - 2.90625 (exact)
//	t = x - c
//	p = c7, then p·t + c_k for k = 6 … 1 (fused multiply-adds)
//	r = p·t + c0lo (Φ - c0hi), y = x·c0hi + x·r (x·c0hi exact in the FMA)
//	y's sign bit |= x's (GELU(-0) = -0, where x·r may be +0)
//
// with the coefficients of interval i read by lane from the table geluTab
// (VPERMT2PS: the 32 entries of a coefficient are two zmm vectors). The
// kernel generator computes the table, embeds it in the kernels and
// writes it to gelu_table_data.go: Φ(c) = erfc(-c/√2)/2 as the float32
// sum c0hi + c0lo, and the Taylor coefficients Φ⁽ᵏ⁾(c)/k! =
// (-1)^(k-1)·He_(k-1)(c)·φ(c)/k! (He the probabilists' Hermite
// polynomials), from float64, rounded to float32. Every term after c0 is
// at most about a third of it (at x = -3, where Φ falls fastest), and Φ
// is never rounded as a whole: over every float32 in [-3, 3] y is within
// 1.3915 ulp (at x = -2.812295, TestGeluTableF32ModelExhaustive), where
// the erfc-based kernel (gelu32FN in asm/gen) is within 1.3426. That
// kernel does four times the multiply-adds, which are what limits it.
// On a Zen 4 core, in cache, the table kernel runs 1.85 Gelem/s, 2.6
// without its lookups (wrong results, to time them); four vectors an
// iteration instead of two, and the table held in 18 zmm registers
// instead of read from memory, measured no faster. The lanes beyond 3 in
// magnitude (0.3% of a standard normal's values) take that kernel's
// result, computed for their pair of vectors, and blocks of 32 with ±Inf
// or NaN go to it whole; on AVX-512 it gives the table's result in its
// lanes with |x| ≤ 3, so that each element's result depends on its value
// alone.
//
// The backward pass, grad·g(x) with g(x) = GELU'(x) = Φ(x) + x·φ(x), comes
// from a second table, geluGradTab, of the same intervals and layout
// (geluGradTableF32AVX512Pairs; model geluGradTableF32Model): the Taylor
// polynomials of g, g⁽ᵏ⁾(c)/k! = (-1)^(k-1)·φ(c)·(He_(k-1)(c) -
// He_(k+1)(c))/k! as g = Φ - φ'. g goes through zero at r ≈ -0.7518,
// where a polynomial's absolute error would be many ulps of the result,
// so on the four intervals of [-1.125, -0.375) the table holds instead
// q(x) = g(x)/(x - r) (its coefficients by synthetic division of g's by
// the zero, in float64), and the kernel multiplies grad by x - r as two
// float32 terms (x - rhi is exact there, then Fast2Sum with -rlo, r =
// rhi + rlo), so that grad·(x - r) is carried to about 2^-48:
//
//	d1 + d2 = x - r near the zero, 1 + 0 elsewhere
//	uh = grad·d1, ul = (grad·d1 - uh) + grad·d2
//	y = uh·c0hi + (ul·c0hi + uh·p) (p = c0lo + t·(c1 + …), uh·c0hi exact)
//
// with uh·c0hi instead where y is ±0, for the sign of zero. Over every
// float32 in [-3, 3] (grad = 1) it is within 0.9371 ulp (geluGradTableULP
// in the tests), where the erfc-based backward kernel is within 1.82. In
// cache on a Zen 4 core it runs 1.31 Gelem/s against that kernel's 1.17;
// on 16M values, which come from memory, 1.12 against 1.08 (best of 5,
// alternating, on a noisy machine).
const (
	geluTabN    = 32
	geluTabStep = 0.1875                     // 6/geluTabN, exact in float32
	geluTabMax  = geluTabN * geluTabStep / 2 // 3: the table covers [-geluTabMax, geluTabMax]
	// geluGradTab's intervals geluRootFirst to geluRootLast, [-1.125,
	// -0.375), about GELU'(x)'s zero r, hold g(x)/(x - r)
	geluRootFirst = 10
	geluRootLast  = 13
)

// geluTableInUse reports whether the float32 GELU kernels give the
// tables' results for |x| ≤ 3 (forward, and backward where |grad| < 2^64):
// the AVX-512 kernels, in a build with the assembly kernels on a CPU that
// runs them (set at init).
var geluTableInUse bool
