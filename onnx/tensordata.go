package onnx

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// maxElements bounds the element count a tensor may declare, so a corrupt
// dims field cannot make the reader allocate without limit: data must still
// be present for every element, so this only guards the arithmetic.
const maxElements = 1 << 40

// kilnDType maps an ONNX data type to the Kiln dtype its values are held
// in. INT8 and INT16 map to Int8 and Int16; integer types Kiln lacks
// widen: UINT16 to Int32, UINT32 and UINT64 to Int64 (UINT64 values above
// MaxInt64 wrap).
func kilnDType(t int32) (tensor.DType, error) {
	switch t {
	case TypeFloat:
		return tensor.Float32, nil
	case TypeDouble:
		return tensor.Float64, nil
	case TypeFloat16:
		return tensor.Float16, nil
	case TypeBFloat16:
		return tensor.BFloat16, nil
	case TypeInt64, TypeUint32, TypeUint64:
		return tensor.Int64, nil
	case TypeInt32, TypeUint16:
		return tensor.Int32, nil
	case TypeInt16:
		return tensor.Int16, nil
	case TypeInt8:
		return tensor.Int8, nil
	case TypeUint8:
		return tensor.Uint8, nil
	case TypeBool:
		return tensor.Bool, nil
	}
	return 0, fmt.Errorf("%w: data type %s has no Kiln tensor type", ErrUnsupported, DataTypeName(t))
}

// onnxDType maps a Kiln dtype to its ONNX data type.
func onnxDType(d tensor.DType) int32 {
	switch d {
	case tensor.Float32:
		return TypeFloat
	case tensor.Float64:
		return TypeDouble
	case tensor.Float16:
		return TypeFloat16
	case tensor.BFloat16:
		return TypeBFloat16
	case tensor.Int64:
		return TypeInt64
	case tensor.Int32:
		return TypeInt32
	case tensor.Int16:
		return TypeInt16
	case tensor.Int8:
		return TypeInt8
	case tensor.Uint8:
		return TypeUint8
	case tensor.Bool:
		return TypeBool
	}
	return TypeUndefined
}

// rawSize is the byte size of one element of ONNX type t in raw_data.
func rawSize(t int32) int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16, TypeFloat16, TypeBFloat16:
		return 2
	case TypeFloat, TypeInt32, TypeUint32:
		return 4
	case TypeInt64, TypeDouble, TypeUint64, TypeComplex64:
		return 8
	case TypeComplex128:
		return 16
	}
	return 0
}

// numElements returns the product of dims, failing past maxElements.
func numElements(dims []int64) (int, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("dimension %d is negative", d)
		}
		if d != 0 && n > maxElements/d {
			return 0, fmt.Errorf("shape %v has more than 2^40 elements", dims)
		}
		n *= d
	}
	return int(n), nil
}

// tensorHost decodes the elements of t into a host tensor. External data
// must have been loaded already (see resolveExternal).
func tensorHost(t *TensorProto) (*hostTensor, error) {
	where := "tensor"
	if t.Name != "" {
		where = "tensor " + strconv.Quote(t.Name)
	}
	if t.DataType == TypeString {
		n, err := numElements(t.Dims)
		if err != nil || n != len(t.StringData) {
			return nil, fmt.Errorf("%w: %s: %d strings for shape %v", ErrCorrupt, where, len(t.StringData), t.Dims)
		}
		h := &hostTensor{dtype: dtypeString, shape: make([]int, len(t.Dims)), s: make([]string, n)}
		for i, d := range t.Dims {
			h.shape[i] = int(d)
		}
		for i, b := range t.StringData {
			h.s[i] = string(b)
		}
		return h, nil
	}
	dt, err := kilnDType(t.DataType)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	n, err := numElements(t.Dims)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, where, err)
	}
	if t.DataLocation == LocationExternal && !t.raw() {
		return nil, fmt.Errorf("%w: %s: external data was not loaded (decode with ReadFile, which knows the model's directory)", ErrCorrupt, where)
	}
	count := func(field string, have int) error {
		if have != n {
			return fmt.Errorf("%w: %s: %s holds %d values, shape %v needs %d", ErrCorrupt, where, field, have, t.Dims, n)
		}
		return nil
	}
	// Check the data's length before allocating for the declared shape.
	if t.raw() {
		if sz := rawSize(t.DataType); len(t.RawData) != n*sz {
			return nil, fmt.Errorf("%w: %s: raw_data holds %d bytes, %s %v needs %d", ErrCorrupt, where,
				len(t.RawData), DataTypeName(t.DataType), t.Dims, n*sz)
		}
	} else {
		var err error
		switch t.DataType {
		case TypeFloat:
			err = count("float_data", len(t.FloatData))
		case TypeDouble:
			err = count("double_data", len(t.DoubleData))
		case TypeInt64:
			err = count("int64_data", len(t.Int64Data))
		case TypeUint32, TypeUint64:
			err = count("uint64_data", len(t.Uint64Data))
		default:
			err = count("int32_data", len(t.Int32Data))
		}
		if err != nil {
			return nil, err
		}
	}
	shape := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		shape[i] = int(d)
	}
	h := &hostTensor{dtype: dt, shape: shape}
	if dt.IsFloat() {
		h.f = make([]float64, n)
	} else {
		h.i = make([]int64, n)
	}
	if t.raw() {
		r := t.RawData
		for k := range n {
			switch t.DataType {
			case TypeFloat:
				h.f[k] = float64(math.Float32frombits(binary.LittleEndian.Uint32(r[4*k:])))
			case TypeDouble:
				h.f[k] = math.Float64frombits(binary.LittleEndian.Uint64(r[8*k:]))
			case TypeFloat16:
				h.f[k] = float64(backends.Float16ToFloat32(binary.LittleEndian.Uint16(r[2*k:])))
			case TypeBFloat16:
				h.f[k] = float64(backends.BFloat16ToFloat32(binary.LittleEndian.Uint16(r[2*k:])))
			case TypeInt64, TypeUint64:
				h.i[k] = int64(binary.LittleEndian.Uint64(r[8*k:]))
			case TypeUint32:
				h.i[k] = int64(binary.LittleEndian.Uint32(r[4*k:]))
			case TypeInt32:
				h.i[k] = int64(int32(binary.LittleEndian.Uint32(r[4*k:])))
			case TypeInt16:
				h.i[k] = int64(int16(binary.LittleEndian.Uint16(r[2*k:])))
			case TypeUint16:
				h.i[k] = int64(binary.LittleEndian.Uint16(r[2*k:]))
			case TypeInt8:
				h.i[k] = int64(int8(r[k]))
			case TypeUint8:
				h.i[k] = int64(r[k])
			case TypeBool:
				if r[k] != 0 {
					h.i[k] = 1
				}
			}
		}
		return h, nil
	}
	switch t.DataType {
	case TypeFloat:
		for k, v := range t.FloatData {
			h.f[k] = float64(v)
		}
	case TypeDouble:
		copy(h.f, t.DoubleData)
	case TypeInt64:
		copy(h.i, t.Int64Data)
	case TypeUint32, TypeUint64:
		for k, v := range t.Uint64Data {
			h.i[k] = int64(v)
		}
	default: // int32_data holds every type of 32 bits or fewer.
		for k, v := range t.Int32Data {
			switch t.DataType {
			case TypeFloat16:
				h.f[k] = float64(backends.Float16ToFloat32(uint16(v)))
			case TypeBFloat16:
				h.f[k] = float64(backends.BFloat16ToFloat32(uint16(v)))
			case TypeBool:
				if v != 0 {
					h.i[k] = 1
				}
			case TypeUint8:
				h.i[k] = int64(uint8(v))
			case TypeInt8:
				h.i[k] = int64(int8(v))
			case TypeUint16:
				h.i[k] = int64(uint16(v))
			case TypeInt16:
				h.i[k] = int64(int16(v))
			default:
				h.i[k] = int64(v)
			}
		}
	}
	return h, nil
}

// sparseHost densifies a sparse tensor.
func sparseHost(s *SparseTensorProto) (*hostTensor, error) {
	vals, err := tensorHost(s.Values)
	if err != nil {
		return nil, err
	}
	idx, err := tensorHost(s.Indices)
	if err != nil {
		return nil, err
	}
	name := s.Values.Name
	n, err := numElements(s.Dims)
	if err != nil {
		return nil, fmt.Errorf("%w: sparse tensor %q: %v", ErrCorrupt, name, err)
	}
	if n > 1<<24 {
		return nil, fmt.Errorf("%w: sparse tensor %q: dense shape %v is too large to densify", ErrUnsupported, name, s.Dims)
	}
	shape := make([]int, len(s.Dims))
	for i, d := range s.Dims {
		shape[i] = int(d)
	}
	out := newHost(vals.dtype, shape)
	nnz := vals.size()
	if idx.dtype.IsFloat() || len(vals.shape) != 1 {
		return nil, fmt.Errorf("%w: sparse tensor %q: values must be 1-D and indices integer", ErrCorrupt, name)
	}
	linear := make([]int64, nnz)
	switch {
	case len(idx.shape) == 1 && idx.shape[0] == nnz:
		copy(linear, idx.i)
	case len(idx.shape) == 2 && idx.shape[0] == nnz && idx.shape[1] == len(shape):
		for k := range nnz {
			var p int64
			for j, d := range shape {
				c := idx.i[k*len(shape)+j]
				if c < 0 || c >= int64(d) {
					return nil, fmt.Errorf("%w: sparse tensor %q: index %d out of range for dims %v", ErrCorrupt, name, c, s.Dims)
				}
				p = p*int64(d) + c
			}
			linear[k] = p
		}
	default:
		return nil, fmt.Errorf("%w: sparse tensor %q: indices of shape %v do not fit %d values of a %d-D tensor",
			ErrCorrupt, name, idx.shape, nnz, len(shape))
	}
	for k, p := range linear {
		if p < 0 || p >= int64(n) {
			return nil, fmt.Errorf("%w: sparse tensor %q: index %d out of range for dims %v", ErrCorrupt, name, p, s.Dims)
		}
		if out.f != nil {
			out.f[p] = vals.f[k]
		} else {
			out.i[p] = vals.i[k]
		}
	}
	return out, nil
}

// ReadFile reads and decodes the ONNX model at path, loading tensors stored
// in external data files (their "location" is relative to the model's
// directory and must stay inside it) into RawData. Errors wrap ErrCorrupt
// for malformed files and external data that is missing or out of range.
func ReadFile(path string) (*ModelProto, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: read %s: %w", path, err)
	}
	m, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("onnx: read %s: %w", path, err)
	}
	if err := resolveExternal(m, filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("onnx: read %s: %w", path, err)
	}
	return m, nil
}

// resolveExternal loads every externally stored tensor of m's graphs.
func resolveExternal(m *ModelProto, dir string) error {
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var visitGraph func(g *GraphProto) error
	load := func(t *TensorProto) error {
		if t == nil || t.DataLocation != LocationExternal {
			return nil
		}
		return loadExternal(t, dir, files)
	}
	visitGraph = func(g *GraphProto) error {
		if g == nil {
			return nil
		}
		for _, t := range g.Initializers {
			if err := load(t); err != nil {
				return err
			}
		}
		for _, s := range g.SparseInitializers {
			if err := load(s.Values); err != nil {
				return err
			}
			if err := load(s.Indices); err != nil {
				return err
			}
		}
		for _, n := range g.Nodes {
			for _, a := range n.Attributes {
				if err := load(a.T); err != nil {
					return err
				}
				for _, t := range a.Tensors {
					if err := load(t); err != nil {
						return err
					}
				}
				if err := visitGraph(a.G); err != nil {
					return err
				}
				for _, sg := range a.Graphs {
					if err := visitGraph(sg); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return visitGraph(m.Graph)
}

func loadExternal(t *TensorProto, dir string, files map[string]*os.File) error {
	var loc string
	offset, length := int64(0), int64(-1)
	for _, e := range t.ExternalData {
		switch e.Key {
		case "location":
			loc = e.Value
		case "offset", "length":
			v, err := strconv.ParseInt(e.Value, 10, 64)
			if err != nil || v < 0 {
				return fmt.Errorf("%w: tensor %q: external_data %s %q is not a non-negative integer", ErrCorrupt, t.Name, e.Key, e.Value)
			}
			if e.Key == "offset" {
				offset = v
			} else {
				length = v
			}
		}
	}
	if loc == "" {
		return fmt.Errorf("%w: tensor %q: external data without a location", ErrCorrupt, t.Name)
	}
	clean := filepath.Clean(filepath.FromSlash(loc))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%w: tensor %q: external data location %q leaves the model's directory", ErrCorrupt, t.Name, loc)
	}
	n, err := numElements(t.Dims)
	if err != nil {
		return fmt.Errorf("%w: tensor %q: %v", ErrCorrupt, t.Name, err)
	}
	sz := rawSize(t.DataType)
	if sz == 0 {
		return fmt.Errorf("tensor %q: %w: external data of type %s", t.Name, ErrUnsupported, DataTypeName(t.DataType))
	}
	want := int64(n) * int64(sz)
	if length >= 0 && length != want {
		return fmt.Errorf("%w: tensor %q: external data length %d, %s %v needs %d", ErrCorrupt, t.Name, length, DataTypeName(t.DataType), t.Dims, want)
	}
	f, ok := files[clean]
	if !ok {
		f, err = os.Open(filepath.Join(dir, clean))
		if err != nil {
			return fmt.Errorf("%w: tensor %q: external data: %v", ErrCorrupt, t.Name, err)
		}
		files[clean] = f
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: tensor %q: external data: %v", ErrCorrupt, t.Name, err)
	}
	if offset > st.Size() || want > st.Size()-offset {
		return fmt.Errorf("%w: tensor %q: external data %s holds %d bytes, tensor needs %d at offset %d",
			ErrCorrupt, t.Name, loc, st.Size(), want, offset)
	}
	buf := make([]byte, want)
	if _, err := f.ReadAt(buf, offset); err != nil && err != io.EOF {
		return fmt.Errorf("%w: tensor %q: external data: %v", ErrCorrupt, t.Name, err)
	}
	t.RawData = buf
	t.hasRaw = true
	return nil
}
