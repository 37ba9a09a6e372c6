package onnx

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/kiln-ml/kiln/tensor"
)

// Operator is one ONNX node run by Kiln's runtime instead of by generated
// code: Generate writes an Operator literal for each node it cannot
// translate into tensor calls (its Fallbacks), so the generated package
// still needs no ONNX file at run time.
type Operator struct {
	// Op is the operator type ("Resize", "LSTM", …) of the default domain.
	Op string
	// Opset is the default domain's opset version the node follows.
	Opset int64
	// Attrs holds the node's attributes.
	Attrs []*AttributeProto
	// Consts holds the inputs fixed when the code was generated, by input
	// index (shapes, axes, scales computed from constants).
	Consts map[int]*TensorProto
	// Outputs names the node's outputs ("" for an output not computed).
	Outputs []string
}

// Run runs the operator on dev. ins holds the inputs by index: nil for an
// input given by Consts or left out. It returns one tensor per entry of
// Outputs (nil where the name is ""). It panics with a *tensor.Error
// (Op "onnx.Operator") wrapping the runtime's error kind when the
// operator is unknown or its inputs do not fit.
func (o *Operator) Run(dev tensor.Device, ins ...*tensor.Tensor) []*tensor.Tensor {
	const op = "onnx.Operator"
	fail := func(kind error, err error) {
		panic(&tensor.Error{Op: op, Msg: err.Error(), Err: errors.Join(kind, err)})
	}
	def := ops[o.Op]
	if def == nil {
		fail(ErrUnsupported, fmt.Errorf("operator %q is not implemented", o.Op))
	}
	n := len(ins)
	for k := range o.Consts {
		n = max(n, k+1)
	}
	node := &NodeProto{OpType: o.Op, Name: o.Op, Attributes: o.Attrs, Outputs: o.Outputs, Inputs: make([]string, n)}
	vals := make([]*value, n)
	for k := range n {
		if tp, ok := o.Consts[k]; ok {
			h, err := tensorHost(tp)
			if err != nil {
				fail(ErrCorrupt, err)
			}
			vals[k] = &value{h: h}
		} else if k < len(ins) && ins[k] != nil {
			vals[k] = &value{t: ins[k]}
		} else {
			continue
		}
		node.Inputs[k] = "in" + strconv.Itoa(k)
	}
	s := &step{node: node, def: def, attrs: map[string]*AttributeProto{}}
	for _, a := range o.Attrs {
		s.attrs[a.Name] = a
	}
	p := &plan{path: "generated code", opset: o.Opset, dev: dev}
	res, err := p.exec(s, vals, false)
	if err != nil {
		var te *tensor.Error
		kind := tensor.ErrArgument
		if errors.As(err, &te) {
			kind = te.Err
		}
		fail(kind, err)
	}
	out := make([]*tensor.Tensor, len(o.Outputs))
	for k, name := range o.Outputs {
		if name == "" || k >= len(res) || res[k] == nil {
			continue
		}
		if res[k].t == nil {
			res[k].t = res[k].h.device(dev)
		}
		out[k] = res[k].t
	}
	return out
}
