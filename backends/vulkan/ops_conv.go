//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"github.com/kiln-ml/kiln/backends"
)

// checkUnfolded checks the views of Im2Col and Col2Im against g: the image
// [N, C, H, W] and the columns [N, C·KH·KW, OutH·OutW], of one dtype.
func (b *Backend) checkUnfolded(op string, image, cols backends.View, g backends.ConvGeometry) bool {
	for _, v := range []int{g.N, g.C, g.H, g.W, g.KH, g.KW, g.OutH, g.OutW, g.PadTop, g.PadLeft} {
		if v < 0 {
			return b.refuse(op, "negative size in geometry %+v", g)
		}
	}
	if g.StrideH < 1 || g.StrideW < 1 {
		return b.refuse(op, "strides %d×%d: want at least 1", g.StrideH, g.StrideW)
	}
	return b.checkRank(op, image, cols) &&
		b.checkShape(op, "image", image, []int{g.N, g.C, g.H, g.W}) &&
		b.checkShape(op, "columns", cols, []int{g.N, g.C * g.KH * g.KW, g.OutH * g.OutW}) &&
		b.checkDType(op, "columns", cols, image.DType) && b.ok(op, image, cols)
}

// convArgs writes the window geometry (dilations of 0 read as 1).
func convArgs(w *argWriter, g backends.ConvGeometry) {
	for _, v := range []int{g.N, g.C, g.H, g.W, g.KH, g.KW, g.StrideH, g.StrideW, g.PadTop, g.PadLeft,
		max(g.DilationH, 1), max(g.DilationW, 1), g.OutH, g.OutW} {
		w.i64(int64(v))
	}
}

// Im2Col implements backends.Backend: one thread per element of out.
func (b *Backend) Im2Col(out, x backends.View, g backends.ConvGeometry) {
	if b.hostWithoutDoubles("im2col", vs(out), vs(x), func(c backends.Backend, o, i []backends.View) { c.Im2Col(o[0], i[0], g) }) {
		return
	}
	if !b.checkUnfolded("im2col", x, out, g) {
		return
	}
	n := out.NumElements()
	if n == 0 {
		return
	}
	w := new(argWriter)
	w.view(out)
	w.view(x)
	convArgs(w, g)
	w.f64(g.PadValue)
	w.i64(int64(n))
	b.launch("im2col", []int32{int32(out.DType)}, w, groups1D(n))
}

// Col2Im implements backends.Backend: one thread per element of out sums
// the windows that cover it in the CPU's order (window row, then column),
// rounding to out's dtype after every addition, without atomics.
func (b *Backend) Col2Im(out, cols backends.View, g backends.ConvGeometry) {
	if b.hostWithoutDoubles("col2im", vs(out), vs(cols), func(c backends.Backend, o, i []backends.View) { c.Col2Im(o[0], i[0], g) }) {
		return
	}
	if !b.checkUnfolded("col2im", out, cols, g) {
		return
	}
	n := out.NumElements()
	if n == 0 {
		return
	}
	w := new(argWriter)
	w.view(out)
	w.view(cols)
	convArgs(w, g)
	w.i64(int64(n))
	b.launch("col2im", []int32{int32(out.DType)}, w, groups1D(n))
}
