package onnx

import (
	"github.com/kiln-ml/kiln/tensor"
)

// Index and layout operators composed of Kiln's gathers, scatters and
// views: Trilu, EyeLike, OneHot, DepthToSpace, SpaceToDepth, Compress,
// GatherND, ScatterND and NonZero. Index arguments that decide a shape
// (Compress's condition, NonZero's input) are read on the host.

func init() {
	ops["Trilu"] = &opDef{role: staticInputs(1), run: func(c *call) []*value {
		x := c.t(0)
		if x.Dims() < 2 {
			c.fail(tensor.ErrShape, "input %v must have at least 2 dimensions", x.Shape())
		}
		k := int64(0)
		if c.has(1) {
			k = int64(c.scalar(1))
		}
		upper := c.attrInt("upper", 1) != 0
		rows, cols := x.Dim(x.Dims()-2), x.Dim(x.Dims()-1)
		keep := make([]bool, rows*cols)
		for i := range rows {
			for j := range cols {
				d := int64(j - i)
				keep[i*cols+j] = upper && d >= k || !upper && d <= k
			}
		}
		mask := tensor.FromBools(c.dev.Inner(), keep, rows, cols)
		return outs(tensor.Where(mask, x, tensor.ZerosLike(x)))
	}}
	ops["EyeLike"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		if x.Dims() != 2 {
			c.fail(tensor.ErrShape, "input %v must be a matrix", x.Shape())
		}
		dt := x.DType()
		if a := c.attr("dtype"); a != nil {
			var err error
			if dt, err = kilnDType(int32(a.I)); err != nil {
				c.fail(tensor.ErrDType, "%v", err)
			}
		}
		rows, cols := x.Dim(0), x.Dim(1)
		k := int(c.attrInt("k", 0))
		h := newHost(dt, []int{rows, cols})
		for i := range rows {
			if j := i + k; j >= 0 && j < cols {
				h.set(i*cols+j, 1)
			}
		}
		return outs(h.device(c.dev.Inner()))
	}}
	ops["OneHot"] = &opDef{role: staticInputs(1, 2), run: func(c *call) []*value {
		idx := c.t(0)
		depth := int(c.scalar(1))
		vals := c.h(2)
		if vals.size() != 2 {
			c.fail(tensor.ErrShape, "values must hold [off, on], got shape %v", vals.shape)
		}
		if depth <= 0 {
			c.fail(tensor.ErrArgument, "depth %d must be positive", depth)
		}
		r := idx.Dims() + 1
		axis := c.axis(c.attrInt("axis", -1), r)
		if idx.DType() != tensor.Int64 {
			idx = idx.To(tensor.Int64)
		}
		// Negative indices count from depth.
		idx = tensor.Where(idx.LtScalar(0), idx.AddScalar(float64(depth)).To(tensor.Int64), idx)
		shape := make([]int, r)
		for i := range shape {
			shape[i] = 1
		}
		shape[axis] = depth
		ar := tensor.ArangeOf(c.dev.Inner(), tensor.Int64, 0, float64(depth), 1).Reshape(shape...)
		hot := idx.Unsqueeze(axis).Eq(ar)
		off := tensor.ScalarOf(c.dev.Inner(), vals.dtype, vals.at(0))
		on := tensor.ScalarOf(c.dev.Inner(), vals.dtype, vals.at(1))
		return outs(tensor.Where(hot, on, off))
	}}
	ops["DepthToSpace"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		b := int(c.attrInt("blocksize", 0))
		if x.Dims() != 4 || b <= 0 || x.Dim(1)%(b*b) != 0 {
			c.fail(tensor.ErrShape, "input %v cannot be rearranged with blocksize %d", x.Shape(), b)
		}
		n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
		oc := ch / (b * b)
		var y *tensor.Tensor
		if c.attrString("mode", "DCR") == "CRD" {
			y = x.Reshape(n, oc, b, b, h, w).Permute(0, 1, 4, 2, 5, 3)
		} else {
			y = x.Reshape(n, b, b, oc, h, w).Permute(0, 3, 4, 1, 5, 2)
		}
		return outs(y.Reshape(n, oc, h*b, w*b))
	}}
	ops["SpaceToDepth"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		b := int(c.attrInt("blocksize", 0))
		if x.Dims() != 4 || b <= 0 || x.Dim(2)%b != 0 || x.Dim(3)%b != 0 {
			c.fail(tensor.ErrShape, "input %v cannot be rearranged with blocksize %d", x.Shape(), b)
		}
		n, ch, h, w := x.Dim(0), x.Dim(1), x.Dim(2), x.Dim(3)
		y := x.Reshape(n, ch, h/b, b, w/b, b).Permute(0, 3, 5, 1, 2, 4)
		return outs(y.Reshape(n, ch*b*b, h/b, w/b))
	}}
	ops["Compress"] = &opDef{role: staticInputs(1), run: func(c *call) []*value {
		x := c.t(0)
		cond := c.h(1)
		if len(cond.shape) != 1 {
			c.fail(tensor.ErrShape, "condition %v must be 1-D", cond.shape)
		}
		var axis, n int
		if c.hasAttr("axis") {
			axis = c.axis(c.attrInt("axis", 0), x.Dims())
			n = x.Dim(axis)
		} else {
			x = x.Reshape(x.NumElements())
			n = x.NumElements()
		}
		var pick []int64
		for k := range min(cond.size(), n) {
			if cond.at(k) != 0 {
				pick = append(pick, int64(k))
			}
		}
		if cond.size() > n {
			for k := n; k < cond.size(); k++ {
				if cond.at(k) != 0 {
					c.fail(tensor.ErrShape, "condition selects index %d of a dimension of %d", k, n)
				}
			}
		}
		if len(pick) == 0 {
			return outs(x.Narrow(axis, 0, 0))
		}
		return outs(x.IndexSelect(axis, tensor.FromInt64s(c.dev.Inner(), pick, len(pick))))
	}}
	ops["GatherND"] = &opDef{role: staticInputs(1), run: func(c *call) []*value {
		x := c.t(0)
		flat, rest, lead := ndIndex(c, x.Shape(), c.h(1), int(c.attrInt("batch_dims", 0)))
		y := x.Reshape(append([]int{-1}, rest...)...)
		if len(flat) == 0 {
			return outs(y.Narrow(0, 0, 0).Reshape(append(lead, rest...)...))
		}
		y = y.IndexSelect(0, tensor.FromInt64s(c.dev.Inner(), flat, len(flat)))
		return outs(y.Reshape(append(lead, rest...)...))
	}}
	ops["ScatterND"] = &opDef{role: staticInputs(1), run: func(c *call) []*value {
		x, upd := c.t(0), c.t(2)
		flat, rest, _ := ndIndex(c, x.Shape(), c.h(1), 0)
		m := len(flat)
		if upd.NumElements() != m*c.size(rest) {
			c.fail(tensor.ErrShape, "updates %v do not fit %d index tuples into %v", upd.Shape(), m, x.Shape())
		}
		if m == 0 {
			return outs(x.Reshape(x.Shape()...))
		}
		y := x.Reshape(append([]int{-1}, rest...)...)
		u := upd.Reshape(append([]int{m}, rest...)...)
		if u.DType() != y.DType() {
			u = u.To(y.DType())
		}
		inner := c.size(rest)
		idx := make([]int64, m*inner)
		for k, f := range flat {
			for j := range inner {
				idx[k*inner+j] = f
			}
		}
		index := tensor.FromInt64s(c.dev.Inner(), idx, append([]int{m}, rest...)...)
		var out *tensor.Tensor
		switch r := c.attrString("reduction", "none"); r {
		case "none":
			out = y.Scatter(0, index, u)
		case "add":
			out = y.ScatterAdd(0, index, u)
		case "mul", "max", "min":
			// No device primitive combines scattered values this way:
			// apply the updates in order on the host.
			return []*value{{h: scatterReduceHost(c, hostOf(y), hostOf(u), flat, inner, r).reshaped(x.Shape())}}
		default:
			c.fail(tensor.ErrArgument, "reduction %q: Kiln runs none, add, mul, max and min", r)
		}
		return outs(out.Reshape(x.Shape()...))
	}}
	ops["NonZero"] = &opDef{run: func(c *call) []*value {
		x := c.t(0)
		if x.Dims() == 0 {
			x = x.Reshape(1)
		}
		return outs(x.Nonzero().Permute(1, 0).Contiguous())
	}}
}

// ndIndex flattens GatherND/ScatterND index tuples: idx [..., k] indexes
// the first batch+k dimensions of shape (after batch shared leading
// dimensions). It returns each tuple's row in shape flattened to
// [-1, rest...], rest, and the leading shape of the result (idx's without
// its last dimension, for GatherND).
func ndIndex(c *call, shape []int, idx *hostTensor, batch int) (flat []int64, rest, lead []int) {
	r := len(idx.shape)
	if r == 0 || batch < 0 || batch >= r || batch > len(shape) {
		c.fail(tensor.ErrShape, "indices %v and batch_dims %d do not fit data %v", idx.shape, batch, shape)
	}
	k := idx.shape[r-1]
	if batch+k > len(shape) {
		c.fail(tensor.ErrShape, "index tuples of %d do not fit data %v after %d batch dimensions", k, shape, batch)
	}
	for i := range batch {
		if idx.shape[i] != shape[i] {
			c.fail(tensor.ErrShape, "batch dimension %d: indices %v, data %v", i, idx.shape, shape)
		}
	}
	rest = append([]int{}, shape[batch+k:]...)
	lead = append([]int{}, idx.shape[:r-1]...)
	tuples := 1
	for _, d := range idx.shape[:r-1] {
		tuples *= d
	}
	perBatch := 1
	for _, d := range idx.shape[batch : r-1] {
		perBatch *= d
	}
	block := 1 // rows of [-1, rest...] per batch element
	for _, d := range shape[batch : batch+k] {
		block *= d
	}
	vals := idx.ints()
	flat = make([]int64, tuples)
	for t := range tuples {
		var row int64
		for j := range k {
			d := int64(shape[batch+j])
			v := vals[t*k+j]
			if v < 0 {
				v += d
			}
			if v < 0 || v >= d {
				c.fail(tensor.ErrArgument, "index %d is out of range for dimension %d of size %d", vals[t*k+j], batch+j, d)
			}
			row = row*d + v
		}
		flat[t] = int64(t/perBatch)*int64(block) + row
	}
	return flat, rest, lead
}

// scatterReduceHost combines update row k of u into row flat[k] of y
// (rows of inner elements) with reduction r ("mul", "max" or "min").
func scatterReduceHost(c *call, y, u *hostTensor, flat []int64, inner int, r string) *hostTensor {
	out := newHost(y.dtype, y.shape)
	for k := range y.size() {
		out.set(k, y.at(k))
	}
	for k, f := range flat {
		for j := range inner {
			at := int(f)*inner + j
			if at < 0 || at >= out.size() {
				c.fail(tensor.ErrArgument, "index tuple %d is out of range", k)
			}
			a, b := out.at(at), u.at(k*inner+j)
			switch r {
			case "mul":
				a *= b
			case "max":
				a = max(a, b)
			case "min":
				a = min(a, b)
			}
			out.set(at, a)
		}
	}
	return out
}
