package onnx

import "github.com/kiln-ml/kiln/tensor"

// Einsum runs tensor.Einsum, as the code Generate writes does: one
// implementation of the equation (pairwise batched Matmuls, diagonals,
// ellipses, broadcasting) for Kiln's API, the runtime and generated code.
func einsum(c *call) []*value {
	xs := make([]*tensor.Tensor, len(c.in))
	for k := range c.in {
		xs[k] = c.t(k)
	}
	return outs(tensor.Einsum(c.attrString("equation", ""), xs...))
}
