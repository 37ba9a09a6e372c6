package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

// unaryCost is a rough per-element cost of op, in simple operations, used to
// size parallel chunks.
func unaryCost(op backends.UnaryOp) int {
	switch op {
	case backends.Neg, backends.Abs, backends.Relu, backends.Square, backends.Sign,
		backends.Clamp, backends.Not, backends.IsNaN, backends.IsInf:
		return 1
	}
	return 16
}

// Unary implements backends.Backend. The transcendental ops with float32
// kernels (exp, log, tanh, erf, sigmoid, GELU, SiLU) run them on Float32,
// Float16 and BFloat16 (transcendental.go); otherwise Float32 and Float64
// run typed loops (see ew_kernels.go for which ops compute in float32), and
// every other dtype is computed in float64 through the op's definition and
// stored back.
func (b *Backend) Unary(op backends.UnaryOp, out, x backends.View, p0, p1 float64) {
	if !b.checkElementwise(op.String(), out, x) {
		return
	}
	if b.unaryTranscendental(op, out, x) { // transcendental.go
		return
	}
	def := backends.UnaryOps[op]
	views := []backends.View{out, x}
	ob, xb := buf(out), buf(x)
	cost := unaryCost(op)
	if !def.Predicate && out.DType == x.DType {
		switch x.DType {
		case backends.Float32:
			os, xs := ob.f32(), xb.f32()
			b.elementwise(out.Shape, cost, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
				ov := outRow(os, o[0], st[0], n, sc.f32[0][:])
				if xv := gatherRow(xs, o[1], st[1], n, sc.f32[1][:]); !vecUnary(op, ov, xv) {
					unaryFloat(op, ov, xv, p0, p1)
				}
				scatterRow(os, o[0], st[0], ov)
			})
			return
		case backends.Float64:
			os, xs := ob.f64(), xb.f64()
			b.elementwise(out.Shape, cost, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
				ov := outRow(os, o[0], st[0], n, sc.f64[0][:])
				unaryFloat(op, ov, gatherRow(xs, o[1], st[1], n, sc.f64[1][:]), p0, p1)
				scatterRow(os, o[0], st[0], ov)
			})
			return
		}
	}
	f := def.F
	b.elementwise(out.Shape, cost+2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		t := sc.f64[0][:n]
		loadF64(xb, o[1], st[1], t)
		if def.Predicate {
			for i, v := range t {
				t[i] = f(v, p0, p1)
			}
		} else {
			unaryFloat(op, t, t, p0, p1)
		}
		storeF64(ob, o[0], st[0], t)
	})
}

// UnaryGrad implements backends.Backend: out = g·op'(x), computed as
// float64(g)·DF(float64(x)) rounded to out's dtype (exactly so in the typed
// float32 loops too), except for the ops with float32 kernels, whose
// backward kernels compute g·op'(x) in one pass within the bounds
// transcendental.go documents.
func (b *Backend) UnaryGrad(op backends.UnaryOp, out, x, g backends.View, p0, p1 float64) {
	if !b.checkElementwise(op.String()+" grad", out, x, g) {
		return
	}
	if b.unaryGradTranscendental(op, out, x, g) { // transcendental.go
		return
	}
	views := []backends.View{out, x, g}
	ob, xb, gb := buf(out), buf(x), buf(g)
	cost := unaryCost(op) + 1
	if out.DType == x.DType && out.DType == g.DType {
		switch out.DType {
		case backends.Float32:
			os, xs, gs := ob.f32(), xb.f32(), gb.f32()
			b.elementwise(out.Shape, cost, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
				ov := outRow(os, o[0], st[0], n, sc.f32[0][:])
				unaryGradFloat(op, ov, inRow(xs, o[1], st[1], n, sc.f32[1][:]), inRow(gs, o[2], st[2], n, sc.f32[2][:]), p0, p1)
				scatterRow(os, o[0], st[0], ov)
			})
			return
		case backends.Float64:
			os, xs, gs := ob.f64(), xb.f64(), gb.f64()
			b.elementwise(out.Shape, cost, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
				ov := outRow(os, o[0], st[0], n, sc.f64[0][:])
				unaryGradFloat(op, ov, inRow(xs, o[1], st[1], n, sc.f64[1][:]), inRow(gs, o[2], st[2], n, sc.f64[2][:]), p0, p1)
				scatterRow(os, o[0], st[0], ov)
			})
			return
		}
	}
	b.elementwise(out.Shape, cost+3, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		t := sc.f64[0][:n]
		unaryGradFloat(op, t, inF64(xb, o[1], st[1], n, sc.f64[1][:]), inF64(gb, o[2], st[2], n, sc.f64[2][:]), p0, p1)
		storeF64(ob, o[0], st[0], t)
	})
}
