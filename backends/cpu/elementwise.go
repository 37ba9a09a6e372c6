package cpu

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// blk is the number of elements a row is processed in at a time when it has
// to go through scratch (a strided operand, a dtype conversion): small
// enough to stay in L1, large enough to amortise the call.
const blk = 512

// scratch is per-chunk working memory for the element-wise drivers.
type scratch struct {
	f64 [3][blk]float64
	f32 [3][blk]float32
	i64 [3][blk]int64
	u8  [blk]uint8
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// rowFn processes one run of n elements; o holds the views' offsets at the
// run's start and st their strides along it.
type rowFn func(sc *scratch, st *[maxViews]int, o offsets, n int)

// elementwise runs fn over every run of the innermost (coalesced) dimension
// of shape across the workers, in chunks of a fixed number of elements.
// cost is roughly the cost of one element in simple operations.
func (b *Backend) elementwise(shape []int, cost int, views []backends.View, fn rowFn) {
	l := newLoop(shape, views...)
	if l.n == 0 {
		return
	}
	st := l.inner
	b.parallel(l.n, grainFor(l.n, cost), func(lo, hi int) {
		sc := scratches.Get().(*scratch)
		l.rows(lo, hi, func(o offsets, n int) {
			for n > 0 { // in blocks, so that scratch rows suffice
				m := min(n, blk)
				fn(sc, &st, o, m)
				for v := range l.nv {
					o[v] += m * st[v]
				}
				n -= m
			}
		})
		scratches.Put(sc)
	})
}

// inRow returns m elements of s from off with stride st as a slice: the
// elements themselves when st is 1, one element when st is 0 (a broadcast
// scalar), else a gathered copy in tmp.
func inRow[T any](s []T, off, st, m int, tmp []T) []T {
	switch st {
	case 1:
		return s[off : off+m]
	case 0:
		return s[off : off+1]
	}
	tmp = tmp[:m]
	for i := range tmp {
		tmp[i] = s[off+i*st]
	}
	return tmp
}

// gatherRow returns m elements of s from off with stride st (0 repeats one).
func gatherRow[T any](s []T, off, st, m int, tmp []T) []T {
	if st == 1 {
		return s[off : off+m]
	}
	tmp = tmp[:m]
	for i := range tmp {
		tmp[i] = s[off+i*st]
	}
	return tmp
}

// outRow returns where to compute m output elements: in place when st is 1,
// else in tmp (then scatterRow writes them back).
func outRow[T any](s []T, off, st, m int, tmp []T) []T {
	if st == 1 {
		return s[off : off+m]
	}
	return tmp[:m]
}

// scatterRow writes v to s from off with stride st unless v is already there.
func scatterRow[T any](s []T, off, st int, v []T) {
	if st == 1 {
		return
	}
	for i, x := range v {
		s[off+i*st] = x
	}
}

// inF64 loads a row operand of any dtype as float64 (one element for st 0).
func inF64(b *buffer, off, st, m int, tmp []float64) []float64 {
	if st == 0 {
		m = 1
	}
	if b.dtype == backends.Float64 && st == 1 {
		return b.f64()[off : off+m]
	}
	loadF64(b, off, st, tmp[:m])
	return tmp[:m]
}

// inI64 loads a row operand of an integer dtype as int64 (one element for st 0).
func inI64(b *buffer, off, st, m int, tmp []int64) []int64 {
	if st == 0 {
		m = 1
	}
	if b.dtype == backends.Int64 && st == 1 {
		return b.i64()[off : off+m]
	}
	loadI64(b, off, st, tmp[:m])
	return tmp[:m]
}

// storeU8 writes 0/1 predicate results into b (Bool normally).
func storeU8(b *buffer, off, st int, v []uint8, tmp []float64) {
	if b.dtype == backends.Bool || b.dtype == backends.Uint8 {
		s := b.u8()
		if st == 1 {
			copy(s[off:off+len(v)], v)
			return
		}
		for i, x := range v {
			s[off+i*st] = x
		}
		return
	}
	tmp = tmp[:len(v)]
	for i, x := range v {
		tmp[i] = float64(x)
	}
	storeF64(b, off, st, tmp)
}

// elems views a buffer as a slice of its element size, for kernels that
// move elements without interpreting them (Copy, Fill, Where).
type elems interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

// rawElems views b's elements as T, which must have their size.
func rawElems[T elems](b *buffer) []T {
	size := int(unsafe.Sizeof(*new(T)))
	return elemsOf[T](b, fmt.Sprintf("%d-byte", size), b.dtype.Size() == size)
}

// Fill implements backends.Backend. v is converted to out's dtype once
// (as a store of v would), then its bits are replicated.
func (b *Backend) Fill(out backends.View, v float64) {
	if !b.checkElementwise("fill", out) {
		return
	}
	one := newBuffer(out.DType, 1)
	storeF64(one, 0, 1, []float64{v})
	switch out.DType.Size() {
	case 1:
		fillRaw(b, out, rawElems[uint8](one)[0])
	case 2:
		fillRaw(b, out, rawElems[uint16](one)[0])
	case 4:
		fillRaw(b, out, rawElems[uint32](one)[0])
	case 8:
		fillRaw(b, out, rawElems[uint64](one)[0])
	}
}

func fillRaw[T elems](b *Backend, out backends.View, v T) {
	s := rawElems[T](buf(out))
	if l := newLoop(out.Shape, out); fillFlat && flatRun(l, false) {
		// one run (a new gradient's zeros, say): large parallel chunks
		// stored with memclr or memmove rather than one element at a
		// time, in 512-element calls, as the general driver does
		o0 := l.base[0]
		b.parallel(l.n, b.ewGrain(l.n), func(lo, hi int) { fillRun(s[o0+lo:o0+hi], v) })
		return
	}
	b.elementwise(out.Shape, 1, []backends.View{out}, func(_ *scratch, st *[maxViews]int, o offsets, n int) {
		if st[0] == 1 {
			d := s[o[0] : o[0]+n]
			for i := range d {
				d[i] = v
			}
			return
		}
		for i := range n {
			s[o[0]+i*st[0]] = v
		}
	})
}

// fillFlat enables fillRun for contiguous outputs; benchmarks turn it off
// to compare with the general driver.
var fillFlat = true

// fillRun sets every element of d to the bits v: zeros with the runtime's
// memclr, anything else by copying the filled prefix onto the rest
// (memmove, in doubling steps up to 4096 elements), both far faster than
// a store per element.
func fillRun[T elems](d []T, v T) {
	var zero T
	if v == zero {
		clear(d)
		return
	}
	if len(d) == 0 {
		return
	}
	d[0] = v
	for k := 1; k < len(d); { // sources of at most 16 KiB stay in L1
		k += copy(d[k:], d[:min(k, 4096)])
	}
}

// Copy implements backends.Backend. Equal dtypes copy bits; integer to
// integer conversions are exact; everything else converts through float64
// (see convert.go).
func (b *Backend) Copy(out, x backends.View) {
	if !b.checkElementwise("copy", out, x) {
		return
	}
	views := []backends.View{out, x}
	ob, xb := buf(out), buf(x)
	if out.DType == x.DType {
		switch out.DType.Size() {
		case 1:
			copyRaw[uint8](b, out, x)
		case 2:
			copyRaw[uint16](b, out, x)
		case 4:
			copyRaw[uint32](b, out, x)
		case 8:
			copyRaw[uint64](b, out, x)
		}
		return
	}
	if isIntLike(out.DType) && isIntLike(x.DType) {
		b.elementwise(out.Shape, 2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
			t := sc.i64[0][:n]
			loadI64(xb, o[1], st[1], t)
			storeI64(ob, o[0], st[0], t)
		})
		return
	}
	if out.DType == backends.Float32 && x.DType.IsFloat() {
		b.elementwise(out.Shape, 2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
			if st[0] == 1 { // exact for halves; float64 rounds like a store
				loadF32(xb, o[1], st[1], ob.f32()[o[0]:o[0]+n])
				return
			}
			t := sc.f32[0][:n]
			loadF32(xb, o[1], st[1], t)
			storeF32(ob, o[0], st[0], t)
		})
		return
	}
	if x.DType == backends.Float32 && out.DType.IsFloat() && out.DType != backends.Float64 {
		b.elementwise(out.Shape, 2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
			t := gatherRow(xb.f32(), o[1], st[1], n, sc.f32[0][:])
			storeF32(ob, o[0], st[0], t)
		})
		return
	}
	b.elementwise(out.Shape, 2, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		t := sc.f64[0][:n]
		loadF64(xb, o[1], st[1], t)
		storeF64(ob, o[0], st[0], t)
	})
}

func copyRaw[T elems](b *Backend, out, x backends.View) {
	os, xs := rawElems[T](buf(out)), rawElems[T](buf(x))
	l := newLoop(out.Shape, out, x)
	if transposing(l) {
		copyTiled(b, l, os, xs)
		return
	}
	if copyFlat(b, l, os, xs) {
		return
	}
	b.elementwise(out.Shape, 1, []backends.View{out, x}, func(_ *scratch, st *[maxViews]int, o offsets, n int) {
		switch {
		case st[0] == 1 && st[1] == 1:
			copy(os[o[0]:o[0]+n], xs[o[1]:o[1]+n])
		case st[0] == 1:
			d := os[o[0] : o[0]+n]
			for i := range d {
				d[i] = xs[o[1]+i*st[1]]
			}
		default:
			for i := range n {
				os[o[0]+i*st[0]] = xs[o[1]+i*st[1]]
			}
		}
	})
}

// Where implements backends.Backend. With equal dtypes it selects bits;
// otherwise integer outputs select exact int64 values and float outputs
// float64 values.
func (b *Backend) Where(out, cond, x, y backends.View) {
	if !b.checkElementwise("where", out, cond, x, y) || !b.checkDType("where", "condition", cond, backends.Bool) {
		return
	}
	views := []backends.View{out, cond, x, y}
	if out.DType == x.DType && out.DType == y.DType {
		switch out.DType.Size() {
		case 1:
			whereRaw[uint8](b, views)
		case 2:
			whereRaw[uint16](b, views)
		case 4:
			whereRaw[uint32](b, views)
		case 8:
			whereRaw[uint64](b, views)
		}
		return
	}
	ob, xb, yb := buf(out), buf(x), buf(y)
	cs := buf(cond).u8()
	if isIntLike(out.DType) {
		b.elementwise(out.Shape, 3, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
			xs, ys, t := sc.i64[0][:n], sc.i64[1][:n], sc.i64[2][:n]
			loadI64(xb, o[2], st[2], xs)
			loadI64(yb, o[3], st[3], ys)
			for i := range t {
				if cs[o[1]+i*st[1]] != 0 {
					t[i] = xs[i]
				} else {
					t[i] = ys[i]
				}
			}
			storeI64(ob, o[0], st[0], t)
		})
		return
	}
	b.elementwise(out.Shape, 3, views, func(sc *scratch, st *[maxViews]int, o offsets, n int) {
		xs, ys, t := sc.f64[0][:n], sc.f64[1][:n], sc.f64[2][:n]
		loadF64(xb, o[2], st[2], xs)
		loadF64(yb, o[3], st[3], ys)
		for i := range t {
			if cs[o[1]+i*st[1]] != 0 {
				t[i] = xs[i]
			} else {
				t[i] = ys[i]
			}
		}
		storeF64(ob, o[0], st[0], t)
	})
}

func whereRaw[T elems](b *Backend, views []backends.View) {
	os, cs := rawElems[T](buf(views[0])), buf(views[1]).u8()
	xs, ys := rawElems[T](buf(views[2])), rawElems[T](buf(views[3]))
	b.elementwise(views[0].Shape, 2, views, func(_ *scratch, st *[maxViews]int, o offsets, n int) {
		if st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1 {
			d, c, a, e := os[o[0]:o[0]+n], cs[o[1]:o[1]+n], xs[o[2]:o[2]+n], ys[o[3]:o[3]+n]
			for i := range d {
				if c[i] != 0 {
					d[i] = a[i]
				} else {
					d[i] = e[i]
				}
			}
			return
		}
		for i := range n {
			if cs[o[1]+i*st[1]] != 0 {
				os[o[0]+i*st[0]] = xs[o[2]+i*st[2]]
			} else {
				os[o[0]+i*st[0]] = ys[o[3]+i*st[3]]
			}
		}
	})
}

// transposing reports whether a copy's input walks its second-innermost
// dimension faster than its innermost one while the output is contiguous
// in the innermost: a transpose, which copyTiled does in cache-sized tiles.
func transposing(l *loop) bool {
	r := len(l.shape)
	if r < 2 || l.inner[0] != 1 || l.rowLen < 16 || l.shape[r-2] < 16 {
		return false
	}
	return abs(l.strides[1][r-2]) < abs(l.inner[1])
}

// copyTiled copies the last two dimensions of l in 64×64 tiles, so that the
// input's cache lines are reused across a tile instead of being fetched
// once per element. Tiles (and the outer dimensions) run in parallel.
func copyTiled[T elems](b *Backend, l *loop, os, xs []T) {
	const tile = 64
	r := len(l.shape)
	rows, cols := l.shape[r-2], l.shape[r-1]
	ors, xrs, xcs := l.strides[0][r-2], l.strides[1][r-2], l.inner[1]
	outer := newLoop(l.shape[:r-2], backends.View{Strides: l.strides[0][:r-2], Offset: l.base[0]},
		backends.View{Strides: l.strides[1][:r-2], Offset: l.base[1]})
	var bases []offsets
	outer.each(0, outer.n, func(o offsets) { bases = append(bases, o) })
	rt, ct := (rows+tile-1)/tile, (cols+tile-1)/tile
	perBase := rt * ct
	b.parallel(len(bases)*perBase, grainFor(len(bases)*perBase, tile*tile), func(lo, hi int) {
		for t := lo; t < hi; t++ {
			o := bases[t/perBase]
			i0, j0 := (t%perBase/ct)*tile, (t%ct)*tile
			i1, j1 := min(i0+tile, rows), min(j0+tile, cols)
			for i := i0; i < i1; i++ {
				d := os[o[0]+i*ors+j0 : o[0]+i*ors+j1]
				src := o[1] + i*xrs + j0*xcs
				for j := range d {
					d[j] = xs[src+j*xcs]
				}
			}
		}
	})
}
