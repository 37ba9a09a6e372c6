package onnx

import (
	"github.com/kiln-ml/kiln/autodiff"
)

// ONNX forms of the activations of tensor/activation_extra.go that record
// graph nodes of their own. The others need no entry here: Softmin records
// Neg and Softmax, GLU Narrow, Sigmoid and Mul, Tanhshrink Tanh and Sub,
// and RReLU in evaluation mode (as Export traces) LeakyRelu.
func init() {
	// hardtanh: Clip to [min, max]; its zero gradient at the bounds does
	// not matter to inference.
	registerExport("hardtanh", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		dt := n.Inputs[0].DType
		tr.emit("Clip", []string{in[0], tr.constant(dt, []int{}, attrF(n, "min", -1)), tr.constant(dt, []int{}, attrF(n, "max", 1))}, out)
		return keepsBatch
	})
	// threshold: Where(x ≤ threshold, value, x), which keeps NaN as Kiln.
	registerExport("threshold", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		dt := n.Inputs[0].DType
		le := tr.tmp(n, "le")
		tr.emit("LessOrEqual", []string{in[0], tr.constant(dt, []int{}, attrF(n, "threshold", 0))}, le)
		tr.emit("Where", []string{le, tr.constant(dt, []int{}, attrF(n, "value", 0)), in[0]}, out)
		return keepsBatch
	})
	// softshrink and hardshrink: Shrink, whose bias is what is taken off
	// the elements outside [−lambda, lambda] (lambda itself, or nothing).
	registerExport("softshrink", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		l := attrF(n, "lambda", 0.5)
		tr.emit("Shrink", in[:1], out, aFloat("lambd", l), aFloat("bias", l))
		return keepsBatch
	})
	registerExport("hardshrink", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		tr.emit("Shrink", in[:1], out, aFloat("lambd", attrF(n, "lambda", 0.5)), aFloat("bias", 0))
		return keepsBatch
	})
	// prelu: PRelu, whose slope must broadcast from the right, so a
	// per-channel [C] weight of an [N, C, d…] input becomes [C, 1…].
	registerExport("prelu", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		x, w := n.Inputs[0], n.Inputs[1]
		slope := in[1]
		if c := preluSlopes(w.Shape); c > 1 && len(x.Shape) > 2 {
			shape := make([]int, len(x.Shape)-1)
			for i := range shape {
				shape[i] = 1
			}
			shape[0] = c
			slope = tr.tmp(n, "slope")
			tr.emit("Reshape", []string{in[1], tr.ints(shape...)}, slope)
		}
		tr.emit("PRelu", []string{in[0], slope}, out)
		return keepsBatch
	})
}

// preluSlopes returns the number of slopes of a PReLU weight of shape.
func preluSlopes(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
