package onnx

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// The decoder reads the ONNX protobuf schema (onnx/onnx.proto3, IR version
// 3 to 9) field by field with protowire, so no generated code is needed.
// Field numbers are the schema's; fields the schema does not define are
// skipped, as protobuf requires, but a known field with the wrong wire
// type, a truncated field or a length running past its message is an
// error wrapping ErrCorrupt that names the path to the field.

// ErrCorrupt reports a file that is not a well-formed ONNX model: truncated,
// corrupt bytes, a field of the wrong type, tensor data that does not match
// its declared shape, external data that cannot be read, or (from Load and
// Describe) a node whose attributes break its operator's definition.
var ErrCorrupt = errors.New("corrupt ONNX file")

// ErrUnsupported reports a well-formed model that Kiln cannot run: an
// operator or opset it does not implement, or a data type Kiln has no
// tensor type for (strings, complex numbers).
var ErrUnsupported = errors.New("unsupported ONNX model")

// ModelProto field numbers.
const (
	fModelIRVersion       = 1
	fModelProducerName    = 2
	fModelProducerVersion = 3
	fModelDomain          = 4
	fModelModelVersion    = 5
	fModelDocString       = 6
	fModelGraph           = 7
	fModelOpsetImport     = 8
	fModelMetadataProps   = 14
	fModelTrainingInfo    = 20
	fModelFunctions       = 25
)

// OperatorSetIdProto field numbers.
const (
	fOpsetDomain  = 1
	fOpsetVersion = 2
)

// StringStringEntryProto field numbers.
const (
	fEntryKey   = 1
	fEntryValue = 2
)

// GraphProto field numbers.
const (
	fGraphNode                   = 1
	fGraphName                   = 2
	fGraphInitializer            = 5
	fGraphDocString              = 10
	fGraphInput                  = 11
	fGraphOutput                 = 12
	fGraphValueInfo              = 13
	fGraphQuantizationAnnotation = 14
	fGraphSparseInitializer      = 15
)

// NodeProto field numbers.
const (
	fNodeInput     = 1
	fNodeOutput    = 2
	fNodeName      = 3
	fNodeOpType    = 4
	fNodeAttribute = 5
	fNodeDocString = 6
	fNodeDomain    = 7
)

// AttributeProto field numbers.
const (
	fAttrName          = 1
	fAttrF             = 2
	fAttrI             = 3
	fAttrS             = 4
	fAttrT             = 5
	fAttrG             = 6
	fAttrFloats        = 7
	fAttrInts          = 8
	fAttrStrings       = 9
	fAttrTensors       = 10
	fAttrGraphs        = 11
	fAttrDocString     = 13
	fAttrTP            = 14
	fAttrTypeProtos    = 15
	fAttrType          = 20
	fAttrRefAttrName   = 21
	fAttrSparseTensor  = 22
	fAttrSparseTensors = 23
)

// AttributeProto.AttributeType values.
const (
	AttrUndefined     = 0
	AttrFloat         = 1
	AttrInt           = 2
	AttrString        = 3
	AttrTensor        = 4
	AttrGraph         = 5
	AttrFloats        = 6
	AttrInts          = 7
	AttrStrings       = 8
	AttrTensors       = 9
	AttrGraphs        = 10
	AttrSparseTensor  = 11
	AttrSparseTensors = 12
	AttrTypeProto     = 13
	AttrTypeProtos    = 14
)

// TensorProto field numbers.
const (
	fTensorDims         = 1
	fTensorDataType     = 2
	fTensorSegment      = 3
	fTensorFloatData    = 4
	fTensorInt32Data    = 5
	fTensorStringData   = 6
	fTensorInt64Data    = 7
	fTensorName         = 8
	fTensorRawData      = 9
	fTensorDoubleData   = 10
	fTensorUint64Data   = 11
	fTensorDocString    = 12
	fTensorExternalData = 13
	fTensorDataLocation = 14
)

// TensorProto.Segment field numbers.
const (
	fSegmentBegin = 1
	fSegmentEnd   = 2
)

// SparseTensorProto field numbers.
const (
	fSparseValues  = 1
	fSparseIndices = 2
	fSparseDims    = 3
)

// ValueInfoProto field numbers.
const (
	fValueInfoName      = 1
	fValueInfoType      = 2
	fValueInfoDocString = 3
)

// TypeProto field numbers (and those of its nested messages).
const (
	fTypeTensor       = 1
	fTypeSequence     = 4
	fTypeMap          = 5
	fTypeDenotation   = 6
	fTypeSparseTensor = 8
	fTypeOptional     = 9

	fTensorTypeElemType = 1 // TypeProto.Tensor and TypeProto.SparseTensor
	fTensorTypeShape    = 2

	fSequenceElemType = 1 // TypeProto.Sequence and TypeProto.Optional

	fMapKeyType   = 1
	fMapValueType = 2

	fShapeDim = 1 // TensorShapeProto

	fDimValue      = 1 // TensorShapeProto.Dimension
	fDimParam      = 2
	fDimDenotation = 3
)

// TensorProto.DataLocation values.
const (
	LocationDefault  = 0
	LocationExternal = 1
)

// TensorProto.DataType values.
const (
	TypeUndefined  = 0
	TypeFloat      = 1
	TypeUint8      = 2
	TypeInt8       = 3
	TypeUint16     = 4
	TypeInt16      = 5
	TypeInt32      = 6
	TypeInt64      = 7
	TypeString     = 8
	TypeBool       = 9
	TypeFloat16    = 10
	TypeDouble     = 11
	TypeUint32     = 12
	TypeUint64     = 13
	TypeComplex64  = 14
	TypeComplex128 = 15
	TypeBFloat16   = 16
)

var dataTypeNames = map[int32]string{
	TypeUndefined: "UNDEFINED", TypeFloat: "FLOAT", TypeUint8: "UINT8", TypeInt8: "INT8",
	TypeUint16: "UINT16", TypeInt16: "INT16", TypeInt32: "INT32", TypeInt64: "INT64",
	TypeString: "STRING", TypeBool: "BOOL", TypeFloat16: "FLOAT16", TypeDouble: "DOUBLE",
	TypeUint32: "UINT32", TypeUint64: "UINT64", TypeComplex64: "COMPLEX64",
	TypeComplex128: "COMPLEX128", TypeBFloat16: "BFLOAT16",
}

// DataTypeName returns the schema's name of an ONNX data type ("FLOAT",
// "INT64", …), or "DATATYPE(n)" for a number the schema does not define.
func DataTypeName(t int32) string {
	if s, ok := dataTypeNames[t]; ok {
		return s
	}
	return "DATATYPE(" + strconv.Itoa(int(t)) + ")"
}

// ModelProto is a decoded ONNX model file.
type ModelProto struct {
	IRVersion       int64
	OpsetImports    []OperatorSetID
	ProducerName    string
	ProducerVersion string
	Domain          string
	ModelVersion    int64
	DocString       string
	Graph           *GraphProto
	MetadataProps   []StringEntry
	// NumFunctions and NumTrainingInfo count the model-local functions and
	// training-info entries, which are decoded only far enough to be
	// skipped: Kiln runs neither.
	NumFunctions    int
	NumTrainingInfo int
}

// OperatorSetID is one opset import: a domain ("" is the default ONNX
// domain, also spelled "ai.onnx") and its version.
type OperatorSetID struct {
	Domain  string
	Version int64
}

// StringEntry is a key–value pair (metadata, external-data locations).
type StringEntry struct {
	Key, Value string
}

// GraphProto is a computation graph: nodes in topological order, the
// initializers (named constant tensors, usually weights), and the typed
// inputs, outputs and intermediate values.
type GraphProto struct {
	Name               string
	Nodes              []*NodeProto
	Initializers       []*TensorProto
	SparseInitializers []*SparseTensorProto
	Inputs             []*ValueInfoProto
	Outputs            []*ValueInfoProto
	ValueInfo          []*ValueInfoProto
	DocString          string
}

// NodeProto is one operator application. Empty input names stand for
// omitted optional inputs.
type NodeProto struct {
	Inputs     []string
	Outputs    []string
	Name       string
	OpType     string
	Domain     string
	Attributes []*AttributeProto
	DocString  string
}

// AttributeProto is a named attribute of a node. Type says which of the
// value fields is meant; graph attributes (If, Loop, Scan bodies) are
// decoded but Kiln does not run them.
type AttributeProto struct {
	Name          string
	RefAttrName   string
	DocString     string
	Type          int32
	F             float32
	I             int64
	S             []byte
	T             *TensorProto
	G             *GraphProto
	SparseTensor  *SparseTensorProto
	TP            *TypeProto
	Floats        []float32
	Ints          []int64
	Strings       [][]byte
	Tensors       []*TensorProto
	Graphs        []*GraphProto
	SparseTensors []*SparseTensorProto
	TypeProtos    []*TypeProto
}

// TensorProto is a serialized tensor. Its elements live in exactly one of
// the typed data fields, RawData (little-endian), or an external file
// (DataLocation = LocationExternal, ExternalData naming "location",
// "offset" and "length"), which ReadFile loads into RawData.
type TensorProto struct {
	Dims         []int64
	DataType     int32
	Name         string
	DocString    string
	SegmentBegin int64
	SegmentEnd   int64
	FloatData    []float32
	Int32Data    []int32
	StringData   [][]byte
	Int64Data    []int64
	DoubleData   []float64
	Uint64Data   []uint64
	RawData      []byte
	ExternalData []StringEntry
	DataLocation int32
	hasRaw       bool
}

// raw reports whether t's elements are in RawData (set, even empty, by
// the file or by the caller).
func (t *TensorProto) raw() bool { return t.hasRaw || t.RawData != nil }

// SparseTensorProto is a sparse tensor: Values [NNZ] at Indices ([NNZ]
// linear positions or [NNZ, rank] coordinates) in a tensor of shape Dims.
type SparseTensorProto struct {
	Values  *TensorProto
	Indices *TensorProto
	Dims    []int64
}

// ValueInfoProto names a graph value and gives its type.
type ValueInfoProto struct {
	Name      string
	Type      *TypeProto
	DocString string
}

// TypeProto is the type of a value. Kiln runs tensors only; sequence, map
// and optional types are recorded by Kind so that they can be reported.
type TypeProto struct {
	// Kind is "tensor", "sparse_tensor", "sequence", "map", "optional" or
	// "" when the type is absent.
	Kind     string
	ElemType int32 // tensor element type (TypeFloat, …)
	// Shape is nil when the type has no shape (unknown rank); a Dim with
	// neither Value nor Param set is an unknown dimension.
	Shape      []Dim
	HasShape   bool
	Denotation string
	Elem       *TypeProto // element type of a sequence or optional, value type of a map
}

// Dim is one dimension of a shape: a fixed size (HasValue), a symbolic
// name (Param, as "batch"), or unknown (neither).
type Dim struct {
	Value      int64
	HasValue   bool
	Param      string
	Denotation string
}

// String returns the dimension's size, its name, or "?".
func (d Dim) String() string {
	switch {
	case d.HasValue:
		return strconv.FormatInt(d.Value, 10)
	case d.Param != "":
		return d.Param
	}
	return "?"
}

// decoder walks one message's bytes, tracking the path of fields for errors.
type decoder struct {
	path []string
}

func (d *decoder) errf(format string, args ...any) error {
	where := strings.Join(d.path, ".")
	if where == "" {
		where = "model"
	}
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, where, fmt.Sprintf(format, args...))
}

func (d *decoder) push(s string) { d.path = append(d.path, s) }
func (d *decoder) pop()          { d.path = d.path[:len(d.path)-1] }

// field is one decoded field: its number, wire type and payload.
type field struct {
	num  protowire.Number
	typ  protowire.Type
	v    uint64 // varint, fixed32 or fixed64 payload
	data []byte // bytes payload
}

// modelFields names ModelProto's fields in errors about the whole file
// (a truncated file ends inside one of them).
var modelFields = map[protowire.Number]string{
	fModelIRVersion: "ir_version", fModelProducerName: "producer_name", fModelProducerVersion: "producer_version",
	fModelDomain: "domain", fModelModelVersion: "model_version", fModelDocString: "doc_string",
	fModelGraph: "graph", fModelOpsetImport: "opset_import", fModelMetadataProps: "metadata_props",
	fModelTrainingInfo: "training_info", fModelFunctions: "functions",
}

// fields splits b into its fields, calling fn for each; unknown fields are
// handed on too (fn ignores them). Malformed tags and payloads are errors.
func (d *decoder) fields(b []byte, fn func(f field) error) error {
	return d.fieldsNamed(b, nil, fn)
}

func (d *decoder) fieldsNamed(b []byte, names map[protowire.Number]string, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return d.errf("bad field tag: %v", protowire.ParseError(n))
		}
		if num <= 0 {
			return d.errf("field number %d is invalid", num)
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.data, n = protowire.ConsumeBytes(b)
		case protowire.StartGroupType:
			n = protowire.ConsumeFieldValue(num, typ, b)
		default:
			return d.errf("field %d has unknown wire type %d", num, typ)
		}
		if n < 0 {
			if name, ok := names[num]; ok {
				return d.errf("field %s (%d) is truncated or malformed: %v", name, num, protowire.ParseError(n))
			}
			return d.errf("field %d is truncated or malformed: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// want checks f's wire type against the schema's.
func (d *decoder) want(f field, name string, typ protowire.Type) error {
	if f.typ != typ {
		return d.errf("field %s (%d) has wire type %d, want %d", name, f.num, f.typ, typ)
	}
	return nil
}

func (d *decoder) str(f field, name string, dst *string) error {
	if err := d.want(f, name, protowire.BytesType); err != nil {
		return err
	}
	*dst = string(f.data)
	return nil
}

func (d *decoder) int64v(f field, name string, dst *int64) error {
	if err := d.want(f, name, protowire.VarintType); err != nil {
		return err
	}
	*dst = int64(f.v)
	return nil
}

func (d *decoder) int32v(f field, name string, dst *int32) error {
	if err := d.want(f, name, protowire.VarintType); err != nil {
		return err
	}
	*dst = int32(f.v)
	return nil
}

// varints appends a repeated varint field, packed or not.
func (d *decoder) varints(f field, name string, add func(uint64)) error {
	switch f.typ {
	case protowire.VarintType:
		add(f.v)
		return nil
	case protowire.BytesType:
		b := f.data
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return d.errf("packed %s: %v", name, protowire.ParseError(n))
			}
			add(v)
			b = b[n:]
		}
		return nil
	}
	return d.errf("field %s (%d) has wire type %d, want varint or packed", name, f.num, f.typ)
}

// fixed32s appends a repeated fixed32 field, packed or not.
func (d *decoder) fixed32s(f field, name string, add func(uint32)) error {
	switch f.typ {
	case protowire.Fixed32Type:
		add(uint32(f.v))
		return nil
	case protowire.BytesType:
		if len(f.data)%4 != 0 {
			return d.errf("packed %s: %d bytes is not a whole number of 4-byte values", name, len(f.data))
		}
		for i := 0; i < len(f.data); i += 4 {
			v, _ := protowire.ConsumeFixed32(f.data[i:])
			add(v)
		}
		return nil
	}
	return d.errf("field %s (%d) has wire type %d, want fixed32 or packed", name, f.num, f.typ)
}

// fixed64s appends a repeated fixed64 field, packed or not.
func (d *decoder) fixed64s(f field, name string, add func(uint64)) error {
	switch f.typ {
	case protowire.Fixed64Type:
		add(f.v)
		return nil
	case protowire.BytesType:
		if len(f.data)%8 != 0 {
			return d.errf("packed %s: %d bytes is not a whole number of 8-byte values", name, len(f.data))
		}
		for i := 0; i < len(f.data); i += 8 {
			v, _ := protowire.ConsumeFixed64(f.data[i:])
			add(v)
		}
		return nil
	}
	return d.errf("field %s (%d) has wire type %d, want fixed64 or packed", name, f.num, f.typ)
}

// message decodes a nested message field with fn, under path segment seg.
func (d *decoder) message(f field, name, seg string, fn func(b []byte) error) error {
	if err := d.want(f, name, protowire.BytesType); err != nil {
		return err
	}
	d.push(seg)
	defer d.pop()
	return fn(f.data)
}

// maxDepth bounds nesting (graphs inside attributes inside graphs), so a
// crafted file cannot exhaust the stack.
const maxDepth = 64

// Decode parses an ONNX model from its protobuf bytes. It never panics:
// malformed input gives an error wrapping ErrCorrupt that names the field
// where decoding stopped (as "graph.node[3](Conv_1).attribute[0](strides)").
// External tensor data is left unresolved (see ReadFile).
func Decode(b []byte) (*ModelProto, error) {
	d := &decoder{}
	m := &ModelProto{}
	sawGraph := false
	err := d.fieldsNamed(b, modelFields, func(f field) error {
		switch f.num {
		case fModelIRVersion:
			return d.int64v(f, "ir_version", &m.IRVersion)
		case fModelProducerName:
			return d.str(f, "producer_name", &m.ProducerName)
		case fModelProducerVersion:
			return d.str(f, "producer_version", &m.ProducerVersion)
		case fModelDomain:
			return d.str(f, "domain", &m.Domain)
		case fModelModelVersion:
			return d.int64v(f, "model_version", &m.ModelVersion)
		case fModelDocString:
			return d.str(f, "doc_string", &m.DocString)
		case fModelGraph:
			sawGraph = true
			return d.message(f, "graph", "graph", func(b []byte) error {
				g, err := d.graph(b, 0)
				m.Graph = g
				return err
			})
		case fModelOpsetImport:
			return d.message(f, "opset_import", fmt.Sprintf("opset_import[%d]", len(m.OpsetImports)), func(b []byte) error {
				var o OperatorSetID
				err := d.fields(b, func(f field) error {
					switch f.num {
					case fOpsetDomain:
						return d.str(f, "domain", &o.Domain)
					case fOpsetVersion:
						return d.int64v(f, "version", &o.Version)
					}
					return nil
				})
				m.OpsetImports = append(m.OpsetImports, o)
				return err
			})
		case fModelMetadataProps:
			return d.message(f, "metadata_props", fmt.Sprintf("metadata_props[%d]", len(m.MetadataProps)), func(b []byte) error {
				e, err := d.entry(b)
				m.MetadataProps = append(m.MetadataProps, e)
				return err
			})
		case fModelTrainingInfo:
			m.NumTrainingInfo++
			return d.want(f, "training_info", protowire.BytesType)
		case fModelFunctions:
			m.NumFunctions++
			return d.want(f, "functions", protowire.BytesType)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !sawGraph {
		return nil, d.errf("no graph (field %d): not an ONNX model", fModelGraph)
	}
	if m.IRVersion <= 0 {
		return nil, d.errf("ir_version %d is not positive: not an ONNX model", m.IRVersion)
	}
	return m, nil
}

func (d *decoder) entry(b []byte) (StringEntry, error) {
	var e StringEntry
	err := d.fields(b, func(f field) error {
		switch f.num {
		case fEntryKey:
			return d.str(f, "key", &e.Key)
		case fEntryValue:
			return d.str(f, "value", &e.Value)
		}
		return nil
	})
	return e, err
}

func (d *decoder) graph(b []byte, depth int) (*GraphProto, error) {
	if depth > maxDepth {
		return nil, d.errf("graphs nested more than %d deep", maxDepth)
	}
	g := &GraphProto{}
	err := d.fields(b, func(f field) error {
		switch f.num {
		case fGraphNode:
			return d.message(f, "node", fmt.Sprintf("node[%d]", len(g.Nodes)), func(b []byte) error {
				n, err := d.node(b, depth)
				g.Nodes = append(g.Nodes, n)
				return err
			})
		case fGraphName:
			return d.str(f, "name", &g.Name)
		case fGraphInitializer:
			return d.message(f, "initializer", fmt.Sprintf("initializer[%d]", len(g.Initializers)), func(b []byte) error {
				t, err := d.tensor(b)
				g.Initializers = append(g.Initializers, t)
				return err
			})
		case fGraphSparseInitializer:
			return d.message(f, "sparse_initializer", fmt.Sprintf("sparse_initializer[%d]", len(g.SparseInitializers)), func(b []byte) error {
				t, err := d.sparse(b)
				g.SparseInitializers = append(g.SparseInitializers, t)
				return err
			})
		case fGraphDocString:
			return d.str(f, "doc_string", &g.DocString)
		case fGraphInput:
			return d.message(f, "input", fmt.Sprintf("input[%d]", len(g.Inputs)), func(b []byte) error {
				v, err := d.valueInfo(b)
				g.Inputs = append(g.Inputs, v)
				return err
			})
		case fGraphOutput:
			return d.message(f, "output", fmt.Sprintf("output[%d]", len(g.Outputs)), func(b []byte) error {
				v, err := d.valueInfo(b)
				g.Outputs = append(g.Outputs, v)
				return err
			})
		case fGraphValueInfo:
			return d.message(f, "value_info", fmt.Sprintf("value_info[%d]", len(g.ValueInfo)), func(b []byte) error {
				v, err := d.valueInfo(b)
				g.ValueInfo = append(g.ValueInfo, v)
				return err
			})
		case fGraphQuantizationAnnotation:
			return d.want(f, "quantization_annotation", protowire.BytesType)
		}
		return nil
	})
	return g, err
}

func (d *decoder) node(b []byte, depth int) (*NodeProto, error) {
	n := &NodeProto{}
	err := d.fields(b, func(f field) error {
		switch f.num {
		case fNodeInput:
			var s string
			err := d.str(f, "input", &s)
			n.Inputs = append(n.Inputs, s)
			return err
		case fNodeOutput:
			var s string
			err := d.str(f, "output", &s)
			n.Outputs = append(n.Outputs, s)
			return err
		case fNodeName:
			if err := d.str(f, "name", &n.Name); err != nil {
				return err
			}
			d.path[len(d.path)-1] += "(" + n.Name + ")"
			return nil
		case fNodeOpType:
			return d.str(f, "op_type", &n.OpType)
		case fNodeDomain:
			return d.str(f, "domain", &n.Domain)
		case fNodeDocString:
			return d.str(f, "doc_string", &n.DocString)
		case fNodeAttribute:
			return d.message(f, "attribute", fmt.Sprintf("attribute[%d]", len(n.Attributes)), func(b []byte) error {
				a, err := d.attribute(b, depth)
				n.Attributes = append(n.Attributes, a)
				return err
			})
		}
		return nil
	})
	if err == nil && n.OpType == "" {
		err = d.errf("node has no op_type")
	}
	return n, err
}

func (d *decoder) attribute(b []byte, depth int) (*AttributeProto, error) {
	a := &AttributeProto{}
	err := d.fields(b, func(f field) error {
		switch f.num {
		case fAttrName:
			if err := d.str(f, "name", &a.Name); err != nil {
				return err
			}
			d.path[len(d.path)-1] += "(" + a.Name + ")"
			return nil
		case fAttrRefAttrName:
			return d.str(f, "ref_attr_name", &a.RefAttrName)
		case fAttrDocString:
			return d.str(f, "doc_string", &a.DocString)
		case fAttrType:
			return d.int32v(f, "type", &a.Type)
		case fAttrF:
			if err := d.want(f, "f", protowire.Fixed32Type); err != nil {
				return err
			}
			a.F = math.Float32frombits(uint32(f.v))
			return nil
		case fAttrI:
			return d.int64v(f, "i", &a.I)
		case fAttrS:
			if err := d.want(f, "s", protowire.BytesType); err != nil {
				return err
			}
			a.S = append([]byte(nil), f.data...)
			return nil
		case fAttrT:
			return d.message(f, "t", "t", func(b []byte) (err error) { a.T, err = d.tensor(b); return })
		case fAttrG:
			return d.message(f, "g", "g", func(b []byte) (err error) { a.G, err = d.graph(b, depth+1); return })
		case fAttrSparseTensor:
			return d.message(f, "sparse_tensor", "sparse_tensor", func(b []byte) (err error) { a.SparseTensor, err = d.sparse(b); return })
		case fAttrTP:
			return d.message(f, "tp", "tp", func(b []byte) (err error) { a.TP, err = d.typeProto(b, 0); return })
		case fAttrFloats:
			return d.fixed32s(f, "floats", func(v uint32) { a.Floats = append(a.Floats, math.Float32frombits(v)) })
		case fAttrInts:
			return d.varints(f, "ints", func(v uint64) { a.Ints = append(a.Ints, int64(v)) })
		case fAttrStrings:
			if err := d.want(f, "strings", protowire.BytesType); err != nil {
				return err
			}
			a.Strings = append(a.Strings, append([]byte(nil), f.data...))
			return nil
		case fAttrTensors:
			return d.message(f, "tensors", fmt.Sprintf("tensors[%d]", len(a.Tensors)), func(b []byte) error {
				t, err := d.tensor(b)
				a.Tensors = append(a.Tensors, t)
				return err
			})
		case fAttrGraphs:
			return d.message(f, "graphs", fmt.Sprintf("graphs[%d]", len(a.Graphs)), func(b []byte) error {
				g, err := d.graph(b, depth+1)
				a.Graphs = append(a.Graphs, g)
				return err
			})
		case fAttrSparseTensors:
			return d.message(f, "sparse_tensors", fmt.Sprintf("sparse_tensors[%d]", len(a.SparseTensors)), func(b []byte) error {
				t, err := d.sparse(b)
				a.SparseTensors = append(a.SparseTensors, t)
				return err
			})
		case fAttrTypeProtos:
			return d.message(f, "type_protos", fmt.Sprintf("type_protos[%d]", len(a.TypeProtos)), func(b []byte) error {
				t, err := d.typeProto(b, 0)
				a.TypeProtos = append(a.TypeProtos, t)
				return err
			})
		}
		return nil
	})
	if err != nil {
		return a, err
	}
	if a.Name == "" {
		return a, d.errf("attribute has no name")
	}
	if a.Type == AttrUndefined {
		a.Type = inferAttrType(a)
	}
	if a.Type < AttrFloat || a.Type > AttrTypeProtos {
		return a, d.errf("attribute type %d is not defined by the schema", a.Type)
	}
	return a, nil
}

// inferAttrType guesses the type of an attribute written without one (IR
// version 1 files) from the field that is set.
func inferAttrType(a *AttributeProto) int32 {
	switch {
	case len(a.Floats) > 0:
		return AttrFloats
	case len(a.Ints) > 0:
		return AttrInts
	case len(a.Strings) > 0:
		return AttrStrings
	case len(a.Tensors) > 0:
		return AttrTensors
	case len(a.Graphs) > 0:
		return AttrGraphs
	case a.T != nil:
		return AttrTensor
	case a.G != nil:
		return AttrGraph
	case a.S != nil:
		return AttrString
	case a.F != 0:
		return AttrFloat
	}
	return AttrInt
}

func (d *decoder) tensor(b []byte) (*TensorProto, error) {
	t := &TensorProto{}
	err := d.fields(b, func(f field) error {
		switch f.num {
		case fTensorDims:
			return d.varints(f, "dims", func(v uint64) { t.Dims = append(t.Dims, int64(v)) })
		case fTensorDataType:
			return d.int32v(f, "data_type", &t.DataType)
		case fTensorSegment:
			return d.message(f, "segment", "segment", func(b []byte) error {
				return d.fields(b, func(f field) error {
					switch f.num {
					case fSegmentBegin:
						return d.int64v(f, "begin", &t.SegmentBegin)
					case fSegmentEnd:
						return d.int64v(f, "end", &t.SegmentEnd)
					}
					return nil
				})
			})
		case fTensorFloatData:
			return d.fixed32s(f, "float_data", func(v uint32) { t.FloatData = append(t.FloatData, math.Float32frombits(v)) })
		case fTensorInt32Data:
			return d.varints(f, "int32_data", func(v uint64) { t.Int32Data = append(t.Int32Data, int32(v)) })
		case fTensorStringData:
			if err := d.want(f, "string_data", protowire.BytesType); err != nil {
				return err
			}
			t.StringData = append(t.StringData, append([]byte(nil), f.data...))
			return nil
		case fTensorInt64Data:
			return d.varints(f, "int64_data", func(v uint64) { t.Int64Data = append(t.Int64Data, int64(v)) })
		case fTensorName:
			if err := d.str(f, "name", &t.Name); err != nil {
				return err
			}
			d.path[len(d.path)-1] += "(" + t.Name + ")"
			return nil
		case fTensorRawData:
			if err := d.want(f, "raw_data", protowire.BytesType); err != nil {
				return err
			}
			t.RawData = append([]byte(nil), f.data...)
			t.hasRaw = true
			return nil
		case fTensorDoubleData:
			return d.fixed64s(f, "double_data", func(v uint64) { t.DoubleData = append(t.DoubleData, math.Float64frombits(v)) })
		case fTensorUint64Data:
			return d.varints(f, "uint64_data", func(v uint64) { t.Uint64Data = append(t.Uint64Data, v) })
		case fTensorDocString:
			return d.str(f, "doc_string", &t.DocString)
		case fTensorExternalData:
			return d.message(f, "external_data", fmt.Sprintf("external_data[%d]", len(t.ExternalData)), func(b []byte) error {
				e, err := d.entry(b)
				t.ExternalData = append(t.ExternalData, e)
				return err
			})
		case fTensorDataLocation:
			return d.int32v(f, "data_location", &t.DataLocation)
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	for i, v := range t.Dims {
		if v < 0 {
			return t, d.errf("dims[%d] = %d is negative", i, v)
		}
	}
	if t.DataLocation != LocationDefault && t.DataLocation != LocationExternal {
		return t, d.errf("data_location %d is not defined by the schema", t.DataLocation)
	}
	return t, nil
}

func (d *decoder) sparse(b []byte) (*SparseTensorProto, error) {
	s := &SparseTensorProto{}
	err := d.fields(b, func(f field) error {
		switch f.num {
		case fSparseValues:
			return d.message(f, "values", "values", func(b []byte) (err error) { s.Values, err = d.tensor(b); return })
		case fSparseIndices:
			return d.message(f, "indices", "indices", func(b []byte) (err error) { s.Indices, err = d.tensor(b); return })
		case fSparseDims:
			return d.varints(f, "dims", func(v uint64) { s.Dims = append(s.Dims, int64(v)) })
		}
		return nil
	})
	if err == nil && (s.Values == nil || s.Indices == nil) {
		err = d.errf("sparse tensor without values or indices")
	}
	return s, err
}

func (d *decoder) valueInfo(b []byte) (*ValueInfoProto, error) {
	v := &ValueInfoProto{}
	err := d.fields(b, func(f field) error {
		switch f.num {
		case fValueInfoName:
			if err := d.str(f, "name", &v.Name); err != nil {
				return err
			}
			d.path[len(d.path)-1] += "(" + v.Name + ")"
			return nil
		case fValueInfoType:
			return d.message(f, "type", "type", func(b []byte) (err error) { v.Type, err = d.typeProto(b, 0); return })
		case fValueInfoDocString:
			return d.str(f, "doc_string", &v.DocString)
		}
		return nil
	})
	return v, err
}

func (d *decoder) typeProto(b []byte, depth int) (*TypeProto, error) {
	if depth > maxDepth {
		return nil, d.errf("types nested more than %d deep", maxDepth)
	}
	t := &TypeProto{}
	tensorLike := func(kind string) func(b []byte) error {
		return func(b []byte) error {
			t.Kind = kind
			return d.fields(b, func(f field) error {
				switch f.num {
				case fTensorTypeElemType:
					return d.int32v(f, "elem_type", &t.ElemType)
				case fTensorTypeShape:
					t.HasShape = true
					t.Shape = []Dim{}
					return d.message(f, "shape", "shape", func(b []byte) error {
						return d.fields(b, func(f field) error {
							if f.num != fShapeDim {
								return nil
							}
							return d.message(f, "dim", fmt.Sprintf("dim[%d]", len(t.Shape)), func(b []byte) error {
								var dim Dim
								err := d.fields(b, func(f field) error {
									switch f.num {
									case fDimValue:
										dim.HasValue = true
										return d.int64v(f, "dim_value", &dim.Value)
									case fDimParam:
										return d.str(f, "dim_param", &dim.Param)
									case fDimDenotation:
										return d.str(f, "denotation", &dim.Denotation)
									}
									return nil
								})
								t.Shape = append(t.Shape, dim)
								return err
							})
						})
					})
				}
				return nil
			})
		}
	}
	elem := func(kind string) func(b []byte) error {
		return func(b []byte) error {
			t.Kind = kind
			return d.fields(b, func(f field) error {
				if f.num == fSequenceElemType {
					return d.message(f, "elem_type", "elem_type", func(b []byte) (err error) { t.Elem, err = d.typeProto(b, depth+1); return })
				}
				return nil
			})
		}
	}
	err := d.fields(b, func(f field) error {
		switch f.num {
		case fTypeTensor:
			return d.message(f, "tensor_type", "tensor_type", tensorLike("tensor"))
		case fTypeSparseTensor:
			return d.message(f, "sparse_tensor_type", "sparse_tensor_type", tensorLike("sparse_tensor"))
		case fTypeSequence:
			return d.message(f, "sequence_type", "sequence_type", elem("sequence"))
		case fTypeOptional:
			return d.message(f, "optional_type", "optional_type", elem("optional"))
		case fTypeMap:
			return d.message(f, "map_type", "map_type", func(b []byte) error {
				t.Kind = "map"
				return d.fields(b, func(f field) error {
					switch f.num {
					case fMapKeyType:
						return d.int32v(f, "key_type", &t.ElemType)
					case fMapValueType:
						return d.message(f, "value_type", "value_type", func(b []byte) (err error) { t.Elem, err = d.typeProto(b, depth+1); return })
					}
					return nil
				})
			})
		case fTypeDenotation:
			return d.str(f, "denotation", &t.Denotation)
		}
		return nil
	})
	return t, err
}
