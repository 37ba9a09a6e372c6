package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// GELU's tanh form, forward, in float32 for AVX2: x·sigmoid(2u), u =
// √(2/π)·(x + 0.044715·x³), eight lanes a ymm vector instead of the float64
// kernel's four. backends/cpu/transcendental_gelutanh32_test.go has the
// same steps in scalar Go (geluTanhF32Model) with the same constants, the
// error measured over every float32 input, and the reasoning; in short,
// with a = min(|x|, geluTanh32Clamp) and v = -a·(K1 + K2·a²) ≤ 0, q =
// e^v/(1 + e^v) and the result is -a·q for x < 0 (tiny: q needs its
// relative accuracy) and x - a·q for x ≥ 0 (well conditioned). v is held
// as two float32 terms (its one rounding alone would cost 64 ulps of e^v at
// |v| ≈ 127), e^v's reduction is made from both, and e^v/(1 + e^v) and
// a·q are corrected by their exact remainders; a·q is rounded once and
// scaled by 2^n in two factors, the second rounding once (into the
// denormals for x < 0, in the FMA x - a·q·2^n for x ≥ 0). Over every
// float32 input the model is within 1.1216 ulp (the float64 kernel: 0.50).
// One block of eight is latency-bound and only as fast as the float64
// kernel; geluTanhF32AVX2Pairs interleaves two, 1.19 times as fast on a
// Zen 3 (in cache 0.72 against 0.61 Gelem/cpu-s).

// geluTanh32Clamp bounds a = |x|: beyond it e^v < 2^-183, so the result is
// -0 (x < 0) or x (x > 0) in float32, and n ≥ -184 keeps both factors of
// 2^(n-24) normal.
const geluTanh32Clamp = 11.5

var (
	geluTanh32K1h = float32(geluK1)
	geluTanh32K1l = float32(geluK1 - float64(geluTanh32K1h))
	geluTanh32K2h = float32(geluK2)
	geluTanh32K2l = float32(geluK2 - float64(geluTanh32K2h))
	// -K1·log2e, -K2·log2e: n's estimate
	geluTanh32C1 = float32(-geluK1 * math.Log2E)
	geluTanh32C2 = float32(-geluK2 * math.Log2E)
)

// geluTanh32F is GELU-tanh's forward body for the kernel template:
// x·sigmoid(2u) for the eight x in xs, in float32.
func geluTanh32F(xs VecVirtual) VecVirtual {
	return geluTanh32FN(lanes{xs}, func(int) VecVirtual { return xs })[0]
}

// geluTanh32FN is GELU-tanh's forward body for the x in xs, eight a
// vector, each step for every vector before the next (geluTanhF32AVX2Pairs);
// xs is read first and reload(i) gives x's vector i again for the last
// steps (from memory where registers are short). The steps are ordered for
// a short dependent chain (one block is latency-bound): n comes from a
// one-rounding estimate of v·log2e beside the exact v, the polynomial is
// evaluated by Estrin's scheme, and the factor 2^(24 + n>>1) is applied to
// -a while the division runs. The model's a·q is computed as -a·q here,
// with its sign: the same values negated (rounding is symmetric).
func geluTanh32FN(xs lanes, reload func(i int) VecVirtual) lanes {
	k := len(xs)
	each := func(f func(i int)) {
		for i := range k {
			f(i)
		}
	}
	// xn = -min(|x|, clamp); a² = s + sl
	xn, s, sl, t := newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	each(func(i int) {
		VORPS(tconst.u32(0x80000000), xs[i], xn[i])
		VMAXPS(f32c(-geluTanh32Clamp), xn[i], xn[i])
	})
	each(func(i int) {
		VMULPS(xn[i], xn[i], s[i])
		VMOVAPS(s[i], sl[i])
		fmsub231(xn[i], xn[i], sl[i]) // a² - s, exact
	})
	// n ≈ round(v·log2e) = round(-a·(C1 + C2·s)), in t's low bits
	each(func(i int) {
		VBROADCASTSS(f32c(geluTanh32C1), t[i])
		VFMADD231PS(f32c(geluTanh32C2), s[i], t[i])
		VFNMADD213PS(f32c(exp32Magic), xn[i], t[i]) // -xn·(C1 + C2·s) + magic
	})
	// P = K1 + K2·a² as ph + pl: K2h·s = m + ml exact, then 2Sum
	m, ml, ph, bb, pl := newLanes(k), newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	each(func(i int) {
		VMULPS(f32c(geluTanh32K2h), s[i], m[i])
		VMOVAPS(m[i], ml[i])
		VFMSUB231PS(f32c(geluTanh32K2h), s[i], ml[i])  // K2h·s - m, exact
		VFMADD231PS(f32c(geluTanh32K2l), s[i], ml[i])  // + K2l·s
		VFMADD231PS(f32c(geluTanh32K2h), sl[i], ml[i]) // + K2h·sl
		VADDPS(f32c(geluTanh32K1l), ml[i], ml[i])
	})
	each(func(i int) {
		VADDPS(f32c(geluTanh32K1h), m[i], ph[i])
		VSUBPS(f32c(geluTanh32K1h), ph[i], bb[i])
		VSUBPS(bb[i], ph[i], pl[i])
		VSUBPS(f32c(geluTanh32K1h), pl[i], pl[i]) // (ph - bb) - K1h
		VSUBPS(bb[i], m[i], bb[i])                // m - bb
		VSUBPS(pl[i], bb[i], pl[i])
		VADDPS(ml[i], pl[i], pl[i])
	})
	// v = xn·(ph + pl) = vh + vl; r = (vh - n·ln2Hi) - (n·ln2Lo - vl)
	vh, vl, n := newLanes(k), newLanes(k), newLanes(k)
	each(func(i int) {
		VMULPS(ph[i], xn[i], vh[i])
		VMOVAPS(vh[i], vl[i])
		fmsub231(ph[i], xn[i], vl[i]) // xn·ph - vh, exact
		VFMADD231PS(pl[i], xn[i], vl[i])
		VSUBPS(f32c(exp32Magic), t[i], n[i])
	})
	r := vh
	each(func(i int) {
		fnmadd231(f32c(ln2Hi32), n[i], vh[i])   // vh - n·ln2Hi, exact
		VFMSUB231PS(f32c(ln2Lo32), n[i], vl[i]) // n·ln2Lo - vl
		VSUBPS(vl[i], vh[i], r[i])
	})
	// p = r + r²·P(r), P by Estrin's scheme
	c := exp32P
	r2, p01, p23 := newLanes(k), newLanes(k), newLanes(k)
	each(func(i int) {
		VMULPS(r[i], r[i], r2[i])
		VBROADCASTSS(f32c(c[4]), p01[i])
		VFMADD231PS(f32c(c[5]), r[i], p01[i])
		VBROADCASTSS(f32c(c[2]), p23[i])
		VFMADD231PS(f32c(c[3]), r[i], p23[i])
		VFMADD231PS(r2[i], p01[i], p23[i])
		VBROADCASTSS(f32c(c[0]), p01[i])
		VFMADD231PS(f32c(c[1]), r[i], p01[i])
		VFMADD231PS(r2[i], p23[i], p01[i])
		VFMADD231PS(r2[i], p01[i], r[i]) // p
	})
	p := r
	// 1 + p = eh + el (Fast2Sum); 2^n (0 below -126), xn·2^(24 + n>>1)
	eh, el, sn, as := newLanes(k), newLanes(k), newLanes(k), newLanes(k)
	each(func(i int) {
		VPSUBD(f32c(exp32Magic), t[i], t[i])         // n as an integer
		VPMAXSD(tconst.u32(0xffffff81), t[i], sn[i]) // max(n, -127)
		VPADDD(tconst.u32(127), sn[i], sn[i])
		VPSLLD(U8(23), sn[i], sn[i])
		VPSRAD(U8(1), t[i], as[i])
		VPSUBD(as[i], t[i], t[i])
		VPADDD(tconst.u32(127+24), as[i], as[i])
		VPSLLD(U8(23), as[i], as[i])
		VMULPS(xn[i], as[i], as[i])
		VPADDD(tconst.u32(127-24), t[i], t[i])
		VPSLLD(U8(23), t[i], t[i]) // 2^(n - n>>1 - 24)
	})
	each(func(i int) {
		VADDPS(f32c(1), p[i], eh[i])
		VSUBPS(f32c(1), eh[i], el[i]) // eh - 1
		VSUBPS(el[i], p[i], el[i])    // p - that
	})
	// d + dl = 1 + 2^n·(eh + el): the rounding error of 1 + 2^n·eh is exact
	d, dl := newLanes(k), newLanes(k)
	each(func(i int) {
		VMOVAPS(eh[i], d[i])
		VFMADD213PS(f32c(1), sn[i], d[i])
		VSUBPS(f32c(1), d[i], dl[i])
		VFMSUB231PS(sn[i], eh[i], dl[i]) // 2^n·eh - (d - 1)
		VFMADD231PS(sn[i], el[i], dl[i])
	})
	// q = qh + rem/d, u = xn·2^(24 + n>>1)·q rounded once
	inv, qh := newLanes(k), newLanes(k)
	each(func(i int) {
		VBROADCASTSS(f32c(1), inv[i])
		VDIVPS(d[i], inv[i], inv[i])
	})
	ia := sn
	each(func(i int) {
		VMULPS(inv[i], eh[i], qh[i])
		VMULPS(inv[i], as[i], ia[i])
		fnmadd231(qh[i], d[i], eh[i])  // eh - qh·d, exact
		fnmadd231(qh[i], dl[i], el[i]) // el - qh·dl
		VADDPS(el[i], eh[i], eh[i])    // rem
	})
	y, u := newLanes(k), newLanes(k)
	each(func(i int) {
		VMULPS(qh[i], as[i], y[i])
		VMOVAPS(y[i], u[i])
		fmsub231(qh[i], as[i], u[i]) // as·qh - y, exact
		VFMADD231PS(ia[i], eh[i], u[i])
		VADDPS(y[i], u[i], u[i])
	})
	// ·2^(n - n>>1 - 24), rounded once: for x < 0 that (its sign bit),
	// for x ≥ 0 added to x
	res := newLanes(k)
	each(func(i int) {
		x := reload(i)
		VMULPS(t[i], u[i], res[i])
		VORPS(tconst.u32(0x80000000), res[i], res[i]) // -0 for x = -0 too
		VFMADD213PS(x, t[i], u[i])                    // x + u·2^(n - n>>1 - 24)
		blend(signMask(x), res[i], u[i], res[i])
	})
	return res
}

// geluTanhPairKernelAVX2 generates geluTanhF32AVX2Pairs: the float32 body
// on two blocks of eight an iteration, interleaved step by step. It stops
// before the first block of sixteen with x ±Inf or NaN and before the last
// n mod 16, and returns how many it did: the template's kernel,
// geluTanhF32AVX2, does the rest (transcendental_gelutanh32_amd64.go), so
// the results are its bit for bit.
func geluTanhPairKernelAVX2() {
	name := "geluTanhF32AVX2Pairs"
	pairKernel(name, "func(dst, x *float32, n int) int",
		name+" sets dst[i] = geluTanh(x[i]) (AVX2+FMA, in float32) for i < k, sixteen at a time, and returns k: a multiple of 16, at most n, that stops before the first sixteen with x ±Inf or NaN.",
		false, func(xs, _ lanes, x Register) lanes {
			return geluTanh32FN(xs, func(i int) VecVirtual {
				v := YMM()
				VMOVUPS(Mem{Base: x, Disp: 32 * i}, v)
				return v
			})
		})
}
