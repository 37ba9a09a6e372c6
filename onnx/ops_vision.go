package onnx

import (
	"math"
	"sort"

	"github.com/kiln-ml/kiln/tensor"
)

// Detection and sampling operators (NonMaxSuppression, RoiAlign,
// GridSample, MaxUnpool) run on the host: they index data by computed
// coordinates, which Kiln's devices do not offer as primitives, and their
// inputs (boxes, proposals, sampling grids) are small.

func init() {
	ops["NonMaxSuppression"] = hostOp(nonMaxSuppression)
	ops["RoiAlign"] = hostOp(roiAlign)
	ops["GridSample"] = hostOp(gridSample)
	ops["MaxUnpool"] = hostOp(maxUnpool)
}

func nonMaxSuppression(c *call) []*hostTensor {
	boxes, scores := c.h(0), c.h(1)
	if len(boxes.shape) != 3 || boxes.shape[2] != 4 || len(scores.shape) != 3 ||
		scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1] {
		c.fail(tensor.ErrShape, "boxes %v and scores %v must be [batch, boxes, 4] and [batch, classes, boxes]", boxes.shape, scores.shape)
	}
	limit := 0
	if c.has(2) && c.h(2).size() > 0 {
		limit = clampInt(c.h(2).ints()[0])
	}
	iouMax := 0.0
	if c.has(3) && c.h(3).size() > 0 {
		iouMax = c.h(3).at(0)
	}
	scoreMin, useScore := 0.0, false
	if c.has(4) && c.h(4).size() > 0 {
		scoreMin, useScore = c.h(4).at(0), true
	}
	center := c.attrInt("center_point_box", 0) != 0
	nb, nc, n := scores.shape[0], scores.shape[1], scores.shape[2]
	corners := func(b, i int) (y1, x1, y2, x2 float64) {
		o := (b*n + i) * 4
		v := boxes.floats()[o : o+4]
		if center {
			return v[1] - v[3]/2, v[0] - v[2]/2, v[1] + v[3]/2, v[0] + v[2]/2
		}
		return math.Min(v[0], v[2]), math.Min(v[1], v[3]), math.Max(v[0], v[2]), math.Max(v[1], v[3])
	}
	iou := func(b, i, j int) float64 {
		ay1, ax1, ay2, ax2 := corners(b, i)
		by1, bx1, by2, bx2 := corners(b, j)
		ia := (ay2 - ay1) * (ax2 - ax1)
		ib := (by2 - by1) * (bx2 - bx1)
		if ia <= 0 || ib <= 0 {
			return 0
		}
		h := math.Max(0, math.Min(ay2, by2)-math.Max(ay1, by1))
		w := math.Max(0, math.Min(ax2, bx2)-math.Max(ax1, bx1))
		inter := h * w
		return inter / (ia + ib - inter)
	}
	var sel []int64
	for b := range nb {
		for cl := range nc {
			s := scores.floats()[(b*nc+cl)*n : (b*nc+cl+1)*n]
			var cand []int
			for i := range n {
				if !useScore || s[i] > scoreMin {
					cand = append(cand, i)
				}
			}
			sort.SliceStable(cand, func(p, q int) bool { return s[cand[p]] > s[cand[q]] })
			var kept []int
			for _, i := range cand {
				if len(kept) >= limit {
					break
				}
				ok := true
				for _, j := range kept {
					if iou(b, i, j) > iouMax {
						ok = false
						break
					}
				}
				if ok {
					kept = append(kept, i)
					sel = append(sel, int64(b), int64(cl), int64(i))
				}
			}
		}
	}
	return hosts(hostInts(sel, len(sel)/3, 3))
}

// bilinearAt samples plane (h×w) at (y, x) as RoiAlign does: 0 outside
// [-1, h]×[-1, w], edges clamped inside.
func bilinearAt(plane []float64, h, w int, y, x float64) (v [4]float64, wt [4]float64, ok bool) {
	if y < -1 || y > float64(h) || x < -1 || x > float64(w) {
		return v, wt, false
	}
	y, x = math.Max(y, 0), math.Max(x, 0)
	yl, xl := int(y), int(x)
	yh, xh := yl+1, xl+1
	if yl >= h-1 {
		yl, yh, y = h-1, h-1, float64(h-1)
	}
	if xl >= w-1 {
		xl, xh, x = w-1, w-1, float64(w-1)
	}
	ly, lx := y-float64(yl), x-float64(xl)
	hy, hx := 1-ly, 1-lx
	v = [4]float64{plane[yl*w+xl], plane[yl*w+xh], plane[yh*w+xl], plane[yh*w+xh]}
	wt = [4]float64{hy * hx, hy * lx, ly * hx, ly * lx}
	return v, wt, true
}

func roiAlign(c *call) []*hostTensor {
	x, rois, idx := c.h(0), c.h(1), c.h(2)
	if len(x.shape) != 4 || len(rois.shape) != 2 || rois.shape[1] != 4 || idx.size() != rois.shape[0] {
		c.fail(tensor.ErrShape, "X %v, rois %v and batch_indices %v must be [N, C, H, W], [R, 4] and [R]", x.shape, rois.shape, idx.shape)
	}
	ph, pw := int(c.attrInt("output_height", 1)), int(c.attrInt("output_width", 1))
	ratio := int(c.attrInt("sampling_ratio", 0))
	scale := c.attrFloat("spatial_scale", 1)
	halfPixel := c.attrString("coordinate_transformation_mode", "half_pixel") == "half_pixel" && c.opset >= 16
	maxMode := c.attrString("mode", "avg") == "max"
	if ph <= 0 || pw <= 0 || ph*pw > maxRunElements {
		c.fail(tensor.ErrArgument, "output size %dx%d", ph, pw)
	}
	nr, ch, h, w := rois.shape[0], x.shape[1], x.shape[2], x.shape[3]
	out := newHost(x.dtype, []int{nr, ch, ph, pw})
	offset := 0.0
	if halfPixel {
		offset = 0.5
	}
	xs := x.floats()
	for r := range nr {
		b := int(idx.ints()[r])
		if b < 0 || b >= x.shape[0] {
			c.fail(tensor.ErrArgument, "batch index %d of roi %d is out of range for %d images", b, r, x.shape[0])
		}
		roi := rois.floats()[r*4 : r*4+4]
		x0, y0 := roi[0]*scale-offset, roi[1]*scale-offset
		rw, rh := roi[2]*scale-offset-x0, roi[3]*scale-offset-y0
		if !halfPixel {
			rw, rh = math.Max(rw, 1), math.Max(rh, 1)
		}
		bh, bw := rh/float64(ph), rw/float64(pw)
		gh, gw := ratio, ratio
		if ratio <= 0 {
			gh, gw = int(math.Ceil(rh/float64(ph))), int(math.Ceil(rw/float64(pw)))
		}
		count := float64(max(gh*gw, 1))
		for cc := range ch {
			plane := xs[(b*ch+cc)*h*w : (b*ch+cc+1)*h*w]
			for py := range ph {
				for px := range pw {
					acc := 0.0
					first := true
					for iy := range gh {
						yy := y0 + float64(py)*bh + (float64(iy)+0.5)*bh/float64(gh)
						for ix := range gw {
							xx := x0 + float64(px)*bw + (float64(ix)+0.5)*bw/float64(gw)
							v, wt, ok := bilinearAt(plane, h, w, yy, xx)
							if maxMode {
								for q := range 4 {
									if s := v[q] * wt[q]; first || s > acc {
										acc, first = s, false
									}
								}
								if !ok && first {
									acc, first = 0, false
								}
								continue
							}
							if ok {
								acc += v[0]*wt[0] + v[1]*wt[1] + v[2]*wt[2] + v[3]*wt[3]
							}
						}
					}
					if !maxMode {
						acc /= count
					}
					out.set(((r*ch+cc)*ph+py)*pw+px, acc)
				}
			}
		}
	}
	return hosts(out)
}

// reflectCoord folds x into [low/2, high/2] by reflection (PyTorch's
// grid_sampler reflect_coordinates, whose GridSample the ONNX operator
// follows).
func reflectCoord(x, twiceLow, twiceHigh float64) float64 {
	if twiceLow == twiceHigh {
		return 0
	}
	lo := twiceLow / 2
	span := (twiceHigh - twiceLow) / 2
	x = math.Abs(x - lo)
	extra := math.Mod(x, span)
	if int(math.Floor(x/span))%2 == 0 {
		return extra + lo
	}
	return span - extra + lo
}

func gridSample(c *call) []*hostTensor {
	x, grid := c.h(0), c.h(1)
	if len(x.shape) != 4 || len(grid.shape) != 4 || grid.shape[3] != 2 || grid.shape[0] != x.shape[0] {
		c.fail(tensor.ErrShape, "X %v and grid %v must be [N, C, H, W] and [N, H_out, W_out, 2]", x.shape, grid.shape)
	}
	mode := c.attrString("mode", "bilinear")
	if c.opset >= 20 { // opset 20 names the modes for any rank: linear, cubic
		mode = c.attrString("mode", "linear")
		switch mode {
		case "linear":
			mode = "bilinear"
		case "cubic":
			mode = "bicubic"
		case "bilinear", "bicubic":
			mode = "opset-20 " + mode // renamed in opset 20: refused below
		}
	}
	pad := c.attrString("padding_mode", "zeros")
	align := c.attrInt("align_corners", 0) != 0
	if mode != "bilinear" && mode != "nearest" && mode != "bicubic" {
		c.fail(tensor.ErrArgument, "mode %q", mode)
	}
	if pad != "zeros" && pad != "border" && pad != "reflection" {
		c.fail(tensor.ErrArgument, "padding_mode %q", pad)
	}
	n, ch, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	oh, ow := grid.shape[1], grid.shape[2]
	unnorm := func(v float64, size int) float64 {
		if align {
			return (v + 1) / 2 * float64(size-1)
		}
		return ((v+1)*float64(size) - 1) / 2
	}
	// fix applies the padding mode to a coordinate (border and
	// reflection keep it inside the image).
	fix := func(v float64, size int) float64 {
		switch pad {
		case "border":
			return math.Min(math.Max(v, 0), float64(size-1))
		case "reflection":
			if align {
				v = reflectCoord(v, 0, 2*float64(size-1))
			} else {
				v = reflectCoord(v, -1, 2*float64(size)-1)
			}
			return math.Min(math.Max(v, 0), float64(size-1))
		}
		return v
	}
	xs := x.floats()
	out := newHost(x.dtype, []int{n, ch, oh, ow})
	for b := range n {
		for cc := range ch {
			plane := xs[(b*ch+cc)*h*w : (b*ch+cc+1)*h*w]
			pix := func(yy, xx int) float64 {
				if yy < 0 || yy >= h || xx < 0 || xx >= w {
					return 0
				}
				return plane[yy*w+xx]
			}
			for i := range oh {
				for j := range ow {
					g := ((b*oh+i)*ow + j) * 2
					gx, gy := unnorm(grid.at(g), w), unnorm(grid.at(g+1), h)
					var v float64
					switch mode {
					case "nearest":
						v = pix(int(math.RoundToEven(fix(gy, h))), int(math.RoundToEven(fix(gx, w))))
					case "bilinear":
						fx, fy := fix(gx, w), fix(gy, h)
						x0, y0 := math.Floor(fx), math.Floor(fy)
						tx, ty := fx-x0, fy-y0
						xi, yi := int(x0), int(y0)
						v = pix(yi, xi)*(1-tx)*(1-ty) + pix(yi, xi+1)*tx*(1-ty) + pix(yi+1, xi)*(1-tx)*ty + pix(yi+1, xi+1)*tx*ty
					case "bicubic":
						x0, y0 := math.Floor(gx), math.Floor(gy)
						cx, cy := cubicCoefficients(gx-x0, -0.75), cubicCoefficients(gy-y0, -0.75)
						tap := func(yy, xx int) float64 {
							fy, fx := fix(float64(yy), h), fix(float64(xx), w)
							return pix(int(fy), int(fx))
						}
						for p := range 4 {
							row := 0.0
							for q := range 4 {
								row += cx[q] * tap(int(y0)-1+p, int(x0)-1+q)
							}
							v += cy[p] * row
						}
					}
					out.set(((b*ch+cc)*oh+i)*ow+j, v)
				}
			}
		}
	}
	return hosts(out)
}

func maxUnpool(c *call) []*hostTensor {
	x, idx := c.h(0), c.h(1)
	if len(x.shape) < 3 || !equalInts(idx.shape, x.shape) {
		c.fail(tensor.ErrShape, "X %v and I %v must be [N, C, ...] of the same shape", x.shape, idx.shape)
	}
	nsp := len(x.shape) - 2
	k := toInts(c.attrInts("kernel_shape"))
	if len(k) != nsp {
		c.fail(tensor.ErrArgument, "kernel_shape %v does not fit input %v", k, x.shape)
	}
	strides, _, begin, end := windowArgs(c, x.shape[2:], k)
	def := append([]int{}, x.shape[:2]...)
	for i := range nsp {
		def = append(def, (x.shape[2+i]-1)*strides[i]-begin[i]-end[i]+k[i])
	}
	shape := def
	if c.has(2) {
		shape = toInts(c.h(2).ints())
		if len(shape) != len(def) {
			c.fail(tensor.ErrShape, "output_shape %v does not fit input %v", shape, x.shape)
		}
	}
	n := c.size(shape)
	out := newHost(x.dtype, shape)
	defStrides, outStrides := stridesOf(def), stridesOf(shape)
	for e := range x.size() {
		at := idx.ints()[e]
		if at < 0 {
			c.fail(tensor.ErrArgument, "index %d is negative", at)
		}
		rem, flat := int(at), 0
		for d := range def {
			q := rem / defStrides[d]
			rem %= defStrides[d]
			if d == 0 && q >= def[0] || q >= shape[d] {
				c.fail(tensor.ErrArgument, "index %d does not fit output shape %v", at, shape)
			}
			flat += q * outStrides[d]
		}
		if flat < n {
			out.set(flat, x.at(e))
		}
	}
	return hosts(out)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
