package tensor

import (
	"github.com/kiln-ml/kiln/backends"
)

// linearFused computes x·wᵀ + bias through the backend's fused linear
// kernel (backends.LinearFusion), or reports false where it does not apply:
// another backend, dtypes other than one of Float32 and Float64, or an x
// whose leading dimensions cannot be viewed as one (those take the
// composed path, which copies them anyway).
func linearFused(op string, x, weight, bias *Tensor) (*Tensor, bool) {
	if composeOnly.Load() || bias == nil || (x.dtype != Float32 && x.dtype != Float64) ||
		weight.dtype != x.dtype || bias.dtype != x.dtype {
		return nil, false
	}
	f, ok := x.backend().(backends.LinearFusion)
	if !ok {
		return nil, false
	}
	return linearEpilogue(op, x, weight, bias, x.dtype, f.MatmulBias)
}

// linearEpilogue runs a fused linear kernel (out = x·wᵀ + bias, the bias
// added in the product's epilogue) for x [..., in], weight [out, in] and
// bias [out]: x viewed as [rows, in], weight as wᵀ [in, out], a result of
// dtype [..., out] viewed as [rows, out]. It reports false, running
// nothing, when x's leading dimensions cannot be viewed as one.
func linearEpilogue(op string, x, weight, bias *Tensor, dtype DType, kernel func(out, x, w, bias backends.View)) (*Tensor, bool) {
	out, in := weight.shape[0], weight.shape[1]
	rows := x.NumElements() / max(in, 1)
	xv := x.view()
	if len(x.shape) != 2 {
		strides, ok := viewStrides(x.shape, x.strides, []int{rows, in})
		if !ok {
			return nil, false
		}
		xv.Shape, xv.Strides = []int{rows, in}, strides
	}
	bc := rawContiguous(op, bias)
	defer bc.Release()
	shape := append(append([]int(nil), x.shape[:len(x.shape)-1]...), out)
	y := newTensor(op, x.dev, dtype, shape)
	yv := y.view()
	yv.Shape, yv.Strides = []int{rows, out}, []int{out, 1}
	wv := weight.view() // wᵀ: [in, out]
	wv.Shape, wv.Strides = []int{in, out}, []int{weight.strides[1], weight.strides[0]}
	kernel(yv, xv, wv, bc.view())
	return y, true
}
