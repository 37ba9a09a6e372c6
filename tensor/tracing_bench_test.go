package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// Per-op overhead of the ops that TraceInput makes recordable, on tiny tensors
// where the tensor layer dominates: outside a trace they must cost what
// they cost before (a flag test on their inputs, no atomic load).

// benchBinary times fn on two 16×16 float tensors of dev, with a
// gradient required on x when grad is set (the recording path).
func benchBinary(b *testing.B, dev tensor.Device, grad bool, fn func(x, y *tensor.Tensor) *tensor.Tensor) {
	tensor.Scope(func() {
		x := tensor.Randn(dev, 16, 16)
		y := tensor.Randn(dev, 16, 16)
		if grad {
			x.RequireGrad()
		}
		for b.Loop() {
			fn(x, y).Release()
		}
	})
}

// BenchmarkBinaryAdd is an untraced element-wise add.
func BenchmarkBinaryAdd(b *testing.B) {
	benchBinary(b, tensor.CPU(), false, func(x, y *tensor.Tensor) *tensor.Tensor { return x.Add(y) })
}

// BenchmarkBinaryAddRecorded is an add that records its graph node.
func BenchmarkBinaryAddRecorded(b *testing.B) {
	benchBinary(b, tensor.CPU().Autodiff(), true, func(x, y *tensor.Tensor) *tensor.Tensor { return x.Add(y) })
}

// BenchmarkCompareLt is an untraced tensor comparison.
func BenchmarkCompareLt(b *testing.B) {
	benchBinary(b, tensor.CPU(), false, func(x, y *tensor.Tensor) *tensor.Tensor { return x.Lt(y) })
}

// BenchmarkCompareLtScalar is an untraced comparison with a scalar.
func BenchmarkCompareLtScalar(b *testing.B) {
	benchBinary(b, tensor.CPU(), false, func(x, _ *tensor.Tensor) *tensor.Tensor { return x.LtScalar(0) })
}

// BenchmarkCompareLtGrad compares a tensor that requires gradients
// (outside a trace, still no node).
func BenchmarkCompareLtGrad(b *testing.B) {
	benchBinary(b, tensor.CPU().Autodiff(), true, func(x, y *tensor.Tensor) *tensor.Tensor { return x.Lt(y) })
}
