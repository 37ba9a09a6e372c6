package onnx

import (
	"math"

	"github.com/kiln-ml/kiln/autodiff"
)

// ONNX translations of tensor/fft.go and tensor/gridsample.go: complex
// FFTs and RFFT become DFT (opset 17; Kiln's complex layout, a trailing
// dimension of size 2, is DFT's own), with a Mul for the norms DFT does
// not apply itself, and GridSample becomes GridSample (opset 16, whose
// mode names are PyTorch's). IRFFT has no translation: DFT-17 defines no
// one-sided inverse. STFT and ISTFT are compositions (Pad, Gather, RFFT,
// ScatterAdd) and export op by op where their parts do.

func init() {
	registerExport("grid_sample", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		mode, _ := n.Attrs["mode"].(string)
		padding, _ := n.Attrs["padding_mode"].(string)
		align := 0
		if v, _ := n.Attrs["align_corners"].(bool); v {
			align = 1
		}
		if tr.opset >= 20 {
			// Opset 20 renamed the modes (and made GridSample N-D).
			switch mode {
			case "bilinear":
				mode = "linear"
			case "bicubic":
				mode = "cubic"
			}
		}
		tr.emit("GridSample", in[:2], out, layerAttrString("mode", mode), layerAttrString("padding_mode", padding),
			aInt("align_corners", align))
		return keepsBatch
	})
	registerExport("fft", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		return exportDFT(tr, n, in[0], out, keepsBatch, false, false)
	})
	registerExport("ifft", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		return exportDFT(tr, n, in[0], out, keepsBatch, true, false)
	})
	registerExport("rfft", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		return exportDFT(tr, n, in[0], out, keepsBatch, false, true)
	})
}

// exportDFT writes a Kiln FFT node as DFT along its axis with its length,
// then scales the result where the norm differs from DFT's (none forward,
// 1/n inverse). A real input (RFFT) gains the trailing dimension of size 1
// DFT reads as real.
func exportDFT(tr *tracer, n *autodiff.Node, x, out string, keepsBatch, inverse, real bool) bool {
	rank := len(n.Inputs[0].Shape) // the complex rank is the rank of the real tensor without its trailing 2
	if !real {
		rank--
	}
	axis := attrI(n, "dim")
	if axis < 0 {
		axis += rank
	}
	length := attrI(n, "n")
	norm, _ := n.Attrs["norm"].(string)
	if real {
		col := tr.tmp(n, "real")
		tr.emit("Unsqueeze", []string{x, tr.ints(-1)}, col)
		x = col
	}
	onesided := 0
	if real {
		onesided = 1
	}
	// DFT's inverse already divides by n.
	scale := 1.0
	switch {
	case norm == "forward" && !inverse:
		scale = 1 / float64(length)
	case norm == "forward" && inverse:
		scale = float64(length)
	case norm == "ortho" && !inverse:
		scale = 1 / math.Sqrt(float64(length))
	case norm == "ortho" && inverse:
		scale = math.Sqrt(float64(length))
	}
	dst := out
	if scale != 1 {
		dst = tr.tmp(n, "dft")
	}
	inv := aInt("inverse", map[bool]int{false: 0, true: 1}[inverse])
	if tr.opset >= 20 {
		// Opset 20 takes the axis as an input.
		tr.emit("DFT", []string{x, tr.constant("int64", []int{}, float64(length)), tr.scalarInt(axis)}, dst, inv, aInt("onesided", onesided))
	} else {
		tr.emit("DFT", []string{x, tr.constant("int64", []int{}, float64(length))}, dst, aInt("axis", axis), inv, aInt("onesided", onesided))
	}
	if scale != 1 {
		tr.emit("Mul", []string{dst, tr.constant(n.DType, []int{}, scale)}, out)
	}
	return keepsBatch && axis != 0
}
