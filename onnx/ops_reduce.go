package onnx

import (
	"math"
	"sort"

	"github.com/kiln-ml/kiln/tensor"
)

// Reductions, arg-reductions, TopK and CumSum. Reduction axes are an
// attribute until opset 13 (ReduceSum) or 18 (the others) and an input
// from then on.

func init() {
	type reduceFns struct {
		dev     func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor
		init    float64
		f       func(acc, v float64) float64
		fin     func(acc float64, n int) float64
		inputAt int64 // opset from which axes is an input
	}
	id := func(acc float64, _ int) float64 { return acc }
	sum := func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
		if keep {
			return x.SumKeep(axes...)
		}
		return x.Sum(axes...)
	}
	table := map[string]reduceFns{
		"ReduceSum": {dev: sum, f: func(a, v float64) float64 { return a + v }, fin: id, inputAt: 13},
		"ReduceMean": {dev: func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
			if keep {
				return x.MeanKeep(axes...)
			}
			return x.Mean(axes...)
		}, f: func(a, v float64) float64 { return a + v }, fin: func(a float64, n int) float64 { return a / float64(n) }, inputAt: 18},
		"ReduceMax": {dev: func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
			if keep {
				return x.MaxKeep(axes...)
			}
			return x.Max(axes...)
		}, init: math.Inf(-1), f: math.Max, fin: id, inputAt: 18},
		"ReduceMin": {dev: func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
			if keep {
				return x.MinKeep(axes...)
			}
			return x.Min(axes...)
		}, init: math.Inf(1), f: math.Min, fin: id, inputAt: 18},
		"ReduceProd": {dev: func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
			dt := x.DType()
			var y *tensor.Tensor
			if keep {
				y = x.ProdKeep(axes...)
			} else {
				y = x.Prod(axes...)
			}
			if y.DType() != dt {
				y = y.To(dt)
			}
			return y
		}, init: 1, f: func(a, v float64) float64 { return a * v }, fin: id, inputAt: 18},
		"ReduceL2": {dev: func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
			return sum(x.Square(), keep, axes).Sqrt()
		}, inputAt: 18},
		"ReduceL1": {dev: func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
			return sum(x.Abs(), keep, axes)
		}, inputAt: 18},
		"ReduceSumSquare": {dev: func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
			return sum(x.Square(), keep, axes)
		}, inputAt: 18},
		"ReduceLogSum": {dev: func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
			return sum(x, keep, axes).Log()
		}, inputAt: 18},
		"ReduceLogSumExp": {dev: func(x *tensor.Tensor, keep bool, axes []int) *tensor.Tensor {
			if keep {
				return x.LogSumExpKeep(axes...)
			}
			return x.LogSumExp(axes...)
		}, inputAt: 18},
	}
	for name, fns := range table {
		d := &opDef{role: staticFrom(1)}
		d.run = func(c *call) []*value {
			x := c.t(0)
			axes, all, noop := reduceAxes(c, fns.inputAt, x.Dims())
			if noop {
				return outs(x.Reshape(x.Shape()...))
			}
			keep := c.attrInt("keepdims", 1) != 0
			if all && x.Dims() == 0 {
				return outs(x.Reshape())
			}
			if all {
				axes = nil
				for a := range x.Dims() {
					axes = append(axes, a)
				}
			}
			return outs(fns.dev(x, keep, axes))
		}
		if fns.f != nil {
			d.host = func(c *call) []*hostTensor {
				x := c.h(0)
				axes, all, noop := reduceAxes(c, fns.inputAt, len(x.shape))
				if noop {
					return hosts(x)
				}
				if all {
					axes = nil
					for a := range x.shape {
						axes = append(axes, a)
					}
				}
				sort.Ints(axes)
				return hosts(hostReduce(x, axes, c.attrInt("keepdims", 1) != 0, fns.init, fns.f, fns.fin))
			}
		}
		ops[name] = d
	}

	argReduce := func(isMax bool) *opDef {
		return &opDef{run: func(c *call) []*value {
			x := c.t(0)
			axis := c.axis(c.attrInt("axis", 0), x.Dims())
			keep := c.attrInt("keepdims", 1) != 0
			last := c.attrInt("select_last_index", 0) != 0
			src := x
			if last {
				src = x.Flip(axis)
			}
			var idx *tensor.Tensor
			switch {
			case isMax && keep:
				idx = src.ArgmaxKeep(axis)
			case isMax:
				idx = src.Argmax(axis)
			case keep:
				idx = src.ArgminKeep(axis)
			default:
				idx = src.Argmin(axis)
			}
			if last {
				idx = idx.Neg().AddScalar(float64(x.Dim(axis) - 1))
			}
			return outs(idx)
		}}
	}
	ops["ArgMax"] = argReduce(true)
	ops["ArgMin"] = argReduce(false)
	ops["TopK"] = &opDef{role: staticFrom(1), run: func(c *call) []*value {
		x := c.t(0)
		axis := c.axis(c.attrInt("axis", -1), x.Dims())
		var k int64
		if c.opset < 10 {
			k = c.attrInt("k", 0)
		} else {
			k = int64(c.scalar(1))
		}
		v, i := x.TopK(int(k), axis, c.attrInt("largest", 1) != 0)
		return outs(v, i)
	}}
	ops["CumSum"] = &opDef{role: staticFrom(1), run: func(c *call) []*value {
		x := c.t(0)
		axis := c.axis(int64(c.scalar(1)), x.Dims())
		rev := c.attrInt("reverse", 0) != 0
		src := x
		if rev {
			src = x.Flip(axis)
		}
		y := src.Cumsum(axis)
		if y.DType() != x.DType() {
			y = y.To(x.DType())
		}
		if c.attrInt("exclusive", 0) != 0 {
			y = y.Sub(src)
		}
		if rev {
			y = y.Flip(axis)
		}
		return outs(y)
	}}
}

// reduceAxes returns the normalised axes of a reduction, whether it covers
// every axis, and whether it is a no-op (noop_with_empty_axes with none).
func reduceAxes(c *call, inputAt int64, r int) (axes []int, all, noop bool) {
	var raw []int64
	if c.opset < inputAt {
		raw = c.attrInts("axes")
	} else if c.has(1) {
		raw = c.ints(1)
	}
	if len(raw) == 0 {
		if c.opset >= inputAt && c.attrInt("noop_with_empty_axes", 0) != 0 {
			return nil, false, true
		}
		return nil, true, false
	}
	seen := map[int]bool{}
	for _, a := range raw {
		n := c.axis(a, r)
		if !seen[n] {
			seen[n] = true
			axes = append(axes, n)
		}
	}
	return axes, false, false
}
