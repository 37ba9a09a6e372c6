package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Fused batch normalisation in training mode (backends.BatchNormFusion)
// over x [N, C, S]. Work is split by channel: each channel's N segments of
// S contiguous values are summed by one worker, in order, into float64
// accumulators, so that the statistics and the parameters' gradients do
// not depend on the number of workers. The forward pass reads x once for
// the sums of x − x₀ and (x − x₀)² (x₀ the channel's first value, so that
// the variance does not cancel catastrophically for channels far from
// zero) and once to write y = (x − mean)·a + b with per-channel a and b.
// The backward pass reads dy and x once for Σ dy and Σ dy·(x − mean) and
// once to write dx = dy·a + (x − mean)·b + c, again with per-channel
// coefficients. On AVX2 machines float32's loops run as vector kernels
// (batchnorm_amd64.s) that give the same bits: the sums' four
// accumulators are one register's lanes; short segments (ResNet-18's last
// layers on small images have 4 to 16 values a segment) run a whole
// channel a call.

var _ backends.BatchNormFusion = (*Backend)(nil)

// bnArgs holds one call's operands, typed; nil slices are absent.
type bnArgs[T float] struct {
	y, x, dx, dy         []T
	mean, variance, rstd []T
	w, bias, dw, db      []T
	n, c, s              int
	eps                  float64
}

// bnShape returns N, C and S of x [N, C, S], refusing another rank.
func (b *Backend) bnShape(op string, x backends.View) (n, c, s int, ok bool) {
	if len(x.Shape) != 3 {
		return 0, 0, 0, b.refuse(op, "x: shape %v (want [N, C, S])", x.Shape)
	}
	return x.Shape[0], x.Shape[1], x.Shape[2], true
}

// checkBN checks the views present: contiguous, of x's dtype, shaped as x
// (names y, dx, dy) or [C] (the others).
func (b *Backend) checkBN(op string, x backends.View, views []backends.View, names []string) (n, c, s int, ok bool) {
	if n, c, s, ok = b.bnShape(op, x); !ok {
		return
	}
	vs, ns, shapes := []backends.View{x}, []string{"x"}, [][]int{{n, c, s}}
	for i, v := range views {
		if v.Buf == nil {
			continue
		}
		vs, ns = append(vs, v), append(ns, names[i])
		switch names[i] {
		case "y", "dx", "dy":
			shapes = append(shapes, []int{n, c, s})
		default:
			shapes = append(shapes, []int{c})
		}
	}
	return n, c, s, b.checkFused(op, x, vs, ns, shapes)
}

// bnView returns v's elements from its offset, count of them, or nil for
// an absent view.
func bnView[T float](v backends.View, count int) []T {
	if v.Buf == nil {
		return nil
	}
	return attnData[T](v)[v.Offset:][:count]
}

// BatchNormForward implements backends.BatchNormFusion.
func (b *Backend) BatchNormForward(y, mean, variance, rstd, x, weight, bias backends.View, eps float64) {
	const op = "batch norm"
	n, c, s, ok := b.checkBN(op, x, []backends.View{y, mean, variance, rstd, weight, bias},
		[]string{"y", "mean", "variance", "rstd", "weight", "bias"})
	if !ok {
		return
	}
	if y.Buf == nil || mean.Buf == nil || rstd.Buf == nil {
		b.refuse(op, "y, mean and rstd are required")
		return
	}
	if n*s == 0 {
		b.refuse(op, "x %v has no values per channel", x.Shape)
		return
	}
	switch x.DType {
	case backends.Float32:
		bnForward(b, newBNArgs[float32](n, c, s, eps, y, x, mean, variance, rstd, weight, bias, backends.View{}, backends.View{}, backends.View{}, backends.View{}))
	case backends.Float64:
		bnForward(b, newBNArgs[float64](n, c, s, eps, y, x, mean, variance, rstd, weight, bias, backends.View{}, backends.View{}, backends.View{}, backends.View{}))
	}
}

// BatchNormBackward implements backends.BatchNormFusion.
func (b *Backend) BatchNormBackward(dx, dweight, dbias, dy, x, mean, rstd, weight backends.View) {
	const op = "batch norm grad"
	n, c, s, ok := b.checkBN(op, x, []backends.View{dx, dweight, dbias, dy, mean, rstd, weight},
		[]string{"dx", "dweight", "dbias", "dy", "mean", "rstd", "weight"})
	if !ok {
		return
	}
	if dy.Buf == nil || mean.Buf == nil || rstd.Buf == nil {
		b.refuse(op, "dy, mean and rstd are required")
		return
	}
	none := backends.View{}
	switch x.DType {
	case backends.Float32:
		bnBackward(b, newBNArgs[float32](n, c, s, 0, none, x, mean, none, rstd, weight, none, dx, dy, dweight, dbias))
	case backends.Float64:
		bnBackward(b, newBNArgs[float64](n, c, s, 0, none, x, mean, none, rstd, weight, none, dx, dy, dweight, dbias))
	}
}

func newBNArgs[T float](n, c, s int, eps float64, y, x, mean, variance, rstd, w, bias, dx, dy, dw, db backends.View) *bnArgs[T] {
	all := n * c * s
	return &bnArgs[T]{n: n, c: c, s: s, eps: eps,
		y: bnView[T](y, all), x: bnView[T](x, all), dx: bnView[T](dx, all), dy: bnView[T](dy, all),
		mean: bnView[T](mean, c), variance: bnView[T](variance, c), rstd: bnView[T](rstd, c),
		w: bnView[T](w, c), bias: bnView[T](bias, c), dw: bnView[T](dw, c), db: bnView[T](db, c)}
}

// grain returns the channels per task: a channel costs about cost·N·S
// element-operations.
func (a *bnArgs[T]) grain(cost int) int { return grainFor(a.c, cost*a.n*a.s) }

// bnForward computes each channel's statistics and output.
func bnForward[T float](b *Backend, a *bnArgs[T]) {
	m := float64(a.n * a.s)
	b.parallel(a.c, a.grain(6), func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			x0 := float64(a.x[ch*a.s])
			var sum, sq float64
			if x32, ok := any(a.x).([]float32); ok && bnChannelOK(a.s) {
				sum, sq = vecBNChannelSums(x32[ch*a.s:], a.n, a.s, a.c*a.s, x0)
			} else {
				for i := range a.n {
					off := (i*a.c + ch) * a.s
					ds, dq := bnShiftedSums(a.x[off:off+a.s], x0)
					sum += ds
					sq += dq
				}
			}
			dm := sum / m
			mean := x0 + dm
			variance := max(0, sq/m-dm*dm)
			rstd := 1 / math.Sqrt(variance+a.eps)
			a.mean[ch], a.rstd[ch] = T(mean), T(rstd)
			if a.variance != nil {
				a.variance[ch] = T(variance)
			}
			scale := rstd
			if a.w != nil {
				scale *= float64(a.w[ch])
			}
			var shift float64
			if a.bias != nil {
				shift = float64(a.bias[ch])
			}
			mt, sc, sh := T(mean), T(scale), T(shift)
			if y32, ok := any(a.y).([]float32); ok && bnChannelOK(a.s) {
				vecBNChannelAffine(y32[ch*a.s:], any(a.x).([]float32)[ch*a.s:], a.n, a.s, a.c*a.s,
					float32(mt), float32(sc), float32(sh))
				continue
			}
			for i := range a.n {
				off := (i*a.c + ch) * a.s
				bnAffine(a.y[off:off+a.s], a.x[off:off+a.s], mt, sc, sh)
			}
		}
	})
}

// bnShiftedSums returns Σ (x − x0) and Σ (x − x0)² in float64, in a fixed
// order (four interleaved accumulators).
func bnShiftedSums[T float](x []T, x0 float64) (sum, sq float64) {
	var s0, s1, s2, s3, q0, q1, q2, q3 float64
	i := 0
	if x32, ok := any(x).([]float32); ok {
		var acc [8]float64
		i, acc = vecBNSums(x32, x0)
		s0, s1, s2, s3, q0, q1, q2, q3 = acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]
	}
	for ; i+3 < len(x); i += 4 {
		d0, d1, d2, d3 := float64(x[i])-x0, float64(x[i+1])-x0, float64(x[i+2])-x0, float64(x[i+3])-x0
		s0, s1, s2, s3 = s0+d0, s1+d1, s2+d2, s3+d3
		q0, q1, q2, q3 = q0+d0*d0, q1+d1*d1, q2+d2*d2, q3+d3*d3
	}
	for ; i < len(x); i++ {
		d := float64(x[i]) - x0
		s0 += d
		q0 += d * d
	}
	return (s0 + s1) + (s2 + s3), (q0 + q1) + (q2 + q3)
}

// bnAffine writes y = (x − m)·a + b. Centring first keeps y accurate for
// channels far from zero, where x·a − m·a would cancel.
func bnAffine[T float](y, x []T, m, a, b T) {
	x = x[:len(y)]
	i := 0
	if y32, ok := any(y).([]float32); ok {
		i = vecBNAffine(y32, any(x).([]float32), float32(m), float32(a), float32(b))
	}
	for ; i < len(y); i++ {
		y[i] = (x[i]-m)*a + b
	}
}

// bnGradSums returns Σ dy and Σ dy·(x − mean) in float64, in a fixed order.
func bnGradSums[T float](dy, x []T, mean float64) (sg, sgx float64) {
	x = x[:len(dy)]
	var g0, g1, g2, g3, h0, h1, h2, h3 float64
	i := 0
	if dy32, ok := any(dy).([]float32); ok {
		var acc [8]float64
		i, acc = vecBNGradSums(dy32, any(x).([]float32), mean)
		g0, g1, g2, g3, h0, h1, h2, h3 = acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]
	}
	for ; i+3 < len(dy); i += 4 {
		e0, e1, e2, e3 := float64(dy[i]), float64(dy[i+1]), float64(dy[i+2]), float64(dy[i+3])
		g0, g1, g2, g3 = g0+e0, g1+e1, g2+e2, g3+e3
		h0 += e0 * (float64(x[i]) - mean)
		h1 += e1 * (float64(x[i+1]) - mean)
		h2 += e2 * (float64(x[i+2]) - mean)
		h3 += e3 * (float64(x[i+3]) - mean)
	}
	for ; i < len(dy); i++ {
		e := float64(dy[i])
		g0 += e
		h0 += e * (float64(x[i]) - mean)
	}
	return (g0 + g1) + (g2 + g3), (h0 + h1) + (h2 + h3)
}

// bnInputGrad writes dx = dy·a + (x − m)·b + c, centred as bnAffine.
func bnInputGrad[T float](dx, dy, x []T, m, a, b, c T) {
	dy, x = dy[:len(dx)], x[:len(dx)]
	i := 0
	if dx32, ok := any(dx).([]float32); ok {
		i = vecBNInputGrad(dx32, any(dy).([]float32), any(x).([]float32), float32(m), float32(a), float32(b), float32(c))
	}
	for ; i < len(dx); i++ {
		dx[i] = dy[i]*a + (x[i]-m)*b + c
	}
}

// bnBackward computes each channel's gradients. With x̂ = (x − mean)·rstd,
// M = N·S values per channel, g = Σ dy and h = Σ dy·(x − mean):
// dbias = g, dweight = h·rstd and dx = w·rstd·(dy − g/M − x̂·h·rstd/M).
func bnBackward[T float](b *Backend, a *bnArgs[T]) {
	m := float64(a.n * a.s)
	b.parallel(a.c, a.grain(8), func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			mean, rstd := float64(a.mean[ch]), float64(a.rstd[ch])
			var g, h float64
			if dy32, ok := any(a.dy).([]float32); ok && bnChannelOK(a.s) {
				g, h = vecBNChannelGradSums(dy32[ch*a.s:], any(a.x).([]float32)[ch*a.s:], a.n, a.s, a.c*a.s, mean)
			} else {
				for i := range a.n {
					off := (i*a.c + ch) * a.s
					dg, dh := bnGradSums(a.dy[off:off+a.s], a.x[off:off+a.s], mean)
					g += dg
					h += dh
				}
			}
			if a.db != nil {
				a.db[ch] = T(g)
			}
			if a.dw != nil {
				a.dw[ch] = T(h * rstd)
			}
			if a.dx == nil {
				continue
			}
			w := 1.0
			if a.w != nil {
				w = float64(a.w[ch])
			}
			ca := w * rstd
			cb := -ca * rstd * rstd * h / m
			cc := -ca * g / m
			tm, ta, tb, tc := a.mean[ch], T(ca), T(cb), T(cc)
			if dx32, ok := any(a.dx).([]float32); ok && bnChannelOK(a.s) {
				vecBNChannelInputGrad(dx32[ch*a.s:], any(a.dy).([]float32)[ch*a.s:], any(a.x).([]float32)[ch*a.s:],
					a.n, a.s, a.c*a.s, float32(tm), float32(ta), float32(tb), float32(tc))
				continue
			}
			for i := range a.n {
				off := (i*a.c + ch) * a.s
				bnInputGrad(a.dx[off:off+a.s], a.dy[off:off+a.s], a.x[off:off+a.s], tm, ta, tb, tc)
			}
		}
	})
}
