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

// transcendentalAsm lists the AVX-512 kernels of each op, forward and
// backward.
var transcendentalAsm = map[backends.UnaryOp]struct {
	fwd func(dst, x *float32, n int, sp *[2]float32)
	bwd func(dst, x, grad *float32, n int, sp *[2]float32)
}{
	backends.Exp:      {expF32AVX512, expGradF32AVX512},
	backends.Log:      {logF32AVX512, logGradF32AVX512},
	backends.Tanh:     {tanhF32AVX512, tanhGradF32AVX512},
	backends.Erf:      {erfF32AVX512, erfGradF32AVX512},
	backends.Sigmoid:  {sigmoidF32AVX512, sigmoidGradF32AVX512},
	backends.Silu:     {siluF32AVX512, siluGradF32AVX512},
	backends.Gelu:     {geluF32AVX512, geluGradF32AVX512},
	backends.GeluTanh: {geluTanhF32AVX512, geluTanhGradF32AVX512},
}

func init() {
	if !hasTranscendental {
		return
	}
	for op, k := range f32Kernels {
		asm := transcendentalAsm[op]
		if asm.fwd == nil {
			continue
		}
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
		k.vecF = func(o, x []float32) {
			if len(o) == 0 {
				return
			}
			_ = x[len(o)-1]
			asm.fwd(&o[0], &x[0], len(o), &spF)
		}
		k.vecDF = func(o, x, g []float32) {
			if len(o) == 0 {
				return
			}
			_, _ = x[len(o)-1], g[len(o)-1]
			asm.bwd(&o[0], &x[0], &g[0], len(o), &spDF)
		}
	}
}
