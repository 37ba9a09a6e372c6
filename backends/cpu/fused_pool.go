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
	if !b.checkGeometry("maxpool2d", g) || !b.checkFused("maxpool2d", x, []backends.View{out, indices, x},
		[]string{"out", "indices", "input"}, poolShapes(g, true), "indices") {
		return
	}
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
	if !b.checkGeometry("maxpool2d grad", g) || !b.checkFused("maxpool2d grad", dx, []backends.View{dx, dy, indices},
		[]string{"input grad", "out grad", "indices"}, poolShapes(g, false), "indices") {
		return
	}
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
				if d32, ok := any(dst).([]float32); ok {
					s32 := any(src).([]float32)
					if !vecMaxPool2x2(d32, di, s32, g.W, g.OutH, g.OutW) {
						maxPool2x2F32(d32, di, s32, g.W, g.OutH, g.OutW)
					}
				} else {
					maxPool2x2(dst, di, src, g.W, g.OutH, g.OutW)
				}
				continue
			}
			if d32, ok := any(dst).([]float32); ok && maxPoolClipped {
				s32 := any(src).([]float32)
				if !maxPoolVector || !vecMaxPool3x3s2(d32, di, s32, g) {
					maxPoolPlaneF32(d32, di, s32, g)
				}
				continue
			}
			maxPoolPlane(dst, di, src, g)
		}
	})
}

// maxPoolClipped enables maxPoolPlaneF32, and maxPoolVector the vector
// kernel of 3×3 windows at stride 2 (vecMaxPool3x3s2); benchmarks turn
// them off to compare.
var maxPoolClipped, maxPoolVector = true, true

// maxPoolPlaneF32 is maxPoolPlane for float32: each window's taps inside
// the plane are found once per row and column instead of tested one by
// one, and compared without branches on the data (poolPick, poolKey), so
// a window gives the same value and position: the first NaN in scan
// order, else the earliest of the largest. A window wholly in the padding
// gives −Inf at position 0.
func maxPoolPlaneF32(dst []float32, di []int64, src []float32, g backends.ConvGeometry) {
	for oy := range g.OutH {
		maxPoolRowF32(dst, di, src, g, oy, 0, g.OutW)
	}
}

// maxPoolRowF32 is maxPoolPlaneF32 for outputs lo to hi of output row oy.
func maxPoolRowF32(dst []float32, di []int64, src []float32, g backends.ConvGeometry, oy, lo, hi int) {
	y0 := oy*g.StrideH - g.PadTop
	ky0, ky1 := validRange(g.KH, g.DilationH, -y0, 0, g.H) // the taps of the window inside the plane
	for ox := lo; ox < hi; ox++ {
		x0 := ox*g.StrideW - g.PadLeft
		kx0, kx1 := validRange(g.KW, g.DilationW, -x0, 0, g.W)
		o := oy*g.OutW + ox
		if ky0 == ky1 || kx0 == kx1 {
			dst[o], di[o] = float32(math.Inf(-1)), 0
			continue
		}
		first := (y0+ky0*g.DilationH)*g.W + x0 + kx0*g.DilationW
		v := math.Float32bits(src[first])
		k, at := poolKey(v), int64(first)
		for ky := ky0; ky < ky1; ky++ {
			row := (y0+ky*g.DilationH)*g.W + x0
			for kx := kx0; kx < kx1; kx++ {
				p := row + kx*g.DilationW
				u := math.Float32bits(src[p])
				v, k, at = poolPick(v, k, at, u, poolKey(u), int64(p))
			}
		}
		dst[o], di[o] = math.Float32frombits(v), at
	}
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

// maxPool2x2F32 is maxPool2x2 for float32 without branches on the data:
// each value is compared through an integer key that orders floats as <
// does (−0 and +0 equal, NaN above everything) and the choices are made
// with masks, where a branch on random data is mispredicted about once per
// comparison. Ties keep the earliest position and the first NaN wins, as
// in maxPool2x2.
func maxPool2x2F32(dst []float32, di []int64, src []float32, w, oh, ow int) {
	for i := range oh {
		r0 := src[2*i*w:][:2*ow]
		r1 := src[(2*i+1)*w:][:2*ow]
		d, dIdx := dst[i*ow:][:ow], di[i*ow:][:ow]
		base := int64(2 * i * w)
		for j := range d {
			c := 2 * j
			// the value travels as bits, its position as an offset
			v0, v1 := math.Float32bits(r0[c]), math.Float32bits(r0[c+1])
			v2, v3 := math.Float32bits(r1[c]), math.Float32bits(r1[c+1])
			v, k, at := poolPick(v0, poolKey(v0), 0, v1, poolKey(v1), 1)
			v, k, at = poolPick(v, k, at, v2, poolKey(v2), int64(w))
			v, _, at = poolPick(v, k, at, v3, poolKey(v3), int64(w+1))
			d[j], dIdx[j] = math.Float32frombits(v), base+int64(c)+at
		}
	}
}

// poolPick returns (u, ku, uAt) when u's key ku is above v's key k, else
// (v, k, at), with masks rather than a branch.
func poolPick(v uint32, k, at int64, u uint32, ku, uAt int64) (uint32, int64, int64) {
	take := (k - ku) >> 63 // −1 when ku > k
	return v ^ ((v ^ u) & uint32(take)), k ^ ((k ^ ku) & take), at ^ ((at ^ uAt) & take)
}

// poolKey maps a float32's bits to an integer with the same order: the
// magnitude for a positive value, its negation for a negative one (so ±0
// are both 0), and a key above every number's for NaN.
func poolKey(bits uint32) int64 {
	mag := int64(bits & 0x7fffffff)
	sign := -int64(bits >> 31)      // 0 or −1
	nan := (0x7f800000 - mag) >> 63 // −1 for NaN
	return ((mag^sign)-sign)&^nan | nan&(1<<32)
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

// poolShapes returns the shapes of a fused max-pool's views: out, indices
// and input when forward, else input grad, out grad and indices.
func poolShapes(g backends.ConvGeometry, forward bool) [][]int {
	x, y := []int{g.N, g.C, g.H, g.W}, []int{g.N, g.C, g.OutH, g.OutW}
	if forward {
		return [][]int{y, y, x}
	}
	return [][]int{x, y, y}
}

// errDType reports a fused kernel asked for a dtype it does not take.
func errDType(op string, d backends.DType) error {
	return fmt.Errorf("cpu: %s: dtype %s (want float32 or float64)", op, d)
}
