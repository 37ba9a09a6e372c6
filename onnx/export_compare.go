package onnx

import (
	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/backends"
)

// Translations of the ops package tensor records only while tracing
// (tensor.TraceInput): comparisons and logical ops, Where and MaskedFill,
// integer casts, OneHot, Any and All, and Detach. They carry no gradient,
// so an autodiff device leaves them out of its graph; the tracer marks
// the examples so that the masks and class indices a loss computes from
// its inputs are written as nodes instead of frozen constants.

// compareExport maps tensor's traced comparisons to ONNX operators; Ne is
// Not(Equal), true where either side is NaN as in Kiln.
var compareExport = map[string]string{
	"eq": "Equal", "ne": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual",
}

func init() {
	for op, onnxOp := range compareExport {
		registerExport(op, exportCompare(onnxOp, op == "ne", false))
		registerExport(op+"_scalar", exportCompare(onnxOp, op == "ne", true))
	}
	for op, onnxOp := range map[string]string{"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"} {
		registerExport(op, func(tr *tracer, n *autodiff.Node, in []string, out string, _ bool) bool {
			a := tr.castTo(n, in[0], n.Inputs[0].DType, "bool")
			b := tr.castTo(n, in[1], n.Inputs[1].DType, "bool")
			tr.emit(onnxOp, []string{a, b}, out)
			return tr.elementwiseBatched(n)
		})
	}
	registerExport("logical_not", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		tr.emit("Not", []string{tr.castTo(n, in[0], n.Inputs[0].DType, "bool")}, out)
		return keepsBatch
	})
	registerExport("detach", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		tr.emit("Identity", in[:1], out)
		return keepsBatch
	})
	registerExport("where", func(tr *tracer, n *autodiff.Node, in []string, out string, _ bool) bool {
		// Kiln promotes the branches to a common dtype; ONNX wants them
		// equal already.
		a := tr.castTo(n, in[1], n.Inputs[1].DType, n.DType)
		b := tr.castTo(n, in[2], n.Inputs[2].DType, n.DType)
		tr.emit("Where", []string{in[0], a, b}, out)
		return tr.elementwiseBatched(n)
	})
	registerExport("masked_fill", func(tr *tracer, n *autodiff.Node, in []string, out string, _ bool) bool {
		tr.emit("Where", []string{in[1], tr.constant(n.DType, []int{}, attrF(n, "value", 0)), tr.castTo(n, in[0], n.Inputs[0].DType, n.DType)}, out)
		return tr.elementwiseBatched(n)
	})
	registerExport("any", exportAnyAll(false))
	registerExport("all", exportAnyAll(true))
	registerExport("one_hot", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		depth := tr.hostInit(tr.tmp(n, "depth"), hostInts([]int64{int64(attrI(n, "num_classes"))}, []int{}...))
		values := tr.hostInit(tr.tmp(n, "values"), hostInts([]int64{0, 1}))
		tr.emit("OneHot", []string{in[0], depth, values}, out, aInt("axis", -1))
		return keepsBatch
	})
}

// exportCompare writes a comparison of two tensors, or of a tensor and the
// node's scalar, in the dtype Kiln compared them in (recorded as
// "dtype"); not negates the result (Ne).
func exportCompare(onnxOp string, not, scalar bool) func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
	return func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		ct := attrS(n, "dtype")
		if ct == "" {
			ct = n.Inputs[0].DType
		}
		if ct == "bool" && onnxOp != "Equal" {
			ct = "int32" // ONNX orders numbers only; false < true as 0 < 1
		}
		a := tr.castTo(n, in[0], n.Inputs[0].DType, ct)
		var b string
		if scalar {
			b = tr.constant(ct, []int{}, attrF(n, "scalar", 0))
		} else {
			b = tr.castTo(n, in[1], n.Inputs[1].DType, ct)
		}
		res := out
		if not {
			res = tr.tmp(n, "equal")
		}
		tr.emit(onnxOp, []string{a, b}, res)
		if not {
			tr.emit("Not", []string{res}, out)
		}
		if scalar {
			return keepsBatch
		}
		return tr.elementwiseBatched(n)
	}
}

// exportAnyAll writes tensor's Any (all false: All) over the recorded axes
// as a count of the non-zero (zero) elements compared with 0, as Kiln
// computes it: ONNX's ReduceMax takes no booleans before opset 20.
func exportAnyAll(all bool) func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
	return func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		axes := attrIs(n, "axes")
		b := tr.castTo(n, in[0], n.Inputs[0].DType, "bool")
		if all {
			not := tr.tmp(n, "not")
			tr.emit("Not", []string{b}, not)
			b = not
		}
		count := tr.tmp(n, "count")
		ins := []string{tr.castTo(n, b, "bool", "int64")}
		if len(axes) > 0 {
			ins = append(ins, tr.ints(axes...))
		}
		tr.emit("ReduceSum", ins, count, aInt("keepdims", int(b2i(attrBool(n, "keepdim")))))
		op := "Greater"
		if all {
			op = "Equal"
		}
		tr.emit(op, []string{count, tr.scalarInt(0)}, out)
		return keepsBatch && !contains(axes, 0) && len(axes) > 0
	}
}

// castTo returns name, the output of a node of dtype from, converted to
// dtype to: name itself when they are the same, else a Cast node's output.
func (tr *tracer) castTo(n *autodiff.Node, name, from, to string) string {
	if from == to || name == "" {
		return name
	}
	dt, err := backends.ParseDType(to)
	if err != nil {
		return name
	}
	c := tr.tmp(n, "cast")
	tr.emit("Cast", []string{name}, c, aInt("to", int(onnxDType(dt))))
	return c
}

// elementwiseBatched reports whether an element-wise op's output keeps the
// batch dimension: one of its inputs has it and the output's rank (so that
// broadcasting, which pads on the left, aligns the two).
func (tr *tracer) elementwiseBatched(n *autodiff.Node) bool {
	for _, o := range n.Inputs {
		if o != nil && tr.batched[o] && len(o.Shape) == len(n.Shape) && len(n.Shape) > 0 && n.Shape[0] == o.Shape[0] {
			return true
		}
	}
	return false
}
