package onnx

import (
	"github.com/kiln-ml/kiln/tensor"
)

// Loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (opsets 12 and 13), composed of Gather, LogSoftmax and reductions, so
// their gradients reach the scores on an autodiff device.

func init() {
	ops["NegativeLogLikelihoodLoss"] = &opDef{run: func(c *call) []*value {
		var w *tensor.Tensor
		if c.has(2) {
			w = c.t(2)
		}
		return outs(nllLoss(c, c.t(0), c.t(1), w))
	}}
	ops["SoftmaxCrossEntropyLoss"] = &opDef{run: func(c *call) []*value {
		scores := c.t(0)
		if scores.Dims() < 2 {
			c.fail(tensor.ErrShape, "scores %v must be [N, C, …]", scores.Shape())
		}
		logp := scores.LogSoftmax(1)
		var w *tensor.Tensor
		if c.has(2) {
			w = c.t(2)
		}
		return outs(nllLoss(c, logp, c.t(1), w), logp)
	}}
}

// nllLoss is NegativeLogLikelihoodLoss of input [N, C, d1, …] (log
// probabilities) at target [N, d1, …] with optional class weights [C]:
// −input[n, target[n, …], …]·weight[target[n, …]], zero where target is
// ignore_index, reduced by the reduction attribute ("mean" divides by the
// summed weights of the targets not ignored).
func nllLoss(c *call, input, target, weight *tensor.Tensor) *tensor.Tensor {
	shape := input.Shape()
	if input.Dims() < 2 || target.Dims() != input.Dims()-1 || target.Dim(0) != shape[0] {
		c.fail(tensor.ErrShape, "input %v must be [N, C, d1, …] and target %v [N, d1, …]", shape, target.Shape())
	}
	for i := 2; i < len(shape); i++ {
		if target.Dim(i-1) != shape[i] {
			c.fail(tensor.ErrShape, "input %v must be [N, C, d1, …] and target %v [N, d1, …]", shape, target.Shape())
		}
	}
	if target.DType() != tensor.Int64 {
		target = target.To(tensor.Int64)
	}
	var keep *tensor.Tensor // Bool, false where the target is ignored
	if c.hasAttr("ignore_index") {
		keep = target.NeScalar(float64(c.attrInt("ignore_index", 0)))
		target = tensor.Where(keep, target, tensor.ZerosLike(target))
	}
	picked := input.Gather(1, target.Unsqueeze(1)).Squeeze(1)
	var w *tensor.Tensor
	if weight != nil {
		w = weight.Gather(0, target.Reshape(target.NumElements())).Reshape(target.Shape()...)
		if w.DType() != input.DType() {
			w = w.To(input.DType())
		}
	}
	if keep != nil {
		k := keep.To(input.DType())
		if w == nil {
			w = k
		} else {
			w = w.Mul(k)
		}
	}
	loss := picked.Neg()
	if w != nil {
		loss = loss.Mul(w)
	}
	switch r := c.attrString("reduction", "mean"); r {
	case "none":
		return loss
	case "sum":
		return loss.Sum()
	case "mean":
		if w == nil {
			return loss.Mean()
		}
		return loss.Sum().Div(w.Sum())
	default:
		c.fail(tensor.ErrArgument, "reduction %q is not none, sum or mean", r)
	}
	return nil
}
