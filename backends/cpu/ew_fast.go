package cpu

import "github.com/kiln-ml/kiln/backends"

// Contiguous element-wise fast path. When every view of a float32/float64
// arithmetic op is one contiguous run (or a broadcast scalar), the op runs
// over large chunks of the flat range instead of the 512-element rows of
// the general driver, through the vector kernels where the build has them
// (ew_amd64.go) and the typed Go loops otherwise. Chunking cannot change
// results: each element is computed on its own.

// ewMinChunk is the smallest chunk handed to another worker (elements):
// below it the hand-off costs more than the work.
const ewMinChunk = 1 << 16

// flatRun reports whether the loop is a single run in which each view
// steps by 1, or by 0 (a broadcast scalar) where scalarOK[v].
func flatRun(l *loop, scalarOK ...bool) bool {
	if l.n == 0 || len(l.shape) != 1 {
		return false
	}
	for v := range l.nv {
		switch l.inner[v] {
		case 1:
		case 0:
			if v == 0 || !scalarOK[v] {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// ewGrain is the chunk size for n elements on the backend's workers: one
// chunk per worker and a half, at least ewMinChunk, a multiple of 64.
func (b *Backend) ewGrain(n int) int {
	g := max(ewMinChunk, n/max(1, 2*b.workers))
	return roundUp(g, 64)
}

// binaryFlat runs op over contiguous views (see flatRun), reporting false
// when they are not.
func binaryFlat[T float](b *Backend, op backends.BinaryOp, views []backends.View, os, xs, ys []T) bool {
	if !typedFloatOp(op) || len(views) != 3 {
		return false
	}
	l := newLoop(views[0].Shape, views...)
	if !flatRun(l, false, true, true) || l.inner[1] == 0 && l.inner[2] == 0 {
		return false
	}
	o0, x0, y0 := l.base[0], l.base[1], l.base[2]
	xv, yv := l.inner[1] == 1, l.inner[2] == 1
	nt := l.n*int(sizeOf[T]()) >= ntBytes
	b.parallel(l.n, b.ewGrain(l.n), func(lo, hi int) {
		o := os[o0+lo : o0+hi]
		x, y := xs[x0:x0+1], ys[y0:y0+1]
		if xv {
			x = xs[x0+lo : x0+hi]
		}
		if yv {
			y = ys[y0+lo : y0+hi]
		}
		if !ewVector(op, o, x, y, nt) {
			binaryFloat(op, o, x, y)
		}
	})
	return true
}

// binaryScalarFlat runs x op s (s op x when reverse) over a contiguous
// run, reporting false when the views are not one.
func binaryScalarFlat[T float](b *Backend, op backends.BinaryOp, views []backends.View, os, xs []T, s T, reverse bool) bool {
	if !typedFloatOp(op) {
		return false
	}
	l := newLoop(views[0].Shape, views...)
	if !flatRun(l, false, false) {
		return false
	}
	o0, x0 := l.base[0], l.base[1]
	sv := []T{s}
	nt := l.n*int(sizeOf[T]()) >= ntBytes
	b.parallel(l.n, b.ewGrain(l.n), func(lo, hi int) {
		o, x := os[o0+lo:o0+hi], xs[x0+lo:x0+hi]
		a, c := x, sv
		if reverse {
			a, c = sv, x
		}
		if !ewVector(op, o, a, c, nt) {
			binaryFloat(op, o, a, c)
		}
	})
	return true
}

// copyFlat copies a contiguous run in large chunks (the runtime's copy
// streams chunks of 1 MiB or more past the caches), or fills one from a
// broadcast scalar (fill): element by element that ran at 1.3 Gelem/s and
// took 6% of the MNIST CNN conv2 benchmark's time on one thread, for the
// gradient of its loss, a sum.
func copyFlat[T elems](b *Backend, l *loop, os, xs []T) bool {
	if !flatRun(l, false, true) {
		return false
	}
	o0, x0 := l.base[0], l.base[1]
	if l.inner[1] == 0 { // a broadcast scalar (the gradient of a sum, say)
		v := xs[x0]
		b.parallel(l.n, b.ewGrain(l.n), func(lo, hi int) { fill(os[o0+lo:o0+hi], v) })
		return true
	}
	b.parallel(l.n, b.ewGrain(l.n), func(lo, hi int) {
		copy(os[o0+lo:o0+hi], xs[x0+lo:x0+hi])
	})
	return true
}

// fill sets every element of d to v: one store, then copies of what is
// filled so far (runtime.memmove's wide stores), doubling up to a block
// that stays in L1, and then that block over and over.
func fill[T any](d []T, v T) {
	const block = 2048 // elements: 8 KiB of float32
	n := min(len(d), block)
	if n == 0 {
		return
	}
	d[0] = v
	for k := 1; k < n; k *= 2 {
		copy(d[k:n], d[:k])
	}
	for k := n; k < len(d); k += n {
		copy(d[k:], d[:n])
	}
}

func sizeOf[T float]() uintptr {
	var z T
	if _, ok := any(z).(float32); ok {
		return 4
	}
	return 8
}

// ewVector runs op with a vector kernel when there is one for T and op,
// reporting false otherwise.
func ewVector[T float](op backends.BinaryOp, o, a, c []T, nt bool) bool {
	if of, ok := any(o).([]float32); ok {
		return ewF32(op, of, any(a).([]float32), any(c).([]float32), nt)
	}
	return false
}
