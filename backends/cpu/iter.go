package cpu

import "github.com/kiln-ml/kiln/backends"

// maxViews is the most views one loop walks together (Where has four).
const maxViews = 4

// offsets holds the element offset of each view of a loop.
type offsets [maxViews]int

// loop walks a shape in row-major order for up to maxViews views at once,
// one run of the innermost dimension at a time, so kernels can run a tight
// inner loop with fixed strides instead of calling a function per element.
// Dimensions of size 1 are dropped and adjacent dimensions that every view
// walks contiguously (with respect to each other) are merged, so a
// contiguous tensor, or a contiguous tensor plus a broadcast scalar, is one
// long row.
type loop struct {
	shape   []int            // coalesced; at least one dimension unless n == 0
	strides [maxViews][]int  // per view, per coalesced dimension
	base    offsets          // view offsets
	inner   [maxViews]int    // stride of each view along the innermost dimension
	nv      int              // number of views
	n       int              // number of elements
	rowLen  int              // length of the innermost dimension
	scratch [2 * 8]int       // backing store for small shapes
	buf     [maxViews][8]int // backing store for small stride lists
}

// newLoop prepares a walk over shape for views (all of that shape).
func newLoop(shape []int, views ...backends.View) *loop {
	l := &loop{nv: len(views), n: backends.NumElements(shape)}
	for v, vw := range views {
		l.base[v] = vw.Offset
	}
	if l.n == 0 {
		return l
	}
	// keep the dimensions of size > 1, merging an outer dimension into the
	// one inside it when every view steps over it as one block
	dims := l.scratch[:0]
	for v := range views {
		l.strides[v] = l.buf[v][:0]
	}
	for d, s := range shape {
		if s == 1 {
			continue
		}
		if k := len(dims) - 1; k >= 0 {
			merge := true
			for v, vw := range views {
				if l.strides[v][k] != vw.Strides[d]*s {
					merge = false
					break
				}
			}
			if merge {
				dims[k] *= s
				for v, vw := range views {
					l.strides[v][k] = vw.Strides[d]
				}
				continue
			}
		}
		dims = append(dims, s)
		for v, vw := range views {
			l.strides[v] = append(l.strides[v], vw.Strides[d])
		}
	}
	if len(dims) == 0 { // every dimension is 1
		dims = append(dims, 1)
		for v := range views {
			l.strides[v] = append(l.strides[v], 0)
		}
	}
	l.shape = dims
	r := len(dims)
	l.rowLen = dims[r-1]
	for v := range views {
		l.inner[v] = l.strides[v][r-1]
	}
	return l
}

// rows calls fn for every run of the innermost dimension that lies in the
// flat (row-major) element range [lo, hi), with the offsets of each view at
// the run's first element and the run's length. Consecutive elements of a
// run are l.inner[v] apart in view v.
func (l *loop) rows(lo, hi int, fn func(o offsets, n int)) {
	if lo >= hi {
		return
	}
	r := len(l.shape)
	var idxBuf [8]int
	var idx []int
	if r <= len(idxBuf) {
		idx = idxBuf[:r]
	} else {
		idx = make([]int, r)
	}
	o := l.base
	k := lo
	for d := r - 1; d >= 0; d-- {
		s := l.shape[d]
		i := k % s
		k /= s
		idx[d] = i
		for v := 0; v < l.nv; v++ {
			o[v] += i * l.strides[v][d]
		}
	}
	rem := hi - lo
	for {
		cnt := min(l.rowLen-idx[r-1], rem)
		fn(o, cnt)
		rem -= cnt
		if rem == 0 {
			return
		}
		// back to the start of the row, then step the outer dimensions
		for v := 0; v < l.nv; v++ {
			o[v] -= idx[r-1] * l.inner[v]
		}
		idx[r-1] = 0
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			for v := 0; v < l.nv; v++ {
				o[v] += l.strides[v][d]
			}
			if idx[d] < l.shape[d] {
				break
			}
			for v := 0; v < l.nv; v++ {
				o[v] -= l.strides[v][d] * l.shape[d]
			}
			idx[d] = 0
		}
	}
}

// each calls fn for every element in the flat range [lo, hi), in row-major
// order, with the element offset of each view. It is for kernels whose work
// per element dwarfs a function call (sorting, index checks).
func (l *loop) each(lo, hi int, fn func(o offsets)) {
	l.rows(lo, hi, func(o offsets, n int) {
		for range n {
			fn(o)
			for v := 0; v < l.nv; v++ {
				o[v] += l.inner[v]
			}
		}
	})
}
