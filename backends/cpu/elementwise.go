package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// intAccessor reads and writes integer and bool buffers exactly as int64.
type intAccessor struct {
	load  func(i int) int64
	store func(i int, v int64)
}

func (b *buffer) intAccessor() intAccessor {
	switch b.dtype {
	case backends.Int64:
		s := b.i64()
		return intAccessor{func(i int) int64 { return s[i] }, func(i int, v int64) { s[i] = v }}
	case backends.Int32:
		s := b.i32()
		return intAccessor{func(i int) int64 { return int64(s[i]) }, func(i int, v int64) { s[i] = int32(v) }}
	case backends.Uint8:
		s := b.bytes
		return intAccessor{func(i int) int64 { return int64(s[i]) }, func(i int, v int64) { s[i] = uint8(v) }}
	case backends.Bool:
		s := b.bytes
		return intAccessor{func(i int) int64 { return int64(s[i]) }, func(i int, v int64) {
			if v != 0 {
				s[i] = 1
			} else {
				s[i] = 0
			}
		}}
	}
	panic("cpu: not an integer dtype: " + b.dtype.String())
}

// Fill implements backends.Backend.
func (b *Backend) Fill(out backends.View, v float64) {
	ob := buf(out)
	if out.IsContiguous() && out.DType == backends.Float32 {
		s := ob.f32()[out.Offset : out.Offset+out.NumElements()]
		f := float32(v)
		for i := range s {
			s[i] = f
		}
		return
	}
	if out.DType.IsInt() || out.DType == backends.Bool {
		st := ob.intAccessor().store
		iv := toInt64(v)
		if out.DType == backends.Bool && v != 0 {
			iv = 1
		}
		b.parallelEach(out.Shape, []backends.View{out}, func(o []int) { st(o[0], iv) })
		return
	}
	st := ob.accessor().store
	b.parallelEach(out.Shape, []backends.View{out}, func(o []int) { st(o[0], v) })
}

// Copy implements backends.Backend.
func (b *Backend) Copy(out, x backends.View) {
	ob, xb := buf(out), buf(x)
	if out.DType == x.DType && out.IsContiguous() && x.IsContiguous() {
		sz := out.DType.Size()
		n := out.NumElements() * sz
		copy(ob.bytes[out.Offset*sz:out.Offset*sz+n], xb.bytes[x.Offset*sz:x.Offset*sz+n])
		return
	}
	intOut := out.DType.IsInt() || out.DType == backends.Bool
	intIn := x.DType.IsInt() || x.DType == backends.Bool
	switch {
	case intOut && intIn:
		ld, st := xb.intAccessor().load, ob.intAccessor().store
		b.parallelEach(out.Shape, []backends.View{out, x}, func(o []int) { st(o[0], ld(o[1])) })
	case out.DType == backends.Float32 && x.DType == backends.Float32:
		os, xs := ob.f32(), xb.f32()
		b.parallelEach(out.Shape, []backends.View{out, x}, func(o []int) { os[o[0]] = xs[o[1]] })
	default:
		ld, st := xb.accessor().load, ob.accessor().store
		b.parallelEach(out.Shape, []backends.View{out, x}, func(o []int) { st(o[0], ld(o[1])) })
	}
}

// Unary implements backends.Backend.
func (b *Backend) Unary(op backends.UnaryOp, out, x backends.View, p0, p1 float64) {
	def := backends.UnaryOps[op]
	ob, xb := buf(out), buf(x)
	if out.DType == backends.Float32 && x.DType == backends.Float32 && out.IsContiguous() && x.IsContiguous() {
		if fastUnaryF32(b, op, ob.f32()[out.Offset:out.Offset+out.NumElements()], xb.f32()[x.Offset:x.Offset+x.NumElements()], p0, p1) {
			return
		}
	}
	ld, st := xb.accessor().load, ob.accessor().store
	f := def.F
	b.parallelEach(out.Shape, []backends.View{out, x}, func(o []int) { st(o[0], f(ld(o[1]), p0, p1)) })
}

// fastUnaryF32 runs the commonest float32 ops on contiguous data with typed
// loops; it returns false for ops it does not specialise.
func fastUnaryF32(b *Backend, op backends.UnaryOp, out, x []float32, p0, p1 float64) bool {
	var f func(o, x []float32)
	switch op {
	case backends.Relu:
		f = func(o, x []float32) {
			for i, v := range x {
				if v > 0 || v != v { // NaN passes through, as in PyTorch
					o[i] = v
				} else {
					o[i] = 0
				}
			}
		}
	case backends.Neg:
		f = func(o, x []float32) {
			for i, v := range x {
				o[i] = -v
			}
		}
	case backends.Exp:
		f = func(o, x []float32) {
			for i, v := range x {
				o[i] = float32(math.Exp(float64(v)))
			}
		}
	case backends.Square:
		f = func(o, x []float32) {
			for i, v := range x {
				o[i] = v * v
			}
		}
	default:
		return false
	}
	b.parallel(len(x), 1<<15, func(lo, hi int) { f(out[lo:hi], x[lo:hi]) })
	return true
}

// UnaryGrad implements backends.Backend.
func (b *Backend) UnaryGrad(op backends.UnaryOp, out, x, g backends.View, p0, p1 float64) {
	df := backends.UnaryOps[op].DF
	ld, lg, st := buf(x).accessor().load, buf(g).accessor().load, buf(out).accessor().store
	b.parallelEach(out.Shape, []backends.View{out, x, g}, func(o []int) { st(o[0], lg(o[2])*df(ld(o[1]), p0, p1)) })
}

// intBinary computes op on integers exactly; ok is false for ops that have
// no integer form (Div, Pow with negative exponents are done in float).
func intBinary(op backends.BinaryOp, a, c int64) (int64, bool) {
	switch op {
	case backends.Add:
		return a + c, true
	case backends.Sub:
		return a - c, true
	case backends.Mul:
		return a * c, true
	case backends.Maximum:
		return max(a, c), true
	case backends.Minimum:
		return min(a, c), true
	case backends.Rem:
		if c == 0 {
			return 0, true
		}
		r := a % c
		if r != 0 && (r < 0) != (c < 0) {
			r += c
		}
		return r, true
	case backends.FloorDiv:
		if c == 0 {
			return 0, true
		}
		q := a / c
		if (a%c != 0) && ((a < 0) != (c < 0)) {
			q--
		}
		return q, true
	case backends.Pow:
		if c < 0 {
			return 0, false
		}
		r := int64(1)
		for base, e := a, c; e > 0; e >>= 1 {
			if e&1 == 1 {
				r *= base
			}
			base *= base
		}
		return r, true
	}
	return 0, false
}

func isIntLike(d backends.DType) bool { return d.IsInt() || d == backends.Bool }

// Binary implements backends.Backend.
func (b *Backend) Binary(op backends.BinaryOp, out, x, y backends.View) {
	ob, xb, yb := buf(out), buf(x), buf(y)
	def := backends.BinaryOps[op]
	if x.DType == backends.Float32 && out.DType == backends.Float32 && out.IsContiguous() {
		os, xs, ys := ob.f32(), xb.f32(), yb.f32()
		if fastBinaryF32(b, op, out, x, y, os, xs, ys) {
			return
		}
	}
	if isIntLike(x.DType) {
		if _, ok := intBinary(op, 1, 1); ok && !def.Predicate {
			lx, ly, st := xb.intAccessor().load, yb.intAccessor().load, ob.intAccessor().store
			b.parallelEach(out.Shape, []backends.View{out, x, y}, func(o []int) {
				r, _ := intBinary(op, lx(o[1]), ly(o[2]))
				st(o[0], r)
			})
			return
		}
		if def.Predicate {
			lx, ly, st := xb.intAccessor().load, yb.intAccessor().load, ob.intAccessor().store
			f := def.F
			b.parallelEach(out.Shape, []backends.View{out, x, y}, func(o []int) {
				a, c := lx(o[1]), ly(o[2])
				var r bool
				switch op {
				case backends.Eq:
					r = a == c
				case backends.Ne:
					r = a != c
				case backends.Lt:
					r = a < c
				case backends.Le:
					r = a <= c
				case backends.Gt:
					r = a > c
				case backends.Ge:
					r = a >= c
				default:
					r = f(float64(a), float64(c)) != 0
				}
				if r {
					st(o[0], 1)
				} else {
					st(o[0], 0)
				}
			})
			return
		}
	}
	lx, ly, st := xb.accessor().load, yb.accessor().load, ob.accessor().store
	f := def.F
	b.parallelEach(out.Shape, []backends.View{out, x, y}, func(o []int) { st(o[0], f(lx(o[1]), ly(o[2]))) })
}

// fastBinaryF32 handles float32 add/sub/mul/div where both inputs are
// contiguous or one is a broadcast scalar row.
func fastBinaryF32(b *Backend, op backends.BinaryOp, out, x, y backends.View, os, xs, ys []float32) bool {
	if !x.IsContiguous() || !y.IsContiguous() || x.NumElements() != out.NumElements() || y.NumElements() != out.NumElements() {
		return false
	}
	n := out.NumElements()
	o, a, c := os[out.Offset:out.Offset+n], xs[x.Offset:x.Offset+n], ys[y.Offset:y.Offset+n]
	var f func(o, a, c []float32)
	switch op {
	case backends.Add:
		f = func(o, a, c []float32) {
			for i := range o {
				o[i] = a[i] + c[i]
			}
		}
	case backends.Sub:
		f = func(o, a, c []float32) {
			for i := range o {
				o[i] = a[i] - c[i]
			}
		}
	case backends.Mul:
		f = func(o, a, c []float32) {
			for i := range o {
				o[i] = a[i] * c[i]
			}
		}
	case backends.Div:
		f = func(o, a, c []float32) {
			for i := range o {
				o[i] = a[i] / c[i]
			}
		}
	default:
		return false
	}
	b.parallel(n, 1<<15, func(lo, hi int) { f(o[lo:hi], a[lo:hi], c[lo:hi]) })
	return true
}

// BinaryScalar implements backends.Backend.
func (b *Backend) BinaryScalar(op backends.BinaryOp, out, x backends.View, s float64, reverse bool) {
	ob, xb := buf(out), buf(x)
	def := backends.BinaryOps[op]
	if isIntLike(x.DType) && !def.Predicate && s == math.Trunc(s) {
		if _, ok := intBinary(op, 1, 1); ok {
			lx, st := xb.intAccessor().load, ob.intAccessor().store
			si := int64(s)
			b.parallelEach(out.Shape, []backends.View{out, x}, func(o []int) {
				var r int64
				if reverse {
					r, _ = intBinary(op, si, lx(o[1]))
				} else {
					r, _ = intBinary(op, lx(o[1]), si)
				}
				st(o[0], r)
			})
			return
		}
	}
	lx, st := xb.accessor().load, ob.accessor().store
	f := def.F
	if reverse {
		b.parallelEach(out.Shape, []backends.View{out, x}, func(o []int) { st(o[0], f(s, lx(o[1]))) })
		return
	}
	b.parallelEach(out.Shape, []backends.View{out, x}, func(o []int) { st(o[0], f(lx(o[1]), s)) })
}

// Where implements backends.Backend.
func (b *Backend) Where(out, cond, x, y backends.View) {
	cs := buf(cond).bytes
	if isIntLike(out.DType) {
		lx, ly, st := buf(x).intAccessor().load, buf(y).intAccessor().load, buf(out).intAccessor().store
		b.parallelEach(out.Shape, []backends.View{out, cond, x, y}, func(o []int) {
			if cs[o[1]] != 0 {
				st(o[0], lx(o[2]))
			} else {
				st(o[0], ly(o[3]))
			}
		})
		return
	}
	lx, ly, st := buf(x).accessor().load, buf(y).accessor().load, buf(out).accessor().store
	b.parallelEach(out.Shape, []backends.View{out, cond, x, y}, func(o []int) {
		if cs[o[1]] != 0 {
			st(o[0], lx(o[2]))
		} else {
			st(o[0], ly(o[3]))
		}
	})
}
