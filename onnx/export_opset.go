package onnx

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// The opsets Export writes. Opset 17 is the default (Debian's onnx 1.12,
// whose checker knows opsets up to 17, checks it); ExportOptions.Opset
// picks a newer one, up to 21, the newest Kiln loads. The translations
// write each operator in the form of the chosen opset where that form
// changed:
//
//   - 18: ReduceMean, ReduceMax, ReduceMin, ReduceProd and ReduceLogSumExp
//     take their axes as a second input instead of an attribute (ReduceSum
//     has since 13);
//   - 19: Pad's "wrap" mode writes circular padding, which opset 17
//     cannot express;
//   - 20: DFT takes its axis as a third input; GridSample names its modes
//     "linear" and "cubic" instead of "bilinear" and "bicubic".

// MaxExportOpset is the newest default-domain opset ExportOptions.Opset
// may ask for.
const MaxExportOpset = 21

// exportOpset returns the opset opts asks for (ExportOpset for 0), or an
// error wrapping tensor.ErrArgument for one Export cannot write.
func exportOpset(opts ExportOptions) (int, error) {
	switch {
	case opts.Opset == 0:
		return ExportOpset, nil
	case opts.Opset < ExportOpset || opts.Opset > MaxExportOpset:
		return 0, fmt.Errorf("%w: opset %d: Export writes opsets %d to %d", tensor.ErrArgument, opts.Opset, ExportOpset, MaxExportOpset)
	}
	return opts.Opset, nil
}

// reduce emits the ONNX reduction op (ReduceSum, ReduceMean, …) of x over
// axes (every axis when there are none) into out, with the axes as an
// input or an attribute as the tracer's opset wants.
func (tr *tracer) reduce(op, x, out string, axes []int, keepdims int) {
	keep := aInt("keepdims", keepdims)
	switch {
	case len(axes) == 0:
		tr.emit(op, []string{x}, out, keep)
	case op == "ReduceSum" || tr.opset >= 18:
		tr.emit(op, []string{x, tr.ints(axes...)}, out, keep)
	default:
		tr.emit(op, []string{x}, out, aInts("axes", axes...), keep)
	}
}
