package onnx

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// Value is a graph input or output of any ONNX type: a numeric tensor, a
// string tensor, a sequence, or an optional. Run carries numeric tensors
// only; RunValues carries Values. Exactly one kind is set: Tensor; Strings
// with Shape; Sequence (IsSequence, possibly empty); or None, an optional
// without a value (an optional with a value is just that value).
type Value struct {
	// Tensor is a numeric tensor.
	Tensor *tensor.Tensor
	// Strings holds a string tensor's elements in row-major order, Shape
	// its shape. String tensors stay on the host: only the operators that
	// read text (Cast, StringNormalizer, …) take them.
	Strings []string
	Shape   []int
	// Sequence holds a sequence's elements when IsSequence is set.
	Sequence   []Value
	IsSequence bool
	// None marks an optional without a value.
	None bool
}

// dtypeString marks host tensors of strings (hostTensor.s); no device
// holds them.
const dtypeString tensor.DType = 0xF0

// kind names what v holds, for errors.
func (v *value) kind() string {
	switch {
	case v == nil:
		return "missing"
	case v.none:
		return "an optional without a value"
	case v.isSeq:
		return "a sequence"
	case v.t == nil && v.h != nil && v.h.dtype == dtypeString:
		return "a string tensor"
	}
	return "a tensor"
}

// protect marks every device tensor v holds.
func (v *value) protect(m map[*tensor.Tensor]bool) {
	if v == nil {
		return
	}
	if v.t != nil {
		m[v.t] = true
	}
	for _, e := range v.seq {
		e.protect(m)
	}
}

// upload puts v's numeric host tensors on dev.
func (v *value) upload(dev tensor.Device) {
	if v == nil {
		return
	}
	if v.t == nil && v.h != nil && v.h.dtype != dtypeString {
		v.t = v.h.device(dev)
	}
	for _, e := range v.seq {
		e.upload(dev)
	}
}

// checkValue checks v against the graph input's declared type.
func checkValue(in *ValueInfoProto, v *value) error {
	if v == nil {
		return fmt.Errorf("%w: input %q is nil", tensor.ErrArgument, in.Name)
	}
	kind := "tensor"
	if in.Type != nil && in.Type.Kind != "" {
		kind = in.Type.Kind
	}
	switch {
	case kind == "optional":
		return nil
	case kind == "sequence":
		if !v.isSeq {
			return fmt.Errorf("%w: input %q is %s, the model wants a sequence", tensor.ErrArgument, in.Name, v.kind())
		}
		return nil
	case v.isSeq || v.none:
		return fmt.Errorf("%w: input %q is %s, the model wants a %s", tensor.ErrArgument, in.Name, v.kind(), kind)
	case v.t != nil:
		return checkInput(in, v.t)
	case v.h != nil && v.h.dtype == dtypeString:
		if in.Type != nil && in.Type.ElemType != TypeUndefined && in.Type.ElemType != TypeString {
			return fmt.Errorf("%w: input %q holds strings, the model wants %s", tensor.ErrDType, in.Name, DataTypeName(in.Type.ElemType))
		}
		return nil
	}
	return fmt.Errorf("%w: input %q is empty", tensor.ErrArgument, in.Name)
}

// fromValue converts a public Value (v's kind must be set).
func fromValue(v Value) (*value, error) {
	switch {
	case v.None:
		return &value{none: true}, nil
	case v.IsSequence:
		out := &value{isSeq: true}
		for i, e := range v.Sequence {
			ev, err := fromValue(e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			out.seq = append(out.seq, ev)
		}
		return out, nil
	case v.Tensor != nil:
		return &value{t: v.Tensor}, nil
	case v.Strings != nil || v.Shape != nil:
		h := &hostTensor{dtype: dtypeString, shape: append([]int{}, v.Shape...), s: append([]string{}, v.Strings...)}
		if h.size() != len(h.s) {
			return nil, fmt.Errorf("%w: %d strings for shape %v", tensor.ErrShape, len(v.Strings), v.Shape)
		}
		return &value{h: h}, nil
	}
	return nil, fmt.Errorf("%w: the Value holds nothing", tensor.ErrArgument)
}

// toValue converts v (uploaded) to a public Value.
func toValue(v *value) Value {
	switch {
	case v.none:
		return Value{None: true}
	case v.isSeq:
		out := Value{IsSequence: true, Sequence: []Value{}}
		for _, e := range v.seq {
			out.Sequence = append(out.Sequence, toValue(e))
		}
		return out
	case v.t != nil:
		return Value{Tensor: v.t}
	}
	return Value{Strings: append([]string{}, v.h.s...), Shape: append([]int{}, v.h.shape...)}
}

// RunValues runs the graph as Run does, on inputs and outputs of any ONNX
// type (see Value): graphs with sequence, optional or string inputs and
// outputs run through it. Inputs are checked against the declared kinds,
// and numeric tensors as Run checks them.
func (m *Model) RunValues(inputs map[string]Value) (map[string]Value, error) {
	if m == nil || m.g == nil {
		return nil, errNotLoaded
	}
	vals := make(map[string]*value, len(inputs))
	for name, v := range inputs {
		iv, err := fromValue(v)
		if err != nil {
			return nil, fmt.Errorf("onnx: run %s: input %q: %w", m.g.path, name, err)
		}
		vals[name] = iv
	}
	got, err := m.run(vals)
	if err != nil {
		return nil, err
	}
	res := make(map[string]Value, len(got))
	for name, v := range got {
		res[name] = toValue(v)
	}
	return res, nil
}

// Fields of SequenceProto and OptionalProto (onnx-data.proto).
const (
	fSeqElemType      = 2
	fSeqTensorValues  = 3
	fSeqSequences     = 5
	fSeqOptionals     = 7
	fOptTensorValue   = 3
	fOptSequenceValue = 5
	fOptOptionalValue = 7
)

// decodeValue decodes a serialized TensorProto, SequenceProto or
// OptionalProto, as t's kind says, into a host value.
func decodeValue(b []byte, t *TypeProto, depth int) (*value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: values nested deeper than %d", ErrCorrupt, maxDepth)
	}
	d := &decoder{path: []string{"value"}}
	kind := ""
	var elem *TypeProto
	if t != nil {
		kind, elem = t.Kind, t.Elem
	}
	switch kind {
	case "sequence":
		out := &value{isSeq: true}
		err := d.fields(b, func(f field) error {
			switch f.num {
			case fSeqTensorValues, fSeqSequences, fSeqOptionals:
				et := elem
				if f.num == fSeqTensorValues {
					et = &TypeProto{Kind: "tensor"}
				}
				v, err := decodeValue(f.data, et, depth+1)
				if err != nil {
					return err
				}
				out.seq = append(out.seq, v)
			}
			return nil
		})
		return out, err
	case "optional":
		out := &value{none: true}
		err := d.fields(b, func(f field) error {
			switch f.num {
			case fOptTensorValue, fOptSequenceValue, fOptOptionalValue:
				et := elem
				if f.num == fOptTensorValue {
					et = &TypeProto{Kind: "tensor"}
				}
				v, err := decodeValue(f.data, et, depth+1)
				if err != nil {
					return err
				}
				out = v
			}
			return nil
		})
		return out, err
	}
	tp, err := d.tensor(b)
	if err != nil {
		return nil, err
	}
	h, err := tensorHost(tp)
	if err != nil {
		return nil, err
	}
	return &value{h: h}, nil
}
