package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// AdamStep implements backends.AdamFusion: one pass instead of the dozen
// element-wise passes (each a full read and write of a parameter-sized
// tensor) that the composed update makes.
func (b *Backend) AdamStep(outP, outM, outV, p, g, m, v backends.View, h backends.AdamHyper) {
	views := []backends.View{outP, outM, outV, p, g, m, v}
	names := []string{"new parameters", "new first moments", "new second moments", "parameters", "gradients",
		"first moments", "second moments"}
	used := []bool{h.MovesParam, true, true, true, true, !h.First, !h.First}
	if !b.checkUpdate("adam step", p, views, names, used) {
		return
	}
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
// to float32 is the correctly rounded float32 result). The assembly
// kernels take whole groups first: where every scalar is a float32 value
// (tensor.AdamStep rounds them so for float32 parameters) the float32 one,
// vecAdamF32, which gives these bits without widening anything; else
// vecAdam's, which widen to float64 for the products as this loop does.
func adamRange[T float32 | float64](outP, outM, outV, p, g, m, v []T, h backends.AdamHyper, lo, hi int) {
	p, g, outM, outV = p[lo:hi], g[lo:hi], outM[lo:hi], outV[lo:hi]
	if !h.First {
		m, v = m[lo:hi], v[lo:hi]
	}
	if h.MovesParam {
		outP = outP[lo:hi]
	}
	done := vecAdamF32(outP, outM, outV, p, g, m, v, h)
	if done == 0 {
		done = vecAdam(outP, outM, outV, p, g, m, v, h)
	}
	if done > 0 {
		p, g, outM, outV, m, v, outP = p[done:], g[done:], outM[done:], outV[done:], m[done:], v[done:], outP[done:]
	}
	decay, wd, b1, b2 := h.Decay, h.WeightDecay, h.Beta1, h.Beta2
	c1, c2 := 1-b1, 1-b2
	inv, eps := h.InvDenom, h.EpsTerm
	for i := range p {
		pi, gi := p[i], g[i]
		if h.Maximize {
			gi = -gi
		}
		if decay != 1 {
			pi = T(float64(pi) * decay)
		}
		if wd != 0 {
			gi += T(float64(pi) * wd)
		}
		gm := T(float64(gi) * c1)
		gs := T(float64(gi*gi) * c2)
		var mi, vi T
		if h.First {
			mi, vi = gm, gs
		} else {
			mi = T(float64(m[i])*b1) + gm
			vi = T(float64(v[i])*b2) + gs
		}
		outM[i], outV[i] = mi, vi
		if h.MovesParam {
			root := T(math.Sqrt(float64(vi))) // SQRTSS for float32: the same correctly rounded root
			scaled := T(float64(root) * inv)
			denom := T(float64(scaled) + eps)
			outP[i] = pi + mi/denom
		}
	}
}

// adamConstsF32 returns the constants of the float32 Adam kernel (the
// parameter decay, β₁, β₂, 1−β₁, 1−β₂, the inverse denominator scale and
// the ε term) and whether each is exactly a float32 value. Only then does
// the kernel's float32 arithmetic give adamRange's bits: the product of two
// float32 values is exact in float64, so rounding it to float32 is rounding
// once; and the float64 sum of two float32 values rounded to float32 is the
// correctly rounded float32 sum (53 ≥ 2·24+2 bits).
func adamConstsF32(h backends.AdamHyper) ([7]float32, bool) {
	c := [7]float64{h.Decay, h.Beta1, h.Beta2, 1 - h.Beta1, 1 - h.Beta2, h.InvDenom, h.EpsTerm}
	var k [7]float32
	for i, x := range c {
		k[i] = float32(x)
		if float64(k[i]) != x {
			return k, false
		}
	}
	return k, true
}
