package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// AdamStep implements backends.AdamFusion: one pass instead of the dozen
// element-wise passes (each a full read and write of a parameter-sized
// tensor) that the composed update makes.
func (b *Backend) AdamStep(outP, outM, outV, p, g, m, v backends.View, h backends.AdamHyper) {
	n := p.NumElements()
	get := func(v backends.View) []float32 {
		if v.Buf == nil {
			return nil
		}
		return buf(v).f32()[v.Offset:][:n]
	}
	get64 := func(v backends.View) []float64 {
		if v.Buf == nil {
			return nil
		}
		return buf(v).f64()[v.Offset:][:n]
	}
	switch p.DType {
	case backends.Float32:
		b.parallel(n, grainFor(n, 16), func(lo, hi int) {
			adamRange(get(outP), get(outM), get(outV), get(p), get(g), get(m), get(v), h, lo, hi)
		})
	case backends.Float64:
		b.parallel(n, grainFor(n, 16), func(lo, hi int) {
			adamRange(get64(outP), get64(outM), get64(outV), get64(p), get64(g), get64(m), get64(v), h, lo, hi)
		})
	default:
		b.fail(errDType("adam step", p.DType))
	}
}

// adamRange updates elements [lo, hi). Each line is one primitive of the
// composed update: an operation with a float64 scalar is computed in
// float64 and rounded to T, as BinaryScalar does; operations between two
// tensors of T round once, as their float64 forms do for +, ·, / and √ of
// float32 (float64 holds the exact result closely enough that rounding it
// to float32 is the correctly rounded float32 result).
func adamRange[T float32 | float64](outP, outM, outV, p, g, m, v []T, h backends.AdamHyper, lo, hi int) {
	for i := lo; i < hi; i++ {
		pi, gi := p[i], g[i]
		if h.Maximize {
			gi = -gi
		}
		if h.Decay != 1 {
			pi = T(float64(pi) * h.Decay)
		}
		if h.WeightDecay != 0 {
			gi += T(float64(pi) * h.WeightDecay)
		}
		gm := T(float64(gi) * (1 - h.Beta1))
		gs := T(float64(gi*gi) * (1 - h.Beta2))
		var mi, vi T
		if h.First {
			mi, vi = gm, gs
		} else {
			mi = T(float64(m[i])*h.Beta1) + gm
			vi = T(float64(v[i])*h.Beta2) + gs
		}
		outM[i], outV[i] = mi, vi
		if h.MovesParam {
			scaled := T(float64(T(math.Sqrt(float64(vi)))) * h.InvDenom)
			denom := T(float64(scaled) + h.EpsTerm)
			outP[i] = pi + mi/denom
		}
	}
}
