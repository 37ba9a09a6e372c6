package cpu

import "github.com/kiln-ml/kiln/backends"

// UnaryGradOutput implements backends.UnaryOutputGrad: out = g·DFOut(y)
// for Exp (g·y), Tanh (g·(1 − y²)) and Sigmoid (g·(y − y²)), y being the
// op's output. It reads y and g once and writes out once, so on large
// tensors it runs at memory speed (the AVX2 kernels write outputs past
// 32 MiB with non-temporal stores, as Binary does), where UnaryGrad
// recomputes the function from x.
//
// In float32 the factor (y, 1 − y² or y − y²) is rounded once from its
// exact value and then multiplied by g, as PyTorch's kernels compute it:
// at most 1 ulp from g·DFOut(y) evaluated exactly for the float32 y it
// is given. Against the derivative at x, y's own error carries over: for
// Exp at most 1.49 ulp beyond (y within 0.99 ulp of eˣ); for Tanh and
// Sigmoid as |y| nears 1 the factor is a small difference of numbers
// near 1, exact as a difference but as uncertain as y itself, so the
// error is bounded against g (|error| ≤ |g|·2⁻²² for Tanh, |g|·2⁻²³ for
// Sigmoid, beyond the 1 ulp) rather than in ulps of the result. Float64
// computes g·DFOut(y) in float64; Float16 and BFloat16 go through
// float32 rows and are rounded once at the end. The portable build gives
// the same float32 bits as the AVX2 kernels.
func (b *Backend) UnaryGradOutput(op backends.UnaryOp, out, y, g backends.View) {
	name := op.String() + " grad from output"
	if int(op) < 0 || int(op) >= len(backends.UnaryOps) || backends.UnaryOps[op].DFOut == nil {
		b.refuse(name, "%s has no derivative in terms of its output (Exp, Tanh and Sigmoid have)", op)
		return
	}
	for i, v := range []backends.View{out, y, g} {
		if !v.DType.IsFloat() {
			b.refuse(name, "%s is %s; want a float dtype", [...]string{"out", "y", "g"}[i], v.DType)
			return
		}
	}
	if !b.checkElementwise(name, out, y, g) {
		return
	}
	views := []backends.View{out, y, g}
	ob, yb, gb := buf(out), buf(y), buf(g)
	if out.DType == y.DType && out.DType == g.DType {
		switch out.DType {
		case backends.Float32:
			os, ys, gs := ob.f32(), yb.f32(), gb.f32()
			l := newLoop(out.Shape, views...)
			if flatRun(l, false, false, false) {
				o0, y0, g0 := l.base[0], l.base[1], l.base[2]
				nt := l.n*4 >= ntBytes
				b.parallel(l.n, b.ewGrain(l.n), func(lo, hi int) {
					outGradF32(op, os[o0+lo:o0+hi], ys[y0+lo:y0+hi], gs[g0+lo:g0+hi], nt)
				})
				return
			}
			b.elementwise(out.Shape, 2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
				ov := outRow(os, o[0], st[0], n, sc.f32[0][:])
				yv := gatherRow(ys, o[1], st[1], n, sc.f32[1][:])
				outGradF32(op, ov, yv, gatherRow(gs, o[2], st[2], n, sc.f32[2][:]), false)
				scatterRow(os, o[0], st[0], ov)
			})
			return
		case backends.Float64:
			os, ys, gs := ob.f64(), yb.f64(), gb.f64()
			b.elementwise(out.Shape, 2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
				ov := outRow(os, o[0], st[0], n, sc.f64[0][:])
				yv := gatherRow(ys, o[1], st[1], n, sc.f64[1][:])
				outGradF64(op, ov, yv, gatherRow(gs, o[2], st[2], n, sc.f64[2][:]))
				scatterRow(os, o[0], st[0], ov)
			})
			return
		}
	}
	if isF32Like(out.DType) && isF32Like(y.DType) && isF32Like(g.DType) {
		b.elementwise(out.Shape, 5, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
			t, yv, gv := sc.f32[0][:n], sc.f32[1][:n], sc.f32[2][:n]
			loadF32(yb, o[1], st[1], yv)
			loadF32(gb, o[2], st[2], gv)
			outGradF32(op, t, yv, gv, false)
			storeF32(ob, o[0], st[0], t)
		})
		return
	}
	b.elementwise(out.Shape, 5, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		t, yv, gv := sc.f64[0][:n], sc.f64[1][:n], sc.f64[2][:n]
		loadF64(yb, o[1], st[1], yv)
		loadF64(gb, o[2], st[2], gv)
		outGradF64(op, t, yv, gv)
		storeF64(ob, o[0], st[0], t)
	})
}

// outGradF32 sets o[i] = g[i]·d(y[i]) for op, with the factor d(y) (y,
// 1 − y² or y − y²) rounded once to float32 and then multiplied by g in
// float32: through the AVX2 kernels where the build has them (nt: write
// with non-temporal stores), else in Go with the same bits. y and g are
// as long as o.
func outGradF32(op backends.UnaryOp, o, y, g []float32, nt bool) {
	if !outGradVecF32(op, o, y, g, nt) {
		outGradGoF32(op, o, y, g)
	}
}

// outGradGoF32 is outGradF32 in Go.
func outGradGoF32(op backends.UnaryOp, o, y, g []float32) { outGradGo(op, o, y, g) }

// outGradF64 sets o[i] = g[i]·DFOut(y[i]) in float64.
func outGradF64(op backends.UnaryOp, o, y, g []float64) { outGradGo(op, o, y, g) }

// outGradGo sets o[i] = g[i]·d(y[i]) with the factor d(y) computed in
// float64 and rounded to T, then multiplied by g in T. For float32 that is
// the vector kernels' single rounding: y² is exact in float64, and
// rounding 1 − y² or y − y² to float64 and then to float32 gives the fused
// multiply-add's one rounding (TestUnaryGradOutputFactorsExhaustive checks
// every y of the ops' ranges).
func outGradGo[T float](op backends.UnaryOp, o, y, g []T) {
	y, g = y[:len(o)], g[:len(o)]
	switch op {
	case backends.Exp:
		for i := range o {
			o[i] = g[i] * y[i]
		}
	case backends.Tanh:
		for i := range o {
			v := float64(y[i])
			o[i] = g[i] * T(1-v*v)
		}
	case backends.Sigmoid:
		for i := range o {
			v := float64(y[i])
			o[i] = g[i] * T(v-v*v)
		}
	}
}

var _ backends.UnaryOutputGrad = (*Backend)(nil)
