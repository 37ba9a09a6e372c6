package tensor

import (
	"fmt"
	"math"
)

// Nearest and (bi)linear resampling act on each spatial axis independently,
// so Interpolate builds one small interpolation matrix per axis on the host
// (each output row holds the weights of the input samples it reads) and
// applies them as two matrix products, out = Mh·x·Mwᵀ; the backward pass
// is the same two products transposed (see nnSeparable). The matrices are
// dense, which costs O(in) multiply-adds per output element instead of at
// most four: fine for feature maps, wasteful for very large images.

// InterpolateConfig configures Interpolate. Give exactly one of Size and
// ScaleFactor. The zero value of every other field is PyTorch's default.
type InterpolateConfig struct {
	// Size is the output size: one value for every spatial dimension or
	// one per dimension (height, width).
	Size []int `json:"size,omitempty"`
	// ScaleFactor multiplies the input size (the output size is
	// ⌊in·scale⌋): one value or one per dimension. Unless
	// RecomputeScaleFactor is set, the sampling positions use this factor
	// itself rather than the ratio of the sizes, as in PyTorch.
	ScaleFactor []float64 `json:"scale_factor,omitempty"`
	// Mode is "nearest" (the default, also ""), "nearest-exact", "linear"
	// (3-D input), "bilinear" or "bicubic" (4-D input).
	Mode string `json:"mode,omitempty"`
	// AlignCorners makes linear and cubic modes map the corner samples of
	// input and output onto each other; otherwise samples are taken at
	// pixel centres (PyTorch's default, align_corners=False). Nearest modes
	// reject it.
	AlignCorners bool `json:"align_corners,omitempty"`
	// RecomputeScaleFactor computes the sampling positions from the output
	// size even when ScaleFactor gives it, as PyTorch's
	// recompute_scale_factor=True.
	RecomputeScaleFactor bool `json:"recompute_scale_factor,omitempty"`
}

// Interpolate resamples x [N, C, H, W] (or [N, C, L]) to a new spatial
// size, as torch.nn.functional.interpolate in modes nearest (PyTorch's
// legacy nearest, which picks ⌊dst·scale⌋), nearest-exact (pixel centres),
// linear, bilinear and bicubic (both ways of AlignCorners; bicubic uses
// Keys' cubic convolution with A = −0.75 and clamps reads at the border, as
// PyTorch does, so it may overshoot the input's range). Gradients flow to
// x. It panics with ErrShape for inputs of rank other than 3 or 4, ErrArgument
// for a bad configuration (both or neither of Size and ScaleFactor, an
// unknown mode, a mode that does not fit the rank, non-positive sizes or
// factors) and ErrDType for non-float input.
func Interpolate(x *Tensor, cfg InterpolateConfig) *Tensor {
	const op = "Interpolate"
	x.live(op)
	r := len(x.shape)
	if r != 3 && r != 4 {
		fail(op, ErrShape, "input %s must be [N, C, L] or [N, C, H, W]", shapeString(x.shape))
	}
	spatial := r - 2
	mode := cfg.Mode
	if mode == "" {
		mode = "nearest"
	}
	linear := false
	switch mode {
	case "nearest", "nearest-exact":
		if cfg.AlignCorners {
			fail(op, ErrArgument, "AlignCorners only applies to linear modes, not %q", mode)
		}
	case "linear", "bilinear", "bicubic":
		linear = true
		if want := map[string]int{"linear": 1, "bilinear": 2, "bicubic": 2}[mode]; want != spatial {
			fail(op, ErrArgument, "mode %q needs a %d-D input, got %s", mode, want+2, shapeString(x.shape))
		}
	default:
		fail(op, ErrArgument, "unknown mode %q (want nearest, nearest-exact, linear, bilinear or bicubic)", mode)
	}
	in := x.shape[2:]
	out := make([]int, spatial)
	scales := make([]float64, spatial) // 0: use the size ratio
	switch {
	case len(cfg.Size) > 0 && len(cfg.ScaleFactor) > 0:
		fail(op, ErrArgument, "give Size %v or ScaleFactor %v, not both", cfg.Size, cfg.ScaleFactor)
	case len(cfg.Size) > 0:
		if len(cfg.Size) != 1 && len(cfg.Size) != spatial {
			fail(op, ErrArgument, "Size %v: want 1 or %d values for input %s", cfg.Size, spatial, shapeString(x.shape))
		}
		for i := range out {
			out[i] = cfg.Size[min(i, len(cfg.Size)-1)]
			if out[i] < 1 {
				fail(op, ErrArgument, "Size %v: sizes must be positive", cfg.Size)
			}
		}
	case len(cfg.ScaleFactor) > 0:
		if len(cfg.ScaleFactor) != 1 && len(cfg.ScaleFactor) != spatial {
			fail(op, ErrArgument, "ScaleFactor %v: want 1 or %d values for input %s", cfg.ScaleFactor, spatial,
				shapeString(x.shape))
		}
		for i := range out {
			s := cfg.ScaleFactor[min(i, len(cfg.ScaleFactor)-1)]
			if !(s > 0) || math.IsInf(s, 0) {
				fail(op, ErrArgument, "ScaleFactor %v: factors must be positive and finite", cfg.ScaleFactor)
			}
			out[i] = int(math.Floor(float64(in[i]) * s))
			if out[i] < 1 {
				fail(op, ErrArgument, "ScaleFactor %v gives an empty output for input %s", cfg.ScaleFactor, shapeString(x.shape))
			}
			if !cfg.RecomputeScaleFactor {
				scales[i] = s
			}
		}
	default:
		fail(op, ErrArgument, "give Size or ScaleFactor")
	}
	matrix := func(i int) []float64 {
		if mode == "bicubic" {
			return nnCubicMatrix(in[i], out[i], scales[i], cfg.AlignCorners)
		}
		if linear {
			return nnLinearMatrix(in[i], out[i], scales[i], cfg.AlignCorners)
		}
		return nnNearestMatrix(in[i], out[i], scales[i], mode == "nearest-exact")
	}
	attrs := map[string]any{"mode": mode, "size": out, "align_corners": cfg.AlignCorners}
	name := "upsample_" + map[string]string{"nearest": "nearest", "nearest-exact": "nearest_exact", "linear": "linear",
		"bilinear": "bilinear", "bicubic": "bicubic"}[mode] + fmt.Sprintf("%dd", spatial)
	if spatial == 1 {
		return nnSeparable(op, name, attrs, x, nil, 0, matrix(0), out[0])
	}
	return nnSeparable(op, name, attrs, x, matrix(0), out[0], matrix(1), out[1])
}

// nnNearestMatrix returns the [out, in] selection matrix of PyTorch's
// nearest (exact false) or nearest-exact resampling. The source index is
// computed in float32, as PyTorch's kernels do, so that rounding picks the
// same pixels.
func nnNearestMatrix(in, out int, scale float64, exact bool) []float64 {
	s := float32(in) / float32(out)
	if scale > 0 {
		s = float32(1 / scale)
	}
	m := make([]float64, out*in)
	for i := range out {
		var src int
		switch {
		case exact:
			src = min(int(math.Floor(float64(float32((float64(i)+0.5)*float64(s))))), in-1)
		case out == in: // PyTorch's legacy shortcuts
			src = i
		case out == 2*in:
			src = i >> 1
		default:
			src = min(int(math.Floor(float64(float32(i)*s))), in-1)
		}
		m[i*in+src] = 1
	}
	return m
}

// nnLinearMatrix returns the [out, in] matrix of PyTorch's linear
// resampling along one axis: each output reads the two nearest samples,
// weighted by distance.
func nnLinearMatrix(in, out int, scale float64, alignCorners bool) []float64 {
	var s float64
	switch {
	case alignCorners && out > 1:
		s = float64(in-1) / float64(out-1)
	case alignCorners:
		s = 0
	case scale > 0:
		s = 1 / scale
	default:
		s = float64(in) / float64(out)
	}
	m := make([]float64, out*in)
	for i := range out {
		var src float64
		if alignCorners {
			src = s * float64(i)
		} else {
			src = max(s*(float64(i)+0.5)-0.5, 0)
		}
		i0 := int(src)
		i1 := i0
		if i0 < in-1 {
			i1 = i0 + 1
		}
		l1 := src - float64(i0)
		m[i*in+i0] += 1 - l1
		m[i*in+i1] += l1
	}
	return m
}

// nnCubicMatrix returns the [out, in] matrix of PyTorch's bicubic
// resampling along one axis: each output reads the four samples around its
// source position (indices clamped to the input), weighted by Keys' cubic
// convolution kernel with A = −0.75. Unlike linear resampling, the source
// position is not clamped at 0, as in PyTorch's upsample_bicubic2d.
func nnCubicMatrix(in, out int, scale float64, alignCorners bool) []float64 {
	const a = -0.75
	var s float64
	switch {
	case alignCorners && out > 1:
		s = float64(in-1) / float64(out-1)
	case alignCorners:
		s = 0
	case scale > 0:
		s = 1 / scale
	default:
		s = float64(in) / float64(out)
	}
	near := func(x float64) float64 { return ((a+2)*x-(a+3))*x*x + 1 }  // |x| ≤ 1
	far := func(x float64) float64 { return ((a*x-5*a)*x+8*a)*x - 4*a } // 1 < |x| < 2
	m := make([]float64, out*in)
	for i := range out {
		var src float64
		if alignCorners {
			src = s * float64(i)
		} else {
			src = s*(float64(i)+0.5) - 0.5
		}
		i0 := int(math.Floor(src))
		t := src - float64(i0)
		w := [4]float64{far(t + 1), near(t), near(1 - t), far(2 - t)}
		for k, wk := range w {
			j := min(max(i0-1+k, 0), in-1)
			m[i*in+j] += wk
		}
	}
	return m
}
