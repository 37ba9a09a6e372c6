package cpu

import (
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Fused layer and RMS normalisation (backends.NormFusion) over the rows of
// x [rows, n]. The forward pass reads each row once for its statistics
// (float64 sums of x − x₀ and (x − x₀)², x₀ the row's first element, so
// that the variance does not cancel catastrophically for rows far from
// zero) and once to write the output. The backward pass reads each row
// once for its two sums and once to write dx; the parameters' gradients
// are summed per chunk of normRows rows into float64 partials, which are
// then added in chunk order, so that nothing depends on the number of
// workers.

// normRows is the rows per chunk of the parameter gradients' partial sums.
const normRows = 32

var _ backends.NormFusion = (*Backend)(nil)

// normArgs holds one call's operands, typed; nil slices are absent.
type normArgs[T float] struct {
	y, mean, rstd, x, w, bias []T
	dx, dw, db, dy            []T
	rows, n                   int
	eps                       float64
	rms                       bool
	partW, partB              []float64 // backward: per-chunk partial sums of dw and db
	chunks                    int
}

// normView returns v's elements from its offset, n of them, or nil for an
// absent view.
func normView[T float](v backends.View, n int) []T {
	if v.Buf == nil {
		return nil
	}
	return attnData[T](v)[v.Offset:][:n]
}

// checkNorm checks a normalisation kernel's views: x [rows, n] (2-D), the
// others contiguous, of x's dtype and of the shapes given (the optional
// ones only when present).
func (b *Backend) checkNorm(op string, x backends.View, views []backends.View, names []string, rowShaped []bool) (rows, n int, ok bool) {
	if len(x.Shape) != 2 {
		return 0, 0, b.refuse(op, "x: shape %v (want [rows, n])", x.Shape)
	}
	rows, n = x.Shape[0], x.Shape[1]
	var vs []backends.View
	var ns []string
	var shapes [][]int
	for i, v := range views {
		if v.Buf == nil {
			continue
		}
		vs, ns = append(vs, v), append(ns, names[i])
		switch {
		case names[i] == "x" || names[i] == "y" || names[i] == "dx" || names[i] == "dy":
			shapes = append(shapes, []int{rows, n})
		case rowShaped[i]:
			shapes = append(shapes, []int{rows})
		default:
			shapes = append(shapes, []int{n})
		}
	}
	if !b.checkFused(op, x, vs, ns, shapes) {
		return 0, 0, false
	}
	return rows, n, true
}

// LayerNormForward implements backends.NormFusion.
func (b *Backend) LayerNormForward(y, mean, rstd, x, weight, bias backends.View, eps float64) {
	views := []backends.View{y, mean, rstd, x, weight, bias}
	rows, n, ok := b.checkNorm("layer norm", x, views, []string{"y", "mean", "rstd", "x", "weight", "bias"},
		[]bool{false, true, true, false, false, false})
	if !ok {
		return
	}
	if mean.Buf == nil || rstd.Buf == nil || y.Buf == nil {
		b.refuse("layer norm", "y, mean and rstd are required")
		return
	}
	switch x.DType {
	case backends.Float32:
		normForward(b, newNormArgs[float32](views, nil, rows, n, eps, false))
	case backends.Float64:
		normForward(b, newNormArgs[float64](views, nil, rows, n, eps, false))
	}
}

// RMSNormForward implements backends.NormFusion.
func (b *Backend) RMSNormForward(y, rstd, x, weight backends.View, eps float64) {
	views := []backends.View{y, {}, rstd, x, weight, {}}
	rows, n, ok := b.checkNorm("rms norm", x, views, []string{"y", "mean", "rstd", "x", "weight", "bias"},
		[]bool{false, true, true, false, false, false})
	if !ok {
		return
	}
	if rstd.Buf == nil || y.Buf == nil {
		b.refuse("rms norm", "y and rstd are required")
		return
	}
	switch x.DType {
	case backends.Float32:
		normForward(b, newNormArgs[float32](views, nil, rows, n, eps, true))
	case backends.Float64:
		normForward(b, newNormArgs[float64](views, nil, rows, n, eps, true))
	}
}

// LayerNormBackward implements backends.NormFusion.
func (b *Backend) LayerNormBackward(dx, dweight, dbias, dy, x, mean, rstd, weight backends.View) {
	fwd := []backends.View{{}, mean, rstd, x, weight, {}}
	grads := []backends.View{dx, dweight, dbias, dy}
	rows, n, ok := b.checkNorm("layer norm grad", x, append(fwd, grads...),
		[]string{"y", "mean", "rstd", "x", "weight", "bias", "dx", "dweight", "dbias", "dy"},
		[]bool{false, true, true, false, false, false, false, false, false, false})
	if !ok {
		return
	}
	if mean.Buf == nil || rstd.Buf == nil || dy.Buf == nil {
		b.refuse("layer norm grad", "dy, mean and rstd are required")
		return
	}
	switch x.DType {
	case backends.Float32:
		normBackward(b, newNormArgs[float32](fwd, grads, rows, n, 0, false))
	case backends.Float64:
		normBackward(b, newNormArgs[float64](fwd, grads, rows, n, 0, false))
	}
}

// RMSNormBackward implements backends.NormFusion.
func (b *Backend) RMSNormBackward(dx, dweight, dy, x, rstd, weight backends.View) {
	fwd := []backends.View{{}, {}, rstd, x, weight, {}}
	grads := []backends.View{dx, dweight, {}, dy}
	rows, n, ok := b.checkNorm("rms norm grad", x, append(fwd, grads...),
		[]string{"y", "mean", "rstd", "x", "weight", "bias", "dx", "dweight", "dbias", "dy"},
		[]bool{false, true, true, false, false, false, false, false, false, false})
	if !ok {
		return
	}
	if rstd.Buf == nil || dy.Buf == nil {
		b.refuse("rms norm grad", "dy and rstd are required")
		return
	}
	switch x.DType {
	case backends.Float32:
		normBackward(b, newNormArgs[float32](fwd, grads, rows, n, 0, true))
	case backends.Float64:
		normBackward(b, newNormArgs[float64](fwd, grads, rows, n, 0, true))
	}
}

// newNormArgs types the views fwd (y, mean, rstd, x, weight, bias) and
// grads (dx, dweight, dbias, dy; nil in the forward pass).
func newNormArgs[T float](fwd, grads []backends.View, rows, n int, eps float64, rms bool) *normArgs[T] {
	a := &normArgs[T]{rows: rows, n: n, eps: eps, rms: rms,
		y: normView[T](fwd[0], rows*n), mean: normView[T](fwd[1], rows), rstd: normView[T](fwd[2], rows),
		x: normView[T](fwd[3], rows*n), w: normView[T](fwd[4], n), bias: normView[T](fwd[5], n)}
	if grads != nil {
		a.dx, a.dw, a.db, a.dy = normView[T](grads[0], rows*n), normView[T](grads[1], n), normView[T](grads[2], n),
			normView[T](grads[3], rows*n)
	}
	return a
}

// Vector kernels for float32 rows, set where the CPU has them
// (norm_amd64.go); they sum in float32 lanes, in two passes for the
// variance, and the parameters' per-chunk partial gradients in float32.
var (
	// normRowF32 normalises x into y (w and b hold n values) and returns
	// the row's mean (0 with rms) and rstd.
	normRowF32 func(y, x, w, b []float32, eps float32, rms bool) (mean, rstd float32)
	// normGradRowF32 writes dx and x̂ (into xh) for one row and adds
	// dy·x̂ and dy to pw and pb (all n long).
	normGradRowF32 func(dx, xh, dy, x, w, pw, pb []float32, mean, rstd float32, rms bool)
)

// normF32Kernel is one implementation of normRowF32 and normGradRowF32
// (nil for the generic float64-summing path).
type normF32Kernel struct {
	name string
	row  func(y, x, w, b []float32, eps float32, rms bool) (mean, rstd float32)
	grad func(dx, xh, dy, x, w, pw, pb []float32, mean, rstd float32, rms bool)
}

// normF32Kernels are the implementations of the float32 rows this CPU
// runs, the generic path first and the one used last, so that the tests
// can run every one (an AVX-512 machine's AVX2 kernels included).
var normF32Kernels = []normF32Kernel{{name: "go"}}

// onesAndZeros returns n ones and n zeros, for absent parameters.
func onesAndZeros(n int) (ones, zeros []float32) {
	ones, zeros = make([]float32, n), make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	return ones, zeros
}

// normForward writes each row's statistics and output.
func normForward[T float](b *Backend, a *normArgs[T]) {
	n := a.n
	if f, ok := any(a).(*normArgs[float32]); ok && normRowF32 != nil {
		ones, zeros := onesAndZeros(n)
		w, bias := f.w, f.bias
		if w == nil {
			w = ones
		}
		if bias == nil {
			bias = zeros
		}
		b.parallel(a.rows, grainFor(a.rows, 4*n), func(lo, hi int) {
			for r := lo; r < hi; r++ {
				m, s := normRowF32(f.y[r*n:(r+1)*n], f.x[r*n:(r+1)*n], w, bias, float32(f.eps), f.rms)
				if f.mean != nil {
					f.mean[r] = m
				}
				f.rstd[r] = s
			}
		})
		return
	}
	b.parallel(a.rows, grainFor(a.rows, 4*n), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			x := a.x[r*n : (r+1)*n]
			y := a.y[r*n : (r+1)*n]
			var mean float64
			var variance float64
			if a.rms {
				variance = sumSquares(x) / float64(n)
			} else {
				mean, variance = meanVar(x)
			}
			rstd := 1 / math.Sqrt(variance+a.eps)
			if a.mean != nil {
				a.mean[r] = T(mean)
			}
			a.rstd[r] = T(rstd)
			m, s := T(mean), T(rstd)
			switch {
			case a.w != nil && a.bias != nil:
				normRowAffine(y, x, a.w, a.bias, m, s)
			case a.w != nil:
				normRowScale(y, x, a.w, m, s)
			default:
				normRow(y, x, m, s)
				if a.bias != nil {
					for i, v := range a.bias[:n] {
						y[i] += v
					}
				}
			}
		}
	})
}

// meanVar returns the mean and biased variance of x, from float64 sums of
// x − x₀ and its square (x₀ = x[0]).
func meanVar[T float](x []T) (mean, variance float64) {
	if len(x) == 0 {
		return math.NaN(), math.NaN()
	}
	x0 := float64(x[0])
	var s0, s1, q0, q1 float64
	i := 0
	for ; i+1 < len(x); i += 2 {
		d0, d1 := float64(x[i])-x0, float64(x[i+1])-x0
		s0 += d0
		s1 += d1
		q0 += d0 * d0
		q1 += d1 * d1
	}
	if i < len(x) {
		d := float64(x[i]) - x0
		s0 += d
		q0 += d * d
	}
	n := float64(len(x))
	m := (s0 + s1) / n
	return x0 + m, max(0, (q0+q1)/n-m*m)
}

// sumSquares returns Σ x² in float64.
func sumSquares[T float](x []T) float64 {
	var q0, q1 float64
	i := 0
	for ; i+1 < len(x); i += 2 {
		q0 += float64(x[i]) * float64(x[i])
		q1 += float64(x[i+1]) * float64(x[i+1])
	}
	if i < len(x) {
		q0 += float64(x[i]) * float64(x[i])
	}
	return q0 + q1
}

func normRowAffine[T float](y, x, w, bias []T, m, s T) {
	x, w, bias = x[:len(y)], w[:len(y)], bias[:len(y)]
	for i := range y {
		y[i] = (x[i]-m)*s*w[i] + bias[i]
	}
}

func normRowScale[T float](y, x, w []T, m, s T) {
	x, w = x[:len(y)], w[:len(y)]
	for i := range y {
		y[i] = (x[i] - m) * s * w[i]
	}
}

func normRow[T float](y, x []T, m, s T) {
	x = x[:len(y)]
	for i := range y {
		y[i] = (x[i] - m) * s
	}
}

// normBackward writes dx row by row and the parameters' gradients from
// per-chunk partial sums.
func normBackward[T float](b *Backend, a *normArgs[T]) {
	n := a.n
	a.chunks = (a.rows + normRows - 1) / normRows
	pool := poolFor[float64]()
	var pw, pb *[]float64
	if a.dw != nil {
		pw = pool.get(a.chunks * n)
		defer pool.put(pw)
		a.partW = *pw
	}
	if a.db != nil {
		pb = pool.get(a.chunks * n)
		defer pool.put(pb)
		a.partB = *pb
	}
	if f, ok := any(a).(*normArgs[float32]); ok && normGradRowF32 != nil {
		ones, _ := onesAndZeros(n)
		b.parallel(a.chunks, max(1, grainFor(a.chunks, 6*n*normRows)), func(lo, hi int) {
			// x̂, partials of dw and db, dx when absent; from the pool, as
			// a task may cover a single chunk
			scratch := poolF32.get(4 * n)
			defer poolF32.put(scratch)
			for c := lo; c < hi; c++ {
				normBackwardChunkF32(f, c, ones, *scratch)
			}
		})
	} else {
		b.parallel(a.chunks, max(1, grainFor(a.chunks, 6*n*normRows)), func(lo, hi int) {
			xh := make([]T, n)
			for c := lo; c < hi; c++ {
				normBackwardChunk(a, c, xh)
			}
		})
	}
	if a.dw == nil && a.db == nil {
		return
	}
	b.parallel(n, grainFor(n, 2*a.chunks), func(lo, hi int) {
		for _, p := range []struct {
			dst  []T
			part []float64
		}{{a.dw, a.partW}, {a.db, a.partB}} {
			if p.dst == nil {
				continue
			}
			for j := lo; j < hi; j++ {
				var s float64
				for c := range a.chunks {
					s += p.part[c*n+j]
				}
				p.dst[j] = T(s)
			}
		}
	})
}

// normBackwardChunk handles rows [c·normRows, …) of the backward pass:
// with ĝ = dy·w and x̂ = (x − mean)·rstd, dx = rstd·(ĝ − mean(ĝ) −
// x̂·mean(ĝ·x̂)) (no mean(ĝ) term for RMS), and adds dy·x̂ and dy to the
// chunk's partial sums. xh is scratch for a row.
func normBackwardChunk[T float](a *normArgs[T], c int, xh []T) {
	n := a.n
	var pw, pb []float64
	if a.partW != nil {
		pw = a.partW[c*n : (c+1)*n]
		clear(pw)
	}
	if a.partB != nil {
		pb = a.partB[c*n : (c+1)*n]
		clear(pb)
	}
	for r := c * normRows; r < min(a.rows, (c+1)*normRows); r++ {
		x, dy := a.x[r*n:(r+1)*n], a.dy[r*n:(r+1)*n]
		var m T
		if a.mean != nil {
			m = a.mean[r]
		}
		s := a.rstd[r]
		var sg, sgx float64 // Σ ĝ, Σ ĝ·x̂
		for i, v := range x {
			xv := (v - m) * s
			xh[i] = xv
			g := dy[i]
			if a.w != nil {
				g *= a.w[i]
			}
			sg += float64(g)
			sgx += float64(g) * float64(xv)
		}
		if pw != nil {
			for i, g := range dy {
				pw[i] += float64(g) * float64(xh[i])
			}
		}
		if pb != nil {
			for i, g := range dy {
				pb[i] += float64(g)
			}
		}
		if a.dx == nil {
			continue
		}
		mg, mgx := T(sg/float64(n)), T(sgx/float64(n))
		if a.rms {
			mg = 0
		}
		dx := a.dx[r*n : (r+1)*n]
		for i, g := range dy {
			if a.w != nil {
				g *= a.w[i]
			}
			dx[i] = s * (g - mg - xh[i]*mgx)
		}
	}
}

// normBackwardChunkF32 is normBackwardChunk through normGradRowF32, the
// chunk's partial sums accumulated in float32 and stored as float64.
func normBackwardChunkF32(a *normArgs[float32], c int, ones, scratch []float32) {
	n := a.n
	xh, pw, pb, dxs := scratch[:n], scratch[n:2*n], scratch[2*n:3*n], scratch[3*n:4*n]
	clear(pw)
	clear(pb)
	w := a.w
	if w == nil {
		w = ones
	}
	for r := c * normRows; r < min(a.rows, (c+1)*normRows); r++ {
		var m float32
		if a.mean != nil {
			m = a.mean[r]
		}
		dx := dxs
		if a.dx != nil {
			dx = a.dx[r*n : (r+1)*n]
		}
		normGradRowF32(dx, xh, a.dy[r*n:(r+1)*n], a.x[r*n:(r+1)*n], w, pw, pb, m, a.rstd[r], a.rms)
	}
	for _, p := range []struct {
		dst []float64
		src []float32
	}{{a.partW, pw}, {a.partB, pb}} {
		if p.dst != nil {
			for i, v := range p.src {
				p.dst[c*n+i] = float64(v)
			}
		}
	}
}
