package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The kernels computed in float32, sixteen lanes a vector and no widening
// (besides the AVX2 float32 bodies' AVX-512 forms,
// transcendental_avx512f32.go): exp and tanh forward, the ops that fused element-wise chains (package
// fusion) run between their own float32 segments, where the float64
// kernels cost as much as a whole hand-written GELU. Their error is at
// most 0.988 float32 ulp (exp) and 1.331 (tanh) over every float32 input,
// rather than the float64 kernels' 0.52 (backends/cpu/transcendental.go).
// backends/cpu/transcendental_model_test.go has the same algorithms in
// scalar Go (expF32Model, tanhF32Model) with the same constants.
//
//   - exp(x) = 2^n·(1 + r + r²·P(r)) with n = round(x/ln2) and r = x - n·ln2
//     by Cody–Waite (ln2 as a float32 and the rest, two multiply-adds), P of
//     degree 5 fitted to (e^r - 1 - r)/r² on |r| ≤ ln2/2 (relative error
//     2^-26.5 with float32 coefficients), and VSCALEFPS for 2^n, which
//     rounds once into the denormals and overflows to +Inf as exp does; x
//     is clamped to [exp32Lo, exp32Hi] first, beyond which the result no
//     longer changes.
//   - tanh(|x|) = |x| + |x|³·Q(x²) below tanh32Small, Q of degree 4 fitted to
//     (tanh x - x)/x³ (error 2^-26.8 relative to tanh), and 1 - 2/(e^(2|x|)
//     + 1) from there, |x| clamped to tanh32Clamp (tanh is 1 in float32 from
//     9.01); x's sign is copied on after. Both forms are computed for every
//     lane and blended by the mask of small lanes.

// f32c is a float32 constant in the pool (for embedded broadcasts).
func f32c(v float32) Mem { return tconst.u32(math.Float32bits(v)) }

// Constants shared with backends/cpu/transcendental_model_test.go.
const (
	exp32Magic  = 0x1.8p23 // adding and subtracting it rounds to an integer
	exp32Lo     = -120     // e^-120 is 0 in float32, e^100 +Inf
	exp32Hi     = 100
	tanh32Small = 0.625
	tanh32Clamp = 10
)

var (
	log2e32 = float32(math.Log2E)
	ln2Hi32 = float32(math.Ln2)
	ln2Lo32 = float32(math.Ln2 - float64(ln2Hi32))
	// (e^r - 1 - r)/r² ≈ exp32P[0] + r·exp32P[1] + … on |r| ≤ ln2/2
	exp32P = []float32{0x1p-1, 0x1.555556p-3, 0x1.5554eap-5, 0x1.11114cp-7, 0x1.6d42d6p-10, 0x1.a072bep-13}
	// (tanh x - x)/x³ ≈ tanh32Q[0] + w·tanh32Q[1] + … with w = x², |x| < tanh32Small
	tanh32Q = []float32{-0x1.555532p-2, 0x1.110726p-3, -0x1.b83c58p-5, 0x1.52268ep-6, -0x1.75e198p-8}
)

// poly32 returns c[0] + z·(c[1] + z·(…)) by Horner's rule in float32, the
// leading coefficient broadcast from memory.
func poly32(z VecVirtual, c []float32) VecVirtual {
	acc := ZMM()
	n := len(c) - 1
	VBROADCASTSS(f32c(c[n]), acc)
	for i := n - 1; i >= 0; i-- {
		VFMADD213PS_BCST(f32c(c[i]), z, acc) // acc = z·acc + c[i]
	}
	return acc
}

// exp32Parts reduces x (within the clamp) to n and e^r - 1.
func (k *tkernel) exp32Parts(x VecVirtual) (n, pm1 VecVirtual) {
	t := ZMM()
	VMOVAPS(k.magic32, t)
	VFMADD231PS_BCST(f32c(log2e32), x, t) // t = x·log2e + magic: n in the low bits
	n = ZMM()
	VSUBPS(k.magic32, t, n)
	r := ZMM()
	VMOVAPS(x, r)
	VFNMADD231PS_BCST(f32c(ln2Hi32), n, r) // r = x - n·ln2Hi, exact
	VFNMADD231PS_BCST(f32c(ln2Lo32), n, r)
	p := poly32(r, exp32P)
	r2 := ZMM()
	VMULPS(r, r, r2)
	VFMADD213PS(r, r2, p) // p = r²·P + r
	return n, p
}

// exp32e returns e^x for x within [exp32Lo, exp32Hi].
func (k *tkernel) exp32e(x VecVirtual) VecVirtual {
	n, pm1 := k.exp32Parts(x)
	VADDPS(k.one32, pm1, pm1)
	out := ZMM()
	VSCALEFPS(n, pm1, out) // (1 + pm1)·2^n
	return out
}

// exp32 is exp's float32 body.
func (k *tkernel) exp32(x VecVirtual) VecVirtual {
	c := ZMM()
	VMAXPS_BCST(f32c(exp32Lo), x, c)
	VMINPS_BCST(f32c(exp32Hi), c, c)
	return k.exp32e(c)
}

// tanh32 is tanh's float32 body, on a = |x| (the kernel copies x's sign
// on).
func (k *tkernel) tanh32(a VecVirtual) VecVirtual {
	y := ZMM()
	VMINPS_BCST(f32c(tanh32Clamp), a, y)
	VADDPS(y, y, y)
	e := k.exp32e(y)
	VADDPS(k.one32, e, e)
	two := ZMM()
	VBROADCASTSS(f32c(2), two)
	VDIVPS(e, two, e)     // 2/(e^(2a) + 1)
	VSUBPS(e, k.one32, e) // 1 - that
	w := ZMM()
	VMULPS(a, a, w)
	q := poly32(w, tanh32Q)
	VMULPS(a, w, w)      // a³
	VFMADD213PS(a, w, q) // a + a³·Q
	small := K()
	VCMPPS_BCST(U8(0x11), f32c(tanh32Small), a, small) // a < tanh32Small (LT_OQ)
	VMOVAPS(q, small, e)
	return e
}
