package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// Neural-network operators: products, convolutions, pooling, normalisation,
// softmax and resampling, mapped onto Kiln's named ops (Linear, Conv2d,
// LayerNorm, Softmax, …) so that gradients use their fused rules.

func init() {
	ops["MatMul"] = &opDef{run: func(c *call) []*value { return outs(c.t(0).Matmul(c.t(1))) }}
	ops["Gemm"] = &opDef{run: gemm}
	ops["Conv"] = &opDef{run: conv, check: checkSpatial}
	ops["ConvTranspose"] = &opDef{run: convTranspose, check: checkSpatial}
	ops["MaxPool"] = &opDef{run: maxPool, check: checkSpatial}
	ops["AveragePool"] = &opDef{run: avgPool, check: checkSpatial}
	ops["GlobalAveragePool"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		return outs(x.MeanKeep(spatialAxes(x.Dims())...))
	}}
	ops["GlobalMaxPool"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		return outs(x.MaxKeep(spatialAxes(x.Dims())...))
	}}
	ops["BatchNormalization"] = &opDef{
		role: func(k int, _ int64, _ map[string]*AttributeProto) role {
			if k >= 3 {
				return roleBuffer
			}
			return roleData
		},
		run: batchNorm,
		check: func(_ *NodeProto, attrs map[string]*AttributeProto, _ int64) string {
			if a := attrs["spatial"]; a != nil && a.I == 0 {
				return "spatial=0"
			}
			return ""
		},
	}
	ops["LayerNormalization"] = &opDef{run: layerNorm}
	ops["InstanceNormalization"] = &opDef{run: instanceNorm}
	ops["GroupNormalization"] = &opDef{run: groupNorm}
	ops["Softmax"] = &opDef{run: func(c *call) []*value { return outs(softmax(c, false)) }}
	ops["LogSoftmax"] = &opDef{run: func(c *call) []*value { return outs(softmax(c, true)) }}
	ops["Resize"] = &opDef{role: staticFrom(1), run: resize, check: checkResize}
	ops["Upsample"] = &opDef{role: staticFrom(1), run: resize, check: checkResize}
	ops["Einsum"] = &opDef{run: einsum, check: func(_ *NodeProto, attrs map[string]*AttributeProto, _ int64) string {
		if a := attrs["equation"]; a == nil {
			return "no equation"
		}
		return ""
	}}
}

func gemm(c *call) []*value {
	a, b := c.t(0), c.t(1)
	alpha, beta := c.attrFloat("alpha", 1), c.attrFloat("beta", 1)
	ta, tb := c.attrInt("transA", 0) != 0, c.attrInt("transB", 0) != 0
	if a.Dims() != 2 || b.Dims() != 2 {
		c.fail(tensor.ErrShape, "A %v and B %v must be matrices", a.Shape(), b.Shape())
	}
	var bias *tensor.Tensor
	if c.has(2) {
		bias = c.t(2)
	}
	if !ta && tb && alpha == 1 && (bias == nil || beta == 1 && bias.Dims() == 1 && bias.Dim(0) == b.Dim(0)) {
		return outs(tensor.Linear(a, b, bias))
	}
	if ta {
		a = a.T()
	}
	if tb {
		b = b.T()
	}
	y := a.Matmul(b)
	if alpha != 1 {
		y = y.MulScalar(alpha)
	}
	if bias != nil {
		if beta != 1 {
			bias = bias.MulScalar(beta)
		}
		y = y.Add(bias)
	}
	return outs(y)
}

// checkSpatial refuses convolutions and pools over more than three spatial
// dimensions, which Kiln has no kernels for.
func checkSpatial(n *NodeProto, attrs map[string]*AttributeProto, _ int64) string {
	if a := attrs["kernel_shape"]; a != nil && len(a.Ints) > 3 {
		return fmt.Sprintf("%d-D kernel_shape %v", len(a.Ints), a.Ints)
	}
	if n.OpType == "MaxPool" && len(n.Outputs) > 1 && n.Outputs[1] != "" {
		if a := attrs["storage_order"]; a != nil && a.I != 0 {
			if k := attrs["kernel_shape"]; k == nil || len(k.Ints) != 2 {
				return "storage_order=1 indices of a pool that is not 2-D"
			}
		}
	}
	return ""
}

func spatialAxes(r int) []int {
	var axes []int
	for a := 2; a < r; a++ {
		axes = append(axes, a)
	}
	return axes
}

// windowArgs reads the attributes of a convolution or pool over the
// spatial dimensions of input shape in with kernel extents k: strides,
// dilations, and begin and end pads (auto_pad resolved).
func windowArgs(c *call, in, k []int) (strides, dilations, begin, end []int) {
	n := len(k)
	get := func(name string, def int) []int {
		v := c.attrInts(name)
		if v == nil {
			out := make([]int, n)
			for i := range out {
				out[i] = def
			}
			return out
		}
		if len(v) != n {
			c.fail(tensor.ErrArgument, "%s %v does not fit %d spatial dimensions", name, v, n)
		}
		return toInts(v)
	}
	strides, dilations = get("strides", 1), get("dilations", 1)
	begin, end = make([]int, n), make([]int, n)
	switch ap := c.attrString("auto_pad", "NOTSET"); ap {
	case "NOTSET", "":
		if p := c.attrInts("pads"); p != nil {
			if len(p) != 2*n {
				c.fail(tensor.ErrArgument, "pads %v does not fit %d spatial dimensions", p, n)
			}
			for i := range n {
				begin[i], end[i] = int(p[i]), int(p[n+i])
			}
		}
	case "VALID":
	case "SAME_UPPER", "SAME_LOWER":
		for i := range n {
			out := (in[i] + strides[i] - 1) / strides[i]
			total := max((out-1)*strides[i]+(k[i]-1)*dilations[i]+1-in[i], 0)
			small := total / 2
			if ap == "SAME_UPPER" {
				begin[i], end[i] = small, total-small
			} else {
				begin[i], end[i] = total-small, small
			}
		}
	default:
		c.fail(tensor.ErrArgument, "auto_pad %q is not defined", ap)
	}
	return strides, dilations, begin, end
}

// explicitPad pads the spatial dimensions of x by begin and end with value.
func explicitPad(x *tensor.Tensor, begin, end []int, value float64) *tensor.Tensor {
	pads := make([]int, 0, 2*len(begin))
	for i := len(begin) - 1; i >= 0; i-- {
		pads = append(pads, begin[i], end[i])
	}
	return x.Pad(pads, "constant", value)
}

func conv(c *call) []*value {
	x, w := c.t(0), c.t(1)
	if x.Dims() < 3 || x.Dims() > 5 {
		c.fail(tensor.ErrShape, "input %v: Kiln runs 1-D, 2-D and 3-D convolutions ([N, C, L] to [N, C, D, H, W])", x.Shape())
	}
	if w.Dims() != x.Dims() {
		c.fail(tensor.ErrShape, "weight %v does not fit input %v", w.Shape(), x.Shape())
	}
	var b *tensor.Tensor
	if c.has(2) {
		b = c.t(2)
	}
	k := w.Shape()[2:]
	strides, dil, begin, end := windowArgs(c, x.Shape()[2:], k)
	cfg := tensor.ConvConfig{Stride: strides, Dilation: dil, Groups: int(c.attrInt("group", 1))}
	if slices.Equal(begin, end) {
		cfg.Padding = begin
	} else {
		x = explicitPad(x, begin, end, 0)
	}
	switch x.Dims() {
	case 3:
		return outs(tensor.Conv1d(x, w, b, cfg))
	case 5:
		return outs(tensor.Conv3d(x, w, b, cfg))
	}
	return outs(tensor.Conv2d(x, w, b, cfg))
}

func convTranspose(c *call) []*value {
	x, w := c.t(0), c.t(1)
	if x.Dims() < 3 || x.Dims() > 5 {
		c.fail(tensor.ErrShape, "input %v: Kiln runs 1-D, 2-D and 3-D transposed convolutions", x.Shape())
	}
	var b *tensor.Tensor
	if c.has(2) {
		b = c.t(2)
	}
	cfg, begin, end := convTransposeArgs(c, x.Shape()[2:], w.Shape()[2:])
	n := len(begin)
	sym := cfg.Padding != nil
	var y *tensor.Tensor
	switch n {
	case 1:
		y = tensor.ConvTranspose1d(x, w, b, cfg)
	case 3:
		y = tensor.ConvTranspose3d(x, w, b, cfg)
	default:
		y = tensor.ConvTranspose2d(x, w, b, cfg)
	}
	if !sym {
		for i := range n {
			d := y.Dim(2 + i)
			y = y.Narrow(2+i, begin[i], d-begin[i]-end[i])
		}
	}
	return outs(y)
}

// convTransposeArgs reads ConvTranspose's attributes for spatial input
// sizes in and kernel k: the configuration, with Padding set when the
// begin and end pads are equal (else the output is cropped by begin and
// end). Generated code uses it too.
func convTransposeArgs(c *call, in, k []int) (cfg tensor.ConvTransposeConfig, begin, end []int) {
	n := len(in)
	get := func(name string, def int) []int {
		v := c.attrInts(name)
		if v == nil {
			out := make([]int, n)
			for i := range out {
				out[i] = def
			}
			return out
		}
		return toInts(v)
	}
	strides, dil, outPad := get("strides", 1), get("dilations", 1), get("output_padding", 0)
	begin, end = make([]int, n), make([]int, n)
	if p := c.attrInts("pads"); p != nil && len(p) == 2*n {
		for i := range n {
			begin[i], end[i] = int(p[i]), int(p[n+i])
		}
	}
	ap := c.attrString("auto_pad", "NOTSET")
	if os := c.attrInts("output_shape"); os != nil || ap == "SAME_UPPER" || ap == "SAME_LOWER" {
		for i := range n {
			want := in[i] * strides[i]
			if os != nil {
				want = int(os[len(os)-n+i])
			}
			total := strides[i]*(in[i]-1) + outPad[i] + (k[i]-1)*dil[i] + 1 - want
			if total < 0 {
				// A larger output_shape extends the end as output padding
				// does (ONNX's reference; the op checks it is in range).
				outPad[i] -= total
				total = 0
			}
			if ap == "SAME_UPPER" {
				begin[i], end[i] = total/2, total-total/2
			} else {
				begin[i], end[i] = total-total/2, total/2
			}
		}
	}
	cfg = tensor.ConvTransposeConfig{Stride: strides, Dilation: dil, OutputPadding: outPad, Groups: int(c.attrInt("group", 1))}
	if slices.Equal(begin, end) {
		cfg.Padding = begin
	}
	return cfg, begin, end
}

func poolArgs(c *call, x *tensor.Tensor) (k, strides, dil, begin, end []int) {
	if x.Dims() < 3 || x.Dims() > 5 {
		c.fail(tensor.ErrShape, "input %v: Kiln pools 1-D, 2-D and 3-D inputs ([N, C, L] to [N, C, D, H, W])", x.Shape())
	}
	k = toInts(c.attrInts("kernel_shape"))
	if len(k) != x.Dims()-2 {
		c.fail(tensor.ErrArgument, "kernel_shape %v does not fit input %v", k, x.Shape())
	}
	strides, dil, begin, end = windowArgs(c, x.Shape()[2:], k)
	return
}

// kilnPads reports whether begin and end pads can be Kiln's symmetric
// implicit padding (at most half the kernel).
func kilnPads(k, begin, end []int) bool {
	for i := range k {
		if begin[i] != end[i] || 2*begin[i] > k[i] {
			return false
		}
	}
	return true
}

func maxPool(c *call) []*value {
	x := c.t(0)
	if dt := x.DType(); !dt.IsFloat() && dt != tensor.Bool {
		// Kiln pools floating types; the integer types ONNX allows (8-bit
		// ones) are exact in float32 and come back unchanged.
		xf := x.To(tensor.Float32)
		c.in[0] = &value{t: xf}
		res := maxPool(c)
		res[0].t = res[0].t.To(dt)
		return res
	}
	k, strides, dil, begin, end := poolArgs(c, x)
	cfg := tensor.PoolConfig{Kernel: k, Stride: strides, Dilation: dil, CeilMode: c.attrInt("ceil_mode", 0) != 0}
	wantIdx := len(c.node.Outputs) > 1 && c.node.Outputs[1] != ""
	if kilnPads(k, begin, end) {
		cfg.Padding = begin
	} else {
		if wantIdx {
			c.fail(tensor.ErrArgument, "indices with pads %v/%v, which Kiln pads explicitly", begin, end)
		}
		x = explicitPad(x, begin, end, math.Inf(-1))
	}
	var v, idx *tensor.Tensor
	switch x.Dims() {
	case 3:
		v, idx = tensor.MaxPool1d(x, cfg)
	case 5:
		v, idx = tensor.MaxPool3d(x, cfg)
	default:
		v, idx = tensor.MaxPool2d(x, cfg)
	}
	if !wantIdx {
		return outs(v)
	}
	// Kiln's indices count within each plane; ONNX's within the tensor.
	shape := x.Shape()
	plane := backends.NumElements(shape[2:])
	offShape := []int{shape[0], shape[1]}
	for range shape[2:] {
		offShape = append(offShape, 1)
	}
	if c.attrInt("storage_order", 0) != 0 && len(shape) == 4 {
		// Column-major indices: within a plane, h + w·H instead of h·W + w.
		h, w := int64(shape[2]), int64(shape[3])
		hi := hostOf(idx)
		for k, at := range hi.i {
			hi.i[k] = at%w*h + at/w
		}
		idx = hi.device(c.dev.Inner())
	}
	off := tensor.ArangeOf(c.dev.Inner(), tensor.Int64, 0, float64(shape[0]*shape[1]*plane), float64(plane)).Reshape(offShape...)
	return outs(v, idx.Add(off))
}

func avgPool(c *call) []*value {
	x := c.t(0)
	k, strides, _, begin, end := poolArgs(c, x)
	include := c.attrInt("count_include_pad", 0) != 0
	cfg := tensor.AvgPoolConfig{Kernel: k, Stride: strides, CeilMode: c.attrInt("ceil_mode", 0) != 0, ExcludePad: !include}
	if kilnPads(k, begin, end) {
		cfg.Padding = begin
	} else {
		if !include {
			// Average over the input elements only: the padded sums
			// divided by the padded average of a window count of ones.
			cfg.ExcludePad = false
			ones := tensor.OnesOf(c.dev.Inner(), x.DType(), append([]int{1, 1}, x.Shape()[2:]...)...)
			xp, op := explicitPad(x, begin, end, 0), explicitPad(ones, begin, end, 0)
			return outs(avgPoolN(xp, cfg).Div(avgPoolN(op, cfg)))
		}
		x = explicitPad(x, begin, end, 0)
	}
	return outs(avgPoolN(x, cfg))
}

// avgPoolN is AvgPool1d, AvgPool2d or AvgPool3d by the rank of x [N, C, …].
func avgPoolN(x *tensor.Tensor, cfg tensor.AvgPoolConfig) *tensor.Tensor {
	switch x.Dims() {
	case 3:
		return tensor.AvgPool1d(x, cfg)
	case 5:
		return tensor.AvgPool3d(x, cfg)
	}
	return tensor.AvgPool2d(x, cfg)
}

// channelView reshapes a per-channel vector [C] to broadcast against
// [N, C, …] of rank r.
func channelView(v *tensor.Tensor, r int) *tensor.Tensor {
	shape := make([]int, r-1)
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = v.NumElements()
	return v.Reshape(shape...)
}

func batchNorm(c *call) []*value {
	x, scale, bias, mean, variance := c.t(0), c.t(1), c.t(2), c.t(3), c.t(4)
	if x.Dims() < 2 {
		c.fail(tensor.ErrShape, "input %v must be [N, C, …]", x.Shape())
	}
	eps := c.attrFloat("epsilon", 1e-5)
	r := x.Dims()
	if c.attrInt("training_mode", 0) != 0 {
		// Normalise by the batch's statistics (population variance, as
		// NumPy's var) and return the running ones updated by momentum.
		dims := []int{0}
		for d := 2; d < r; d++ {
			dims = append(dims, d)
		}
		m := c.attrFloat("momentum", 0.9)
		bm := x.Mean(dims...)
		centered := x.Sub(channelView(bm, r))
		bv := centered.Mul(centered).Mean(dims...)
		inv := scale.Mul(bv.AddScalar(eps).Rsqrt())
		y := centered.Mul(channelView(inv, r)).Add(channelView(bias, r))
		return outs(y, mean.MulScalar(m).Add(bm.MulScalar(1-m)), variance.MulScalar(m).Add(bv.MulScalar(1-m)))
	}
	inv := scale.Mul(variance.AddScalar(eps).Rsqrt())
	shift := bias.Sub(mean.Mul(inv))
	return outs(x.Mul(channelView(inv, r)).Add(channelView(shift, r)))
}

func layerNorm(c *call) []*value {
	x := c.t(0)
	axis := c.axis(c.attrInt("axis", -1), x.Dims())
	eps := c.attrFloat("epsilon", 1e-5)
	ns := x.Shape()[axis:]
	var scale, bias *tensor.Tensor
	scale = c.t(1)
	if c.has(2) {
		bias = c.t(2)
	}
	var y *tensor.Tensor
	if slices.Equal(scale.Shape(), ns) && (bias == nil || slices.Equal(bias.Shape(), ns)) {
		y = x.LayerNorm(ns, scale, bias, eps)
	} else {
		y = x.LayerNorm(ns, nil, nil, eps).Mul(scale)
		if bias != nil {
			y = y.Add(bias)
		}
	}
	if len(c.node.Outputs) < 2 || c.node.Outputs[1] == "" && (len(c.node.Outputs) < 3 || c.node.Outputs[2] == "") {
		return outs(y)
	}
	// The optional Mean and InvStdDev outputs keep the normalised
	// dimensions as 1s, computed in float32 at least (stash_type 1).
	axes := make([]int, 0, x.Dims()-axis)
	for a := axis; a < x.Dims(); a++ {
		axes = append(axes, a)
	}
	xs := x
	if x.DType() != tensor.Float64 && x.DType() != tensor.Float32 {
		xs = x.To(tensor.Float32)
	}
	mean := xs.MeanKeep(axes...)
	inv := xs.Sub(mean).Square().MeanKeep(axes...).AddScalar(eps).Rsqrt()
	return outs(y, mean, inv)
}

func instanceNorm(c *call) []*value {
	x, scale, bias := c.t(0), c.t(1), c.t(2)
	if x.Dims() < 3 {
		c.fail(tensor.ErrShape, "input %v must be [N, C, D1, …]", x.Shape())
	}
	shape := x.Shape()
	s := backends.NumElements(shape[2:])
	y := x.Reshape(shape[0], shape[1], s).LayerNorm([]int{s}, nil, nil, c.attrFloat("epsilon", 1e-5)).Reshape(shape...)
	return outs(y.Mul(channelView(scale, x.Dims())).Add(channelView(bias, x.Dims())))
}

func groupNorm(c *call) []*value {
	x, scale, bias := c.t(0), c.t(1), c.t(2)
	g := int(c.attrInt("num_groups", 0))
	shape := x.Shape()
	if x.Dims() < 3 || g <= 0 || shape[1]%g != 0 {
		c.fail(tensor.ErrShape, "input %v cannot be split into num_groups %d", shape, g)
	}
	ch := shape[1]
	s := backends.NumElements(shape[1:]) / g
	y := x.Reshape(shape[0], g, s).LayerNorm([]int{s}, nil, nil, c.attrFloat("epsilon", 1e-5)).Reshape(shape...)
	perChannel := func(v *tensor.Tensor) *tensor.Tensor {
		if v.NumElements() == g && g != ch {
			// Opset 18's per-group scale and bias: each group's value
			// covers its ch/g channels.
			v = v.Reshape(g, 1).Expand(g, ch/g).Reshape(ch)
		}
		return channelView(v, x.Dims())
	}
	return outs(y.Mul(perChannel(scale)).Add(perChannel(bias)))
}

// softmax is Softmax or LogSoftmax: before opset 13 the input is coerced to
// 2-D at axis (default 1) and normalised over the second dimension; from 13
// it is normalised along axis (default −1).
func softmax(c *call, logarithm bool) *tensor.Tensor {
	x := c.t(0)
	f := func(t *tensor.Tensor, axis int) *tensor.Tensor {
		if logarithm {
			return t.LogSoftmax(axis)
		}
		return t.Softmax(axis)
	}
	if c.opset >= 13 {
		return f(x, c.axis(c.attrInt("axis", -1), x.Dims()))
	}
	shape := x.Shape()
	a := c.attrInt("axis", 1)
	if a < 0 {
		a += int64(len(shape))
	}
	if a < 0 || a > int64(len(shape)) {
		c.fail(tensor.ErrArgument, "axis %d is out of range for %v", c.attrInt("axis", 1), shape)
	}
	if a == int64(len(shape))-1 {
		return f(x, int(a))
	}
	rows := backends.NumElements(shape[:a])
	return f(x.Reshape(rows, backends.NumElements(shape[a:])), 1).Reshape(shape...)
}

func checkResize(n *NodeProto, attrs map[string]*AttributeProto, _ int64) string {
	if a := attrs["mode"]; a != nil {
		switch m := string(a.S); m {
		case "nearest", "linear", "bilinear", "cubic", "bicubic":
		default:
			return "mode=" + m
		}
	}
	if a := attrs["coordinate_transformation_mode"]; a != nil {
		switch m := string(a.S); m {
		case "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize":
		default:
			return "coordinate_transformation_mode=" + m
		}
	}
	if a := attrs["antialias"]; a != nil && a.I != 0 {
		return "antialias=1"
	}
	return ""
}

// resize is Resize and Upsample in nearest, linear and cubic modes, for
// any rank: each resized axis is resampled by index selection (and, for
// linear, a weighted sum of two selections, for cubic of four) with the
// source positions computed on the host from ONNX's coordinate
// transformation. tf_crop_and_resize's positions outside the input take
// extrapolation_value through a host-built mask.
func resize(c *call) []*value {
	x := c.t(0)
	shape := x.Shape()
	y := x
	dev := c.dev.Inner()
	host := func(ax resizeAxis, f []float64) *tensor.Tensor {
		return (&hostTensor{dtype: x.DType(), shape: ax.weightShape(len(shape)), f: f}).device(dev)
	}
	var keep *tensor.Tensor
	for _, ax := range resizePlan(c, shape) {
		switch {
		case ax.idx != nil:
			y = y.IndexSelect(ax.axis, tensor.FromInt64s(dev, ax.idx, ax.out))
		case ax.taps != nil:
			var sum *tensor.Tensor
			for k, tap := range ax.taps {
				term := y.IndexSelect(ax.axis, tensor.FromInt64s(dev, tap, ax.out)).Mul(host(ax, ax.tapW[k]))
				if sum == nil {
					sum = term
				} else {
					sum = sum.Add(term)
				}
			}
			y = sum
		default:
			a0 := y.IndexSelect(ax.axis, tensor.FromInt64s(dev, ax.i0, ax.out))
			a1 := y.IndexSelect(ax.axis, tensor.FromInt64s(dev, ax.i1, ax.out))
			y = a0.Add(a1.Sub(a0).Mul(host(ax, ax.w1)))
		}
		if ax.inside != nil {
			in := host(ax, ax.inside)
			if keep == nil {
				keep = in
			} else {
				keep = keep.Mul(in)
			}
		}
	}
	if keep != nil {
		e := c.attrFloat("extrapolation_value", 0)
		y = y.Mul(keep).Add(keep.MulScalar(-e).AddScalar(e))
	}
	if y == x {
		y = x.Reshape(shape...)
	}
	return outs(y)
}

// resizeAxis is how Resize resamples one axis: nearest picks rows idx;
// linear mixes rows i0 and i1 as (1−w1)·x[i0] + w1·x[i1]; cubic sums
// x[taps[k]]·tapW[k] over four taps. inside, set by tf_crop_and_resize
// when some position falls outside the input, is 1 where the position is
// inside and 0 where the output takes extrapolation_value.
type resizeAxis struct {
	axis, out int
	idx       []int64
	i0, i1    []int64
	w1        []float64
	taps      [][]int64
	tapW      [][]float64
	inside    []float64
}

// cubicCoefficients are the weights of the four taps floor(s)−1 …
// floor(s)+2 of the cubic convolution kernel with parameter a at a source
// position whose fractional part is t (ONNX's Resize, Keys' kernel).
func cubicCoefficients(t, a float64) [4]float64 {
	u := 1 - t
	return [4]float64{
		((a*(t+1)-5*a)*(t+1)+8*a)*(t+1) - 4*a,
		((a+2)*t-(a+3))*t*t + 1,
		((a+2)*u-(a+3))*u*u + 1,
		((a*(u+1)-5*a)*(u+1)+8*a)*(u+1) - 4*a,
	}
}

// weightShape is the shape w1 takes to broadcast along the axis.
func (ax resizeAxis) weightShape(r int) []int {
	wshape := make([]int, r)
	for k := range wshape {
		wshape[k] = 1
	}
	wshape[ax.axis] = ax.out
	return wshape
}

// resizePlan maps each resized axis of an input of the given shape to
// its source rows (coordinate transformation, nearest rounding, linear
// weights), for the runtime and for generated code alike.
func resizePlan(c *call, shape []int) []resizeAxis {
	r := len(shape)
	var scales []float64
	var sizes []int
	switch {
	case c.node.OpType == "Upsample" && c.opset < 9:
		for _, v := range c.attr("scales").Floats {
			scales = append(scales, float64(v))
		}
	case c.node.OpType == "Upsample" || c.opset < 11:
		scales = c.h(1).floats()
	default:
		if c.has(2) && c.h(2).size() > 0 {
			scales = c.h(2).floats()
		}
		if c.has(3) && c.h(3).size() > 0 {
			sizes = toInts(c.ints(3))
		}
	}
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if a := c.attrInts("axes"); a != nil {
		axes = axes[:0]
		for _, v := range a {
			axes = append(axes, c.axis(v, r))
		}
	}
	if (scales == nil) == (sizes == nil) {
		c.fail(tensor.ErrArgument, "give exactly one of scales and sizes")
	}
	if (scales != nil && len(scales) != len(axes)) || (sizes != nil && len(sizes) != len(axes)) {
		c.fail(tensor.ErrArgument, "scales %v or sizes %v do not fit rank %d", scales, sizes, r)
	}
	mode := c.attrString("mode", "nearest")
	ctm := c.attrString("coordinate_transformation_mode", "half_pixel")
	var roi []float64
	if ctm == "tf_crop_and_resize" {
		if c.has(1) {
			roi = c.h(1).floats()
		}
		if len(roi) != 2*len(axes) && len(roi) != 2*r {
			c.fail(tensor.ErrArgument, "tf_crop_and_resize needs roi with a start and an end per axis, got %v", roi)
		}
		if len(roi) == 2*r && len(axes) != r {
			// roi given for every axis: keep the resized ones
			full := roi
			roi = make([]float64, 2*len(axes))
			for i, a := range axes {
				roi[i], roi[len(axes)+i] = full[a], full[r+a]
			}
		}
	}
	nearest := c.attrString("nearest_mode", "round_prefer_floor")
	if c.opset < 11 || c.node.OpType == "Upsample" {
		ctm, nearest = "asymmetric", "floor"
	}
	var plan []resizeAxis
	others := slices.Clone(shape)
	for i, a := range axes {
		in := shape[a]
		var out int
		var scale float64
		if scales != nil {
			scale = scales[i]
			out = int(math.Floor(float64(in) * scale))
		} else {
			out = sizes[i]
			scale = float64(out) / float64(in)
		}
		if out == in && (scales == nil || scale == 1) {
			continue
		}
		others[a] = out
		c.size(others)
		if out <= 0 || scale <= 0 {
			c.fail(tensor.ErrArgument, "axis %d of %v resizes to %d", a, shape, out)
		}
		src := make([]float64, out)
		for j := range out {
			xr := float64(j)
			switch ctm {
			case "half_pixel":
				src[j] = (xr+0.5)/scale - 0.5
			case "pytorch_half_pixel":
				if out > 1 {
					src[j] = (xr+0.5)/scale - 0.5
				}
			case "align_corners":
				// ONNX's reference divides by the unrounded output
				// length in·scale when scales are given.
				lr := float64(out)
				if scales != nil {
					lr = float64(in) * scale
				}
				if lr != 1 {
					src[j] = xr * float64(in-1) / (lr - 1)
				}
			case "asymmetric":
				src[j] = xr / scale
			case "tf_half_pixel_for_nn":
				src[j] = (xr + 0.5) / scale
			case "tf_crop_and_resize":
				start, end := roi[i], roi[len(axes)+i]
				if out > 1 {
					src[j] = start*float64(in-1) + xr*(end-start)*float64(in-1)/float64(out-1)
				} else {
					src[j] = 0.5 * (start + end) * float64(in-1)
				}
			}
		}
		ax := resizeAxis{axis: a, out: out}
		if ctm == "tf_crop_and_resize" {
			inside := make([]float64, out)
			outside := false
			for j, s := range src {
				if s >= 0 && s <= float64(in-1) {
					inside[j] = 1
				} else {
					outside = true
				}
			}
			if outside {
				ax.inside = inside
			}
		}
		if mode == "nearest" {
			ax.idx = make([]int64, out)
			for j, s := range src {
				var v float64
				switch nearest {
				case "round_prefer_floor":
					if s-math.Floor(s) == 0.5 {
						v = math.Floor(s)
					} else {
						v = math.Round(s)
					}
				case "round_prefer_ceil":
					v = math.Round(s)
				case "floor":
					v = math.Floor(s)
				case "ceil":
					v = math.Ceil(s)
				default:
					c.fail(tensor.ErrArgument, "nearest_mode %q is not defined", nearest)
				}
				ax.idx[j] = int64(min(max(v, 0), float64(in-1)))
			}
			plan = append(plan, ax)
			continue
		}
		if mode == "cubic" || mode == "bicubic" {
			// Taps beyond the edge repeat it; exclude_outside drops them
			// and renormalises the rest.
			coeffA := c.attrFloat("cubic_coeff_a", -0.75)
			exclude := c.attrInt("exclude_outside", 0) != 0
			ax.taps, ax.tapW = make([][]int64, 4), make([][]float64, 4)
			for k := range 4 {
				ax.taps[k], ax.tapW[k] = make([]int64, out), make([]float64, out)
			}
			for j, s := range src {
				lo := math.Floor(s)
				w := cubicCoefficients(s-lo, coeffA)
				total := 0.0
				for k := range 4 {
					p := int(lo) - 1 + k
					if exclude && (p < 0 || p >= in) {
						w[k] = 0
					}
					total += w[k]
					ax.taps[k][j] = int64(min(max(p, 0), in-1))
				}
				for k := range 4 {
					if exclude {
						w[k] /= total
					}
					ax.tapW[k][j] = w[k]
				}
			}
			plan = append(plan, ax)
			continue
		}
		ax.i0, ax.i1, ax.w1 = make([]int64, out), make([]int64, out), make([]float64, out)
		for j, s := range src {
			s = min(max(s, 0), float64(in-1))
			lo := math.Floor(s)
			ax.i0[j] = int64(lo)
			ax.i1[j] = min(int64(lo)+1, int64(in-1))
			ax.w1[j] = s - lo
		}
		plan = append(plan, ax)
	}
	return plan
}
