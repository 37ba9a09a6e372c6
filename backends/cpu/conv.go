package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

// Im2Col implements backends.Backend.
func (b *Backend) Im2Col(out, x backends.View, g backends.ConvGeometry) {
	ld, st := buf(x).accessor().load, buf(out).accessor().store
	// one task per (n, c) plane
	b.parallel(g.N*g.C, 1, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			n, c := nc/g.C, nc%g.C
			xBase := x.Offset + n*x.Strides[0] + c*x.Strides[1]
			for ki := 0; ki < g.KH; ki++ {
				for kj := 0; kj < g.KW; kj++ {
					row := (c*g.KH+ki)*g.KW + kj
					oBase := out.Offset + n*out.Strides[0] + row*out.Strides[1]
					for oh := 0; oh < g.OutH; oh++ {
						h := oh*g.StrideH - g.PadTop + ki*g.DilationH
						for ow := 0; ow < g.OutW; ow++ {
							w := ow*g.StrideW - g.PadLeft + kj*g.DilationW
							v := g.PadValue
							if h >= 0 && h < g.H && w >= 0 && w < g.W {
								v = ld(xBase + h*x.Strides[2] + w*x.Strides[3])
							}
							st(oBase+(oh*g.OutW+ow)*out.Strides[2], v)
						}
					}
				}
			}
		}
	})
}

// Col2Im implements backends.Backend.
func (b *Backend) Col2Im(out, cols backends.View, g backends.ConvGeometry) {
	ld := buf(cols).accessor().load
	ob := buf(out)
	lo, st := ob.accessor().load, ob.accessor().store
	// each (n, c) plane of out is written by one task only, so no races
	b.parallel(g.N*g.C, 1, func(l, h int) {
		for nc := l; nc < h; nc++ {
			n, c := nc/g.C, nc%g.C
			oBase := out.Offset + n*out.Strides[0] + c*out.Strides[1]
			for y := 0; y < g.H; y++ {
				for x := 0; x < g.W; x++ {
					st(oBase+y*out.Strides[2]+x*out.Strides[3], 0)
				}
			}
			for ki := 0; ki < g.KH; ki++ {
				for kj := 0; kj < g.KW; kj++ {
					row := (c*g.KH+ki)*g.KW + kj
					cBase := cols.Offset + n*cols.Strides[0] + row*cols.Strides[1]
					for oh := 0; oh < g.OutH; oh++ {
						y := oh*g.StrideH - g.PadTop + ki*g.DilationH
						if y < 0 || y >= g.H {
							continue
						}
						for ow := 0; ow < g.OutW; ow++ {
							x := ow*g.StrideW - g.PadLeft + kj*g.DilationW
							if x < 0 || x >= g.W {
								continue
							}
							p := oBase + y*out.Strides[2] + x*out.Strides[3]
							st(p, lo(p)+ld(cBase+(oh*g.OutW+ow)*cols.Strides[2]))
						}
					}
				}
			}
		}
	})
}

// Random implements backends.Backend.
func (b *Backend) Random(out backends.View, kind backends.RandomKind, seed, counter uint64, p0, p1 float64) {
	st := buf(out).accessor().store
	ist := func(int, int64) {}
	isInt := isIntLike(out.DType)
	if isInt {
		ist = buf(out).intAccessor().store
	}
	n := out.NumElements()
	b.parallel(n, 1<<13, func(lo, hi int) {
		it := newStrided(out.Shape, out)
		it.eachRange([]int{out.Offset}, lo, hi, func(o []int) {
			// eachRange visits elements in row-major order from lo
			v := backends.RandomValue(kind, seed, counter+uint64(lo), p0, p1)
			lo++
			if isInt {
				ist(o[0], int64(v))
			} else {
				st(o[0], v)
			}
		})
	})
}
