//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"fmt"
	"slices"

	"github.com/kiln-ml/kiln/backends"
)

// Shape checks and view plumbing shared by the kernels of ops_*.go. The
// shaders address each view only within its shape, and b.ok checks that
// every view stays inside its buffer, so these checks are what keeps a wrong
// call from touching memory it does not own: each kernel's views must agree
// in shape the way the kernel walks them.

// maxRank is the most dimensions a view written into shader arguments has.
const maxRank = 8

// refuse records a shape or argument error for op as the sticky error and
// returns false, so that callers write `return b.refuse(…)`-style checks.
func (b *Backend) refuse(op, format string, args ...any) bool {
	b.fail(fmt.Errorf("vulkan: %s: %s", op, fmt.Sprintf(format, args...)))
	return false
}

// checkRank refuses views with more dimensions than a shader takes.
func (b *Backend) checkRank(op string, views ...backends.View) bool {
	for _, v := range views {
		if len(v.Shape) > maxRank {
			return b.refuse(op, "%d dimensions (the Vulkan kernels take at most %d)", len(v.Shape), maxRank)
		}
		if len(v.Strides) != len(v.Shape) {
			return b.refuse(op, "view %v has %d strides for %d dimensions", v.Shape, len(v.Strides), len(v.Shape))
		}
	}
	return true
}

// checkAxis refuses an axis outside [0, rank).
func (b *Backend) checkAxis(op string, axis, rank int) bool {
	if axis < 0 || axis >= rank {
		return b.refuse(op, "axis %d out of range for %d dimensions", axis, rank)
	}
	return true
}

// checkShape refuses v unless its shape is want.
func (b *Backend) checkShape(op, what string, v backends.View, want []int) bool {
	if !slices.Equal(v.Shape, want) {
		return b.refuse(op, "%s has shape %v, want %v", what, v.Shape, want)
	}
	return true
}

// checkDType refuses v unless its dtype is want.
func (b *Backend) checkDType(op, what string, v backends.View, want backends.DType) bool {
	if v.DType != want {
		return b.refuse(op, "%s is %s, want %s", what, v.DType, want)
	}
	return true
}

// isIntLike reports whether d is an integer type or Bool (computed in int64).
func isIntLike(d backends.DType) bool { return d.IsInt() || d == backends.Bool }

// with returns a copy of s with s[i] = v.
func with(s []int, i, v int) []int {
	out := slices.Clone(s)
	out[i] = v
	return out
}

// coalesce drops the size-1 dimensions of views walked together over shape
// and merges adjacent dimensions that every view lays out as one, so that
// the shaders divide through as few dimensions as possible. Offsets are
// kept; the element order of a row-major walk is unchanged.
func coalesce(shape []int, views ...backends.View) ([]int, []backends.View) {
	var sh []int
	st := make([][]int, len(views))
	for d, s := range shape {
		if s == 1 {
			continue
		}
		if k := len(sh) - 1; k >= 0 {
			merge := true
			for i, v := range views {
				if st[i][k] != v.Strides[d]*s {
					merge = false
					break
				}
			}
			if merge {
				sh[k] *= s
				for i, v := range views {
					st[i][k] = v.Strides[d]
				}
				continue
			}
		}
		sh = append(sh, s)
		for i, v := range views {
			st[i] = append(st[i], v.Strides[d])
		}
	}
	out := make([]backends.View, len(views))
	for i, v := range views {
		v.Shape, v.Strides = sh, st[i]
		if v.Strides == nil {
			v.Strides = []int{}
		}
		out[i] = v
	}
	if sh == nil {
		sh = []int{}
	}
	return sh, out
}

// hostWithoutDoubles runs fn on the host (onHost, counted in HostOps) and
// reports true when the device lacks shaderFloat64: every shader of this
// package declares the Float64 capability (common.glsl's conversions, and
// the double accumulators of the reductions), so such devices (many Intel
// and Apple GPUs) cannot create their pipelines. Then the whole
// composition runs on the CPU backend's kernels, whose fused kernels agree
// with it exactly.
func (b *Backend) hostWithoutDoubles(op string, outs, ins []backends.View, fn func(c backends.Backend, o, i []backends.View)) bool {
	if b.pd.features.float64 {
		return false
	}
	b.onHost(op, outs, ins, fn)
	return true
}

// vs is shorthand for a list of views.
func vs(v ...backends.View) []backends.View { return v }
