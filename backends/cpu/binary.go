package cpu

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/kiln-ml/kiln/backends"
)

// binaryCost is a rough per-element cost of op, for chunk sizing.
func binaryCost(op backends.BinaryOp) int {
	switch op {
	case backends.Pow, backends.Rem:
		return 16
	}
	return 1
}

// typedFloatOp reports whether float32 arithmetic gives op's exact result
// (see ew_kernels.go).
func typedFloatOp(op backends.BinaryOp) bool {
	switch op {
	case backends.Add, backends.Sub, backends.Mul, backends.Div, backends.Maximum, backends.Minimum:
		return true
	}
	return false
}

// Binary implements backends.Backend. Float32 and Float64 run typed loops;
// integer and Bool inputs compute exactly in int64 for the ops that have an
// integer form and for comparisons; everything else goes through float64
// and the op's definition.
//
// An integer Rem or FloorDiv by zero records an error wrapping
// backends.ErrDivideByZero, reported by the next Sync; those elements are 0.
func (b *Backend) Binary(op backends.BinaryOp, out, x, y backends.View) {
	if !b.checkElementwise(op.String(), out, x, y) {
		return
	}
	def := backends.BinaryOps[op]
	views := []backends.View{out, x, y}
	ob, xb, yb := buf(out), buf(x), buf(y)
	cost := binaryCost(op)
	if x.DType == y.DType && typedOut(def, out.DType, x.DType) {
		switch {
		case x.DType == backends.Float32 && (def.Predicate || typedFloatOp(op)):
			binaryTyped(b, op, views, typedOutSlice(def, ob.f32), xb.f32(), yb.f32(), cost)
			return
		case x.DType == backends.Float64:
			binaryTyped(b, op, views, typedOutSlice(def, ob.f64), xb.f64(), yb.f64(), cost)
			return
		}
	}
	if isIntLike(x.DType) && isIntLike(y.DType) && (def.Predicate || hasIntForm(op)) {
		var zero divideByZero
		b.elementwise(out.Shape, cost+3, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
			a := inI64(xb, o[1], st[1], n, sc.i64[0][:])
			c := inI64(yb, o[2], st[2], n, sc.i64[1][:])
			if def.Predicate {
				t := sc.u8[:n]
				compare(op, t, a, c)
				storeU8(ob, o[0], st[0], t, sc.f64[0][:])
				return
			}
			t := sc.i64[2][:n]
			zero.note(op, c)
			binaryI64(op, t, a, c)
			storeI64(ob, o[0], st[0], t)
		})
		zero.report(b, op)
		return
	}
	b.elementwise(out.Shape, cost+3, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		a := inF64(xb, o[1], st[1], n, sc.f64[0][:])
		c := inF64(yb, o[2], st[2], n, sc.f64[1][:])
		if def.Predicate {
			t := sc.u8[:n]
			compare(op, t, a, c)
			storeU8(ob, o[0], st[0], t, sc.f64[2][:])
			return
		}
		t := sc.f64[2][:n]
		binaryF64(op, t, a, c)
		storeF64(ob, o[0], st[0], t)
	})
}

// typedOut reports whether op's output can be written by the typed loops
// over inputs of dtype in: a predicate writes Bool (through the bytes), any
// other op the inputs' dtype.
func typedOut(def backends.BinaryDef, out, in backends.DType) bool {
	if def.Predicate {
		return out == backends.Bool
	}
	return out == in
}

// typedOutSlice returns the typed view of the output for arithmetic ops,
// and nil for predicates, whose Bool output the typed loops write as bytes.
func typedOutSlice[T float](def backends.BinaryDef, view func() []T) []T {
	if def.Predicate {
		return nil
	}
	return view()
}

// divideByZero notes, across the workers of one kernel, whether an
// integer Rem or FloorDiv met a zero divisor.
type divideByZero struct{ seen atomic.Bool }

// note records a zero among the divisors c of op.
func (z *divideByZero) note(op backends.BinaryOp, c []int64) {
	if op != backends.Rem && op != backends.FloorDiv || z.seen.Load() {
		return
	}
	for _, v := range c {
		if v == 0 {
			z.seen.Store(true)
			return
		}
	}
}

// report records the sticky error if a zero divisor was seen.
func (z *divideByZero) report(b *Backend, op backends.BinaryOp) {
	if z.seen.Load() {
		b.fail(fmt.Errorf("cpu: %s: %w", op, backends.ErrDivideByZero))
	}
}

// binaryTyped runs op over float32 or float64 views of one dtype (os is
// nil for predicates, which write the Bool output as bytes).
func binaryTyped[T float](b *Backend, op backends.BinaryOp, views []backends.View, os, xs, ys []T, cost int) {
	pred := backends.BinaryOps[op].Predicate
	if !pred && binaryFlat(b, op, views, os, xs, ys) {
		return
	}
	var ou []uint8 // the Bool output of a predicate
	if pred {
		ou = buf(views[0]).u8()
	}
	b.elementwise(views[0].Shape, cost, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		ta, tb, to := scratchRows[T](sc)
		a := inRow(xs, o[1], st[1], n, ta)
		c := inRow(ys, o[2], st[2], n, tb)
		if pred {
			u := outRow(ou, o[0], st[0], n, sc.u8[:])
			compare(op, u, a, c)
			scatterRow(ou, o[0], st[0], u)
			return
		}
		ov := outRow(os, o[0], st[0], n, to)
		if !ewVector(op, ov, a, c, false) && !binaryFloat(op, ov, a, c) {
			binaryF64(op, any(ov).([]float64), any(a).([]float64), any(c).([]float64))
		}
		scatterRow(os, o[0], st[0], ov)
	})
}

// scratchRows returns three scratch rows of T.
func scratchRows[T float](sc *scratch) (a, b, c []T) {
	var z T
	switch any(z).(type) {
	case float32:
		return any(sc.f32[0][:]).([]T), any(sc.f32[1][:]).([]T), any(sc.f32[2][:]).([]T)
	}
	return any(sc.f64[0][:]).([]T), any(sc.f64[1][:]).([]T), any(sc.f64[2][:]).([]T)
}

// BinaryScalar implements backends.Backend (s op x when reverse). Float
// inputs use typed float32 arithmetic only when s is exactly a float32 and
// the op is exact in float32; otherwise they compute in float64 like the
// definition. Integer inputs with an integral s and an integer form compute
// exactly in int64.
func (b *Backend) BinaryScalar(op backends.BinaryOp, out, x backends.View, s float64, reverse bool) {
	if !b.checkElementwise(op.String(), out, x) {
		return
	}
	def := backends.BinaryOps[op]
	views := []backends.View{out, x}
	ob, xb := buf(out), buf(x)
	cost := binaryCost(op)
	// operand order: a is the left operand, c the right; one of them is the scalar
	order := func(v, sv []float64) ([]float64, []float64) {
		if reverse {
			return sv, v
		}
		return v, sv
	}
	outOK := typedOut(def, out.DType, x.DType)
	switch {
	case outOK && x.DType == backends.Float32 && float64(float32(s)) == s && (def.Predicate || typedFloatOp(op)):
		binaryScalarTyped(b, op, views, typedOutSlice(def, ob.f32), xb.f32(), float32(s), reverse, cost)
		return
	case outOK && x.DType == backends.Float64:
		binaryScalarTyped(b, op, views, typedOutSlice(def, ob.f64), xb.f64(), s, reverse, cost)
		return
	case isIntLike(x.DType) && !def.Predicate && s == math.Trunc(s) && hasIntForm(op):
		si := []int64{int64(s)}
		var zero divideByZero
		b.elementwise(out.Shape, cost+2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
			v := inI64(xb, o[1], st[1], n, sc.i64[0][:])
			t := sc.i64[1][:n]
			if reverse {
				zero.note(op, v)
				binaryI64(op, t, si, v)
			} else {
				zero.note(op, si)
				binaryI64(op, t, v, si)
			}
			storeI64(ob, o[0], st[0], t)
		})
		zero.report(b, op)
		return
	}
	sv := []float64{s}
	b.elementwise(out.Shape, cost+2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		v := gatherF64(xb, o[1], st[1], n, sc.f64[0][:])
		a, c := order(v, sv)
		if def.Predicate {
			t := sc.u8[:n]
			compare(op, t, a, c)
			storeU8(ob, o[0], st[0], t, sc.f64[1][:])
			return
		}
		t := sc.f64[1][:n]
		binaryF64(op, t, a, c)
		storeF64(ob, o[0], st[0], t)
	})
}

// gatherF64 loads n elements of any dtype as float64 (a stride of 0 repeats one).
func gatherF64(b *buffer, off, st, n int, tmp []float64) []float64 {
	if b.dtype == backends.Float64 && st == 1 {
		return b.f64()[off : off+n]
	}
	loadF64(b, off, st, tmp[:n])
	return tmp[:n]
}

func binaryScalarTyped[T float](b *Backend, op backends.BinaryOp, views []backends.View, os, xs []T, s T, reverse bool, cost int) {
	pred := backends.BinaryOps[op].Predicate
	if !pred && binaryScalarFlat(b, op, views, os, xs, s, reverse) {
		return
	}
	var ou []uint8 // the Bool output of a predicate
	if pred {
		ou = buf(views[0]).u8()
	}
	sv := []T{s}
	b.elementwise(views[0].Shape, cost, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		ta, _, to := scratchRows[T](sc)
		v := gatherRow(xs, o[1], st[1], n, ta)
		a, c := v, sv
		if reverse {
			a, c = sv, v
		}
		if pred {
			u := outRow(ou, o[0], st[0], n, sc.u8[:])
			compare(op, u, a, c)
			scatterRow(ou, o[0], st[0], u)
			return
		}
		ov := outRow(os, o[0], st[0], n, to)
		if !ewVector(op, ov, a, c, false) && !binaryFloat(op, ov, a, c) {
			binaryF64(op, any(ov).([]float64), any(a).([]float64), any(c).([]float64))
		}
		scatterRow(os, o[0], st[0], ov)
	})
}
