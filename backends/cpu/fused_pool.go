package cpu

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// MaxPool2d implements backends.Fusion: one pass over each input plane,
// planes split across the workers, instead of unfolding every window
// (Im2Col), reducing and arg-reducing the unfolded copy and gathering
// positions.
func (b *Backend) MaxPool2d(out, indices, x backends.View, g backends.ConvGeometry) {
	idx := buf(indices).i64()[indices.Offset:]
	switch x.DType {
	case backends.Float32:
		maxPool(b, buf(out).f32()[out.Offset:], idx, buf(x).f32()[x.Offset:], g)
	case backends.Float64:
		maxPool(b, buf(out).f64()[out.Offset:], idx, buf(x).f64()[x.Offset:], g)
	default:
		b.fail(errDType("maxpool2d", x.DType))
	}
}

// MaxPool2dGrad implements backends.Fusion.
func (b *Backend) MaxPool2dGrad(dx, dy, indices backends.View, g backends.ConvGeometry) {
	idx := buf(indices).i64()[indices.Offset:]
	switch dx.DType {
	case backends.Float32:
		maxPoolGrad(b, buf(dx).f32()[dx.Offset:], buf(dy).f32()[dy.Offset:], idx, g)
	case backends.Float64:
		maxPoolGrad(b, buf(dx).f64()[dx.Offset:], buf(dy).f64()[dy.Offset:], idx, g)
	default:
		b.fail(errDType("maxpool2d grad", dx.DType))
	}
}

func maxPool[T float32 | float64](b *Backend, out []T, idx []int64, x []T, g backends.ConvGeometry) {
	hw, ohw := g.H*g.W, g.OutH*g.OutW
	planes := g.N * g.C
	b.parallel(planes, grainFor(planes, hw+ohw*g.KH*g.KW), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			src := x[p*hw : (p+1)*hw]
			dst, di := out[p*ohw:(p+1)*ohw], idx[p*ohw:(p+1)*ohw]
			if g.KH == 2 && g.KW == 2 && g.StrideH == 2 && g.StrideW == 2 && g.PadTop == 0 && g.PadLeft == 0 &&
				g.DilationH == 1 && g.DilationW == 1 && 2*g.OutH <= g.H && 2*g.OutW <= g.W {
				maxPool2x2(dst, di, src, g.W, g.OutH, g.OutW)
				continue
			}
			maxPoolPlane(dst, di, src, g)
		}
	})
}

// maxPool2x2 is the common 2×2, stride 2, unpadded window: four loads and
// three comparisons per output, in the scan order maxPoolPlane uses.
func maxPool2x2[T float32 | float64](dst []T, di []int64, src []T, w, oh, ow int) {
	for i := range oh {
		r0 := src[2*i*w : 2*i*w+w]
		r1 := src[(2*i+1)*w : (2*i+1)*w+w]
		d, dIdx := dst[i*ow:(i+1)*ow], di[i*ow:(i+1)*ow]
		for j := range d {
			c := 2 * j
			best, at := r0[c], 2*i*w+c
			if best == best {
				if v := r0[c+1]; v > best || v != v {
					best, at = v, 2*i*w+c+1
				}
				if best == best {
					if v := r1[c]; v > best || v != v {
						best, at = v, (2*i+1)*w+c
					}
					if best == best {
						if v := r1[c+1]; v > best || v != v {
							best, at = v, (2*i+1)*w+c+1
						}
					}
				}
			}
			d[j], dIdx[j] = best, int64(at)
		}
	}
}

// maxPoolPlane pools one plane for any geometry.
func maxPoolPlane[T float32 | float64](dst []T, di []int64, src []T, g backends.ConvGeometry) {
	for oy := range g.OutH {
		for ox := range g.OutW {
			found, at := false, -1
			var best T
		window:
			for ky := range g.KH {
				y := oy*g.StrideH - g.PadTop + ky*g.DilationH
				if y < 0 || y >= g.H {
					continue
				}
				for kx := range g.KW {
					x := ox*g.StrideW - g.PadLeft + kx*g.DilationW
					if x < 0 || x >= g.W {
						continue
					}
					v := src[y*g.W+x]
					if v != v {
						best, at = v, y*g.W+x
						break window
					}
					if !found || v > best {
						best, at, found = v, y*g.W+x, true
					}
				}
			}
			if at < 0 { // a window wholly in the padding
				best, at = T(math.Inf(-1)), 0
			}
			dst[oy*g.OutW+ox], di[oy*g.OutW+ox] = best, int64(at)
		}
	}
}

func maxPoolGrad[T float32 | float64](b *Backend, dx, dy []T, idx []int64, g backends.ConvGeometry) {
	hw, ohw := g.H*g.W, g.OutH*g.OutW
	planes := g.N * g.C
	b.parallel(planes, grainFor(planes, hw+ohw), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			d := dx[p*hw : (p+1)*hw]
			clear(d)
			gy, gi := dy[p*ohw:(p+1)*ohw], idx[p*ohw:(p+1)*ohw]
			for k, v := range gy {
				if at := gi[k]; uint64(at) < uint64(hw) {
					d[at] += v
				}
			}
		}
	})
}

// errDType reports a fused kernel asked for a dtype it does not take.
func errDType(op string, d backends.DType) error {
	return fmt.Errorf("cpu: %s: dtype %s (want float32 or float64)", op, d)
}
