package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

// ceilDiv is ⌈a/b⌉ for b > 0 and any sign of a.
func ceilDiv(a, b int) int {
	if a >= 0 {
		return (a + b - 1) / b
	}
	return -((-a) / b)
}

// validRange returns the window positions [lo, hi) of a row (or column) of
// n positions whose input coordinate pos·stride - pad + k·dilation falls
// inside [0, size).
func validRange(n, stride, pad, kOff, size int) (lo, hi int) {
	base := kOff - pad // coordinate of position 0
	lo = max(0, ceilDiv(-base, stride))
	hi = min(n, ceilDiv(size-base, stride))
	return lo, max(lo, hi)
}

// Im2Col implements backends.Backend. For every (window row, output row)
// pair the valid output columns are computed once, so the inner loop is a
// plain strided copy; padding is filled around it.
func (b *Backend) Im2Col(out, x backends.View, g backends.ConvGeometry) {
	if !b.checkUnfolded("im2col", x, out, g) {
		return
	}
	ob, xb := buf(out), buf(x)
	var copyRun func(sc *scratch, o, ost, xo, xst, n int)
	var fillRun func(o, ost, n int)
	if out.DType == x.DType {
		switch out.DType.Size() {
		case 1:
			copyRun, fillRun = rawRuns[uint8](ob, xb, g.PadValue)
		case 2:
			copyRun, fillRun = rawRuns[uint16](ob, xb, g.PadValue)
		case 4:
			copyRun, fillRun = rawRuns[uint32](ob, xb, g.PadValue)
		default:
			copyRun, fillRun = rawRuns[uint64](ob, xb, g.PadValue)
		}
	} else {
		copyRun = func(sc *scratch, o, ost, xo, xst, n int) {
			for n > 0 {
				m := min(n, blk)
				t := sc.f64[0][:m]
				loadF64(xb, xo, xst, t)
				storeF64(ob, o, ost, t)
				o, xo, n = o+m*ost, xo+m*xst, n-m
			}
		}
		pad := []float64{g.PadValue}
		fillRun = func(o, ost, n int) {
			for i := range n {
				storeF64(ob, o+i*ost, 1, pad)
			}
		}
	}
	xs2, xs3 := x.Strides[2], x.Strides[3]
	os2 := out.Strides[2]
	b.parallel(g.N*g.C, grainFor(g.N*g.C, g.KH*g.KW*g.OutH*g.OutW), func(lo, hi int) {
		sc := scratches.Get().(*scratch)
		for nc := lo; nc < hi; nc++ {
			n, c := nc/g.C, nc%g.C
			xBase := x.Offset + n*x.Strides[0] + c*x.Strides[1]
			for ki := range g.KH {
				hLo, hHi := validRange(g.OutH, g.StrideH, g.PadTop, ki*g.DilationH, g.H)
				for kj := range g.KW {
					wLo, wHi := validRange(g.OutW, g.StrideW, g.PadLeft, kj*g.DilationW, g.W)
					row := (c*g.KH+ki)*g.KW + kj
					oBase := out.Offset + n*out.Strides[0] + row*out.Strides[1]
					for oh := range g.OutH {
						o := oBase + oh*g.OutW*os2
						if oh < hLo || oh >= hHi {
							fillRun(o, os2, g.OutW)
							continue
						}
						h := oh*g.StrideH - g.PadTop + ki*g.DilationH
						fillRun(o, os2, wLo)
						w := wLo*g.StrideW - g.PadLeft + kj*g.DilationW
						copyRun(sc, o+wLo*os2, os2, xBase+h*xs2+w*xs3, g.StrideW*xs3, wHi-wLo)
						fillRun(o+wHi*os2, os2, g.OutW-wHi)
					}
				}
			}
		}
		scratches.Put(sc)
	})
}

// rawRuns returns strided copy and pad-fill functions moving raw elements.
func rawRuns[T elems](ob, xb *buffer, pad float64) (func(sc *scratch, o, ost, xo, xst, n int), func(o, ost, n int)) {
	os, xs := rawElems[T](ob), rawElems[T](xb)
	one := newBuffer(ob.dtype, 1)
	storeF64(one, 0, 1, []float64{pad})
	p := rawElems[T](one)[0]
	copyRun := func(_ *scratch, o, ost, xo, xst, n int) {
		if n <= 0 {
			return
		}
		if ost == 1 && xst == 1 {
			copy(os[o:o+n], xs[xo:xo+n])
			return
		}
		if ost == 1 {
			d := os[o : o+n]
			for i := range d {
				d[i] = xs[xo+i*xst]
			}
			return
		}
		for i := range n {
			os[o+i*ost] = xs[xo+i*xst]
		}
	}
	fillRun := func(o, ost, n int) {
		if n <= 0 {
			return
		}
		if ost == 1 {
			fillSlice(os[o:o+n], p)
			return
		}
		for i := range n {
			os[o+i*ost] = p
		}
	}
	return copyRun, fillRun
}

// Col2Im implements backends.Backend. Each (n, c) plane of out is zeroed and
// then accumulated by one task, in the fixed order (window row, window
// column, output row, output column), rounding to out's dtype after every
// addition (float32 adds for Float32).
func (b *Backend) Col2Im(out, cols backends.View, g backends.ConvGeometry) {
	if !b.checkUnfolded("col2im", out, cols, g) {
		return
	}
	ob, cb := buf(out), buf(cols)
	os2, os3 := out.Strides[2], out.Strides[3]
	cs2 := cols.Strides[2]
	// addRun adds n column values (from co, stride cst) into out (from o, stride ost).
	var addRun func(sc *scratch, o, ost, co, cst, n int)
	switch {
	case out.DType == backends.Float32 && cols.DType == backends.Float32:
		addRun = addRunTyped(ob.f32(), cb.f32())
	case out.DType == backends.Float64 && cols.DType == backends.Float64:
		addRun = addRunTyped(ob.f64(), cb.f64())
	default:
		addRun = func(sc *scratch, o, ost, co, cst, n int) {
			for n > 0 {
				m := min(n, blk)
				a, c := sc.f64[0][:m], sc.f64[1][:m]
				loadF64(ob, o, ost, a)
				loadF64(cb, co, cst, c)
				for i := range a {
					a[i] += c[i]
				}
				storeF64(ob, o, ost, a)
				o, co, n = o+m*ost, co+m*cst, n-m
			}
		}
	}
	zero := backends.View{Buf: out.Buf, DType: out.DType, Shape: []int{g.H, g.W}, Strides: []int{os2, os3}}
	b.parallel(g.N*g.C, grainFor(g.N*g.C, g.KH*g.KW*g.OutH*g.OutW), func(lo, hi int) {
		sc := scratches.Get().(*scratch)
		for nc := lo; nc < hi; nc++ {
			n, c := nc/g.C, nc%g.C
			oBase := out.Offset + n*out.Strides[0] + c*out.Strides[1]
			z := zero
			z.Offset = oBase
			zeroPlane(z)
			for ki := range g.KH {
				hLo, hHi := validRange(g.OutH, g.StrideH, g.PadTop, ki*g.DilationH, g.H)
				for kj := range g.KW {
					wLo, wHi := validRange(g.OutW, g.StrideW, g.PadLeft, kj*g.DilationW, g.W)
					if wHi <= wLo {
						continue
					}
					row := (c*g.KH+ki)*g.KW + kj
					cBase := cols.Offset + n*cols.Strides[0] + row*cols.Strides[1]
					w := wLo*g.StrideW - g.PadLeft + kj*g.DilationW
					for oh := hLo; oh < hHi; oh++ {
						y := oh*g.StrideH - g.PadTop + ki*g.DilationH
						addRun(sc, oBase+y*os2+w*os3, g.StrideW*os3, cBase+(oh*g.OutW+wLo)*cs2, cs2, wHi-wLo)
					}
				}
			}
		}
		scratches.Put(sc)
	})
}

func addRunTyped[T float](os, cs []T) func(sc *scratch, o, ost, co, cst, n int) {
	return func(_ *scratch, o, ost, co, cst, n int) {
		if ost == 1 && cst == 1 {
			d, s := os[o:o+n], cs[co:co+n]
			for i := range d {
				d[i] += s[i]
			}
			return
		}
		for i := range n {
			os[o+i*ost] += cs[co+i*cst]
		}
	}
}

// zeroPlane sets a 2-D strided view to zero bits (0 in every dtype).
func zeroPlane(v backends.View) {
	bb := buf(v)
	sz := v.DType.Size()
	for y := range v.Shape[0] {
		base := v.Offset + y*v.Strides[0]
		if v.Strides[1] == 1 {
			clear(bb.bytes[base*sz : (base+v.Shape[1])*sz])
			continue
		}
		for x := range v.Shape[1] {
			p := (base + x*v.Strides[1]) * sz
			clear(bb.bytes[p : p+sz])
		}
	}
}

// Random implements backends.Backend: element i of out in row-major order
// is backends.RandomValue(kind, seed, counter+i, p0, p1), stored like any
// float64 (integer outputs take int64(v), Bool v != 0).
func (b *Backend) Random(out backends.View, kind backends.RandomKind, seed, counter uint64, p0, p1 float64) {
	if !b.checkElementwise("random", out) {
		return
	}
	l := newLoop(out.Shape, out)
	if l.n == 0 {
		return
	}
	ob := buf(out)
	isInt := isIntLike(out.DType)
	b.parallel(l.n, grainFor(l.n, 64), func(lo, hi int) {
		var f [blk]float64
		var iv [blk]int64
		pos := counter + uint64(lo)
		l.rows(lo, hi, func(o offsets, n int) {
			for n > 0 {
				m := min(n, blk)
				for i := range m {
					f[i] = backends.RandomValue(kind, seed, pos, p0, p1)
					pos++
				}
				if isInt {
					for i, v := range f[:m] {
						iv[i] = int64(v)
					}
					storeI64(ob, o[0], l.inner[0], iv[:m])
				} else {
					storeF64(ob, o[0], l.inner[0], f[:m])
				}
				o[0] += m * l.inner[0]
				n -= m
			}
		})
	})
}
