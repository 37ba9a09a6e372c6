package onnx

import (
	"math"
	"slices"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// Layout, indexing and constant operators. Shape arguments are read on the
// host; the data moves through Kiln's view ops (Reshape, Permute, Slice,
// Expand), which record gradients like any op.

var ops = map[string]*opDef{}

func init() {
	ops["Shape"] = &opDef{
		role: func(int, int64, map[string]*AttributeProto) role { return roleBuffer },
		run:  func(c *call) []*value { return []*value{{h: shapeOf(c)}} },
		host: func(c *call) []*hostTensor { return hosts(shapeOf(c)) },
	}
	ops["Size"] = &opDef{
		role: func(int, int64, map[string]*AttributeProto) role { return roleBuffer },
		run: func(c *call) []*value {
			return []*value{{h: &hostTensor{dtype: tensor.Int64, shape: []int{}, i: []int64{int64(backends.NumElements(c.need(0).shape()))}}}}
		},
	}
	ops["Constant"] = &opDef{host: constantOf}
	ops["ConstantOfShape"] = &opDef{
		role: staticInputs(0),
		run: func(c *call) []*value {
			shape, fill := constantOfShape(c)
			c.size(shape)
			return outs(tensor.FullOf(c.dev.Inner(), fill.dtype, fill.at(0), shape...))
		},
		host: func(c *call) []*hostTensor {
			shape, fill := constantOfShape(c)
			if c.size(shape) > hostLimit {
				return nil
			}
			return hosts(hostExpand(fill.reshaped([]int{}), shape))
		},
	}
	ops["Range"] = &opDef{
		role: staticFrom(0),
		run: func(c *call) []*value {
			start, limit, delta := c.scalar(0), c.scalar(1), c.scalar(2)
			n := rangeCount(c, start, limit, delta)
			dt := c.in[0].dtype()
			return outs(tensor.ArangeOf(c.dev.Inner(), dt, start, start+float64(n)*delta-delta/2, delta))
		},
		host: func(c *call) []*hostTensor {
			start, limit, delta := c.scalar(0), c.scalar(1), c.scalar(2)
			n := rangeCount(c, start, limit, delta)
			if n > hostLimit {
				return nil
			}
			out := newHost(c.h(0).dtype, []int{n})
			for k := range n {
				if out.i != nil {
					out.i[k] = c.h(0).ints()[0] + int64(k)*c.h(2).ints()[0]
				} else {
					out.set(k, start+float64(k)*delta)
				}
			}
			return hosts(out)
		},
	}
	ops["Reshape"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			x := c.t(0)
			return outs(x.Reshape(reshapeTarget(c, x.Shape())...))
		},
		host: func(c *call) []*hostTensor {
			x := c.h(0)
			shape := reshapeTarget(c, x.shape)
			if slices.Contains(shape, -1) {
				known := 1
				for _, d := range shape {
					if d != -1 {
						known *= d
					}
				}
				for i, d := range shape {
					if d == -1 && known > 0 {
						shape[i] = x.size() / known
					}
				}
			}
			if c.size(shape) != x.size() {
				c.fail(tensor.ErrShape, "cannot reshape %v to %v", x.shape, shape)
			}
			return hosts(x.reshaped(shape))
		},
	}
	ops["Flatten"] = &opDef{
		run: func(c *call) []*value {
			x := c.t(0)
			return outs(x.Reshape(flattenShape(c, x.Shape())...))
		},
		host: func(c *call) []*hostTensor { x := c.h(0); return hosts(x.reshaped(flattenShape(c, x.shape))) },
	}
	ops["Transpose"] = &opDef{
		run:  func(c *call) []*value { x := c.t(0); return outs(x.Permute(perm(c, x.Dims())...)) },
		host: func(c *call) []*hostTensor { x := c.h(0); return hosts(hostTranspose(x, perm(c, len(x.shape)))) },
	}
	ops["Squeeze"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			x := c.t(0)
			return outs(x.Reshape(squeezeShape(c, x.Shape())...))
		},
		host: func(c *call) []*hostTensor { x := c.h(0); return hosts(x.reshaped(squeezeShape(c, x.shape))) },
	}
	ops["Unsqueeze"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			x := c.t(0)
			return outs(x.Reshape(unsqueezeShape(c, x.Shape())...))
		},
		host: func(c *call) []*hostTensor { x := c.h(0); return hosts(x.reshaped(unsqueezeShape(c, x.shape))) },
	}
	ops["Concat"] = &opDef{
		run: func(c *call) []*value {
			var ts []*tensor.Tensor
			for k := range c.in {
				if c.has(k) {
					ts = append(ts, c.t(k))
				}
			}
			axis := c.axis(c.attrInt("axis", 0), ts[0].Dims())
			var keep []*tensor.Tensor
			for _, t := range ts {
				if t.Dim(axis) > 0 {
					keep = append(keep, t)
				}
			}
			if len(keep) == 0 {
				keep = ts[:1]
			}
			if len(keep) == 1 {
				return outs(keep[0].Reshape(keep[0].Shape()...))
			}
			return outs(tensor.Cat(keep, axis))
		},
		host: func(c *call) []*hostTensor {
			var hs []*hostTensor
			for k := range c.in {
				if c.has(k) {
					hs = append(hs, c.h(k))
				}
			}
			h, err := hostConcat(hs, int(c.attrInt("axis", 0)))
			if err != nil {
				c.fail(tensor.ErrShape, "%v", err)
			}
			return hosts(h)
		},
	}
	ops["Split"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			x := c.t(0)
			axis := c.axis(c.attrInt("axis", 0), x.Dims())
			return outs(x.Split(splitSizes(c, x.Dim(axis)), axis)...)
		},
	}
	ops["Slice"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			x := c.t(0)
			for _, b := range sliceBounds(c, x.Shape()) {
				end := b.start + b.n*b.step
				if b.step < 0 && end < 0 {
					end = math.MinInt
				}
				x = x.Slice(b.axis, b.start, end, b.step)
			}
			return outs(x)
		},
		host: func(c *call) []*hostTensor { x := c.h(0); return hosts(hostSlice(x, sliceBounds(c, x.shape))) },
	}
	ops["Gather"] = &opDef{
		role: func(k int, _ int64, _ map[string]*AttributeProto) role {
			if k == 1 {
				return roleBuffer
			}
			return roleData
		},
		run: func(c *call) []*value {
			x := c.t(0)
			axis := c.axis(c.attrInt("axis", 0), x.Dims())
			n := x.Dim(axis)
			var idx *tensor.Tensor
			var idxShape []int
			if iv := c.in[1]; iv.h != nil {
				ii := make([]int64, iv.h.size())
				for k, v := range iv.h.ints() {
					if v < 0 {
						v += int64(n)
					}
					if v < 0 || v >= int64(n) {
						c.fail(tensor.ErrArgument, "index %d is out of range for axis %d of size %d", iv.h.ints()[k], axis, n)
					}
					ii[k] = v
				}
				idxShape = iv.h.shape
				idx = tensor.FromInt64s(c.dev.Inner(), ii, len(ii))
			} else {
				it := c.t(1)
				idxShape = it.Shape()
				idx = normIndex(it, n).Reshape(-1)
			}
			out := x.IndexSelect(axis, idx)
			shape := slices.Concat(x.Shape()[:axis], idxShape, x.Shape()[axis+1:])
			return outs(out.Reshape(shape...))
		},
		host: func(c *call) []*hostTensor {
			h, err := hostGather(c.h(0), c.h(1), int(c.attrInt("axis", 0)))
			if err != nil {
				c.fail(tensor.ErrArgument, "%v", err)
			}
			return hosts(h)
		},
	}
	ops["GatherElements"] = &opDef{
		role: func(k int, _ int64, _ map[string]*AttributeProto) role {
			if k == 1 {
				return roleBuffer
			}
			return roleData
		},
		run: func(c *call) []*value {
			x := c.t(0)
			axis := c.axis(c.attrInt("axis", 0), x.Dims())
			return outs(x.Gather(axis, normIndex(c.t(1), x.Dim(axis))))
		},
	}
	ops["ScatterElements"] = &opDef{
		role: func(k int, _ int64, _ map[string]*AttributeProto) role {
			if k == 1 {
				return roleBuffer
			}
			return roleData
		},
		run: func(c *call) []*value {
			x := c.t(0)
			axis := c.axis(c.attrInt("axis", 0), x.Dims())
			idx := normIndex(c.t(1), x.Dim(axis))
			if c.attrString("reduction", "none") == "add" {
				return outs(x.ScatterAdd(axis, idx, c.t(2)))
			}
			return outs(x.Scatter(axis, idx, c.t(2)))
		},
		check: func(_ *NodeProto, attrs map[string]*AttributeProto, _ int64) string {
			if a := attrs["reduction"]; a != nil && string(a.S) != "none" && string(a.S) != "add" {
				return "reduction=" + string(a.S)
			}
			return ""
		},
	}
	ops["Scatter"] = ops["ScatterElements"]
	ops["Expand"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			x := c.t(0)
			shape := expandShape(c, x.Shape())
			c.size(shape)
			return outs(x.Expand(shape...))
		},
		host: func(c *call) []*hostTensor {
			x := c.h(0)
			shape := expandShape(c, x.shape)
			if c.size(shape) > hostLimit {
				return nil
			}
			return hosts(hostExpand(x, shape))
		},
	}
	ops["Tile"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			x := c.t(0)
			reps := toInts(c.ints(1))
			if len(reps) != x.Dims() {
				c.fail(tensor.ErrShape, "repeats %v must have one entry per dimension of %v", reps, x.Shape())
			}
			tiled := x.Shape()
			for i := range tiled {
				tiled[i] *= max(reps[i], 0)
			}
			c.size(append(tiled, reps...))
			return outs(x.Repeat(reps...))
		},
	}
	ops["Pad"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			x := c.t(0)
			pads, mode, value := padArgs(c, x.Dims())
			return outs(x.Pad(pads, mode, value))
		},
		check: func(_ *NodeProto, attrs map[string]*AttributeProto, _ int64) string {
			if a := attrs["mode"]; a != nil {
				switch string(a.S) {
				case "constant", "reflect", "edge", "wrap":
				default:
					return "mode=" + string(a.S)
				}
			}
			return ""
		},
	}
	ops["Dropout"] = &opDef{
		role: staticFrom(1),
		run: func(c *call) []*value {
			x := c.t(0)
			if c.opset >= 12 && c.has(2) && c.scalar(2) != 0 {
				// Training mode: zero each element with probability
				// ratio and scale the rest by 1/(1 − ratio).
				ratio := 0.5
				if c.has(1) {
					ratio = c.scalar(1)
				}
				if ratio < 0 || ratio >= 1 {
					c.fail(tensor.ErrArgument, "ratio %g is outside [0, 1)", ratio)
				}
				if ratio > 0 {
					keep := tensor.Bernoulli(c.dev.Inner(), 1-ratio, x.Shape()...).GtScalar(0)
					y := tensor.Where(keep, x.MulScalar(1/(1-ratio)), tensor.ZerosLike(x))
					return outs(y, keep)[:min(2, len(c.node.Outputs))]
				}
			}
			res := []*value{{t: x.Reshape(x.Shape()...)}}
			if len(c.node.Outputs) > 1 {
				res = append(res, &value{t: tensor.OnesOf(c.dev.Inner(), tensor.Bool, x.Shape()...)})
			}
			return res
		},
	}
}

// normIndex maps negative indices along an axis of size n into range, on
// the device.
func normIndex(idx *tensor.Tensor, n int) *tensor.Tensor {
	if idx.DType() != tensor.Int64 {
		idx = idx.To(tensor.Int64)
	}
	return idx.AddScalar(float64(n)).RemScalar(float64(n))
}

func shapeOf(c *call) *hostTensor {
	shape := c.need(0).shape()
	r := int64(len(shape))
	start, end := c.attrInt("start", 0), c.attrInt("end", r)
	if start < 0 {
		start += r
	}
	if end < 0 {
		end += r
	}
	start = min(max(start, 0), r)
	end = min(max(end, start), r)
	v := make([]int64, 0, end-start)
	for _, d := range shape[start:end] {
		v = append(v, int64(d))
	}
	return hostInts(v)
}

func constantOf(c *call) []*hostTensor {
	for _, a := range c.node.Attributes {
		switch a.Name {
		case "value":
			if a.T == nil {
				c.fail(tensor.ErrArgument, "value attribute holds no tensor")
			}
			h, err := tensorHost(a.T)
			if err != nil {
				c.fail(tensor.ErrDType, "%v", err)
			}
			return hosts(h)
		case "sparse_value":
			if a.SparseTensor == nil {
				c.fail(tensor.ErrArgument, "sparse_value attribute holds no tensor")
			}
			h, err := sparseHost(a.SparseTensor)
			if err != nil {
				c.fail(tensor.ErrDType, "%v", err)
			}
			return hosts(h)
		case "value_float":
			return hosts(&hostTensor{dtype: tensor.Float32, shape: []int{}, f: []float64{float64(a.F)}})
		case "value_floats":
			f := make([]float64, len(a.Floats))
			for i, v := range a.Floats {
				f[i] = float64(v)
			}
			return hosts(&hostTensor{dtype: tensor.Float32, shape: []int{len(f)}, f: f})
		case "value_int":
			return hosts(&hostTensor{dtype: tensor.Int64, shape: []int{}, i: []int64{a.I}})
		case "value_ints":
			return hosts(hostInts(append([]int64{}, a.Ints...)))
		}
	}
	c.fail(tensor.ErrArgument, "no value attribute Kiln can read (value, value_float(s), value_int(s), sparse_value)")
	return nil
}

func constantOfShape(c *call) ([]int, *hostTensor) {
	shape := toInts(c.ints(0))
	for _, d := range shape {
		if d < 0 {
			c.fail(tensor.ErrShape, "shape %v has a negative dimension", shape)
		}
	}
	fill := &hostTensor{dtype: tensor.Float32, shape: []int{1}, f: []float64{0}}
	if a := c.attr("value"); a != nil && a.T != nil {
		h, err := tensorHost(a.T)
		if err != nil {
			c.fail(tensor.ErrDType, "%v", err)
		}
		if h.size() != 1 {
			c.fail(tensor.ErrShape, "value must hold one element, got shape %v", h.shape)
		}
		fill = h
	}
	return shape, fill
}

func rangeCount(c *call, start, limit, delta float64) int {
	if delta == 0 {
		c.fail(tensor.ErrArgument, "delta is 0")
	}
	n := math.Ceil((limit - start) / delta)
	if n < 0 || math.IsNaN(n) {
		n = 0
	}
	if n > maxRunElements {
		c.fail(tensor.ErrArgument, "range of %v elements is too long", n)
	}
	return int(n)
}

// reshapeTarget resolves Reshape's shape input: 0 copies the input's
// dimension unless allowzero is set; one -1 is inferred by Kiln.
func reshapeTarget(c *call, in []int) []int {
	var raw []int64
	if c.opset < 5 && c.hasAttr("shape") {
		raw = c.attrInts("shape")
	} else {
		raw = c.ints(1)
	}
	allowZero := c.attrInt("allowzero", 0) != 0
	shape := make([]int, len(raw))
	for i, d := range raw {
		switch {
		case d == 0 && !allowZero:
			if i >= len(in) {
				c.fail(tensor.ErrShape, "shape %v copies dimension %d of %v, which has none", raw, i, in)
			}
			shape[i] = in[i]
		case d < -1:
			c.fail(tensor.ErrShape, "shape %v has a negative dimension", raw)
		default:
			shape[i] = int(d)
		}
	}
	return shape
}

func flattenShape(c *call, in []int) []int {
	r := len(in)
	a := c.attrInt("axis", 1)
	if a < -int64(r) || a > int64(r) {
		c.fail(tensor.ErrArgument, "axis %d is out of range for rank %d", a, r)
	}
	if a < 0 {
		a += int64(r)
	}
	return []int{backends.NumElements(in[:a]), backends.NumElements(in[a:])}
}

func perm(c *call, r int) []int {
	p := c.attrInts("perm")
	if p == nil {
		out := make([]int, r)
		for i := range out {
			out[i] = r - 1 - i
		}
		return out
	}
	if len(p) != r {
		c.fail(tensor.ErrArgument, "perm %v does not fit rank %d", p, r)
	}
	out := make([]int, r)
	seen := make([]bool, r)
	for i, v := range p {
		a := c.axis(v, r)
		if seen[a] {
			c.fail(tensor.ErrArgument, "perm %v repeats axis %d", p, a)
		}
		seen[a] = true
		out[i] = a
	}
	return out
}

// axesArg returns an axes list given as an attribute before opset
// attrUntil and as input k from then on (nil when absent).
func axesArg(c *call, attrUntil int64, k int) []int64 {
	if c.opset < attrUntil {
		return c.attrInts("axes")
	}
	if c.has(k) {
		return c.ints(k)
	}
	return nil
}

func squeezeShape(c *call, in []int) []int {
	axes := axesArg(c, 13, 1)
	r := len(in)
	drop := make([]bool, r)
	if axes == nil {
		for i, d := range in {
			drop[i] = d == 1
		}
	}
	for _, a := range axes {
		i := c.axis(a, r)
		if in[i] != 1 {
			c.fail(tensor.ErrShape, "cannot squeeze axis %d of %v: its size is not 1", a, in)
		}
		drop[i] = true
	}
	var out []int
	for i, d := range in {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return out
}

func unsqueezeShape(c *call, in []int) []int {
	axes := axesArg(c, 13, 1)
	r := len(in) + len(axes)
	ins := make([]bool, r)
	for _, a := range axes {
		i := c.axis(a, r)
		if ins[i] {
			c.fail(tensor.ErrArgument, "axes %v repeat an axis", axes)
		}
		ins[i] = true
	}
	out := make([]int, 0, r)
	j := 0
	for i := range r {
		if ins[i] {
			out = append(out, 1)
		} else {
			out = append(out, in[j])
			j++
		}
	}
	return out
}

// splitSizes returns Split's piece sizes: the split attribute (before 13)
// or input, else num_outputs (18) or the number of outputs, equal pieces
// with a smaller last one.
func splitSizes(c *call, dim int) []int {
	var sizes []int64
	if c.opset < 13 {
		sizes = c.attrInts("split")
	} else if c.has(1) {
		sizes = c.ints(1)
	}
	if sizes != nil {
		return toInts(sizes)
	}
	n := int(c.attrInt("num_outputs", int64(len(c.node.Outputs))))
	if n <= 0 {
		c.fail(tensor.ErrArgument, "no outputs to split into")
	}
	each := (dim + n - 1) / n
	out := make([]int, n)
	left := dim
	for i := range out {
		out[i] = min(each, left)
		left -= out[i]
	}
	return out
}

// sliceBound is one axis of a slice, normalised: n elements from start
// stepping by step.
type sliceBound struct {
	axis, start, n, step int
}

func sliceBounds(c *call, shape []int) []sliceBound {
	var starts, ends, axes, steps []int64
	if c.opset < 10 {
		starts, ends, axes = c.attrInts("starts"), c.attrInts("ends"), c.attrInts("axes")
	} else {
		starts, ends = c.ints(1), c.ints(2)
		if c.has(3) {
			axes = c.ints(3)
		}
		if c.has(4) {
			steps = c.ints(4)
		}
	}
	if len(starts) != len(ends) || (axes != nil && len(axes) != len(starts)) || (steps != nil && len(steps) != len(starts)) {
		c.fail(tensor.ErrArgument, "starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
	}
	r := len(shape)
	var out []sliceBound
	for i := range starts {
		a := i
		if axes != nil {
			a = c.axis(axes[i], r)
		}
		step := int64(1)
		if steps != nil {
			step = steps[i]
		}
		if step == 0 {
			c.fail(tensor.ErrArgument, "step is 0")
		}
		d := int64(shape[a])
		s, e := starts[i], ends[i]
		if s < 0 {
			s += d
		}
		if e < 0 {
			e += d
		}
		var n int64
		if step > 0 {
			s = min(max(s, 0), d)
			e = min(max(e, 0), d)
			n = max((e-s+step-1)/step, 0)
		} else {
			s = min(max(s, -1), d-1)
			e = min(max(e, -1), d-1)
			n = max((s-e+(-step)-1)/(-step), 0)
		}
		if n == 0 {
			s = 0
		}
		out = append(out, sliceBound{axis: a, start: int(s), n: int(n), step: int(step)})
	}
	return out
}

// expandShape is ONNX Expand's bidirectional broadcast of the input shape
// with the shape argument.
func expandShape(c *call, in []int) []int {
	want := toInts(c.ints(1))
	shape, err := broadcastShapes(in, want)
	if err != nil {
		c.fail(tensor.ErrShape, "cannot expand %v to %v", in, want)
	}
	return shape
}

// padArgs converts ONNX pads ([x1_begin, x2_begin, …, x1_end, x2_end]) to
// Kiln's pairs from the last dimension.
func padArgs(c *call, r int) ([]int, string, float64) {
	var raw []int64
	value := 0.0
	if c.opset < 11 {
		raw = c.attrInts("pads")
		value = c.attrFloat("value", 0)
	} else {
		raw = c.ints(1)
		if c.has(2) {
			value = c.scalar(2)
		}
	}
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if c.opset >= 18 && c.has(3) {
		axes = axes[:0]
		for _, a := range c.ints(3) {
			axes = append(axes, c.axis(a, r))
		}
	}
	if len(raw) != 2*len(axes) {
		c.fail(tensor.ErrArgument, "pads %v must hold two entries per padded axis (%d)", raw, len(axes))
	}
	full := make([]int, 2*r)
	for i, a := range axes {
		full[a] = int(raw[i])
		full[r+a] = int(raw[len(axes)+i])
	}
	pads := make([]int, 0, 2*r)
	for a := r - 1; a >= 0; a-- {
		pads = append(pads, full[a], full[r+a])
	}
	mode := c.attrString("mode", "constant")
	switch mode {
	case "edge":
		mode = "replicate"
	case "wrap":
		mode = "circular"
	}
	return pads, mode, value
}
