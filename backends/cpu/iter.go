package cpu

import "github.com/kiln-ml/kiln/backends"

// strided walks the elements of a shape in row-major order, tracking the
// element offset of each of several views at once. It is the generic path of
// every kernel; contiguous fast paths avoid it.
type strided struct {
	shape   []int
	strides [][]int // per view
	offs    []int   // current offset per view
	idx     []int
}

func newStrided(shape []int, views ...backends.View) *strided {
	it := &strided{shape: shape, idx: make([]int, len(shape)), offs: make([]int, len(views))}
	for i, v := range views {
		it.strides = append(it.strides, v.Strides)
		it.offs[i] = v.Offset
	}
	return it
}

// each calls fn once per element with the offsets of every view.
func (it *strided) each(fn func(offs []int)) {
	n := backends.NumElements(it.shape)
	if n == 0 {
		return
	}
	rank := len(it.shape)
	for k := 0; k < n; k++ {
		fn(it.offs)
		// advance the multi-index, innermost first
		for d := rank - 1; d >= 0; d-- {
			it.idx[d]++
			for v := range it.offs {
				it.offs[v] += it.strides[v][d]
			}
			if it.idx[d] < it.shape[d] {
				break
			}
			for v := range it.offs {
				it.offs[v] -= it.strides[v][d] * it.shape[d]
			}
			it.idx[d] = 0
		}
	}
}

// rowsOf splits shape into an outer iteration over all but the last
// dimension; fn receives the offsets of each view at the start of a row. It
// lets kernels run a tight inner loop over the last dimension.
func rowsOf(shape []int, views []backends.View, fn func(offs []int)) {
	if len(shape) == 0 {
		offs := make([]int, len(views))
		for i, v := range views {
			offs[i] = v.Offset
		}
		fn(offs)
		return
	}
	outer := shape[:len(shape)-1]
	vs := make([]backends.View, len(views))
	for i, v := range views {
		vs[i] = backends.View{Strides: v.Strides[:len(v.Strides)-1], Offset: v.Offset}
	}
	newStrided(outer, vs...).each(fn)
}

// seek positions the walk at flat row-major element index k.
func (it *strided) seek(k int) {
	for v := range it.offs {
		it.offs[v] = 0
	}
	for d := len(it.shape) - 1; d >= 0; d-- {
		s := it.shape[d]
		i := 0
		if s > 0 {
			i = k % s
			k /= s
		}
		it.idx[d] = i
		for v := range it.offs {
			it.offs[v] += i * it.strides[v][d]
		}
	}
}

// eachRange calls fn for flat elements [lo, hi) only, with base offsets added.
func (it *strided) eachRange(base []int, lo, hi int, fn func(offs []int)) {
	it.seek(lo)
	for v := range it.offs {
		it.offs[v] += base[v]
	}
	rank := len(it.shape)
	for k := lo; k < hi; k++ {
		fn(it.offs)
		for d := rank - 1; d >= 0; d-- {
			it.idx[d]++
			for v := range it.offs {
				it.offs[v] += it.strides[v][d]
			}
			if it.idx[d] < it.shape[d] {
				break
			}
			for v := range it.offs {
				it.offs[v] -= it.strides[v][d] * it.shape[d]
			}
			it.idx[d] = 0
		}
	}
}

// parallelEach runs fn for every element of shape across the workers, with
// the element offsets of each view.
func (b *Backend) parallelEach(shape []int, views []backends.View, fn func(offs []int)) {
	n := backends.NumElements(shape)
	base := make([]int, len(views))
	for i, v := range views {
		base[i] = v.Offset
	}
	b.parallel(n, 1<<14, func(lo, hi int) {
		it := newStrided(shape, views...)
		it.eachRange(base, lo, hi, fn)
	})
}
