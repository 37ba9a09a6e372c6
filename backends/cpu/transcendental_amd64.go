//go:build !purego

package cpu

import (
	"math"

	"github.com/klauspost/cpuid/v2"

	"github.com/kiln-ml/kiln/backends"
)

// hasTranscendental: the AVX-512 transcendental kernels run here (they use
// AVX512DQ's float64 ⇄ int64 conversions and class tests, and BMI2 for the
// tail mask).
var hasTranscendental = hasAVX512 && hasBMI2 && cpuid.CPU.Supports(cpuid.AVX512DQ)

// hasTranscendentalAVX2: the AVX2 kernels run here (AVX2 and FMA). They
// are the vector kernels where hasTranscendental is false, and are tested
// alongside the AVX-512 ones where it is true.
var hasTranscendentalAVX2 = hasAVX2

// transcendentalKernelSet is one instruction set's kernels of an op,
// forward and backward; fwd32 and bwd32 mark kernels computed in float32.
type transcendentalKernelSet struct {
	fwd          func(dst, x *float32, n int, sp *[2]float32)
	bwd          func(dst, x, grad *float32, n int, sp *[2]float32)
	fwd32, bwd32 bool
}

// transcendentalAsm lists the AVX-512 kernels of each op, forward and
// backward: in float64 but for exp and tanh forward
// (asm/gen/transcendental32.go) and the float32 ones of
// asm/gen/transcendental_avx512f32.go, which measured faster than the
// float64 ones on a Zen 4 core: sigmoid's forward and backward, SiLU's
// forward and backward, tanh's backward and GELU's forward and backward
// (sixteen lanes a zmm vector, thirty-two an iteration:
// transcendental_act32_amd64.go; all but SiLU's backward the AVX2 float32
// kernels' bodies, so their bits, and SiLU's backward a body of its own,
// asm/gen/transcendental_silu32.go, 1.36 times the float64 kernel's speed
// in cache).
var transcendentalAsm = map[backends.UnaryOp]transcendentalKernelSet{
	backends.Exp:      {expF32AVX512, expGradF32AVX512, true, false},
	backends.Log:      {logF32AVX512, logGradF32AVX512, false, false},
	backends.Tanh:     {tanhF32AVX512, tanhGradF32AVX512Paired, true, true},
	backends.Erf:      {erfF32AVX512, erfGradF32AVX512, false, false},
	backends.Sigmoid:  {sigmoidF32AVX512Paired, sigmoidGradF32AVX512Paired, true, true},
	backends.Silu:     {siluF32AVX512Paired, siluGradF32AVX512Paired, true, true},
	backends.Gelu:     {geluF32AVX512Table, geluGradF32AVX512Table, true, true},
	backends.GeluTanh: {geluTanhF32AVX512, geluTanhGradF32AVX512, false, false},
}

// transcendentalAsmWide lists the AVX-512 kernels in float64 of the ops
// where float32 ones replaced some, as transcendentalAVX2Wide does for
// AVX2 (f32Kernel.wideF, wideDF on AVX-512 machines; a kernel that stays
// in float64 is listed as itself; tanh's forward here is a float64 one,
// which no table uses otherwise).
var transcendentalAsmWide = map[backends.UnaryOp]transcendentalKernelSet{
	backends.Sigmoid: {sigmoidWideF32AVX512, sigmoidWideGradF32AVX512, false, false},
	backends.Tanh:    {tanhWideF32AVX512, tanhWideGradF32AVX512, false, false},
	backends.Silu:    {siluWideF32AVX512, siluWideGradF32AVX512, false, false},
	backends.Gelu:    {geluWideF32AVX512, geluWideGradF32AVX512, false, false},
}

// transcendentalAVX2 lists the AVX2 kernels: in float64 but for exp and
// tanh forward (as with AVX-512), sigmoid forward and backward, SiLU
// forward, exp and tanh backward (sixteen lanes an iteration:
// transcendental_act32_amd64.go), log forward
// (transcendental_log32_amd64.go), GELU forward and backward
// (transcendental_gelu32_amd64.go) and GELU-tanh forward
// (transcendental_gelutanh32_amd64.go). Erf, log's backward and SiLU's
// and GELU-tanh's backward stay in float64 (SiLU's AVX-512 float32 body
// rests on VPERMT2PS's 32-entry lookups).
var transcendentalAVX2 = map[backends.UnaryOp]transcendentalKernelSet{
	backends.Exp:      {expF32AVX2, expGradF32AVX2Paired, true, true},
	backends.Log:      {logF32AVX2Paired, logGradF32AVX2, true, false},
	backends.Tanh:     {tanhF32AVX2, tanhGradF32AVX2Paired, true, true},
	backends.Erf:      {erfF32AVX2, erfGradF32AVX2, false, false},
	backends.Sigmoid:  {sigmoidF32AVX2Paired, sigmoidGradF32AVX2Paired, true, true},
	backends.Silu:     {siluF32AVX2Paired, siluGradF32AVX2, true, false},
	backends.Gelu:     {geluF32AVX2Paired, geluGradF32AVX2Paired, true, true},
	backends.GeluTanh: {geluTanhF32AVX2Paired, geluTanhGradF32AVX2, true, false},
}

// transcendentalAVX2Wide lists the AVX2 kernels in float64 of the ops
// where float32 ones replaced some, for the tests and benchmarks to
// compare with (f32Kernel.wideF, wideDF; a kernel that stays in float64
// is listed as itself).
var transcendentalAVX2Wide = map[backends.UnaryOp]transcendentalKernelSet{
	backends.Gelu:     {geluWideF32AVX2, geluWideGradF32AVX2, false, false},
	backends.GeluTanh: {geluTanhWideF32AVX2, geluTanhGradF32AVX2, false, false},
	// sigmoid, SiLU, exp, tanh (asm/gen/transcendental_act32.go; exp's and
	// tanh's forward kernels here are float64 ones, which no table uses
	// otherwise)
	backends.Sigmoid: {sigmoidWideF32AVX2, sigmoidWideGradF32AVX2, false, false},
	backends.Silu:    {siluWideF32AVX2, siluGradF32AVX2, false, false},
	backends.Exp:     {expWideF32AVX2, expWideGradF32AVX2, false, false},
	backends.Tanh:    {tanhWideF32AVX2, tanhWideGradF32AVX2, false, false},
	backends.Log:     {logWideF32AVX2, logGradF32AVX2, false, false}, // asm/gen/transcendental_log32.go
}

func init() {
	for op, k := range f32Kernels {
		def := backends.UnaryOps[op]
		inf, ninf := math.Inf(1), math.Inf(-1)
		// the values at ±Inf the kernels put in; the backward ones are
		// multiplied by g in float32, which gives float64(g)·DF rounded
		// only for values such as 0, 1, Inf and NaN (checked here)
		spF := [2]float32{float32(def.F(inf, 0, 0)), float32(def.F(ninf, 0, 0))}
		spDF := [2]float32{float32(def.DF(inf, 0, 0)), float32(def.DF(ninf, 0, 0))}
		for _, v := range spDF {
			if !(v == 0 || v == 1 || math.IsInf(float64(v), 0) || v != v) {
				panic("cpu: " + def.Name + "'(±Inf) is not 0, 1, ±Inf or NaN")
			}
		}
		// wrap makes a set's kernels into row functions.
		wrap := func(asm transcendentalKernelSet) (func(o, x []float32), func(o, x, g []float32)) {
			return func(o, x []float32) {
					if len(o) == 0 {
						return
					}
					_ = x[len(o)-1]
					asm.fwd(&o[0], &x[0], len(o), &spF)
				}, func(o, x, g []float32) {
					if len(o) == 0 {
						return
					}
					_, _ = x[len(o)-1], g[len(o)-1]
					asm.bwd(&o[0], &x[0], &g[0], len(o), &spDF)
				}
		}
		switch {
		case hasTranscendental:
			k.vecF, k.vecDF = wrap(transcendentalAsm[op])
			k.vecF32, k.vecDF32 = transcendentalAsm[op].fwd32, transcendentalAsm[op].bwd32
			if w, ok := transcendentalAsmWide[op]; ok {
				k.wideF, k.wideDF = wrap(w)
			}
			if hasTranscendentalAVX2 { // for the tests
				k.altF, k.altDF = wrap(transcendentalAVX2[op])
				k.altF32, k.altDF32 = transcendentalAVX2[op].fwd32, transcendentalAVX2[op].bwd32
				if w, ok := transcendentalAVX2Wide[op]; ok {
					k.altWideF, k.altWideDF = wrap(w)
				}
			}
		case hasTranscendentalAVX2:
			k.vecF, k.vecDF = wrap(transcendentalAVX2[op])
			k.vecF32, k.vecDF32 = transcendentalAVX2[op].fwd32, transcendentalAVX2[op].bwd32
			if w, ok := transcendentalAVX2Wide[op]; ok {
				k.wideF, k.wideDF = wrap(w)
			}
		}
	}
}
