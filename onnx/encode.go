package onnx

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Encode serializes m in the ONNX protobuf format, the inverse of Decode:
// fields in schema order, repeated numbers packed, tensor data as given
// (typed fields or RawData). External-data tensors keep their
// ExternalData entries and DataLocation and have no RawData written.
func Encode(m *ModelProto) []byte {
	if m == nil {
		return nil
	}
	var b []byte
	b = appendInt(b, fModelIRVersion, m.IRVersion)
	b = appendString(b, fModelProducerName, m.ProducerName)
	b = appendString(b, fModelProducerVersion, m.ProducerVersion)
	b = appendString(b, fModelDomain, m.Domain)
	b = appendInt(b, fModelModelVersion, m.ModelVersion)
	b = appendString(b, fModelDocString, m.DocString)
	if m.Graph != nil {
		b = appendMessage(b, fModelGraph, encodeGraph(m.Graph))
	}
	for _, o := range m.OpsetImports {
		var ob []byte
		ob = appendString(ob, fOpsetDomain, o.Domain)
		ob = protowire.AppendTag(ob, fOpsetVersion, protowire.VarintType)
		ob = protowire.AppendVarint(ob, uint64(o.Version))
		b = appendMessage(b, fModelOpsetImport, ob)
	}
	for _, e := range m.MetadataProps {
		b = appendMessage(b, fModelMetadataProps, encodeEntry(e))
	}
	return b
}

func appendInt(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func appendPackedVarints(b []byte, num protowire.Number, vs []uint64) []byte {
	if len(vs) == 0 {
		return b
	}
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, v)
	}
	return appendMessage(b, num, p)
}

func encodeEntry(e StringEntry) []byte {
	var b []byte
	b = appendString(b, fEntryKey, e.Key)
	return appendString(b, fEntryValue, e.Value)
}

func encodeGraph(g *GraphProto) []byte {
	var b []byte
	for _, n := range g.Nodes {
		b = appendMessage(b, fGraphNode, encodeNode(n))
	}
	b = appendString(b, fGraphName, g.Name)
	for _, t := range g.Initializers {
		b = appendMessage(b, fGraphInitializer, encodeTensor(t))
	}
	b = appendString(b, fGraphDocString, g.DocString)
	for _, v := range g.Inputs {
		b = appendMessage(b, fGraphInput, encodeValueInfo(v))
	}
	for _, v := range g.Outputs {
		b = appendMessage(b, fGraphOutput, encodeValueInfo(v))
	}
	for _, v := range g.ValueInfo {
		b = appendMessage(b, fGraphValueInfo, encodeValueInfo(v))
	}
	for _, s := range g.SparseInitializers {
		var sb []byte
		sb = appendMessage(sb, fSparseValues, encodeTensor(s.Values))
		sb = appendMessage(sb, fSparseIndices, encodeTensor(s.Indices))
		sb = appendPackedVarints(sb, fSparseDims, int64sU(s.Dims))
		b = appendMessage(b, fGraphSparseInitializer, sb)
	}
	return b
}

func int64sU(v []int64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = uint64(x)
	}
	return out
}

func encodeNode(n *NodeProto) []byte {
	var b []byte
	for _, in := range n.Inputs {
		b = protowire.AppendTag(b, fNodeInput, protowire.BytesType)
		b = protowire.AppendString(b, in)
	}
	for _, out := range n.Outputs {
		b = protowire.AppendTag(b, fNodeOutput, protowire.BytesType)
		b = protowire.AppendString(b, out)
	}
	b = appendString(b, fNodeName, n.Name)
	b = appendString(b, fNodeOpType, n.OpType)
	for _, a := range n.Attributes {
		b = appendMessage(b, fNodeAttribute, encodeAttribute(a))
	}
	b = appendString(b, fNodeDocString, n.DocString)
	return appendString(b, fNodeDomain, n.Domain)
}

func encodeAttribute(a *AttributeProto) []byte {
	var b []byte
	b = appendString(b, fAttrName, a.Name)
	switch a.Type {
	case AttrFloat:
		b = protowire.AppendTag(b, fAttrF, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.F))
	case AttrInt:
		b = protowire.AppendTag(b, fAttrI, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(a.I))
	case AttrString:
		b = protowire.AppendTag(b, fAttrS, protowire.BytesType)
		b = protowire.AppendBytes(b, a.S)
	case AttrTensor:
		if a.T != nil {
			b = appendMessage(b, fAttrT, encodeTensor(a.T))
		}
	case AttrGraph:
		if a.G != nil {
			b = appendMessage(b, fAttrG, encodeGraph(a.G))
		}
	case AttrFloats:
		var p []byte
		for _, f := range a.Floats {
			p = protowire.AppendFixed32(p, math.Float32bits(f))
		}
		b = appendMessage(b, fAttrFloats, p)
	case AttrInts:
		b = appendPackedVarints(b, fAttrInts, int64sU(a.Ints))
		if len(a.Ints) == 0 {
			b = appendMessage(b, fAttrInts, nil)
		}
	case AttrStrings:
		for _, s := range a.Strings {
			b = protowire.AppendTag(b, fAttrStrings, protowire.BytesType)
			b = protowire.AppendBytes(b, s)
		}
	case AttrTensors:
		for _, t := range a.Tensors {
			b = appendMessage(b, fAttrTensors, encodeTensor(t))
		}
	case AttrGraphs:
		for _, g := range a.Graphs {
			b = appendMessage(b, fAttrGraphs, encodeGraph(g))
		}
	}
	b = appendString(b, fAttrDocString, a.DocString)
	b = protowire.AppendTag(b, fAttrType, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(a.Type))
	return appendString(b, fAttrRefAttrName, a.RefAttrName)
}

func encodeTensor(t *TensorProto) []byte {
	var b []byte
	b = appendPackedVarints(b, fTensorDims, int64sU(t.Dims))
	b = protowire.AppendTag(b, fTensorDataType, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(t.DataType))
	if len(t.FloatData) > 0 {
		p := make([]byte, 0, 4*len(t.FloatData))
		for _, f := range t.FloatData {
			p = protowire.AppendFixed32(p, math.Float32bits(f))
		}
		b = appendMessage(b, fTensorFloatData, p)
	}
	if len(t.Int32Data) > 0 {
		vs := make([]uint64, len(t.Int32Data))
		for i, v := range t.Int32Data {
			vs[i] = uint64(int64(v))
		}
		b = appendPackedVarints(b, fTensorInt32Data, vs)
	}
	for _, s := range t.StringData {
		b = protowire.AppendTag(b, fTensorStringData, protowire.BytesType)
		b = protowire.AppendBytes(b, s)
	}
	b = appendPackedVarints(b, fTensorInt64Data, int64sU(t.Int64Data))
	b = appendString(b, fTensorName, t.Name)
	if t.raw() && t.DataLocation != LocationExternal {
		b = protowire.AppendTag(b, fTensorRawData, protowire.BytesType)
		b = protowire.AppendBytes(b, t.RawData)
	}
	if len(t.DoubleData) > 0 {
		p := make([]byte, 0, 8*len(t.DoubleData))
		for _, f := range t.DoubleData {
			p = protowire.AppendFixed64(p, math.Float64bits(f))
		}
		b = appendMessage(b, fTensorDoubleData, p)
	}
	b = appendPackedVarints(b, fTensorUint64Data, t.Uint64Data)
	b = appendString(b, fTensorDocString, t.DocString)
	for _, e := range t.ExternalData {
		b = appendMessage(b, fTensorExternalData, encodeEntry(e))
	}
	return appendInt(b, fTensorDataLocation, int64(t.DataLocation))
}

func encodeValueInfo(v *ValueInfoProto) []byte {
	var b []byte
	b = appendString(b, fValueInfoName, v.Name)
	if v.Type != nil {
		b = appendMessage(b, fValueInfoType, encodeType(v.Type))
	}
	return appendString(b, fValueInfoDocString, v.DocString)
}

func encodeType(t *TypeProto) []byte {
	var inner []byte
	switch t.Kind {
	case "tensor", "sparse_tensor":
		inner = appendInt(inner, fTensorTypeElemType, int64(t.ElemType))
		if t.HasShape {
			var sb []byte
			for _, d := range t.Shape {
				var db []byte
				if d.HasValue {
					db = protowire.AppendTag(db, fDimValue, protowire.VarintType)
					db = protowire.AppendVarint(db, uint64(d.Value))
				}
				db = appendString(db, fDimParam, d.Param)
				db = appendString(db, fDimDenotation, d.Denotation)
				sb = appendMessage(sb, fShapeDim, db)
			}
			inner = appendMessage(inner, fTensorTypeShape, sb)
		}
	case "sequence", "optional":
		if t.Elem != nil {
			inner = appendMessage(inner, fSequenceElemType, encodeType(t.Elem))
		}
	case "map":
		inner = appendInt(inner, fMapKeyType, int64(t.ElemType))
		if t.Elem != nil {
			inner = appendMessage(inner, fMapValueType, encodeType(t.Elem))
		}
	}
	var b []byte
	switch t.Kind {
	case "tensor":
		b = appendMessage(b, fTypeTensor, inner)
	case "sparse_tensor":
		b = appendMessage(b, fTypeSparseTensor, inner)
	case "sequence":
		b = appendMessage(b, fTypeSequence, inner)
	case "optional":
		b = appendMessage(b, fTypeOptional, inner)
	case "map":
		b = appendMessage(b, fTypeMap, inner)
	}
	return appendString(b, fTypeDenotation, t.Denotation)
}
