package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Reductions.
//
// Order of operations (what makes results independent of the worker count):
// the reduced elements of one output are visited in row-major order of the
// reduced dimensions, after size-1 dimensions are dropped and adjacent ones
// merged. When the reduced elements are the fastest-moving in memory
// (reducing the last dimension, or everything), each run of the innermost
// reduced dimension is reduced with four interleaved accumulators (element
// i goes to accumulator i mod 4, combined as (a0∘a1)∘(a2∘a3)) and the runs
// are combined in order. Otherwise (reducing leading dimensions of a
// row-major tensor) each output accumulates its elements strictly in order,
// many outputs at a time. When there are few outputs (under 64) and many
// reduced elements (over 32768), the reduced range is cut into segments of
// 32768 elements that are reduced in parallel and combined in segment order.
// All of this depends only on the shapes and strides, never on the workers.
//
// Floating-point inputs accumulate in float64 (float32, float16 and
// bfloat16 sums are exact up to float64 rounding before the final rounding
// to the output dtype); integer and Bool inputs accumulate exactly in int64
// (wrapping on overflow). Max and Min propagate NaN and treat -0 as smaller
// than +0, which makes them independent of order.

// segment is the number of reduced elements per parallel segment.
const segment = 1 << 15

// fewOutputs is the output count under which large reductions are segmented.
const fewOutputs = 64

// accum is the accumulator type: float64 for float inputs, int64 for integers.
type accum interface{ ~float64 | ~int64 }

func identity[A accum](op backends.ReduceOp) A {
	var z A
	switch op {
	case backends.Prod:
		return 1
	case backends.Max:
		if _, ok := any(z).(float64); ok {
			return A(math.Inf(-1))
		}
		return A(math.MinInt64)
	case backends.Min:
		if _, ok := any(z).(float64); ok {
			return A(math.Inf(1))
		}
		return A(math.MaxInt64)
	}
	return 0
}

func combine[A accum](op backends.ReduceOp, a, v A) A {
	switch op {
	case backends.Sum:
		return a + v
	case backends.Prod:
		return a * v
	case backends.Max:
		return max(a, v)
	}
	return min(a, v)
}

// reduceRun reduces n elements of s from off, stride st, with four
// interleaved accumulators.
func reduceRun[T float32 | float64 | int64, A accum](op backends.ReduceOp, s []T, off, st, n int) A {
	id := identity[A](op)
	a0, a1, a2, a3 := id, id, id, id
	if st == 1 {
		x := s[off : off+n]
		switch op {
		case backends.Sum:
			if sum, done := vecSumWide[T, A](x); done > 0 {
				a0, x = sum, x[done:]
			}
			for ; len(x) >= 4; x = x[4:] {
				a0 += A(x[0])
				a1 += A(x[1])
				a2 += A(x[2])
				a3 += A(x[3])
			}
			for _, v := range x {
				a0 += A(v)
			}
		case backends.Prod:
			for ; len(x) >= 4; x = x[4:] {
				a0 *= A(x[0])
				a1 *= A(x[1])
				a2 *= A(x[2])
				a3 *= A(x[3])
			}
			for _, v := range x {
				a0 *= A(v)
			}
		case backends.Max:
			for ; len(x) >= 4; x = x[4:] {
				a0 = max(a0, A(x[0]))
				a1 = max(a1, A(x[1]))
				a2 = max(a2, A(x[2]))
				a3 = max(a3, A(x[3]))
			}
			for _, v := range x {
				a0 = max(a0, A(v))
			}
		case backends.Min:
			for ; len(x) >= 4; x = x[4:] {
				a0 = min(a0, A(x[0]))
				a1 = min(a1, A(x[1]))
				a2 = min(a2, A(x[2]))
				a3 = min(a3, A(x[3]))
			}
			for _, v := range x {
				a0 = min(a0, A(v))
			}
		}
	} else {
		i := 0
		for ; i+4 <= n; i += 4 {
			p := off + i*st
			a0 = combine(op, a0, A(s[p]))
			a1 = combine(op, a1, A(s[p+st]))
			a2 = combine(op, a2, A(s[p+2*st]))
			a3 = combine(op, a3, A(s[p+3*st]))
		}
		for ; i < n; i++ {
			a0 = combine(op, a0, A(s[off+i*st]))
		}
	}
	return combine(op, combine(op, a0, a1), combine(op, a2, a3))
}

// accumulateRow folds len(acc) elements of s (from off, stride st) into acc
// element by element.
func accumulateRow[T float32 | float64 | int64, A accum](op backends.ReduceOp, acc []A, s []T, off, st int) {
	if st == 1 {
		x := s[off : off+len(acc)]
		switch op {
		case backends.Sum:
			if done := vecAccWide(acc, x); done > 0 {
				acc, x = acc[done:], x[done:]
			}
			for i, v := range x {
				acc[i] += A(v)
			}
		case backends.Prod:
			for i, v := range x {
				acc[i] *= A(v)
			}
		case backends.Max:
			for i, v := range x {
				acc[i] = max(acc[i], A(v))
			}
		case backends.Min:
			for i, v := range x {
				acc[i] = min(acc[i], A(v))
			}
		}
		return
	}
	for i := range acc {
		acc[i] = combine(op, acc[i], A(s[off+i*st]))
	}
}

// reducer gives typed access to one input for the reduction driver.
type reducer[A accum] struct {
	op backends.ReduceOp
	// run reduces n elements from off with stride st (four accumulators).
	run func(sc *scratch, off, st, n int) A
	// row folds len(acc) elements from off with stride st into acc.
	row func(sc *scratch, acc []A, off, st int)
	// rows, when set, folds the contiguous rows of len(acc) elements at off,
	// off+ld, … (rows of them) into acc as row does each in turn, and
	// returns how many leading elements of acc it did (0: none).
	rows func(acc []A, off, ld, rows int) int
	// store writes results to out from off with stride st.
	store func(sc *scratch, off, st int, v []A)
}

func floatReducer(op backends.ReduceOp, x, out backends.View) reducer[float64] {
	xb, ob := buf(x), buf(out)
	r := reducer[float64]{op: op}
	switch x.DType {
	case backends.Float32:
		xs := xb.f32()
		r.run = func(_ *scratch, off, st, n int) float64 { return reduceRun[float32, float64](op, xs, off, st, n) }
		r.row = func(_ *scratch, acc []float64, off, st int) { accumulateRow(op, acc, xs, off, st) }
		if op == backends.Sum {
			r.rows = func(acc []float64, off, ld, rows int) int { return accRows(acc, xs, off, ld, rows) }
		}
	case backends.Float64:
		xs := xb.f64()
		r.run = func(_ *scratch, off, st, n int) float64 { return reduceRun[float64, float64](op, xs, off, st, n) }
		r.row = func(_ *scratch, acc []float64, off, st int) { accumulateRow(op, acc, xs, off, st) }
	default:
		r.run = func(sc *scratch, off, st, n int) float64 {
			acc := identity[float64](op)
			for n > 0 {
				m := min(n, blk)
				t := sc.f64[0][:m]
				loadF64(xb, off, st, t)
				acc = combine(op, acc, reduceRun[float64, float64](op, t, 0, 1, m))
				off, n = off+m*st, n-m
			}
			return acc
		}
		r.row = func(sc *scratch, acc []float64, off, st int) {
			t := sc.f64[0][:len(acc)]
			loadF64(xb, off, st, t)
			accumulateRow(op, acc, t, 0, 1)
		}
	}
	r.store = func(_ *scratch, off, st int, v []float64) { storeF64(ob, off, st, v) }
	return r
}

func intReducer(op backends.ReduceOp, x, out backends.View) reducer[int64] {
	xb, ob := buf(x), buf(out)
	r := reducer[int64]{op: op}
	if x.DType == backends.Int64 {
		xs := xb.i64()
		r.run = func(_ *scratch, off, st, n int) int64 { return reduceRun[int64, int64](op, xs, off, st, n) }
		r.row = func(_ *scratch, acc []int64, off, st int) { accumulateRow(op, acc, xs, off, st) }
	} else {
		r.run = func(sc *scratch, off, st, n int) int64 {
			acc := identity[int64](op)
			for n > 0 {
				m := min(n, blk)
				t := sc.i64[0][:m]
				loadI64(xb, off, st, t)
				acc = combine(op, acc, reduceRun[int64, int64](op, t, 0, 1, m))
				off, n = off+m*st, n-m
			}
			return acc
		}
		r.row = func(sc *scratch, acc []int64, off, st int) {
			t := sc.i64[0][:len(acc)]
			loadI64(xb, off, st, t)
			accumulateRow(op, acc, t, 0, 1)
		}
	}
	if isIntLike(out.DType) {
		r.store = func(_ *scratch, off, st int, v []int64) { storeI64(ob, off, st, v) }
	} else {
		r.store = func(sc *scratch, off, st int, v []int64) {
			t := sc.f64[1][:len(v)]
			for i, x := range v {
				t[i] = float64(x)
			}
			storeF64(ob, off, st, t)
		}
	}
	return r
}

// reducePlan is a reduction's index spaces after coalescing.
type reducePlan struct {
	kept *loop // views: x (kept strides, x's offset), out (out's offset)
	red  *loop // view: x (reduced strides, offset 0)
	K, R int   // outputs, reduced elements per output
	redA bool  // reduced elements are the fastest-moving: reduce runs
}

// planAxes splits x's dimensions into kept and reduced ones.
func planAxes(out, x backends.View, axes []int) reducePlan {
	red := make([]bool, len(x.Shape))
	for _, a := range axes {
		red[a] = true
	}
	var kShape, kX, kOut, rShape, rX []int
	for d, s := range x.Shape {
		if red[d] {
			rShape = append(rShape, s)
			rX = append(rX, x.Strides[d])
		} else {
			kShape = append(kShape, s)
			kX = append(kX, x.Strides[d])
			kOut = append(kOut, out.Strides[d])
		}
	}
	p := reducePlan{
		kept: newLoop(kShape, backends.View{Strides: kX, Offset: x.Offset}, backends.View{Strides: kOut, Offset: out.Offset}),
		red:  newLoop(rShape, backends.View{Strides: rX}),
	}
	p.K, p.R = p.kept.n, p.red.n
	p.redA = p.K == 1 || p.R > 1 && abs(p.red.inner[0]) <= abs(p.kept.inner[0])
	return p
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Reduce implements backends.Backend (see the order of operations above).
func (b *Backend) Reduce(op backends.ReduceOp, out, x backends.View, axes []int) {
	if !b.checkReduce(op.String(), out, x, axes...) {
		return
	}
	p := planAxes(out, x, axes)
	if isIntLike(x.DType) {
		reduceWith(b, p, intReducer(op, x, out))
		return
	}
	reduceWith(b, p, floatReducer(op, x, out))
}

func reduceWith[A accum](b *Backend, p reducePlan, r reducer[A]) {
	if p.K == 0 {
		return
	}
	op := r.op
	if p.R == 0 { // empty reductions give the identity
		b.parallel(p.K, grainFor(p.K, 1), func(lo, hi int) {
			sc := scratches.Get().(*scratch)
			p.kept.rows(lo, hi, func(o offsets, n int) {
				id := []A{identity[A](op)}
				for i := range n {
					r.store(sc, o[1]+i*p.kept.inner[1], 1, id)
				}
			})
			scratches.Put(sc)
		})
		return
	}
	// reduceRange reduces the flat reduced elements [r0, r1) of the output
	// whose first element is at x offset base.
	rs := p.red.inner[0]
	single := len(p.red.shape) == 1
	reduceRange := func(sc *scratch, base, r0, r1 int) A {
		if single {
			return r.run(sc, base+r0*rs, rs, r1-r0)
		}
		acc := identity[A](op)
		p.red.rows(r0, r1, func(o offsets, n int) { acc = combine(op, acc, r.run(sc, base+o[0], rs, n)) })
		return acc
	}
	// foldRange folds the reduced elements [r0, r1) into acc, a row of
	// outputs whose first element is at x offset base (stride ks).
	ks := p.kept.inner[0]
	foldRange := func(sc *scratch, acc []A, base, r0, r1 int) {
		if single && ks == 1 && r.rows != nil {
			// a column sum of contiguous rows: the leading columns four
			// rows at a time (accRows)
			if done := r.rows(acc, base+r0*rs, rs, r1-r0); done > 0 {
				if done == len(acc) {
					return
				}
				acc, base = acc[done:], base+done
			}
		}
		if single {
			for k := r0; k < r1; k++ {
				r.row(sc, acc, base+k*rs, ks)
			}
			return
		}
		p.red.each(r0, r1, func(o offsets) { r.row(sc, acc, base+o[0], ks) })
	}

	if p.K < fewOutputs && p.R > segment {
		reduceSegmented(b, p, r, reduceRange, foldRange)
		return
	}
	if p.redA {
		b.parallel(p.K, grainFor(p.K, p.R), func(lo, hi int) {
			sc := scratches.Get().(*scratch)
			res := make([]A, 0, blk)
			p.kept.rows(lo, hi, func(o offsets, n int) {
				for n > 0 {
					m := min(n, blk)
					res = res[:m]
					for i := range res {
						res[i] = reduceRange(sc, o[0]+i*p.kept.inner[0], 0, p.R)
					}
					r.store(sc, o[1], p.kept.inner[1], res)
					o[0] += m * p.kept.inner[0]
					o[1] += m * p.kept.inner[1]
					n -= m
				}
			})
			scratches.Put(sc)
		})
		return
	}
	b.parallel(p.K, max(grainFor(p.K, p.R), 64), func(lo, hi int) {
		sc := scratches.Get().(*scratch)
		acc := make([]A, blk)
		p.kept.rows(lo, hi, func(o offsets, n int) {
			for n > 0 {
				m := min(n, blk)
				a := acc[:m]
				fillSlice(a, identity[A](op))
				foldRange(sc, a, o[0], 0, p.R)
				r.store(sc, o[1], p.kept.inner[1], a)
				o[0] += m * p.kept.inner[0]
				o[1] += m * p.kept.inner[1]
				n -= m
			}
		})
		scratches.Put(sc)
	})
}

// reduceSegmented handles few outputs with many reduced elements each: the
// reduced range is cut into segments reduced in parallel, then the segment
// results of each output are combined in segment order.
func reduceSegmented[A accum](b *Backend, p reducePlan, r reducer[A],
	reduceRange func(sc *scratch, base, r0, r1 int) A, foldRange func(sc *scratch, acc []A, base, r0, r1 int)) {
	op := r.op
	S := (p.R + segment - 1) / segment
	// the outputs' x and out offsets, in flat kept order
	xOff, oOff := make([]int, 0, p.K), make([]int, 0, p.K)
	p.kept.each(0, p.K, func(o offsets) {
		xOff = append(xOff, o[0])
		oOff = append(oOff, o[1])
	})
	part := make([]A, p.K*S) // part[s*K + j]
	if p.redA {
		b.parallelTasks(p.K*S, func(t int) {
			sc := scratches.Get().(*scratch)
			j, s := t/S, t%S
			part[s*p.K+j] = reduceRange(sc, xOff[j], s*segment, min((s+1)*segment, p.R))
			scratches.Put(sc)
		})
	} else {
		// one task per segment folds every output: K < fewOutputs, so rows of
		// outputs that are contiguous in x are folded as rows
		b.parallelTasks(S, func(s int) {
			sc := scratches.Get().(*scratch)
			a := part[s*p.K : (s+1)*p.K]
			fillSlice(a, identity[A](op))
			r0, r1 := s*segment, min((s+1)*segment, p.R)
			j := 0
			p.kept.rows(0, p.K, func(o offsets, n int) {
				foldRange(sc, a[j:j+n], o[0], r0, r1)
				j += n
			})
			scratches.Put(sc)
		})
	}
	sc := scratches.Get().(*scratch)
	for j := range p.K {
		acc := part[j]
		for s := 1; s < S; s++ {
			acc = combine(op, acc, part[s*p.K+j])
		}
		r.store(sc, oOff[j], 1, []A{acc})
	}
	scratches.Put(sc)
}

// argPlan is the layout of ArgReduce and Scan: outputs over the kept
// dimensions, a line of n elements along axis for each.
func argPlan(out, x backends.View, axis int) (kept *loop, n, xs, os int) {
	var kShape, kX, kOut []int
	for d, s := range x.Shape {
		if d != axis {
			kShape = append(kShape, s)
			kX = append(kX, x.Strides[d])
			kOut = append(kOut, out.Strides[d])
		}
	}
	kept = newLoop(kShape, backends.View{Strides: kX, Offset: x.Offset}, backends.View{Strides: kOut, Offset: out.Offset})
	return kept, x.Shape[axis], x.Strides[axis], out.Strides[axis]
}

// argBest scans n elements for the first maximum (or minimum), NaN counting
// as both and the first NaN winning; it returns the value and its index.
func argBest[T float32 | float64](max bool, s []T, off, st, n int) (T, int) {
	best, bi := s[off], 0
	if best != best {
		return best, 0
	}
	if st == 1 {
		x := s[off : off+n]
		for k := 1; k < len(x); k++ {
			v := x[k]
			if v != v {
				return v, k
			}
			if max && v > best || !max && v < best {
				best, bi = v, k
			}
		}
		return best, bi
	}
	for k := 1; k < n; k++ {
		v := s[off+k*st]
		if v != v {
			return v, k
		}
		if max && v > best || !max && v < best {
			best, bi = v, k
		}
	}
	return best, bi
}

// better reports whether v (found later) replaces best in an arg-reduction.
func better[T float32 | float64](max bool, v, best T) bool {
	if best != best {
		return false
	}
	return v != v || max && v > best || !max && v < best
}

// ArgReduce implements backends.Backend. NaN counts as the maximum and the
// minimum, as in PyTorch; ties resolve to the first index. Long lines with
// few outputs are split into segments whose winners are combined in order,
// which gives exactly the sequential answer.
func (b *Backend) ArgReduce(op backends.ReduceOp, out, x backends.View, axis int) {
	if !b.checkAxis(op.String(), axis, len(x.Shape)) || !b.checkReduce(op.String(), out, x, axis) ||
		!b.checkDType(op.String(), "out", out, backends.Int64) {
		return
	}
	kept, n, st, _ := argPlan(out, x, axis)
	if kept.n == 0 || n == 0 {
		return
	}
	isMax := op == backends.ArgMax
	os := buf(out).i64()
	switch x.DType {
	case backends.Float32:
		argReduceTyped(b, isMax, kept, buf(x).f32(), os, n, st)
	case backends.Float64:
		argReduceTyped(b, isMax, kept, buf(x).f64(), os, n, st)
	default:
		// convert each line to float64 first (exact for every dtype but
		// int64 beyond 2^53, as the definition's float64 comparison)
		xb := buf(x)
		b.parallel(kept.n, grainFor(kept.n, n), func(lo, hi int) {
			line := make([]float64, n)
			kept.each(lo, hi, func(o offsets) {
				loadF64(xb, o[0], st, line)
				_, k := argBest(isMax, line, 0, 1, n)
				os[o[1]] = int64(k)
			})
		})
	}
}

func argReduceTyped[T float32 | float64](b *Backend, isMax bool, kept *loop, xs []T, os []int64, n, st int) {
	if kept.n < fewOutputs && n > segment {
		S := (n + segment - 1) / segment
		offs := make([]offsets, 0, kept.n)
		kept.each(0, kept.n, func(o offsets) { offs = append(offs, o) })
		vals, idx := make([]T, kept.n*S), make([]int, kept.n*S)
		b.parallelTasks(kept.n*S, func(t int) {
			j, s := t/S, t%S
			k0 := s * segment
			v, k := argBest(isMax, xs, offs[j][0]+k0*st, st, min(segment, n-k0))
			vals[t], idx[t] = v, k0+k
		})
		for j, o := range offs {
			best, bi := vals[j*S], idx[j*S]
			for s := 1; s < S; s++ {
				if better(isMax, vals[j*S+s], best) {
					best, bi = vals[j*S+s], idx[j*S+s]
				}
			}
			os[o[1]] = int64(bi)
		}
		return
	}
	b.parallel(kept.n, grainFor(kept.n, n), func(lo, hi int) {
		kept.each(lo, hi, func(o offsets) {
			_, k := argBest(isMax, xs, o[0], st, n)
			os[o[1]] = int64(k)
		})
	})
}

// Scan implements backends.Backend: an inclusive cumulative sum or product
// along axis, accumulated in float64 for floats (rounded to the output at
// every step) and exactly in int64 for integers. Each line is sequential;
// lines run in parallel, many at a time when they are interleaved in memory.
func (b *Backend) Scan(op backends.ReduceOp, out, x backends.View, axis int) {
	name := "cumulative " + op.String()
	if !b.checkAxis(name, axis, len(x.Shape)) || !b.checkSame(name, x, out) {
		return
	}
	kept, n, xst, ost := argPlan(out, x, axis)
	if kept.n == 0 || n == 0 {
		return
	}
	if isIntLike(x.DType) && isIntLike(out.DType) {
		scanWith(b, op, kept, n, xst, ost, loadI64, storeI64, buf(x), buf(out))
		return
	}
	scanWith(b, op, kept, n, xst, ost, loadF64, storeF64, buf(x), buf(out))
}

func scanWith[A accum](b *Backend, op backends.ReduceOp, kept *loop, n, xst, ost int,
	load func(*buffer, int, int, []A), store func(*buffer, int, int, []A), xb, ob *buffer) {
	ks := kept.inner[0]
	if abs(xst) <= abs(ks) || kept.n == 1 {
		// one line at a time, in blocks along the line
		b.parallel(kept.n, grainFor(kept.n, n), func(lo, hi int) {
			t := make([]A, min(n, blk))
			kept.each(lo, hi, func(o offsets) {
				acc := identity[A](op)
				for k := 0; k < n; k += len(t) {
					m := min(n-k, len(t))
					v := t[:m]
					load(xb, o[0]+k*xst, xst, v)
					for i, x := range v {
						if op == backends.Prod {
							acc *= x
						} else {
							acc += x
						}
						v[i] = acc
					}
					store(ob, o[1]+k*ost, ost, v)
				}
			})
		})
		return
	}
	// lines interleaved in memory (scanning a leading axis): a row of
	// accumulators walks the axis, reading and writing rows of the input
	b.parallel(kept.n, max(grainFor(kept.n, n), 64), func(lo, hi int) {
		acc := make([]A, blk)
		row := make([]A, blk)
		kept.rows(lo, hi, func(o offsets, cnt int) {
			for cnt > 0 {
				m := min(cnt, blk)
				a, v := acc[:m], row[:m]
				fillSlice(a, identity[A](op))
				for k := range n {
					load(xb, o[0]+k*xst, ks, v)
					for i, x := range v {
						if op == backends.Prod {
							a[i] *= x
						} else {
							a[i] += x
						}
					}
					store(ob, o[1]+k*ost, kept.inner[1], a)
				}
				o[0] += m * ks
				o[1] += m * kept.inner[1]
				cnt -= m
			}
		})
	})
}
