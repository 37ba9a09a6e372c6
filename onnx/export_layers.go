package onnx

import "github.com/kiln-ml/kiln/autodiff"

// ONNX translations of the ops behind nn/pool1d.go, nn/pixelshuffle.go and
// nn/upsample.go that export_core.go lacks: pixel shuffles become
// DepthToSpace (CRD) or a reshape-transpose-reshape, bicubic resampling
// Resize in cubic mode, and adaptive max pooling to one position
// GlobalMaxPool. Transposed convolutions and the other resampling modes
// are in export_core.go. InstanceNorm needs no translation of its own: it
// records a layer_norm over the spatial axes (LayerNormalization) and
// elementwise ops. Unfold and Fold have none: ONNX's Col2Im arrives in
// opset 18.

func init() {
	registerExport("pixel_shuffle", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		if len(n.Inputs[0].Shape) != 4 {
			tr.missing["pixel_shuffle (not 4-D)"]++
			return false
		}
		tr.emit("DepthToSpace", in[:1], out, aInt("blocksize", attrI(n, "upscale_factor")), layerAttrString("mode", "CRD"))
		return keepsBatch
	})
	// SpaceToDepth orders the new channels block-first (DCR), PyTorch
	// channel-first, so pixel_unshuffle is written out.
	registerExport("pixel_unshuffle", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		x := n.Inputs[0].Shape
		if len(x) != 4 {
			tr.missing["pixel_unshuffle (not 4-D)"]++
			return false
		}
		r := attrI(n, "downscale_factor")
		c, h, w := x[1], x[2]/r, x[3]/r
		batch := x[0]
		if keepsBatch {
			batch = 0 // copy the input's (symbolic) batch size
		}
		split, perm := tr.tmp(n, "split"), tr.tmp(n, "perm")
		tr.emit("Reshape", []string{in[0], tr.ints(batch, c, h, r, w, r)}, split)
		tr.emit("Transpose", []string{split}, perm, aInts("perm", 0, 1, 3, 5, 2, 4))
		tr.emit("Reshape", []string{perm, tr.ints(batch, c*r*r, h, w)}, out)
		return keepsBatch
	})

	// Bicubic resampling: PyTorch samples at pixel centres (half_pixel,
	// without clamping the source position) with Keys' kernel, A = −0.75,
	// and reads edge values past the border, as ONNX's cubic mode does. The
	// output sizes are appended to the input's own batch and channel sizes
	// (Resize-13 takes every axis), so the batch stays symbolic.
	registerExport("upsample_bicubic2d", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		coord := "half_pixel"
		if v, _ := n.Attrs["align_corners"].(bool); v {
			coord = "align_corners"
		}
		shape, lead, sizes := tr.tmp(n, "shape"), tr.tmp(n, "lead"), tr.tmp(n, "sizes")
		tr.emit("Shape", in[:1], shape)
		tr.emit("Slice", []string{shape, tr.ints(0), tr.ints(2), tr.ints(0)}, lead)
		tr.emit("Concat", []string{lead, tr.ints(attrIs(n, "size")...)}, sizes, aInt("axis", 0))
		tr.emit("Resize", []string{in[0], "", "", sizes}, out, layerAttrString("mode", "cubic"),
			layerAttrString("coordinate_transformation_mode", coord), aFloat("cubic_coeff_a", -0.75))
		return keepsBatch
	})

	registerExport("adaptive_max_pool1d", func(tr *tracer, n *autodiff.Node, in []string, out string, keepsBatch bool) bool {
		if !allOnes(attrIs(n, "output_size")) || len(n.Inputs[0].Shape) != 3 {
			tr.missing["adaptive_max_pool1d (output size other than 1)"]++
			return false
		}
		tr.emit("GlobalMaxPool", in[:1], out)
		return keepsBatch
	})
}

// layerAttrString is a string attribute.
func layerAttrString(name, v string) *AttributeProto {
	return &AttributeProto{Name: name, Type: AttrString, S: []byte(v)}
}
