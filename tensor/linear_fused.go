package tensor

import (
	"sync/atomic"

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

// LinearActivation returns activation(Linear(x, weight, bias)), a linear
// layer followed by one of the activations "relu", "gelu", "gelu_tanh",
// "silu", "sigmoid" or "tanh" (Relu, Gelu, GeluTanh, Silu, Sigmoid, Tanh),
// bit for bit as those two calls give it, gradients included. It is the
// same two graph nodes ("linear", then the activation's), but where the
// backend has a fused kernel for them (backends.LinearActFusion: the CPU
// backend applies the activation to each block of rows of the product
// while it is still in cache) both results come from one call. It panics
// as Linear does, and with ErrArgument for another activation.
func LinearActivation(x, weight, bias *Tensor, activation string) *Tensor {
	const op = "LinearActivation"
	u := fusedActivation(op, activation)
	linearCheck(op, x, weight, bias) // errors name LinearActivation on every path
	if pre, out, ok := linearActFused(op, x, weight, bias, u); ok {
		return recordActivation(op, u, recordLinear(op, x, weight, bias, pre), out)
	}
	return Linear(x, weight, bias).unaryOp(op, u, 0, 0)
}

// recordActivation records out = u(pre), computed by a fused kernel
// (LinearActivation, Conv2dActivation), as unaryOp records it: the
// backward reads out where u's derivative is a function of its output,
// else pre; pre is released where no backward will read it.
func recordActivation(op string, u backends.UnaryOp, pre, out *Tensor) *Tensor {
	if outputGrad(u, out) { // as unaryOp records it: the backward reads out, not pre
		y := out
		return record(backends.UnaryOps[u].Name, nil, out, []*Tensor{pre}, func(g *Tensor) []*Tensor {
			return []*Tensor{castGrad(rawUnaryGradOutput(op, u, y, g), pre)}
		})
	}
	out = record(backends.UnaryOps[u].Name, nil, out, []*Tensor{pre}, func(g *Tensor) []*Tensor {
		return []*Tensor{castGrad(rawUnaryGrad(op, u, pre, g, 0, 0), pre)}
	})
	if out.node == nil {
		pre.Release() // nothing holds it: no backward will read it
	}
	return out
}

// fusedActivation returns the activation named name for LinearActivation
// and Conv2dActivation, panicking for op with ErrArgument for a name that
// is not one of linearActivations.
func fusedActivation(op, name string) backends.UnaryOp {
	u, ok := linearActivations[name]
	if !ok {
		fail(op, ErrArgument, "activation %q: want relu, gelu, gelu_tanh, silu, sigmoid or tanh", name)
	}
	return u
}

// linearActivations are the activations LinearActivation and
// Conv2dActivation take, by name (their UnaryOps names, PyTorch's).
var linearActivations = map[string]backends.UnaryOp{
	"relu": backends.Relu, "gelu": backends.Gelu, "gelu_tanh": backends.GeluTanh,
	"silu": backends.Silu, "sigmoid": backends.Sigmoid, "tanh": backends.Tanh,
}

// linearActFused computes pre = x·wᵀ + bias and out = u(pre) (inputs that
// linearCheck passed) in one call
// of the backend's fused kernel (backends.LinearActFusion), or reports
// false where it does not apply: where linearFused does not, under
// autocast (Linear converts the inputs then), or when fusing is turned
// off (linearActUnfused).
func linearActFused(op string, x, weight, bias *Tensor, u backends.UnaryOp) (pre, out *Tensor, ok bool) {
	if linearActUnfused.Load() || composeOnly.Load() || bias == nil || (x.dtype != Float32 && x.dtype != Float64) ||
		weight.dtype != x.dtype || bias.dtype != x.dtype || x.dev.casting || weight.dev.casting || bias.dev.casting {
		return nil, nil, false
	}
	f, ok := x.backend().(backends.LinearActFusion)
	if !ok || !backends.IsLinearAct(u) {
		return nil, nil, false
	}
	pre, ok = linearEpilogue(op, x, weight, bias, x.dtype, func(pv, xv, wv, bv backends.View) {
		shape := append(append([]int(nil), x.shape[:len(x.shape)-1]...), weight.shape[0])
		out = newTensor(op, x.dev, x.dtype, shape)
		ov := out.view()
		ov.Shape, ov.Strides = pv.Shape, pv.Strides
		f.MatmulBiasAct(ov, pv, xv, wv, bv, u)
	})
	return pre, out, ok
}

// linearActUnfused turns LinearActivation's fused kernel off: tests and
// benchmarks compare with the two ops it fuses.
var linearActUnfused atomic.Bool
