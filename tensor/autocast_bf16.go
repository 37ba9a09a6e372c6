package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// bf16Matmuler is the optional backend interface of bfloat16 autocast
// products, offered by the CPU backend: MatmulBF16 is Matmul with Float32
// (or BFloat16) operands rounded to bfloat16 as they are read, exact
// products summed in float32, into a Float32 (or BFloat16) out. With it, a
// BFloat16 Autocast view multiplies float32 tensors as PyTorch's CPU
// autocast does, without bfloat16 copies of its inputs and with a float32
// result, so the ops that follow stay in float32.
type bf16Matmuler interface {
	MatmulBF16(out, x, y backends.View)
}

// bf16Conver is the optional backend interface of bfloat16 autocast
// convolutions, offered by the CPU backend: ConvFusion's three kernels on
// Float32 views, with their operands rounded to bfloat16 and the exact
// products summed in float32 where the backend finds that faster than its
// float32 kernels (on the CPU, with AVX-512 BF16: its Winograd path's
// layers, whose transformed operands are rounded, and other layers of at
// least 32 input and 64 output channels), else exactly those. A convolution on a
// BFloat16 Autocast view that stays in float32 (autocastConvF32) runs
// through them, its backward included.
type bf16Conver interface {
	Conv2dBF16(out, x, w backends.View, g backends.ConvGeometry)
	Conv2dInputGradBF16(dx, dy, w backends.View, g backends.ConvGeometry)
	Conv2dWeightGradBF16(dw, dy, x backends.View, g backends.ConvGeometry)
}

// bf16ConvFusion is a bf16Conver as a backends.ConvFusion.
type bf16ConvFusion struct{ c bf16Conver }

func (f bf16ConvFusion) Conv2d(out, x, w backends.View, g backends.ConvGeometry) {
	f.c.Conv2dBF16(out, x, w, g)
}

func (f bf16ConvFusion) Conv2dInputGrad(dx, dy, w backends.View, g backends.ConvGeometry) {
	f.c.Conv2dInputGradBF16(dx, dy, w, g)
}

func (f bf16ConvFusion) Conv2dWeightGrad(dw, dy, x backends.View, g backends.ConvGeometry) {
	f.c.Conv2dWeightGradBF16(dw, dy, x, g)
}

// autocastBF16 returns the backend's bfloat16 product when ts (nil entries
// skipped) should take the direct bfloat16 autocast path: one of them is on
// a BFloat16 Autocast view and none on another Autocast view, all are
// Float32 and their backend offers MatmulBF16. Otherwise ok is false and
// the op takes the casting path (autocastInputs).
func autocastBF16(ts ...*Tensor) (mm bf16Matmuler, ok bool) {
	var first *Tensor
	casting := false
	for _, t := range ts {
		if t == nil {
			continue
		}
		if first == nil {
			first = t
		}
		if t.dev.casting {
			if t.dev.autocast != BFloat16 {
				return nil, false
			}
			casting = true
		}
		if t.dtype != Float32 {
			return nil, false
		}
	}
	if !casting || composeOnly.Load() {
		return nil, false
	}
	mm, ok = first.backend().(bf16Matmuler)
	return mm, ok
}

// rawMatmulBF16 is rawMatmul through mm: the operands (Float32 or
// BFloat16; others are cast to Float32 first) rounded to bfloat16, the
// products summed in float32 into a Float32 result. No graph.
func rawMatmulBF16(op string, mm bf16Matmuler, a, b *Tensor) *Tensor {
	if a.dtype != Float32 && a.dtype != BFloat16 {
		a = rawCast(op, a, Float32)
		defer a.Release()
	}
	if b.dtype != Float32 && b.dtype != BFloat16 {
		b = rawCast(op, b, Float32)
		defer b.Release()
	}
	return rawMatmulVia(op, a, b, Float32, mm.MatmulBF16)
}

// rawMatmulVia is rawMatmul's shape handling (1-D operands promoted and
// the added dimension removed, batch dimensions broadcast, a batch against
// one matrix merged into one product), multiplied by mul into a result of
// dtype.
func rawMatmulVia(op string, a, b *Tensor, dtype DType, mul func(out, x, y backends.View)) *Tensor {
	sameDevice(op, a, b)
	if len(a.shape) == 0 || len(b.shape) == 0 {
		fail(op, ErrShape, "matmul needs at least 1-D operands, got %s and %s", shapeString(a.shape), shapeString(b.shape))
	}
	av, bv := a.view(), b.view()
	if len(av.Shape) == 1 {
		av.Shape, av.Strides = []int{1, av.Shape[0]}, []int{0, av.Strides[0]}
	}
	if len(bv.Shape) == 1 {
		bv.Shape, bv.Strides = []int{bv.Shape[0], 1}, []int{bv.Strides[0], 0}
	}
	ra, rb := len(av.Shape), len(bv.Shape)
	m, k, k2, n := av.Shape[ra-2], av.Shape[ra-1], bv.Shape[rb-2], bv.Shape[rb-1]
	if k != k2 {
		fail(op, ErrShape, "cannot multiply %s by %s: inner dimensions %d and %d differ", shapeString(a.shape), shapeString(b.shape), k, k2)
	}
	batch := broadcastShapes(op, av.Shape[:ra-2], bv.Shape[:rb-2])
	outShape := append(append([]int{}, batch...), m, n)
	bcast := func(v backends.View, rows, cols int) backends.View {
		r := len(v.Shape)
		st := make([]int, len(batch)+2)
		off := len(batch) - (r - 2)
		for i := range batch {
			if j := i - off; j >= 0 && v.Shape[j] == batch[i] {
				st[i] = v.Strides[j]
			}
		}
		st[len(batch)], st[len(batch)+1] = v.Strides[r-2], v.Strides[r-1]
		v.Shape = append(append([]int{}, batch...), rows, cols)
		v.Strides = st
		return v
	}
	out := newTensor(op, a.dev, dtype, outShape)
	ab, bb := bcast(av, m, k), bcast(bv, k, n)
	if a2, ok := mergedRows(ab, bb); ok {
		o2 := out.view()
		o2.Shape, o2.Strides = []int{a2.Shape[0], n}, []int{n, 1}
		b2 := bb
		b2.Shape, b2.Strides = bb.Shape[len(batch):], bb.Strides[len(batch):]
		mul(o2, a2, b2)
	} else {
		mul(out.view(), ab, bb)
	}
	final := outShape
	switch {
	case len(a.shape) == 1 && len(b.shape) == 1:
		final = []int{}
	case len(a.shape) == 1:
		final = append(append([]int{}, batch...), n)
	case len(b.shape) == 1:
		final = append(append([]int{}, batch...), m)
	}
	if len(final) != len(outShape) {
		v := out.newView(final, backends.RowMajorStrides(final), 0)
		out.Release()
		return v
	}
	return out
}

// matmulBF16 is Matmul on a BFloat16 Autocast view with Float32 operands:
// one bfloat16 product into a Float32 result, recorded as a "matmul" node
// with the attribute autocast "bfloat16" (graph exporters read it as the
// float32 product it approximates), whose backward multiplies the Float32 upstream gradient the same way
// (dA = g·bᵀ, dB = aᵀ·g, each operand rounded to bfloat16), so the
// gradients are Float32.
func matmulBF16(mm bf16Matmuler, t, other *Tensor) *Tensor {
	const op = "Matmul"
	out := rawMatmulBF16(op, mm, t, other)
	return record("matmul", map[string]any{"autocast": "bfloat16"}, out, []*Tensor{t, other}, func(g *Tensor) []*Tensor {
		return matmulBackwardVia(g, t, other, func(x, y *Tensor) *Tensor { return rawMatmulBF16(op, mm, x, y) })
	})
}

// matmulBackwardVia is matmulBackward with the products computed by mul.
func matmulBackwardVia(g, a, b *Tensor, mul func(x, y *Tensor) *Tensor) []*Tensor {
	a2, b2, g2 := a, b, g
	if len(a.shape) == 1 {
		a2 = a.newView([]int{1, a.shape[0]}, []int{0, a.strides[0]}, a.offset)
		defer a2.Release()
	}
	if len(b.shape) == 1 {
		b2 = b.newView([]int{b.shape[0], 1}, []int{b.strides[0], 0}, b.offset)
		defer b2.Release()
	}
	gs := append([]int{}, g.shape...)
	gst := append([]int{}, g.strides...)
	switch {
	case len(a.shape) == 1 && len(b.shape) == 1: // g is 0-d
		gs, gst = []int{1, 1}, []int{0, 0}
	case len(a.shape) == 1:
		gs = append(gs[:len(gs)-1], 1, gs[len(gs)-1])
		gst = append(gst[:len(gst)-1], 0, gst[len(gst)-1])
	case len(b.shape) == 1:
		gs = append(gs, 1)
		gst = append(gst, 0)
	}
	if len(gs) != len(g.shape) {
		g2 = g.newView(gs, gst, g.offset)
		defer g2.Release()
	}
	var ga, gb *Tensor
	if a.requiresGrad {
		bt := b2.transposeView(-1, -2)
		ga = mul(g2, bt)
		bt.Release()
		ga = reshapeGrad(gradFor(ga, a2), a)
	}
	if b.requiresGrad {
		at := a2.transposeView(-1, -2)
		gb = mul(at, g2)
		at.Release()
		gb = reshapeGrad(gradFor(gb, b2), b)
	}
	return []*Tensor{ga, gb}
}

// bf16LinearFuser is the optional backend interface of a bfloat16
// autocast Linear with its bias added in the GEMM's epilogue, offered by
// the CPU backend: MatmulBiasBF16 is MatmulBF16 of x [M, K] and w [K, N]
// into out [M, N] (Float32, contiguous) plus bias [N] (Float32,
// contiguous) added to each tile while it is in cache, the same bits as
// the product followed by Binary's Add.
type bf16LinearFuser interface {
	MatmulBiasBF16(out, x, w, bias backends.View)
}

// linearBF16Fused computes x·weightᵀ + bias through the backend's
// bfloat16 linear epilogue (bf16LinearFuser), or reports false where it
// does not apply: no bias, another backend, or an x whose leading
// dimensions cannot be viewed as one. The inputs are Float32 (checked by
// autocastBF16).
func linearBF16Fused(op string, x, weight, bias *Tensor) (*Tensor, bool) {
	if bias == nil {
		return nil, false
	}
	f, ok := x.backend().(bf16LinearFuser)
	if !ok {
		return nil, false
	}
	return linearEpilogue(op, x, weight, bias, Float32, f.MatmulBiasBF16)
}

// linearBF16 is Linear on a BFloat16 Autocast view with Float32 inputs
// (already checked by Linear): x·weightᵀ as one bfloat16 product into a
// Float32 result, plus bias in float32, recorded as a "linear" node with
// the attribute autocast "bfloat16"; where the backend offers
// MatmulBiasBF16, the bias is added in the GEMM's epilogue. Its backward
// computes dx = g·weight and dweight = gᵀ·x with the same
// bfloat16 products and dbias = Σg in float32; all gradients are Float32.
func linearBF16(mm bf16Matmuler, x, weight, bias *Tensor) *Tensor {
	const op = "Linear"
	inputs := []*Tensor{x, weight}
	if bias != nil {
		inputs = append(inputs, bias)
	}
	out, in := weight.shape[0], weight.shape[1]
	y, fused := linearBF16Fused(op, x, weight, bias)
	if !fused {
		wt := weight.transposeView(0, 1)
		y = rawMatmulBF16(op, mm, x, wt)
		wt.Release()
		if bias != nil {
			yb := rawBinary(op, addOp, y, bias)
			y.Release()
			y = yb
		}
	}
	attrs := map[string]any{"in_features": in, "out_features": out, "bias": bias != nil, "autocast": "bfloat16"}
	return record("linear", attrs, y, inputs, func(g *Tensor) []*Tensor {
		grads := make([]*Tensor, len(inputs))
		if bias != nil && bias.requiresGrad {
			grads[2] = gradFor(g.newView(g.shape, g.strides, g.offset), bias)
		}
		if x.requiresGrad {
			grads[0] = gradFor(rawMatmulBF16(op, mm, g, weight), x)
		}
		if weight.requiresGrad {
			g2 := rawReshape(op, g, []int{-1, out})
			x2 := rawReshape(op, x, []int{-1, in})
			g2t := g2.transposeView(0, 1)
			grads[1] = gradFor(rawMatmulBF16(op, mm, g2t, x2), weight)
			g2t.Release()
			g2.Release()
			x2.Release()
		}
		return grads
	})
}
