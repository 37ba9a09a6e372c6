package onnx

import (
	"fmt"

	"github.com/kiln-ml/kiln/autodiff"
)

// Translations of the loss ops of package tensor: cross_entropy (behind
// nn.CrossEntropy) becomes SoftmaxCrossEntropyLoss, with the label
// smoothing PyTorch adds written out beside it, or the weighted sum of
// log-softmax and target for probability targets; gather (behind the
// losses that pick one class per position) GatherElements. The losses
// composed of elementwise ops and reductions (MSE, L1, BCEWithLogits, …)
// need no translation of their own.

func init() {
	registerExport("cross_entropy", exportCrossEntropy)
	registerExport("gather", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		tr.emit("GatherElements", in[:2], out, aInt("axis", attrI(n, "dim")))
		// The output has the index's shape, and so its batch dimension.
		return tr.batched[n.Inputs[1]]
	})
}

// exportCrossEntropy writes torch.nn.functional.cross_entropy: logits
// [N, C, d…] ([C] unbatched), class indices [N, d…] or probabilities of the
// logits' shape, optional class weights [C].
func exportCrossEntropy(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
	x := n.Inputs[0]
	dt := x.DType
	red, _ := n.Attrs["reduction"].(string)
	if red == "" {
		red = "mean"
	}
	probs := attrBool(n, "probabilities")
	s := attrF(n, "label_smoothing", 0)
	ignore := attrI(n, "ignore_index")
	c := x.Shape[0]
	if len(x.Shape) > 1 {
		c = x.Shape[1]
	}
	logits, target := in[0], in[1]
	weight := ""
	if len(in) > 2 {
		weight = in[2]
	}
	// Unbatched: add a batch of one, take it off the "none" loss.
	unbatched := len(x.Shape) == 1
	if unbatched {
		l, t := tr.tmp(n, "logits"), tr.tmp(n, "target")
		tr.emit("Reshape", []string{logits, tr.ints(1, c)}, l)
		tshape := []int{1}
		if probs {
			tshape = []int{1, c}
		}
		tr.emit("Reshape", []string{target, tr.ints(tshape...)}, t)
		logits, target = l, t
	}
	rank := max(len(x.Shape), 2)
	result := out
	if unbatched && red == "none" {
		result = tr.tmp(n, "loss")
	}
	// wb is the class weights shaped to broadcast along the class axis.
	wb := ""
	if weight != "" {
		shape := make([]int, rank)
		for i := range shape {
			shape[i] = 1
		}
		shape[1] = c
		wb = tr.tmp(n, "weights")
		tr.emit("Reshape", []string{weight, tr.ints(shape...)}, wb)
	}
	constant := func(v float64) string { return tr.constant(dt, []int{}, v) }
	reduce := func(l, to string) {
		switch red {
		case "sum":
			tr.emit("ReduceSum", []string{l}, to, aInt("keepdims", 0))
		case "mean":
			tr.emit("ReduceMean", []string{l}, to, aInt("keepdims", 0))
		default:
			tr.emit("Identity", []string{l}, to)
		}
	}
	lp := tr.tmp(n, "logp")
	switch {
	case probs:
		// −Σ_c w_c·t'_c·log p_c with t' = (1 − s)·t + s/C, averaged over
		// the positions for "mean".
		tr.emit("LogSoftmax", []string{logits}, lp, aInt("axis", 1))
		t := target
		if s > 0 {
			scaled := tr.tmp(n, "scaled")
			t = tr.tmp(n, "smoothed")
			tr.emit("Mul", []string{target, constant(1 - s)}, scaled)
			tr.emit("Add", []string{scaled, constant(s / float64(c))}, t)
		}
		prod := tr.tmp(n, "prod")
		tr.emit("Mul", []string{lp, t}, prod)
		if wb != "" {
			weighted := tr.tmp(n, "weighted")
			tr.emit("Mul", []string{prod, wb}, weighted)
			prod = weighted
		}
		sum, l := tr.tmp(n, "sum"), tr.tmp(n, "loss")
		tr.emit("ReduceSum", []string{prod, tr.ints(1)}, sum, aInt("keepdims", 0))
		tr.emit("Neg", []string{sum}, l)
		reduce(l, result)
	case s == 0:
		ins := []string{logits, target}
		if weight != "" {
			ins = append(ins, weight)
		}
		tr.emit("SoftmaxCrossEntropyLoss", ins, result, aInt("ignore_index", ignore), aString("reduction", red))
	default:
		// PyTorch's label smoothing: (1 − s)·NLL + s/C·smooth, where smooth
		// is −Σ_c w_c·log p_c at each position not ignored, summed, or for
		// "mean" divided by the targets' weights (by the number of
		// positions, ignored ones included, without weights).
		nll := tr.tmp(n, "nll")
		ins := []string{logits, target}
		if weight != "" {
			ins = append(ins, weight)
		}
		tr.emit("SoftmaxCrossEntropyLoss", ins, nll, aInt("ignore_index", ignore), aString("reduction", red))
		tr.emit("LogSoftmax", []string{logits}, lp, aInt("axis", 1))
		prod := lp
		if wb != "" {
			prod = tr.tmp(n, "weighted")
			tr.emit("Mul", []string{lp, wb}, prod)
		}
		sum, neg := tr.tmp(n, "sum"), tr.tmp(n, "neg")
		tr.emit("ReduceSum", []string{prod, tr.ints(1)}, sum, aInt("keepdims", 0))
		tr.emit("Neg", []string{sum}, neg)
		eq, keep, smooth := tr.tmp(n, "ignored"), tr.tmp(n, "keep"), tr.tmp(n, "smooth")
		tr.emit("Equal", []string{target, tr.scalarInt(ignore)}, eq)
		tr.emit("Not", []string{eq}, keep)
		tr.emit("Where", []string{keep, neg, constant(0)}, smooth)
		ret := tr.tmp(n, "ret")
		if red == "mean" && weight != "" {
			idx, wt, wk, num, den := tr.tmp(n, "index"), tr.tmp(n, "wt"), tr.tmp(n, "wkept"), tr.tmp(n, "num"), tr.tmp(n, "den")
			tr.emit("Where", []string{keep, target, tr.scalarInt(0)}, idx)
			tr.emit("Gather", []string{weight, idx}, wt, aInt("axis", 0))
			tr.emit("Where", []string{keep, wt, constant(0)}, wk)
			tr.emit("ReduceSum", []string{smooth}, num, aInt("keepdims", 0))
			tr.emit("ReduceSum", []string{wk}, den, aInt("keepdims", 0))
			tr.emit("Div", []string{num, den}, ret)
		} else {
			reduce(smooth, ret)
		}
		a, b := tr.tmp(n, "nllpart"), tr.tmp(n, "smoothpart")
		tr.emit("Mul", []string{nll, constant(1 - s)}, a)
		tr.emit("Mul", []string{ret, constant(s / float64(c))}, b)
		tr.emit("Add", []string{a, b}, result)
	}
	if result != out {
		tr.emit("Reshape", []string{result, tr.ints()}, out)
	}
	if len(n.Shape) != len(x.Shape)-1 && red == "none" {
		tr.err = fmt.Errorf("%w: cross_entropy of logits %v gave %v", ErrExport, x.Shape, n.Shape)
	}
	return keepsBatch && red == "none" && !unbatched
}
