package cpu

import (
	"fmt"
	"math"
	"sort"
	"sync/atomic"

	"github.com/kiln-ml/kiln/backends"
)

// splitAxes reorders x's dimensions into kept ones (in order) followed by
// reduced ones, returning the shapes and strides of both groups.
func splitAxes(x backends.View, axes []int) (keptShape, keptStrides, redShape, redStrides []int) {
	red := make([]bool, len(x.Shape))
	for _, a := range axes {
		red[a] = true
	}
	for d := range x.Shape {
		if red[d] {
			redShape = append(redShape, x.Shape[d])
			redStrides = append(redStrides, x.Strides[d])
		} else {
			keptShape = append(keptShape, x.Shape[d])
			keptStrides = append(keptStrides, x.Strides[d])
		}
	}
	return
}

// dropAxes returns out's strides for the kept dimensions only.
func dropAxes(strides []int, axes []int) []int {
	red := make([]bool, len(strides))
	for _, a := range axes {
		red[a] = true
	}
	var s []int
	for d, st := range strides {
		if !red[d] {
			s = append(s, st)
		}
	}
	return s
}

// reduceInit is the identity of op.
func reduceInit(op backends.ReduceOp) float64 {
	switch op {
	case backends.Prod:
		return 1
	case backends.Max:
		return math.Inf(-1)
	case backends.Min:
		return math.Inf(1)
	}
	return 0
}

// Reduce implements backends.Backend. Sums of floats accumulate in float64
// in a fixed row-major order, so results are reproducible.
func (b *Backend) Reduce(op backends.ReduceOp, out, x backends.View, axes []int) {
	keptShape, keptStrides, redShape, redStrides := splitAxes(x, axes)
	outStrides := dropAxes(out.Strides, axes)
	nOut := backends.NumElements(keptShape)
	nRed := backends.NumElements(redShape)
	xb, ob := buf(x), buf(out)
	intPath := isIntLike(x.DType) && (op == backends.Sum || op == backends.Prod)
	b.parallel(nOut, max(1, (1<<14)/max(nRed, 1)), func(lo, hi int) {
		outer := newStrided(keptShape, backends.View{Strides: keptStrides}, backends.View{Strides: outStrides})
		inner := newStrided(redShape, backends.View{Strides: redStrides})
		if intPath {
			ld, st := xb.intAccessor().load, ob.intAccessor().store
			outer.eachRange([]int{x.Offset, out.Offset}, lo, hi, func(o []int) {
				acc := int64(0)
				if op == backends.Prod {
					acc = 1
				}
				inner.eachRange([]int{o[0]}, 0, nRed, func(i []int) {
					if op == backends.Sum {
						acc += ld(i[0])
					} else {
						acc *= ld(i[0])
					}
				})
				st(o[1], acc)
			})
			return
		}
		ld, st := xb.accessor().load, ob.accessor().store
		outer.eachRange([]int{x.Offset, out.Offset}, lo, hi, func(o []int) {
			acc := reduceInit(op)
			inner.eachRange([]int{o[0]}, 0, nRed, func(i []int) {
				v := ld(i[0])
				switch op {
				case backends.Sum:
					acc += v
				case backends.Prod:
					acc *= v
				case backends.Max:
					if v > acc || math.IsNaN(v) && !math.IsNaN(acc) {
						acc = v
					}
				case backends.Min:
					if v < acc || math.IsNaN(v) && !math.IsNaN(acc) {
						acc = v
					}
				}
			})
			st(o[1], acc)
		})
	})
}

// ArgReduce implements backends.Backend. NaN counts as the maximum and the
// minimum, as in PyTorch; ties resolve to the first index.
func (b *Backend) ArgReduce(op backends.ReduceOp, out, x backends.View, axis int) {
	axes := []int{axis}
	keptShape, keptStrides, _, _ := splitAxes(x, axes)
	outStrides := dropAxes(out.Strides, axes)
	n, step := x.Shape[axis], x.Strides[axis]
	ld := buf(x).accessor().load
	os := buf(out).i64()
	b.parallel(backends.NumElements(keptShape), 1024, func(lo, hi int) {
		it := newStrided(keptShape, backends.View{Strides: keptStrides}, backends.View{Strides: outStrides})
		it.eachRange([]int{x.Offset, out.Offset}, lo, hi, func(o []int) {
			best, bi := ld(o[0]), 0
			for k := 1; k < n && !math.IsNaN(best); k++ {
				v := ld(o[0] + k*step)
				if math.IsNaN(v) || (op == backends.ArgMax && v > best) || (op == backends.ArgMin && v < best) {
					best, bi = v, k
				}
			}
			os[o[1]] = int64(bi)
		})
	})
}

// Scan implements backends.Backend.
func (b *Backend) Scan(op backends.ReduceOp, out, x backends.View, axis int) {
	axes := []int{axis}
	keptShape, keptStrides, _, _ := splitAxes(x, axes)
	outKept := dropAxes(out.Strides, axes)
	n, xs, ost := x.Shape[axis], x.Strides[axis], out.Strides[axis]
	if isIntLike(x.DType) && isIntLike(out.DType) {
		ld, st := buf(x).intAccessor().load, buf(out).intAccessor().store
		b.parallel(backends.NumElements(keptShape), 256, func(lo, hi int) {
			newStrided(keptShape, backends.View{Strides: keptStrides}, backends.View{Strides: outKept}).
				eachRange([]int{x.Offset, out.Offset}, lo, hi, func(o []int) {
					acc := int64(0)
					if op == backends.Prod {
						acc = 1
					}
					for k := 0; k < n; k++ {
						if op == backends.Prod {
							acc *= ld(o[0] + k*xs)
						} else {
							acc += ld(o[0] + k*xs)
						}
						st(o[1]+k*ost, acc)
					}
				})
		})
		return
	}
	ld, st := buf(x).accessor().load, buf(out).accessor().store
	b.parallel(backends.NumElements(keptShape), 256, func(lo, hi int) {
		newStrided(keptShape, backends.View{Strides: keptStrides}, backends.View{Strides: outKept}).
			eachRange([]int{x.Offset, out.Offset}, lo, hi, func(o []int) {
				acc := reduceInit(op)
				for k := 0; k < n; k++ {
					if op == backends.Prod {
						acc *= ld(o[0] + k*xs)
					} else {
						acc += ld(o[0] + k*xs)
					}
					st(o[1]+k*ost, acc)
				}
			})
	})
}

// Sort implements backends.Backend: a stable sort with NaN ordered above
// every number, as in PyTorch.
func (b *Backend) Sort(values, indices, x backends.View, axis int, descending bool) {
	axes := []int{axis}
	keptShape, keptStrides, _, _ := splitAxes(x, axes)
	vKept, iKept := dropAxes(values.Strides, axes), dropAxes(indices.Strides, axes)
	n, xs, vs, is := x.Shape[axis], x.Strides[axis], values.Strides[axis], indices.Strides[axis]
	ld, st := buf(x).accessor().load, buf(values).accessor().store
	idx := buf(indices).i64()
	intCopy := isIntLike(x.DType)
	var ildx func(int) int64
	var istv func(int, int64)
	if intCopy {
		ildx, istv = buf(x).intAccessor().load, buf(values).intAccessor().store
	}
	b.parallel(backends.NumElements(keptShape), 16, func(lo, hi int) {
		keys := make([]float64, n)
		perm := make([]int, n)
		newStrided(keptShape, backends.View{Strides: keptStrides}, backends.View{Strides: vKept}, backends.View{Strides: iKept}).
			eachRange([]int{x.Offset, values.Offset, indices.Offset}, lo, hi, func(o []int) {
				for k := range n {
					keys[k] = ld(o[0] + k*xs)
					perm[k] = k
				}
				less := func(a, c float64) bool {
					if math.IsNaN(a) {
						return false
					}
					return math.IsNaN(c) || a < c
				}
				sort.SliceStable(perm, func(i, j int) bool {
					if descending {
						return less(keys[perm[j]], keys[perm[i]])
					}
					return less(keys[perm[i]], keys[perm[j]])
				})
				for k, p := range perm {
					if intCopy {
						istv(o[1]+k*vs, ildx(o[0]+p*xs))
					} else {
						st(o[1]+k*vs, keys[p])
					}
					idx[o[2]+k*is] = int64(p)
				}
			})
	})
}

// Gather implements backends.Backend.
func (b *Backend) Gather(out, x, index backends.View, axis int) {
	is := buf(index).i64()
	n := x.Shape[axis]
	xv := x
	xv.Strides = append([]int(nil), x.Strides...)
	xv.Strides[axis] = 0 // the index supplies this coordinate
	step := x.Strides[axis]
	copyElem := b.elementCopier(out, x)
	var bad atomic.Bool
	var badIndex atomic.Int64
	b.parallelEach(out.Shape, []backends.View{out, xv, index}, func(o []int) {
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
	if bad.Load() {
		b.fail(fmt.Errorf("cpu: gather: index %d out of range for axis %d of size %d", badIndex.Load(), axis, n))
	}
}

// elementCopier returns a function copying one element from x to out at
// element offsets, exactly for integer types.
func (b *Backend) elementCopier(out, x backends.View) func(o, i int) {
	if out.DType == x.DType {
		sz := out.DType.Size()
		ob, xb := buf(out).bytes, buf(x).bytes
		switch sz {
		case 4:
			os, xs := buf(out).i32(), buf(x).i32()
			return func(o, i int) { os[o] = xs[i] }
		case 8:
			os, xs := buf(out).i64(), buf(x).i64()
			return func(o, i int) { os[o] = xs[i] }
		}
		return func(o, i int) { copy(ob[o*sz:(o+1)*sz], xb[i*sz:(i+1)*sz]) }
	}
	ld, st := buf(x).accessor().load, buf(out).accessor().store
	return func(o, i int) { st(o, ld(i)) }
}

// Scatter implements backends.Backend. It runs on one goroutine so that
// duplicate indices resolve (last write wins, or accumulate) in row-major
// order of src, reproducibly.
func (b *Backend) Scatter(out, index, src backends.View, axis int, add bool) {
	is := buf(index).i64()
	n := out.Shape[axis]
	ov := out
	ov.Strides = append([]int(nil), out.Strides...)
	ov.Strides[axis] = 0
	step := out.Strides[axis]
	var bad int64 = -1
	if add {
		if isIntLike(out.DType) {
			lo, ls, st := buf(out).intAccessor().load, buf(src).intAccessor().load, buf(out).intAccessor().store
			newStrided(src.Shape, ov, index, src).each(func(o []int) {
				k := is[o[1]]
				if k < 0 {
					k += int64(n)
				}
				if k < 0 || k >= int64(n) {
					bad = is[o[1]]
					return
				}
				p := o[0] + int(k)*step
				st(p, lo(p)+ls(o[2]))
			})
		} else {
			lo, ls, st := buf(out).accessor().load, buf(src).accessor().load, buf(out).accessor().store
			newStrided(src.Shape, ov, index, src).each(func(o []int) {
				k := is[o[1]]
				if k < 0 {
					k += int64(n)
				}
				if k < 0 || k >= int64(n) {
					bad = is[o[1]]
					return
				}
				p := o[0] + int(k)*step
				st(p, lo(p)+ls(o[2]))
			})
		}
	} else {
		cp := b.elementCopier(out, src)
		newStrided(src.Shape, ov, index, src).each(func(o []int) {
			k := is[o[1]]
			if k < 0 {
				k += int64(n)
			}
			if k < 0 || k >= int64(n) {
				bad = is[o[1]]
				return
			}
			cp(o[0]+int(k)*step, o[2])
		})
	}
	if bad != -1 {
		b.fail(fmt.Errorf("cpu: scatter: index %d out of range for axis %d of size %d", bad, axis, n))
	}
}
