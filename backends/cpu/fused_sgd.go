package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

var _ backends.SGDFusion = (*Backend)(nil)

// SGDStep implements backends.SGDFusion: one pass instead of the four to
// eight element-wise passes (each a full read and write of a
// parameter-sized tensor, most into a fresh allocation) that the composed
// update makes.
func (b *Backend) SGDStep(outP, outBuf, p, g, mb backends.View, h backends.SGDHyper) {
	views := []backends.View{outP, outBuf, p, g, mb}
	names := []string{"new parameters", "new momentum buffer", "parameters", "gradients", "momentum buffer"}
	used := []bool{true, h.Momentum != 0, true, true, h.Momentum != 0 && !h.First}
	if !b.checkUpdate("sgd step", p, views, names, used) {
		return
	}
	n := p.NumElements()
	switch p.DType {
	case backends.Float32:
		get := func(v backends.View) []float32 {
			if v.Buf == nil {
				return nil
			}
			return buf(v).f32()[v.Offset:][:n]
		}
		op, ob, ip, ig, ib := get(outP), get(outBuf), get(p), get(g), get(mb)
		b.parallel(n, grainFor(n, 4), func(lo, hi int) { sgdRange(op, ob, ip, ig, ib, h, lo, hi) })
	case backends.Float64:
		get := func(v backends.View) []float64 {
			if v.Buf == nil {
				return nil
			}
			return buf(v).f64()[v.Offset:][:n]
		}
		op, ob, ip, ig, ib := get(outP), get(outBuf), get(p), get(g), get(mb)
		b.parallel(n, grainFor(n, 4), func(lo, hi int) { sgdRange(op, ob, ip, ig, ib, h, lo, hi) })
	default:
		b.fail(errDType("sgd step", p.DType))
	}
}

// sgdRange updates elements [lo, hi). Each step is one primitive of the
// composed update: a product with a float64 scalar is computed in float64
// and rounded to T, as BinaryScalar does (for float32 the exact product
// of a float32 and a scalar that is itself a float32 rounds to the same
// value as BinaryScalar's float32 arithmetic), and a sum or difference of
// two T rounds once, as Binary's does. The explicit conversions also keep
// the compiler from fusing a product and a sum into one FMA (which Go
// allows on arm64), as the composed passes cannot.
func sgdRange[T float32 | float64](outP, outBuf, p, g, buf []T, h backends.SGDHyper, lo, hi int) {
	p, g, outP = p[lo:hi], g[lo:hi], outP[lo:hi]
	if h.Momentum != 0 {
		outBuf = outBuf[lo:hi]
		if !h.First {
			buf = buf[lo:hi]
		}
	}
	if h.Momentum != 0 && !h.First && !h.Nesterov && !h.Maximize && h.Dampening == 0 {
		sgdMomentum(outP, outBuf, p, g, buf, h.LR, h.Momentum, h.WeightDecay)
		return
	}
	lr, mom, wd, damp := h.LR, h.Momentum, h.WeightDecay, 1-h.Dampening
	for i := range p {
		pi, d := p[i], g[i]
		if h.Maximize {
			d = -d
		}
		if wd != 0 {
			d += T(float64(pi) * wd)
		}
		if mom != 0 {
			var bi T
			if h.First {
				bi = d
			} else {
				damped := d
				if h.Dampening != 0 {
					damped = T(float64(d) * damp)
				}
				bi = T(float64(buf[i])*mom) + damped
			}
			outBuf[i] = bi
			if h.Nesterov {
				d += T(float64(bi) * mom)
			} else {
				d = bi
			}
		}
		outP[i] = pi - T(float64(d)*lr)
	}
}

// sgdMomentum is sgdRange's loop for the common case, heavy-ball momentum
// after the first step, without the loop-invariant branches the general
// loop tests for every element.
func sgdMomentum[T float32 | float64](outP, outBuf, p, g, buf []T, lr, mom, wd float64) {
	outP, outBuf, g, buf = outP[:len(p)], outBuf[:len(p)], g[:len(p)], buf[:len(p)]
	if p32, ok := any(p).([]float32); ok {
		// the AVX2 loop (fused_sgd_amd64.s) where it runs, the same bits
		n := vecSGDMomentum(any(outP).([]float32), any(outBuf).([]float32), p32, any(g).([]float32),
			any(buf).([]float32), lr, mom, wd)
		outP, outBuf, p, g, buf = outP[n:], outBuf[n:], p[n:], g[n:], buf[n:]
	}
	if wd != 0 {
		for i, pi := range p {
			bi := T(float64(buf[i])*mom) + (g[i] + T(float64(pi)*wd))
			outBuf[i] = bi
			outP[i] = pi - T(float64(bi)*lr)
		}
		return
	}
	for i, pi := range p {
		bi := T(float64(buf[i])*mom) + g[i]
		outBuf[i] = bi
		outP[i] = pi - T(float64(bi)*lr)
	}
}
