package onnx

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/tensor"
)

// opDef is how Kiln runs one ONNX operator.
type opDef struct {
	// run computes the outputs on the device (reading host arguments as
	// needed). nil for operators computed on the host only.
	run func(c *call) []*value
	// host computes the outputs on the host when every input is there; it
	// may return nil to hand over to run (inputs too large, say).
	host func(c *call) []*hostTensor
	// role says how input k is used (default roleData).
	role func(k int, opset int64, attrs map[string]*AttributeProto) role
	// check reports, at load time, attribute values Kiln does not
	// implement ("" when the node is fine).
	check func(n *NodeProto, attrs map[string]*AttributeProto, opset int64) string
}

// call is one execution of a node.
type call struct {
	p     *plan
	s     *step
	node  *NodeProto
	attrs map[string]*AttributeProto
	opset int64
	in    []*value
	dev   tensor.Device
	env   map[string]*value // every value in scope (control flow reads it)
}

func (c *call) fail(kind error, format string, args ...any) {
	panic(&tensor.Error{Op: "onnx." + c.node.OpType, Msg: fmt.Sprintf(format, args...), Err: kind})
}

// has reports whether optional input k is given.
func (c *call) has(k int) bool { return k < len(c.in) && c.in[k] != nil }

// need fails unless input k is given.
func (c *call) need(k int) *value {
	if !c.has(k) {
		c.fail(tensor.ErrArgument, "input %d is missing", k)
	}
	return c.in[k]
}

// tensorIn returns input k, failing unless it is a tensor.
func (c *call) tensorIn(k int) *value {
	v := c.need(k)
	if v.isSeq || v.none || v.t == nil && v.h == nil {
		c.fail(tensor.ErrArgument, "input %d is %s, not a tensor", k, v.kind())
	}
	return v
}

// t returns input k on the device, uploading a host value once.
func (c *call) t(k int) *tensor.Tensor {
	v := c.tensorIn(k)
	if v.t == nil {
		v.t = v.h.device(c.dev.Inner())
	}
	return v.t
}

// h returns input k on the host, downloading a device value once (a
// synchronisation point: shape arguments computed on the device).
func (c *call) h(k int) *hostTensor {
	v := c.tensorIn(k)
	if v.h == nil {
		v.h = hostOf(v.t)
	}
	return v.h
}

// allHost reports whether every given input is on the host.
func (c *call) allHost() bool {
	n := 0
	for _, v := range c.in {
		if v == nil {
			continue
		}
		if v.h == nil || v.isSeq || v.none {
			return false
		}
		n += v.h.size()
	}
	return n <= hostLimit || c.node.OpType == "Constant"
}

// small reports whether every input is on the host and small enough to
// compute there.
func (c *call) ints(k int) []int64 { return c.h(k).ints() }

// scalar returns input k, which must hold one element, as float64.
func (c *call) scalar(k int) float64 {
	h := c.h(k)
	if h.size() != 1 {
		c.fail(tensor.ErrShape, "input %d must hold one value, got shape %v", k, h.shape)
	}
	return h.at(0)
}

func (c *call) attr(name string) *AttributeProto { return c.attrs[name] }

func (c *call) attrInt(name string, def int64) int64 {
	if a := c.attrs[name]; a != nil {
		return a.I
	}
	return def
}

func (c *call) attrFloat(name string, def float64) float64 {
	if a := c.attrs[name]; a != nil {
		return float64(a.F)
	}
	return def
}

func (c *call) attrString(name, def string) string {
	if a := c.attrs[name]; a != nil {
		return string(a.S)
	}
	return def
}

// attrInts returns an ints attribute, or nil when absent.
func (c *call) attrInts(name string) []int64 {
	if a := c.attrs[name]; a != nil {
		return a.Ints
	}
	return nil
}

func (c *call) hasAttr(name string) bool { return c.attrs[name] != nil }

// axis normalises axis a against rank r.
func (c *call) axis(a int64, r int) int {
	if a < -int64(r) || a >= int64(r) {
		c.fail(tensor.ErrArgument, "axis %d is out of range for rank %d", a, r)
	}
	if a < 0 {
		a += int64(r)
	}
	return int(a)
}

// outs wraps device tensors as values.
func outs(ts ...*tensor.Tensor) []*value {
	vs := make([]*value, len(ts))
	for i, t := range ts {
		if t != nil {
			vs[i] = &value{t: t}
		}
	}
	return vs
}

func hosts(hs ...*hostTensor) []*hostTensor { return hs }

func toInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = clampInt(x)
	}
	return out
}

// clampInt converts to int, saturating (ONNX uses INT64_MAX for open ends).
func clampInt(x int64) int {
	if x > math.MaxInt32*int64(1<<31) {
		return math.MaxInt
	}
	if x < math.MinInt32*int64(1<<31) {
		return math.MinInt
	}
	return int(x)
}

// staticInputs returns a role function making the listed inputs static.
func staticInputs(ks ...int) func(int, int64, map[string]*AttributeProto) role {
	return func(k int, _ int64, _ map[string]*AttributeProto) role {
		for _, s := range ks {
			if k == s {
				return roleStatic
			}
		}
		return roleData
	}
}

// staticFrom makes inputs k ≥ from static.
func staticFrom(from int) func(int, int64, map[string]*AttributeProto) role {
	return func(k int, _ int64, _ map[string]*AttributeProto) role {
		if k >= from {
			return roleStatic
		}
		return roleData
	}
}

// maxRunElements bounds the size of a tensor a shape argument may ask
// for, so a corrupt shape fails instead of exhausting memory.
const maxRunElements = 1 << 32

// size returns the element count of shape, failing for negative sizes and
// for counts past maxRunElements (overflow included).
func (c *call) size(shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 {
			c.fail(tensor.ErrShape, "shape %v has a negative dimension", shape)
		}
		if d != 0 && n > maxRunElements/d {
			c.fail(tensor.ErrArgument, "shape %v has more than 2^32 elements", shape)
		}
		n *= d
	}
	return n
}
