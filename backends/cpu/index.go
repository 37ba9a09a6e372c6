package cpu

import (
	"fmt"
	"math"
	"sort"
	"sync/atomic"

	"github.com/kiln-ml/kiln/backends"
)

// Sort implements backends.Backend: a stable sort with NaN ordered above
// every number, as in PyTorch. Keys compare as float64; integer values are
// copied exactly.
func (b *Backend) Sort(values, indices, x backends.View, axis int, descending bool) {
	if !b.checkAxis("sort", axis, len(x.Shape)) || !b.checkSame("sort", x, values, indices) ||
		!b.checkDType("sort", "indices", indices, backends.Int64) {
		return
	}
	var kShape, kX, kV, kI []int
	for d, s := range x.Shape {
		if d != axis {
			kShape = append(kShape, s)
			kX = append(kX, x.Strides[d])
			kV = append(kV, values.Strides[d])
			kI = append(kI, indices.Strides[d])
		}
	}
	kept := newLoop(kShape, backends.View{Strides: kX, Offset: x.Offset},
		backends.View{Strides: kV, Offset: values.Offset}, backends.View{Strides: kI, Offset: indices.Offset})
	n, xs, vs, is := x.Shape[axis], x.Strides[axis], values.Strides[axis], indices.Strides[axis]
	xb, vb := buf(x), buf(values)
	idx := buf(indices).i64()
	intCopy := isIntLike(x.DType)
	less := func(a, c float64) bool {
		if math.IsNaN(a) {
			return false
		}
		return math.IsNaN(c) || a < c
	}
	b.parallel(kept.n, grainFor(kept.n, n*16), func(lo, hi int) {
		keys := make([]float64, n)
		ints := make([]int64, n)
		perm := make([]int, n)
		tmpF := make([]float64, n)
		tmpI := make([]int64, n)
		tmpX := make([]int64, n)
		kept.each(lo, hi, func(o offsets) {
			loadF64(xb, o[0], xs, keys)
			if intCopy {
				loadI64(xb, o[0], xs, ints)
			}
			for k := range perm {
				perm[k] = k
			}
			sort.SliceStable(perm, func(i, j int) bool {
				if descending {
					return less(keys[perm[j]], keys[perm[i]])
				}
				return less(keys[perm[i]], keys[perm[j]])
			})
			for k, p := range perm {
				tmpX[k] = int64(p)
				if intCopy {
					tmpI[k] = ints[p]
				} else {
					tmpF[k] = keys[p]
				}
			}
			if intCopy {
				storeI64(vb, o[1], vs, tmpI)
			} else {
				storeF64(vb, o[1], vs, tmpF)
			}
			for k, p := range tmpX {
				idx[o[2]+k*is] = p
			}
		})
	})
}

// elementCopier returns a function copying one element from x to out at
// element offsets: bits for equal dtypes, else exact integers or float64.
func elementCopier(out, x backends.View) func(o, i int) {
	ob, xb := buf(out), buf(x)
	if out.DType == x.DType {
		switch out.DType.Size() {
		case 1:
			return rawCopier[uint8](ob, xb)
		case 2:
			return rawCopier[uint16](ob, xb)
		case 4:
			return rawCopier[uint32](ob, xb)
		default:
			return rawCopier[uint64](ob, xb)
		}
	}
	if isIntLike(out.DType) && isIntLike(x.DType) {
		return func(o, i int) {
			var t [1]int64
			loadI64(xb, i, 1, t[:])
			storeI64(ob, o, 1, t[:])
		}
	}
	return func(o, i int) {
		var t [1]float64
		loadF64(xb, i, 1, t[:])
		storeF64(ob, o, 1, t[:])
	}
}

// rawCopier copies one element's bits from xb to ob at element offsets.
func rawCopier[T elems](ob, xb *buffer) func(o, i int) {
	os, xs := rawElems[T](ob), rawElems[T](xb)
	return func(o, i int) { os[o] = xs[i] }
}

// Gather implements backends.Backend. An index out of range is reported,
// sticky, at the next Sync; the element is left unwritten.
func (b *Backend) Gather(out, x, index backends.View, axis int) {
	if !b.checkIndexed("gather", out, x, index, axis, out.Shape) {
		return
	}
	is := buf(index).i64()
	n := x.Shape[axis]
	xv := x
	xv.Strides = append([]int(nil), x.Strides...)
	xv.Strides[axis] = 0 // the index supplies this coordinate
	step := x.Strides[axis]
	copyElem := elementCopier(out, x)
	var bad atomic.Bool
	var badIndex atomic.Int64
	l := newLoop(out.Shape, out, xv, index)
	b.parallel(l.n, grainFor(l.n, 4), func(lo, hi int) {
		l.each(lo, hi, func(o offsets) {
			k := is[o[2]]
			if k < 0 {
				k += int64(n)
			}
			if k < 0 || k >= int64(n) {
				badIndex.Store(is[o[2]])
				bad.Store(true)
				return
			}
			copyElem(o[0], o[1]+int(k)*step)
		})
	})
	if bad.Load() {
		b.fail(fmt.Errorf("cpu: gather: index %d out of range for axis %d of size %d", badIndex.Load(), axis, n))
	}
}

// Scatter implements backends.Backend. It runs on one goroutine so that
// duplicate indices resolve (last write wins, or accumulate) in row-major
// order of src, reproducibly. Accumulation rounds to out's dtype at every
// step (float32 adds for Float32), exactly for integers.
func (b *Backend) Scatter(out, index, src backends.View, axis int, add bool) {
	if !b.checkIndexed("scatter", src, out, index, axis, src.Shape) {
		return
	}
	is := buf(index).i64()
	n := out.Shape[axis]
	ov := out
	ov.Strides = append([]int(nil), out.Strides...)
	ov.Strides[axis] = 0
	step := out.Strides[axis]
	var bad int64 = -1
	var put func(p, s int)
	switch {
	case !add:
		put = elementCopier(out, src)
	case out.DType == backends.Float32 && src.DType == backends.Float32:
		os, ss := buf(out).f32(), buf(src).f32()
		put = func(p, s int) { os[p] += ss[s] }
	case out.DType == backends.Float64 && src.DType == backends.Float64:
		os, ss := buf(out).f64(), buf(src).f64()
		put = func(p, s int) { os[p] += ss[s] }
	case out.DType == backends.Int64 && src.DType == backends.Int64:
		os, ss := buf(out).i64(), buf(src).i64()
		put = func(p, s int) { os[p] += ss[s] }
	case isIntLike(out.DType) && isIntLike(src.DType):
		ob, sb := buf(out), buf(src)
		put = func(p, s int) {
			var a, c [1]int64
			loadI64(ob, p, 1, a[:])
			loadI64(sb, s, 1, c[:])
			a[0] += c[0]
			storeI64(ob, p, 1, a[:])
		}
	default:
		ob, sb := buf(out), buf(src)
		put = func(p, s int) {
			var a, c [1]float64
			loadF64(ob, p, 1, a[:])
			loadF64(sb, s, 1, c[:])
			a[0] += c[0]
			storeF64(ob, p, 1, a[:])
		}
	}
	l := newLoop(src.Shape, ov, index, src)
	l.each(0, l.n, func(o offsets) {
		k := is[o[1]]
		if k < 0 {
			k += int64(n)
		}
		if k < 0 || k >= int64(n) {
			bad = is[o[1]]
			return
		}
		put(o[0]+int(k)*step, o[2])
	})
	if bad != -1 {
		b.fail(fmt.Errorf("cpu: scatter: index %d out of range for axis %d of size %d", bad, axis, n))
	}
}
