package tensor

import "fmt"

// GridSample reads every output pixel from the input at a position a grid
// gives, as torch.nn.functional.grid_sample; AffineGrid makes such grids
// from affine matrices (spatial transformer networks).
//
// Both are composed of backend primitives (element-wise arithmetic, Floor,
// Gather), so they run on every backend. GridSample is one graph node,
// "grid_sample", which keeps only its inputs: its backward pass recomputes
// the composition with gradients on and differentiates it (the gathers
// become scatter-adds into the input's gradient, the interpolation weights
// give the grid's). Only 4-D inputs (images) are supported, not PyTorch's
// 5-D volumes.

// GridSampleConfig configures GridSample. Its zero value is PyTorch's
// defaults: bilinear, zeros padding, align_corners=False.
type GridSampleConfig struct {
	// Mode is "bilinear" (the default, also ""), "nearest" (ties round to
	// even) or "bicubic" (Keys' cubic convolution with a = −0.75).
	Mode string `json:"mode,omitempty"`
	// PaddingMode says what is read outside the input: "zeros" (the
	// default, also ""), "border" (the nearest edge pixel) or "reflection"
	// (the input mirrored at its edges).
	PaddingMode string `json:"padding_mode,omitempty"`
	// AlignCorners maps −1 and 1 to the centres of the corner pixels;
	// otherwise (the default) to their outer edges.
	AlignCorners bool `json:"align_corners,omitempty"`
}

// GridSample samples x [N, C, H, W] at the positions grid [N, Ho, Wo, 2]
// holds and returns [N, C, Ho, Wo]. grid[n, i, j] = (gx, gy) are
// normalised coordinates: gx = −1 is the left of the input and 1 its
// right, gy likewise from top to bottom (see GridSampleConfig for where
// exactly, and for what is read outside). Gradients flow to x and to grid
// (zero for the grid in nearest mode, as in PyTorch).
//
// It panics with ErrShape unless x is 4-D and grid is [N, Ho, Wo, 2] with
// x's N, ErrDType unless both are floating point of one dtype, and
// ErrArgument for an unknown mode or padding mode.
func GridSample(x, grid *Tensor, cfg GridSampleConfig) *Tensor {
	const op = "GridSample"
	sameDevice(op, x, grid)
	if len(x.shape) != 4 {
		fail(op, ErrShape, "input %s must be [N, C, H, W] (volumes are not supported)", shapeString(x.shape))
	}
	if len(grid.shape) != 4 || grid.shape[3] != 2 || grid.shape[0] != x.shape[0] {
		fail(op, ErrShape, "grid %s must be [N, Ho, Wo, 2] with the input's N = %d", shapeString(grid.shape), x.shape[0])
	}
	if !x.dtype.IsFloat() || x.dtype != grid.dtype {
		fail(op, ErrDType, "input (%s) and grid (%s) must share one floating-point dtype", x.dtype, grid.dtype)
	}
	mode, padding := cfg.Mode, cfg.PaddingMode
	if mode == "" {
		mode = "bilinear"
	}
	if padding == "" {
		padding = "zeros"
	}
	switch mode {
	case "bilinear", "nearest", "bicubic":
	default:
		fail(op, ErrArgument, "unknown mode %q (want bilinear, nearest or bicubic)", cfg.Mode)
	}
	switch padding {
	case "zeros", "border", "reflection":
	default:
		fail(op, ErrArgument, "unknown padding mode %q (want zeros, border or reflection)", cfg.PaddingMode)
	}
	s := gridSampler{mode: mode, padding: padding, align: cfg.AlignCorners}
	out := ScopeResult(func() *Tensor { return s.sample(x.Detach(), grid.Detach()) })
	attrs := map[string]any{"mode": mode, "padding_mode": padding, "align_corners": cfg.AlignCorners}
	return record("grid_sample", attrs, out, []*Tensor{x, grid}, func(g *Tensor) []*Tensor {
		var gx, gg *Tensor
		Scope(func() {
			ad := x.dev.Inner().Autodiff()
			xl, gl := x.Detach(), grid.Detach()
			xl.dev, gl.dev = ad, ad
			xl.RequireGrad()
			gl.RequireGrad()
			grads := s.sample(xl, gl).BackwardWith(g)
			if x.requiresGrad {
				gx = gridSampleGrad(op, grads.Get(xl), xl).Keep()
			}
			if grid.requiresGrad {
				gg = gridSampleGrad(op, grads.Get(gl), gl).Keep()
			}
		})
		return []*Tensor{gx, gg}
	})
}

// gridSampleGrad returns g, or zeros like leaf when no gradient reached it.
func gridSampleGrad(op string, g, leaf *Tensor) *Tensor {
	if g != nil {
		return g
	}
	return rawFull(op, leaf.dev.Inner(), leaf.dtype, leaf.shape, 0)
}

// gridSampler is the composition behind GridSample.
type gridSampler struct {
	mode, padding string
	align         bool
}

func (s gridSampler) sample(x, grid *Tensor) *Tensor {
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	ho, wo := grid.shape[1], grid.shape[2]
	p := ho * wo
	flat := x.Reshape(n, c, h*w)
	ix := s.unnormalize(grid.Select(3, 0).Reshape(n, 1, p), w)
	iy := s.unnormalize(grid.Select(3, 1).Reshape(n, 1, p), h)
	var out *Tensor
	switch s.mode {
	case "bilinear":
		ix, iy = s.sourceIndex(ix, w), s.sourceIndex(iy, h)
		x0, y0 := ix.Floor(), iy.Floor()
		x1, y1 := x0.AddScalar(1), y0.AddScalar(1)
		wx1, wy1 := ix.Sub(x0), iy.Sub(y0)
		wx0, wy0 := x1.Sub(ix), y1.Sub(iy)
		out = s.tap(flat, x0, y0, w, h, c).Mul(wx0.Mul(wy0))
		out = out.Add(s.tap(flat, x1, y0, w, h, c).Mul(wx1.Mul(wy0)))
		out = out.Add(s.tap(flat, x0, y1, w, h, c).Mul(wx0.Mul(wy1)))
		out = out.Add(s.tap(flat, x1, y1, w, h, c).Mul(wx1.Mul(wy1)))
	case "nearest":
		ix, iy = s.sourceIndex(ix, w), s.sourceIndex(iy, h)
		out = s.tap(flat, ix.Round(), iy.Round(), w, h, c)
	case "bicubic":
		x0, y0 := ix.Floor(), iy.Floor()
		cx, cy := cubicCoefficients(ix.Sub(x0)), cubicCoefficients(iy.Sub(y0))
		for i := range 4 {
			yi := s.boundIndex(y0.AddScalar(float64(i-1)), h)
			var row *Tensor
			for j := range 4 {
				xj := s.boundIndex(x0.AddScalar(float64(j-1)), w)
				v := s.tap(flat, xj, yi, w, h, c).Mul(cx[j])
				if row == nil {
					row = v
				} else {
					row = row.Add(v)
				}
			}
			if out == nil {
				out = row.Mul(cy[i])
			} else {
				out = out.Add(row.Mul(cy[i]))
			}
		}
	}
	return out.Reshape(n, c, ho, wo)
}

// unnormalize maps normalised coordinates in [−1, 1] to pixel positions
// along an axis of size.
func (s gridSampler) unnormalize(g *Tensor, size int) *Tensor {
	if s.align {
		return g.AddScalar(1).MulScalar(float64(size-1) / 2)
	}
	return g.AddScalar(1).MulScalar(float64(size)).SubScalar(1).MulScalar(0.5)
}

// sourceIndex applies the padding mode to continuous positions (bilinear
// and nearest modes): border clips, reflection mirrors then clips.
func (s gridSampler) sourceIndex(i *Tensor, size int) *Tensor {
	switch s.padding {
	case "border":
		return i.Clamp(0, float64(size-1))
	case "reflection":
		if s.align {
			i = reflectCoordinates(i, 0, 2*(size-1))
		} else {
			i = reflectCoordinates(i, -1, 2*size-1)
		}
		return i.Clamp(0, float64(size-1))
	}
	return i
}

// boundIndex applies the padding mode to the integer positions of bicubic
// taps; zeros padding is left to tap's mask.
func (s gridSampler) boundIndex(i *Tensor, size int) *Tensor {
	if s.padding == "zeros" {
		return i
	}
	return s.sourceIndex(i, size)
}

// reflectCoordinates mirrors positions into [twiceLow/2, twiceHigh/2], as
// PyTorch's reflect_coordinates.
func reflectCoordinates(i *Tensor, twiceLow, twiceHigh int) *Tensor {
	if twiceLow == twiceHigh {
		return i.MulScalar(0)
	}
	lo := float64(twiceLow) / 2
	span := float64(twiceHigh-twiceLow) / 2
	a := i.SubScalar(lo).Abs()
	flips := a.DivScalar(span).Floor()
	extra := a.Sub(flips.MulScalar(span))
	even := flips.RemScalar(2).EqScalar(0)
	return Where(even, extra.AddScalar(lo), extra.Neg().AddScalar(span+lo))
}

// cubicCoefficients returns the four weights of Keys' cubic convolution
// (a = −0.75) for taps at −1, 0, 1, 2 from the fractional offset t.
func cubicCoefficients(t *Tensor) [4]*Tensor {
	const a = -0.75
	// conv1(x) = ((a+2)·x − (a+3))·x² + 1 for |x| ≤ 1;
	// conv2(x) = ((a·x − 5a)·x + 8a)·x − 4a for 1 < |x| < 2.
	conv1 := func(x *Tensor) *Tensor {
		return x.MulScalar(a + 2).SubScalar(a + 3).Mul(x).Mul(x).AddScalar(1)
	}
	conv2 := func(x *Tensor) *Tensor {
		return x.MulScalar(a).SubScalar(5 * a).Mul(x).AddScalar(8 * a).Mul(x).SubScalar(4 * a)
	}
	u := t.Neg().AddScalar(1)
	return [4]*Tensor{conv2(t.AddScalar(1)), conv1(t), conv1(u), conv2(u.AddScalar(1))}
}

// tap gathers flat [N, C, H·W] at the integer positions (xi, yi) [N, 1, P]
// for every channel, reading zero outside the input.
func (s gridSampler) tap(flat, xi, yi *Tensor, w, h, c int) *Tensor {
	valid := xi.GeScalar(0).LogicalAnd(xi.LeScalar(float64(w - 1))).
		LogicalAnd(yi.GeScalar(0)).LogicalAnd(yi.LeScalar(float64(h - 1)))
	lin := Where(valid, yi.MulScalar(float64(w)).Add(xi), ZerosOf(xi.dev.Inner(), xi.dtype))
	idx := lin.To(Int64)
	n, p := idx.shape[0], idx.shape[2]
	v := flat.Gather(2, idx.Expand(n, c, p))
	return v.MaskedFill(valid.LogicalNot(), 0)
}

// AffineGrid returns the sampling grid [N, H, W, 2] of the affine maps
// theta [N, 2, 3] for an output of size [N, C, H, W], as
// torch.nn.functional.affine_grid: grid[n, i, j] = theta[n]·(x_j, y_i, 1)
// where x_j and y_i run over [−1, 1] (pixel centres when alignCorners is
// false, so they stop half a pixel short). Gradients flow to theta. Only
// 2-D grids are supported.
//
// It panics with ErrShape unless theta is [N, 2, 3] and size is four
// positive sizes with theta's N, and ErrDType for non-float theta.
func AffineGrid(theta *Tensor, size []int, alignCorners bool) *Tensor {
	const op = "AffineGrid"
	theta.live(op)
	if len(theta.shape) != 3 || theta.shape[1] != 2 || theta.shape[2] != 3 {
		fail(op, ErrShape, "theta %s must be [N, 2, 3]", shapeString(theta.shape))
	}
	if !theta.dtype.IsFloat() {
		fail(op, ErrDType, "theta is %s; it must be floating point", theta.dtype)
	}
	if len(size) != 4 || size[0] != theta.shape[0] || size[2] <= 0 || size[3] <= 0 {
		fail(op, ErrShape, "size %s must be [N, C, H, W] with theta's N = %d and positive H, W",
			fmt.Sprint(size), theta.shape[0])
	}
	h, w := size[2], size[3]
	steps := func(k int) []float64 {
		v := make([]float64, k)
		for i := range v {
			if k > 1 {
				v[i] = -1 + 2*float64(i)/float64(k-1)
				if !alignCorners {
					v[i] *= float64(k-1) / float64(k)
				}
			}
		}
		return v
	}
	xs, ys := steps(w), steps(h)
	base := make([]float64, 0, h*w*3)
	for _, y := range ys {
		for _, x := range xs {
			base = append(base, x, y, 1)
		}
	}
	b := FromFloat64s(theta.dev.Inner(), base, h*w, 3)
	if theta.dtype != Float64 {
		b = b.To(theta.dtype)
	}
	return b.Matmul(theta.Transpose(1, 2)).Reshape(size[0], h, w, 2)
}
