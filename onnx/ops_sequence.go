package onnx

import (
	"github.com/kiln-ml/kiln/tensor"
)

// Sequences and optionals are runtime values (value.seq, value.none)
// built and taken apart by the operators below; their elements are
// ordinary tensor values, on the device or the host.

func init() {
	ops["SequenceEmpty"] = &opDef{run: func(c *call) []*value { return []*value{{isSeq: true}} }}
	ops["SequenceConstruct"] = &opDef{run: func(c *call) []*value {
		out := &value{isSeq: true}
		for k := range c.in {
			out.seq = append(out.seq, c.tensorIn(k))
		}
		return []*value{out}
	}}
	ops["SequenceInsert"] = &opDef{role: staticInputs(2), run: func(c *call) []*value {
		s := c.seqIn(0)
		pos := len(s.seq)
		if c.has(2) {
			pos = c.seqPos(2, len(s.seq), true)
		}
		out := &value{isSeq: true, seq: append(append(append([]*value{}, s.seq[:pos]...), c.tensorIn(1)), s.seq[pos:]...)}
		return []*value{out}
	}}
	ops["SequenceAt"] = &opDef{role: staticInputs(1), run: func(c *call) []*value {
		s := c.seqIn(0)
		return []*value{s.seq[c.seqPos(1, len(s.seq), false)]}
	}}
	ops["SequenceErase"] = &opDef{role: staticInputs(1), run: func(c *call) []*value {
		s := c.seqIn(0)
		if len(s.seq) == 0 {
			c.fail(tensor.ErrArgument, "the sequence is empty")
		}
		pos := len(s.seq) - 1
		if c.has(1) {
			pos = c.seqPos(1, len(s.seq), false)
		}
		out := &value{isSeq: true, seq: append(append([]*value{}, s.seq[:pos]...), s.seq[pos+1:]...)}
		return []*value{out}
	}}
	ops["SequenceLength"] = &opDef{run: func(c *call) []*value {
		return []*value{scalarValue(tensor.Int64, int64(len(c.seqIn(0).seq)))}
	}}
	ops["SplitToSequence"] = &opDef{role: staticInputs(1), run: splitToSequence}
	ops["ConcatFromSequence"] = &opDef{run: func(c *call) []*value {
		s := c.seqIn(0)
		if len(s.seq) == 0 {
			c.fail(tensor.ErrArgument, "the sequence is empty")
		}
		ts := make([]*tensor.Tensor, len(s.seq))
		for i, e := range s.seq {
			ts[i] = c.deviceOf(e)
		}
		r := ts[0].Dims()
		if c.attrInt("new_axis", 0) != 0 {
			return outs(tensor.Stack(ts, c.axis(c.attrInt("axis", 0), r+1)))
		}
		return outs(tensor.Cat(ts, c.axis(c.attrInt("axis", 0), r)))
	}}
	ops["SequenceMap"] = &opDef{run: sequenceMap}
	ops["Optional"] = &opDef{run: func(c *call) []*value {
		if c.has(0) {
			return []*value{c.in[0]}
		}
		return []*value{{none: true}}
	}}
	ops["OptionalHasElement"] = &opDef{run: func(c *call) []*value {
		return []*value{scalarValue(tensor.Bool, b2i(c.has(0) && !c.in[0].none))}
	}}
	ops["OptionalGetElement"] = &opDef{run: func(c *call) []*value {
		v := c.need(0)
		if v.none {
			c.fail(tensor.ErrArgument, "the optional has no value")
		}
		return []*value{v}
	}}
	// Identity passes sequences and optionals through as they are.
	identity := ops["Identity"]
	ops["Identity"] = &opDef{host: identity.host, role: identity.role, check: identity.check, run: func(c *call) []*value {
		if v := c.need(0); v.isSeq || v.none || v.t == nil && v.h != nil && v.h.dtype == dtypeString {
			return []*value{v}
		}
		return identity.run(c)
	}}
}

// seqIn returns input k, failing unless it is a sequence.
func (c *call) seqIn(k int) *value {
	v := c.need(k)
	if !v.isSeq {
		c.fail(tensor.ErrArgument, "input %d is %s, not a sequence", k, v.kind())
	}
	return v
}

// seqPos reads position input k for a sequence of n elements (negative
// counts from the end; end allows n itself).
func (c *call) seqPos(k, n int, end bool) int {
	p := int(c.scalar(k))
	if p < 0 {
		p += n
	}
	limit := n - 1
	if end {
		limit = n
	}
	if p < 0 || p > limit {
		c.fail(tensor.ErrArgument, "position %v is out of range for a sequence of %d", c.scalar(k), n)
	}
	return p
}

func splitToSequence(c *call) []*value {
	x := c.t(0)
	axis := c.axis(c.attrInt("axis", 0), x.Dims())
	dim := x.Dim(axis)
	var sizes []int
	keep := true
	switch {
	case !c.has(1):
		for range dim {
			sizes = append(sizes, 1)
		}
		keep = c.attrInt("keepdims", 1) != 0
	case len(c.h(1).shape) == 0 || c.h(1).size() == 1 && len(c.h(1).shape) == 0:
		step := int(c.scalar(1))
		if step <= 0 {
			c.fail(tensor.ErrArgument, "split %d must be positive", step)
		}
		for at := 0; at < dim; at += step {
			sizes = append(sizes, min(step, dim-at))
		}
	default:
		total := 0
		for _, s := range c.h(1).ints() {
			if s < 0 {
				c.fail(tensor.ErrArgument, "split %v has a negative size", c.h(1).ints())
			}
			sizes = append(sizes, int(s))
			total += int(s)
		}
		if total != dim {
			c.fail(tensor.ErrShape, "split %v does not add up to dimension %d of size %d", c.h(1).ints(), axis, dim)
		}
	}
	out := &value{isSeq: true}
	at := 0
	for _, s := range sizes {
		part := x.Narrow(axis, at, s)
		if !keep {
			part = part.Squeeze(axis)
		}
		out.seq = append(out.seq, &value{t: part})
		at += s
	}
	return []*value{out}
}

// sequenceMap runs the body once per element of the sequence inputs
// (tensor inputs are passed whole to every run) and gathers each body
// output into a sequence.
func sequenceMap(c *call) []*value {
	n := len(c.seqIn(0).seq)
	for k := 1; k < len(c.in); k++ {
		if v := c.need(k); v.isSeq && len(v.seq) != n {
			c.fail(tensor.ErrShape, "sequence input %d has %d elements, input 0 %d", k, len(v.seq), n)
		}
	}
	var res []*value
	for _, o := range c.node.Outputs {
		_ = o
		res = append(res, &value{isSeq: true})
	}
	for i := range n {
		ins := make([]*value, len(c.in))
		for k, v := range c.in {
			if v.isSeq {
				ins[k] = v.seq[i]
			} else {
				ins[k] = v
			}
		}
		outs := c.sub("body", ins)
		for j := range res {
			if j < len(outs) {
				res[j].seq = append(res[j].seq, outs[j])
			}
		}
	}
	return res
}
