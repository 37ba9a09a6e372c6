package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

// Matmul implements backends.Backend. Each batch's operands are packed into
// contiguous row-major float32 or float64 panels, then multiplied with an
// i-k-j loop whose inner loop is a contiguous AXPY; work is split over rows
// of the output, so every output element is summed in the same order
// whatever the worker count.
func (b *Backend) Matmul(out, x, y backends.View) {
	r := len(out.Shape)
	m, k, n := x.Shape[r-2], x.Shape[r-1], y.Shape[r-1]
	batchShape := out.Shape[:r-2]
	batch := backends.NumElements(batchShape)
	bx := backends.View{Strides: x.Strides[:r-2]}
	by := backends.View{Strides: y.Strides[:r-2]}
	bo := backends.View{Strides: out.Strides[:r-2]}
	offs := make([][3]int, 0, batch)
	newStrided(batchShape, bx, by, bo).each(func(o []int) {
		offs = append(offs, [3]int{o[0] + x.Offset, o[1] + y.Offset, o[2] + out.Offset})
	})
	if batch == 0 {
		return
	}
	switch out.DType {
	case backends.Float32:
		matmulF32(b, out, x, y, offs, m, k, n)
	default:
		matmulGeneric(b, out, x, y, offs, m, k, n)
	}
}

func matmulF32(b *Backend, out, x, y backends.View, offs [][3]int, m, k, n int) {
	r := len(out.Shape)
	xs, ys, os := buf(x).f32(), buf(y).f32(), buf(out).f32()
	xr, xc := x.Strides[r-2], x.Strides[r-1]
	yr, yc := y.Strides[r-2], y.Strides[r-1]
	or, oc := out.Strides[r-2], out.Strides[r-1]
	for _, off := range offs {
		// pack y into a contiguous k×n panel
		py := make([]float32, k*n)
		for p := 0; p < k; p++ {
			for j := 0; j < n; j++ {
				py[p*n+j] = ys[off[1]+p*yr+j*yc]
			}
		}
		b.parallel(m, max(1, 4096/max(n*k/64, 1)), func(lo, hi int) {
			row := make([]float32, n)
			for i := lo; i < hi; i++ {
				for j := range row {
					row[j] = 0
				}
				for p := 0; p < k; p++ {
					a := xs[off[0]+i*xr+p*xc]
					pr := py[p*n : p*n+n]
					for j, v := range pr {
						row[j] += a * v
					}
				}
				for j, v := range row {
					os[off[2]+i*or+j*oc] = v
				}
			}
		})
	}
}

func matmulGeneric(b *Backend, out, x, y backends.View, offs [][3]int, m, k, n int) {
	r := len(out.Shape)
	lx, ly, st := buf(x).accessor().load, buf(y).accessor().load, buf(out).accessor().store
	xr, xc := x.Strides[r-2], x.Strides[r-1]
	yr, yc := y.Strides[r-2], y.Strides[r-1]
	or, oc := out.Strides[r-2], out.Strides[r-1]
	for _, off := range offs {
		b.parallel(m, 1, func(lo, hi int) {
			row := make([]float64, n)
			for i := lo; i < hi; i++ {
				for j := range row {
					row[j] = 0
				}
				for p := 0; p < k; p++ {
					a := lx(off[0] + i*xr + p*xc)
					for j := range row {
						row[j] += a * ly(off[1]+p*yr+j*yc)
					}
				}
				for j, v := range row {
					st(off[2]+i*or+j*oc, v)
				}
			}
		})
	}
}
