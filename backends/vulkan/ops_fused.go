//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"fmt"
	"slices"

	"github.com/kiln-ml/kiln/backends"
)

// The optional fused kernels of package backends that this device runs in
// one shader each.
var (
	_ backends.AdamFusion         = (*Backend)(nil)
	_ backends.CrossEntropyFusion = (*Backend)(nil)
)

// checkFusedViews refuses a dtype dt other than Float32 and Float64, and
// views that are not contiguous, not of dt (Int64 for those named in ints)
// or not of their shape in shapes (a one-dimensional shape [n] accepts any
// shape of n elements, as [N] or [N, 1]).
func (b *Backend) checkFusedViews(op string, dt backends.DType, views []backends.View, names []string, shapes [][]int, ints ...string) bool {
	if dt != backends.Float32 && dt != backends.Float64 {
		return b.refuse(op, "dtype %s (want float32 or float64)", dt)
	}
	for i, v := range views {
		want := dt
		if slices.Contains(ints, names[i]) {
			want = backends.Int64
		}
		if v.Buf == nil {
			return b.refuse(op, "%s missing", names[i])
		}
		if !b.checkRank(op, v) || !b.checkDType(op, names[i], v, want) {
			return false
		}
		if len(shapes[i]) == 1 && v.NumElements() != shapes[i][0] {
			return b.refuse(op, "%s has shape %v, want %d elements", names[i], v.Shape, shapes[i][0])
		}
		if len(shapes[i]) > 1 && !b.checkShape(op, names[i], v, shapes[i]) {
			return false
		}
		if !v.IsContiguous() {
			return b.refuse(op, "%s %v is not contiguous", names[i], v)
		}
	}
	return b.ok(op, views...)
}

// AdamStep implements backends.AdamFusion (shaders/adam.comp): one pass
// over memory, every intermediate rounded as the composition rounds it.
func (b *Backend) AdamStep(outP, outM, outV, p, g, m, v backends.View, h backends.AdamHyper) {
	const op = "adam step"
	if !b.pd.features.float64 {
		outs, ins := vs(outM, outV), vs(p, g)
		if h.MovesParam {
			outs = append(outs, outP)
		}
		if !h.First {
			ins = append(ins, m, v)
		}
		b.onHost(op, outs, ins, func(c backends.Backend, o, i []backends.View) {
			var np, om, ov backends.View
			if h.MovesParam {
				np = o[2]
			}
			if !h.First {
				om, ov = i[2], i[3]
			}
			c.(backends.AdamFusion).AdamStep(np, o[0], o[1], i[0], i[1], om, ov, h)
		})
		return
	}
	views := []backends.View{outP, outM, outV, p, g, m, v}
	names := []string{"new parameters", "new first moments", "new second moments", "parameters", "gradients",
		"first moments", "second moments"}
	used := []bool{h.MovesParam, true, true, true, true, !h.First, !h.First}
	var vs []backends.View
	var ns []string
	var shapes [][]int
	for i, view := range views {
		if used[i] {
			vs, ns, shapes = append(vs, view), append(ns, names[i]), append(shapes, p.Shape)
		} else {
			views[i] = p // never read or written: any valid view fills the slot
		}
	}
	if !b.checkFusedViews(op, p.DType, vs, ns, shapes) {
		return
	}
	n := p.NumElements()
	if n == 0 {
		return
	}
	w := new(argWriter)
	for _, view := range views {
		w.view(view)
	}
	for _, x := range []float64{h.Decay, h.WeightDecay, h.Beta1, h.Beta2, 1 - h.Beta1, 1 - h.Beta2, h.InvDenom, h.EpsTerm} {
		w.f64(x)
	}
	w.i64(int64(n))
	flag := func(f bool) int32 {
		if f {
			return 1
		}
		return 0
	}
	b.launch("adam", []int32{int32(p.DType), flag(h.Maximize), flag(h.First), flag(h.MovesParam)}, w, groups1D(n))
}

// CrossEntropyForward implements backends.CrossEntropyFusion. Float32 runs
// in one shader (shaders/crossentropy.comp), one workgroup per row, with
// the very operations the composition runs on this device; Float64, whose
// exponential and logarithm GLSL lacks, composes the log-softmax from this
// device's primitives as package tensor does and picks the losses in one
// shader.
func (b *Backend) CrossEntropyForward(logp, nll, weight, x, target backends.View, ignore int64) {
	const op = "cross entropy"
	if b.hostWithoutDoubles(op, vs(logp, nll, weight), vs(x, target), func(c backends.Backend, o, i []backends.View) {
		c.(backends.CrossEntropyFusion).CrossEntropyForward(o[0], o[1], o[2], i[0], i[1], ignore)
	}) {
		return
	}
	if len(x.Shape) != 2 {
		b.refuse(op, "logits %v (want [N, C])", x.Shape)
		return
	}
	n, c := x.Shape[0], x.Shape[1]
	if c > backends.CrossEntropyMaxClasses {
		b.refuse(op, "%d classes, more than the fused kernel's %d", c, backends.CrossEntropyMaxClasses)
		return
	}
	if !b.checkFusedViews(op, x.DType, []backends.View{logp, nll, weight, x, target},
		[]string{"log-probabilities", "losses", "weights", "logits", "targets"},
		[][]int{x.Shape, {n}, {n}, x.Shape, {n}}, "targets") {
		return
	}
	if n == 0 || c == 0 {
		return
	}
	args := func() *argWriter {
		w := new(argWriter)
		for _, v := range []backends.View{logp, nll, weight, x, target, x, x} {
			w.view(v)
		}
		for _, v := range []int64{int64(n), int64(c), ignore, 0} {
			w.i64(v)
		}
		return w
	}
	if x.DType == backends.Float32 {
		tree := int32(1)
		if reduceByThread(n, c) {
			tree = 0
		}
		b.launch("crossentropy", []int32{0, tree}, args(), [3]uint32{uint32(min(n, 65535)), 1, 1})
		return
	}
	// Float64: package tensor's log-softmax (actSoftmax), primitive by primitive
	tmp := func(shape ...int) backends.View {
		buf, err := b.Alloc(x.DType, backends.NumElements(shape))
		if err != nil {
			b.fail(fmt.Errorf("vulkan: %s: %w", op, err))
			return backends.View{}
		}
		return backends.Contiguous(buf, x.DType, shape...)
	}
	m, s, e, z, lz := tmp(n, 1), tmp(n, c), tmp(n, c), tmp(n, 1), tmp(n, 1)
	failed := false
	for _, v := range []backends.View{m, s, e, z, lz} {
		if v.Buf == nil {
			failed = true
			continue
		}
		defer b.Free(v.Buf) // reused only once the work queued here has run
	}
	if failed {
		return
	}
	wide := func(v backends.View) backends.View { // [N, 1] broadcast to [N, C]
		return backends.View{Buf: v.Buf, DType: v.DType, Shape: []int{n, c}, Strides: []int{1, 0}}
	}
	b.Reduce(backends.Max, m, x, []int{1})
	b.Binary(backends.Sub, s, x, wide(m))
	b.Unary(backends.Exp, e, s, 0, 0)
	b.Reduce(backends.Sum, z, e, []int{1})
	b.Unary(backends.Log, lz, z, 0, 0)
	b.Binary(backends.Sub, logp, s, wide(lz))
	b.launch("crossentropy", []int32{2, 0}, args(), groups1D(n))
}

// CrossEntropyBackward implements backends.CrossEntropyFusion: one shader
// for Float32; for Float64 the exponential through this device's Unary,
// then one shader for the rest.
func (b *Backend) CrossEntropyBackward(dx, logp, weight, target, coef backends.View, ignore int64) {
	const op = "cross entropy grad"
	if b.hostWithoutDoubles(op, vs(dx), vs(logp, weight, target, coef), func(c backends.Backend, o, i []backends.View) {
		c.(backends.CrossEntropyFusion).CrossEntropyBackward(o[0], i[0], i[1], i[2], i[3], ignore)
	}) {
		return
	}
	if len(dx.Shape) != 2 {
		b.refuse(op, "logits grad %v (want [N, C])", dx.Shape)
		return
	}
	n, c := dx.Shape[0], dx.Shape[1]
	perRow := coef.NumElements() != 1
	coefN := 1
	if perRow {
		coefN = n
	}
	if !b.checkFusedViews(op, dx.DType, []backends.View{dx, logp, weight, target, coef},
		[]string{"logits grad", "log-probabilities", "weights", "targets", "coefficients"},
		[][]int{dx.Shape, dx.Shape, {n}, {n}, {coefN}}, "targets") {
		return
	}
	if n == 0 || c == 0 {
		return
	}
	mode := int32(1)
	if dx.DType == backends.Float64 {
		b.Unary(backends.Exp, dx, logp, 0, 0)
		mode = 3
	}
	w := new(argWriter)
	for _, v := range []backends.View{logp, logp, weight, logp, target, coef, dx} {
		w.view(v)
	}
	row := int64(0)
	if perRow {
		row = 1
	}
	for _, v := range []int64{int64(n), int64(c), ignore, row} {
		w.i64(v)
	}
	b.launch("crossentropy", []int32{mode, 0}, w, groups1D(n*c))
}
