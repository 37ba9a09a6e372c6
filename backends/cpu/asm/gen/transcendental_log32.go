package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// log's forward computed in float32 for AVX2, eight lanes a ymm vector
// (sixteen an iteration where no lane is special: log32PairKernel),
// table-free, instead of the float64 kernel's four lanes and two gathers
// from glibc's tables (logY). backends/cpu/transcendental_log32_test.go
// has the same steps in scalar Go with the same constants (log32Model),
// measures it over every positive float32 and checks the kernel against it
// bit for bit. The float64 kernel stays, as logWideF32AVX2, for the tests
// and benchmarks to compare with.
//
// For finite x > 0 (the kernel template's special-lane path takes zeros,
// negatives, ±Inf and NaN):
//
//   - a denormal x is multiplied by 2^23 (exact, normal after) and k
//     lowered by 23;
//   - x = 2^k·m with m in [log32Off, 2·log32Off), log32Off ≈ √½, from the
//     bits: k = (bits - log32Off's bits) >> 23 (arithmetic), and m's bits
//     are the low 23 bits of that plus log32Off's;
//   - f = m - 1, exact (Sterbenz), in [-0.293, 0.415];
//   - log(1 + f) = f + f²·P(f), P of degree 8 fitted to (log(1+f) -
//     f)/f² (scripts/fit_log32.py: reweighted least squares on the
//     relative error of log(1+f), coefficients rounded to float32 one at a
//     time from the lowest, the rest refitted after each): 2^-27.8
//     relative; f is exact and f²·P is at most a fifth of the result, so
//     near x = 1, where log is tiny, the result keeps its relative
//     accuracy;
//   - k·ln2 + f is s + e exactly: k·log32Ln2Hi is exact (|k| ≤ 149 and
//     log32Ln2Hi has 15 significant bits) and, for k ≠ 0, at least as
//     large as |f| (Fast2Sum); the small terms e + k·log32Ln2Lo + f²·P
//     are summed by multiply-adds (f² in two parts, f2 rounded and its
//     exact error, which would otherwise cost 0.14 ulp) and s added last,
//     so one rounding of the result is the large error and the
//     cancellation at k = -1, f near 0.41 (x just below √½) costs nothing.
//
// Over every positive finite float32 the model is within 0.7757 ulp (at x
// = 1.2799082; TestLog32ModelExhaustive), and the kernel equals it.

// Constants shared with backends/cpu/transcendental_log32_test.go.
const (
	// log32Off is the bits of float32(√½): m's interval starts there.
	log32Off = 0x3f3504f3
	// log32Ln2Hi is ln2 to 15 significant bits: k·log32Ln2Hi is exact for
	// |k| < 512.
	log32Ln2Hi = 0x1.62e4p-1
)

var (
	// log32Ln2Lo is ln2 - log32Ln2Hi rounded to float32.
	log32Ln2Lo = float32(math.Ln2 - log32Ln2Hi)
	// log32P is P(f) ≈ (log(1+f) - f)/f² on [√½ - 1, √2 - 1]: log32P[0]
	// + f·log32P[1] + …
	log32P = []float32{
		-0x1.fffff8p-2, 0x1.55555p-2, -0x1.000436p-2, 0x1.99a426p-3, -0x1.5424d6p-3,
		0x1.226bf4p-3, -0x1.0f45a6p-3, 0x1.087376p-3, -0x1.385ce4p-4,
	}
)

// log32Y is log's float32 forward body for x > 0 finite (garbage in the
// other lanes, which the template's special-lane path replaces).
func log32Y(xs VecVirtual) VecVirtual {
	// denormals: x·2^23 and k - 23 (the compare is signed: negatives and
	// zeros are selected too, and are special lanes anyway)
	sub := YMM()
	VMOVDQU(tconst.u32(0x00800000), sub)
	VPCMPGTD(xs, sub, sub) // bits < 2^23
	xn := YMM()
	VMULPS(f32c(0x1p23), xs, xn)
	VBLENDVPS(sub, xn, xs, xn)
	VANDPS(tconst.u32(23), sub, sub)
	u := YMM()
	VPSUBD(tconst.u32(log32Off), xn, u)
	k := YMM()
	VPSRAD(U8(23), u, k)
	VPSUBD(sub, k, k)
	VCVTDQ2PS(k, k)
	VPAND(tconst.u32(0x007fffff), u, u)
	VPADDD(tconst.u32(log32Off), u, u) // m
	f := u
	VSUBPS(f32c(1), f, f) // exact
	f2 := YMM()
	VMULPS(f, f, f2)
	p := log32Poly(f, f2)
	s := copyY(f)
	VFMADD231PS(f32c(log32Ln2Hi), k, s) // s = k·ln2Hi + f, rounded
	z := copyY(s)
	VFNMADD231PS(f32c(log32Ln2Hi), k, z) // s - k·ln2Hi, exact (Fast2Sum)
	e := YMM()
	VSUBPS(z, f, e)                     // f - that: k·ln2Hi + f = s + e
	VFMADD231PS(f32c(log32Ln2Lo), k, e) // + k·ln2Lo
	l := copyY(f2)
	VFMSUB231PS(f, f, l) // f² - f2, exact: f2's rounding error
	VFMADD231PS(p, l, e)
	VFMADD231PS(p, f2, e) // + f²·P
	VADDPS(e, s, s)
	return s
}

// log32Poly returns P(f) from f and f2 = f² rounded, as c0 + f·(c1 +
// f·S(f)) with S of degree 6 by Estrin's scheme: the pairs c[2i] +
// f·c[2i+1] are independent, so the longest chain is five multiply-adds
// after f² instead of Horner's eight, which pays for the exact error term
// of f² in log32Y (on a Zen 3 this kernel is as fast as Horner's scheme
// without that term, whose maximum error is 0.876 ulp); the last two
// steps are Horner's, which keeps P's rounding error near Horner's (on
// the tests' hard inputs 0.761 ulp in the result, 0.757 with Horner's
// scheme throughout, 0.830 with Estrin's to the end).
func log32Poly(f, f2 VecVirtual) VecVirtual {
	c := log32P
	a := make([]VecVirtual, 3)
	for i := range a {
		a[i] = YMM()
		VBROADCASTSS(f32c(c[2*i+3]), a[i])
		VFMADD213PS(f32c(c[2*i+2]), f, a[i]) // c[2i+2] + f·c[2i+3]
	}
	f4 := YMM()
	VMULPS(f2, f2, f4)
	VFMADD231PS(a[1], f2, a[0])       // b0 = a0 + f²·a1
	VFMADD231PS(f32c(c[8]), f2, a[2]) // b1 = a2 + f²·c8
	VFMADD231PS(a[2], f4, a[0])       // S = b0 + f⁴·b1
	VFMADD213PS(f32c(c[1]), f, a[0])
	VFMADD213PS(f32c(c[0]), f, a[0])
	return a[0]
}

// log32Kernels generates log's other AVX2 kernels: logF32AVX2Pairs
// (log32PairKernel) and logWideF32AVX2, the float64 forward kernel that
// log32Y's replaced, to compare with (tests and benchmarks).
func log32Kernels(o top) {
	if o.name != "log" {
		return
	}
	log32PairKernel()
	transcendentalKernelY(tfunc{
		name: "logWideF32AVX2", log: true, body: o.fwd,
		doc: "logWideF32AVX2 sets dst[i] = log(x[i]) for i < n in float64 (AVX2+FMA), and sp[0], sp[1] where x[i] is +Inf, -Inf: the kernel before the float32 one, kept to compare with in the tests and benchmarks.",
	})
}

// log32PairKernel generates logF32AVX2Pairs: log32Y on two blocks of
// eight lanes an iteration, sixteen elements, with one cheap check for
// special lanes (x not positive and finite: bits - 1 beyond 0x7f7ffffe as
// unsigned, one add and one signed compare) instead of the template's
// fix-up path per block, and no reload of x. It stops before the first
// sixteen with a special lane and before the last n mod 16, and returns
// how many it did: logF32AVX2 does the rest (logF32AVX2Paired,
// backends/cpu/transcendental_log32_amd64.go), so the results are its
// bit for bit.
func log32PairKernel() {
	const name = "logF32AVX2Pairs"
	pairKernelSpecial(name, "func(dst, x *float32, n int) int",
		name+" sets dst[i] = log(x[i]) (AVX2+FMA, in float32) for i < k, sixteen at a time, and returns k: a multiple of 16, at most n, that stops before the first sixteen with an x that is not positive and finite.",
		false, func(x VecVirtual) Op {
			// bits + 0x7fffffff is (bits - 1) with its sign bit flipped, so
			// the signed compare is the unsigned one of bits - 1: 0 and
			// negatives wrap above, +Inf and NaN are above
			a := vreg()
			VPADDD(tconst.u32(0x7fffffff), x, a)
			return gtMask(tconst.u32(0x7f7ffffe^0x80000000), a)
		}, func(xs, _ lanes, _ Register) lanes {
			res := make(lanes, len(xs))
			for i := range xs {
				res[i] = log32Y(xs[i])
			}
			return res
		})
}

// copyY returns a new register holding v.
func copyY(v VecVirtual) VecVirtual {
	c := YMM()
	VMOVAPS(v, c)
	return c
}
