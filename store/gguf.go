package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// GGUF is llama.cpp's model file format: a header of typed key-value
// metadata and tensor descriptions, then the tensors' data, each tensor in
// one of ggml's types (plain floats or blocks of quantized values). Kiln
// reads versions 2 and 3 (little-endian) and writes version 3.
//
// Shapes: ggml lists a tensor's dimensions innermost first (ne[0] is the
// length of a row); Kiln's shapes are outermost first, over the same
// row-major bytes, so a GGUF tensor with ne = [4096, 32000] is a Kiln
// [32000, 4096] tensor.

// GGMLType is a tensor's element type in a GGUF file.
type GGMLType uint32

// The ggml types Kiln knows by name. Those with a block size decode to
// float32 through Dequantize; the rest are listed by Inspect and readable
// raw.
const (
	GGMLF32  GGMLType = 0
	GGMLF16  GGMLType = 1
	GGMLQ4_0 GGMLType = 2
	GGMLQ4_1 GGMLType = 3
	GGMLQ5_0 GGMLType = 6
	GGMLQ5_1 GGMLType = 7
	GGMLQ8_0 GGMLType = 8
	GGMLQ8_1 GGMLType = 9
	GGMLQ2_K GGMLType = 10
	GGMLQ3_K GGMLType = 11
	GGMLQ4_K GGMLType = 12
	GGMLQ5_K GGMLType = 13
	GGMLQ6_K GGMLType = 14
	GGMLQ8_K GGMLType = 15
	GGMLI8   GGMLType = 24
	GGMLI16  GGMLType = 25
	GGMLI32  GGMLType = 26
	GGMLI64  GGMLType = 27
	GGMLF64  GGMLType = 28
	GGMLBF16 GGMLType = 30
)

// ggmlLayout is a type's block: how many values and how many bytes.
type ggmlLayout struct {
	name          string
	values, bytes int
	decode        func(dst []float32, src []byte) // one block; nil: not decoded
}

var ggmlTypes = map[GGMLType]ggmlLayout{
	GGMLF32:  {"F32", 1, 4, func(d []float32, s []byte) { d[0] = math.Float32frombits(binary.LittleEndian.Uint32(s)) }},
	GGMLF16:  {"F16", 1, 2, func(d []float32, s []byte) { d[0] = f16(s) }},
	GGMLBF16: {"BF16", 1, 2, func(d []float32, s []byte) { d[0] = backends.BFloat16ToFloat32(binary.LittleEndian.Uint16(s)) }},
	GGMLQ4_0: {"Q4_0", 32, 18, decodeQ4_0},
	GGMLQ4_1: {"Q4_1", 32, 20, decodeQ4_1},
	GGMLQ5_0: {"Q5_0", 32, 22, decodeQ5_0},
	GGMLQ5_1: {"Q5_1", 32, 24, decodeQ5_1},
	GGMLQ8_0: {"Q8_0", 32, 34, decodeQ8_0},
	GGMLQ8_1: {"Q8_1", 32, 36, nil},
	GGMLQ2_K: {"Q2_K", 256, 84, nil},
	GGMLQ3_K: {"Q3_K", 256, 110, nil},
	GGMLQ4_K: {"Q4_K", 256, 144, decodeQ4_K},
	GGMLQ5_K: {"Q5_K", 256, 176, nil},
	GGMLQ6_K: {"Q6_K", 256, 210, decodeQ6_K},
	GGMLQ8_K: {"Q8_K", 256, 292, nil},
	GGMLI8:   {"I8", 1, 1, func(d []float32, s []byte) { d[0] = float32(int8(s[0])) }},
	GGMLI16:  {"I16", 1, 2, func(d []float32, s []byte) { d[0] = float32(int16(binary.LittleEndian.Uint16(s))) }},
	GGMLI32:  {"I32", 1, 4, func(d []float32, s []byte) { d[0] = float32(int32(binary.LittleEndian.Uint32(s))) }},
	GGMLI64:  {"I64", 1, 8, func(d []float32, s []byte) { d[0] = float32(int64(binary.LittleEndian.Uint64(s))) }},
	GGMLF64:  {"F64", 1, 8, func(d []float32, s []byte) { d[0] = float32(math.Float64frombits(binary.LittleEndian.Uint64(s))) }},
}

// String returns ggml's name for the type ("Q4_K"), or "type N".
func (t GGMLType) String() string {
	if l, ok := ggmlTypes[t]; ok {
		return l.name
	}
	return fmt.Sprintf("type %d", uint32(t))
}

// Dequantizable reports whether Kiln decodes this type to float32.
func (t GGMLType) Dequantizable() bool {
	l, ok := ggmlTypes[t]
	return ok && l.decode != nil
}

func f16(s []byte) float32 { return backends.Float16ToFloat32(binary.LittleEndian.Uint16(s)) }

func decodeQ8_0(d []float32, s []byte) {
	scale := f16(s)
	for i := range 32 {
		d[i] = float32(int8(s[2+i])) * scale
	}
}

func decodeQ4_0(d []float32, s []byte) {
	scale, qs := f16(s), s[2:18]
	for j := range 16 {
		d[j] = float32(int(qs[j]&0x0f)-8) * scale
		d[j+16] = float32(int(qs[j]>>4)-8) * scale
	}
}

func decodeQ4_1(d []float32, s []byte) {
	scale, minimum, qs := f16(s), f16(s[2:]), s[4:20]
	for j := range 16 {
		d[j] = float32(qs[j]&0x0f)*scale + minimum
		d[j+16] = float32(qs[j]>>4)*scale + minimum
	}
}

// q5 returns the 5-bit values of a Q5 block: the low nibbles in qs and the
// fifth bits in the 32-bit qh (bit j for value j).
func q5(qh uint32, qs []byte, j int) (lo, hi int) {
	lo = int(qs[j]&0x0f) | int((qh>>j)&1)<<4
	hi = int(qs[j]>>4) | int((qh>>(j+16))&1)<<4
	return lo, hi
}

func decodeQ5_0(d []float32, s []byte) {
	scale, qh, qs := f16(s), binary.LittleEndian.Uint32(s[2:]), s[6:22]
	for j := range 16 {
		lo, hi := q5(qh, qs, j)
		d[j] = float32(lo-16) * scale
		d[j+16] = float32(hi-16) * scale
	}
}

func decodeQ5_1(d []float32, s []byte) {
	scale, minimum, qh, qs := f16(s), f16(s[2:]), binary.LittleEndian.Uint32(s[4:]), s[8:24]
	for j := range 16 {
		lo, hi := q5(qh, qs, j)
		d[j] = float32(lo)*scale + minimum
		d[j+16] = float32(hi)*scale + minimum
	}
}

// scaleMinK4 unpacks the j-th 6-bit scale and minimum of a Q4_K/Q5_K
// super-block's 12 packed bytes.
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0x0f | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

func decodeQ4_K(d []float32, s []byte) {
	scale, dmin := f16(s), f16(s[2:])
	scales, qs := s[4:16], s[16:144]
	for g := range 4 { // four groups of 64 values: two sub-blocks of 32
		sc1, m1 := scaleMinK4(2*g, scales)
		sc2, m2 := scaleMinK4(2*g+1, scales)
		d1, mm1 := scale*float32(sc1), dmin*float32(m1)
		d2, mm2 := scale*float32(sc2), dmin*float32(m2)
		q := qs[32*g : 32*g+32]
		for l := range 32 {
			d[64*g+l] = d1*float32(q[l]&0x0f) - mm1
			d[64*g+32+l] = d2*float32(q[l]>>4) - mm2
		}
	}
}

func decodeQ6_K(d []float32, s []byte) {
	ql, qh, sc := s[0:128], s[128:192], s[192:208]
	scale := f16(s[208:])
	for half := range 2 { // two halves of 128 values
		l6, h6, s6, out := ql[64*half:], qh[32*half:], sc[8*half:], d[128*half:]
		for l := range 32 {
			is := l / 16
			q1 := int(l6[l]&0x0f|(h6[l]>>0&3)<<4) - 32
			q2 := int(l6[l+32]&0x0f|(h6[l]>>2&3)<<4) - 32
			q3 := int(l6[l]>>4|(h6[l]>>4&3)<<4) - 32
			q4 := int(l6[l+32]>>4|(h6[l]>>6&3)<<4) - 32
			out[l] = scale * float32(int8(s6[is])) * float32(q1)
			out[l+32] = scale * float32(int8(s6[is+2])) * float32(q2)
			out[l+64] = scale * float32(int8(s6[is+4])) * float32(q3)
			out[l+96] = scale * float32(int8(s6[is+6])) * float32(q4)
		}
	}
}

// GGUFTensorInfo describes one tensor of a GGUF file.
type GGUFTensorInfo struct {
	Name   string
	Shape  []int    // Kiln's order: ggml's ne reversed
	Type   GGMLType // element type
	Offset int64    // of its data, from the start of the data section
	Size   int64    // bytes of data
}

// GGUFFile is a decoded GGUF file, its data held in memory.
type GGUFFile struct {
	Version   uint32
	Alignment int
	Keys      []string       // metadata keys in file order
	Metadata  map[string]any // uint8…int64 as Go ints, float32/64, bool, string, []any for arrays
	Tensors   []GGUFTensorInfo
	data      []byte // the data section
	index     map[string]int
}

// ggufMagic opens every GGUF file ("GGUF").
var ggufMagic = []byte("GGUF")

// IsGGUF reports whether b starts like a GGUF file.
func IsGGUF(b []byte) bool { return bytes.HasPrefix(b, ggufMagic) }

// OpenGGUF reads and decodes the GGUF file at path (see DecodeGGUF).
func OpenGGUF(path string) (*GGUFFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", path, err)
	}
	f, err := DecodeGGUF(b)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", path, err)
	}
	return f, nil
}

// ggufReader reads a GGUF header, checking every length against the bytes
// left before it allocates, so a hostile header cannot ask for more memory
// than the file's own size.
type ggufReader struct {
	b   []byte
	off int
	err error
}

func (r *ggufReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: GGUF: "+format+" (at byte %d)", append([]any{ErrCorrupt}, append(args, r.off)...)...)
	}
}

func (r *ggufReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail("%d bytes wanted, %d left: the file is truncated", n, len(r.b)-r.off)
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *ggufReader) u32() uint32 {
	if s := r.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *ggufReader) u64() uint64 {
	if s := r.take(8); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

// count reads a uint64 count of items of at least min bytes each.
func (r *ggufReader) count(what string, min int) int {
	n := r.u64()
	if r.err == nil && n > uint64(len(r.b)-r.off)/uint64(max(min, 1)) {
		r.fail("%s count %d exceeds what the file holds", what, n)
		return 0
	}
	return int(n)
}

func (r *ggufReader) str() string {
	n := r.count("string length", 1)
	return string(r.take(n))
}

// The GGUF metadata value types.
const (
	ggufU8, ggufI8, ggufU16, ggufI16, ggufU32, ggufI32, ggufF32, ggufBool, ggufString, ggufArray, ggufU64, ggufI64, ggufF64 = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
)

// minSize is the least number of bytes a value of type t occupies.
func minSize(t uint32) int {
	switch t {
	case ggufU8, ggufI8, ggufBool:
		return 1
	case ggufU16, ggufI16:
		return 2
	case ggufU32, ggufI32, ggufF32:
		return 4
	case ggufArray:
		return 12
	}
	return 8
}

func (r *ggufReader) value(t uint32, depth int) any {
	switch t {
	case ggufU8:
		if s := r.take(1); s != nil {
			return int64(s[0])
		}
	case ggufI8:
		if s := r.take(1); s != nil {
			return int64(int8(s[0]))
		}
	case ggufU16:
		if s := r.take(2); s != nil {
			return int64(binary.LittleEndian.Uint16(s))
		}
	case ggufI16:
		if s := r.take(2); s != nil {
			return int64(int16(binary.LittleEndian.Uint16(s)))
		}
	case ggufU32:
		return int64(r.u32())
	case ggufI32:
		return int64(int32(r.u32()))
	case ggufF32:
		return float64(math.Float32frombits(r.u32()))
	case ggufBool:
		if s := r.take(1); s != nil {
			if s[0] > 1 {
				r.fail("bool value %d", s[0])
			}
			return s[0] == 1
		}
	case ggufString:
		return r.str()
	case ggufU64:
		return r.u64()
	case ggufI64:
		return int64(r.u64())
	case ggufF64:
		return math.Float64frombits(r.u64())
	case ggufArray:
		if depth > 8 {
			r.fail("arrays nested more than 8 deep")
			return nil
		}
		et := r.u32()
		n := r.count("array", minSize(et))
		out := make([]any, 0, n)
		for range n {
			if r.err != nil {
				return nil
			}
			out = append(out, r.value(et, depth+1))
		}
		return out
	default:
		r.fail("unknown metadata value type %d", t)
	}
	return nil
}

// DecodeGGUF decodes a whole GGUF file held in b (b is kept: tensors are
// read from it). A malformed file is an error wrapping ErrCorrupt that names
// the defect and its byte offset; a version other than 2 or 3, or a
// big-endian file, wraps ErrUnsupported.
func DecodeGGUF(b []byte) (*GGUFFile, error) {
	r := &ggufReader{b: b}
	if !IsGGUF(b) {
		return nil, fmt.Errorf("%w: not a GGUF file (no GGUF magic)", ErrCorrupt)
	}
	r.take(4)
	f := &GGUFFile{Version: r.u32(), Alignment: 32, Metadata: map[string]any{}, index: map[string]int{}}
	switch {
	case r.err != nil:
		return nil, r.err
	case f.Version == 1:
		return nil, fmt.Errorf("%w: GGUF version 1 (Kiln reads versions 2 and 3)", ErrUnsupported)
	case f.Version > 0xffff:
		return nil, fmt.Errorf("%w: a big-endian GGUF file (version field %#x)", ErrUnsupported, f.Version)
	case f.Version != 2 && f.Version != 3:
		return nil, fmt.Errorf("%w: GGUF version %d (Kiln reads versions 2 and 3)", ErrUnsupported, f.Version)
	}
	nt := r.count("tensor", 24)
	nkv := r.count("metadata", 12)
	if r.err != nil {
		return nil, r.err
	}
	for range nkv {
		key := r.str()
		v := r.value(r.u32(), 0)
		if r.err != nil {
			return nil, r.err
		}
		if _, dup := f.Metadata[key]; dup {
			return nil, fmt.Errorf("%w: GGUF: metadata key %q appears twice", ErrCorrupt, key)
		}
		f.Keys = append(f.Keys, key)
		f.Metadata[key] = v
	}
	if a, ok := f.Metadata["general.alignment"]; ok {
		n, isInt := a.(int64)
		if !isInt || n <= 0 || n&(n-1) != 0 || n > 1<<20 {
			return nil, fmt.Errorf("%w: GGUF: general.alignment %v is not a power of two", ErrCorrupt, a)
		}
		f.Alignment = int(n)
	}
	for range nt {
		name := r.str()
		dims := r.u32()
		if r.err == nil && dims > 8 {
			r.fail("tensor %q has %d dimensions", name, dims)
		}
		if r.err != nil {
			return nil, r.err
		}
		shape := make([]int, dims)
		elems := int64(1)
		for i := range int(dims) {
			ne := r.u64()
			if r.err == nil && ne > 1<<40 {
				r.fail("tensor %q: dimension %d", name, ne)
			}
			shape[int(dims)-1-i] = int(ne)
			if ne != 0 && elems > (1<<42)/int64(ne) {
				r.fail("tensor %q is too large", name)
			}
			elems *= int64(ne)
		}
		typ := GGMLType(r.u32())
		off := r.u64()
		if r.err != nil {
			return nil, r.err
		}
		l, ok := ggmlTypes[typ]
		if !ok {
			return nil, fmt.Errorf("%w: GGUF: tensor %q has unknown ggml type %d", ErrUnsupported, name, typ)
		}
		if row := 1; l.values > 1 {
			if len(shape) > 0 {
				row = shape[len(shape)-1]
			}
			if row%l.values != 0 {
				return nil, fmt.Errorf("%w: GGUF: tensor %q: rows of %d values are not whole %s blocks of %d", ErrCorrupt, name, row, l.name, l.values)
			}
		}
		if _, dup := f.index[name]; dup {
			return nil, fmt.Errorf("%w: GGUF: tensor %q appears twice", ErrCorrupt, name)
		}
		if off > uint64(len(b)) {
			return nil, fmt.Errorf("%w: GGUF: tensor %q: offset %d is past the end of the file: truncated", ErrCorrupt, name, off)
		}
		if off%uint64(f.Alignment) != 0 {
			return nil, fmt.Errorf("%w: GGUF: tensor %q: offset %d is not aligned to %d", ErrCorrupt, name, off, f.Alignment)
		}
		f.index[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, GGUFTensorInfo{Name: name, Shape: shape, Type: typ, Offset: int64(off),
			Size: elems / int64(l.values) * int64(l.bytes)})
	}
	start := (r.off + f.Alignment - 1) / f.Alignment * f.Alignment
	if start > len(b) {
		start = len(b)
	}
	f.data = b[start:]
	for _, t := range f.Tensors {
		if t.Size < 0 || t.Offset+t.Size > int64(len(f.data)) {
			return nil, fmt.Errorf("%w: GGUF: tensor %q (%d bytes at %d) runs past the end of the file (%d bytes of data): truncated",
				ErrCorrupt, t.Name, t.Size, t.Offset, len(f.data))
		}
	}
	return f, nil
}

// Info returns the description of the tensor called name.
func (f *GGUFFile) Info(name string) (GGUFTensorInfo, bool) {
	i, ok := f.index[name]
	if !ok {
		return GGUFTensorInfo{}, false
	}
	return f.Tensors[i], true
}

// QuantizedTensor is a GGUF tensor's data as stored: ggml blocks of Type.
type QuantizedTensor struct {
	Name  string
	Type  GGMLType
	Shape []int
	Data  []byte
}

// Raw returns the stored bytes of the tensor called name (shared with the
// file), for quantized kernels or re-encoding.
func (f *GGUFFile) Raw(name string) (*QuantizedTensor, error) {
	info, ok := f.Info(name)
	if !ok {
		return nil, fmt.Errorf("store: GGUF tensor %q: %w", name, ErrNotFound)
	}
	return &QuantizedTensor{Name: name, Type: info.Type, Shape: info.Shape, Data: f.data[info.Offset : info.Offset+info.Size]}, nil
}

// Dequantize decodes q to float32 values in row-major order. It fails with
// ErrUnsupported for a type Kiln does not decode.
func (q *QuantizedTensor) Dequantize() ([]float32, error) {
	l, ok := ggmlTypes[q.Type]
	if !ok || l.decode == nil {
		return nil, fmt.Errorf("store: GGUF tensor %q: %w: Kiln does not decode %s", q.Name, ErrUnsupported, q.Type)
	}
	blocks := len(q.Data) / l.bytes
	out := make([]float32, blocks*l.values)
	for i := range blocks {
		l.decode(out[i*l.values:(i+1)*l.values], q.Data[i*l.bytes:(i+1)*l.bytes])
	}
	return out, nil
}

// isInt reports whether t holds integers (read as Int64 tensors).
func (t GGMLType) isInt() bool { return t == GGMLI8 || t == GGMLI16 || t == GGMLI32 || t == GGMLI64 }

// Tensor returns the tensor called name on dev: integer types as Int64,
// every other type dequantized to float32.
func (f *GGUFFile) Tensor(name string, dev tensor.Device) (*tensor.Tensor, error) {
	q, err := f.Raw(name)
	if err != nil {
		return nil, err
	}
	if q.Type.isInt() {
		size := ggmlTypes[q.Type].bytes
		ints := make([]int64, len(q.Data)/size)
		for i := range ints {
			b := q.Data[i*size:]
			switch q.Type {
			case GGMLI8:
				ints[i] = int64(int8(b[0]))
			case GGMLI16:
				ints[i] = int64(int16(binary.LittleEndian.Uint16(b)))
			case GGMLI32:
				ints[i] = int64(int32(binary.LittleEndian.Uint32(b)))
			default:
				ints[i] = int64(binary.LittleEndian.Uint64(b))
			}
		}
		var t *tensor.Tensor
		err := tensor.Try(func() { t = scalarOr(tensor.FromInt64s(dev, ints, q.Shape...), q.Shape) })
		return t, err
	}
	v, err := q.Dequantize()
	if err != nil {
		return nil, err
	}
	var t *tensor.Tensor
	err = tensor.Try(func() { t = scalarOr(tensor.FromFloat32s(dev, v, q.Shape...), q.Shape) })
	return t, err
}

// scalarOr returns t as a 0-dimensional tensor when shape is empty (the
// From constructors make a 1-D tensor without a shape).
func scalarOr(t *tensor.Tensor, shape []int) *tensor.Tensor {
	if len(shape) > 0 {
		return t
	}
	s := t.Reshape()
	t.Release()
	return s
}

// Names lists the file's tensors in file order.
func (f *GGUFFile) Names() []string {
	names := make([]string, len(f.Tensors))
	for i, t := range f.Tensors {
		names[i] = t.Name
	}
	return names
}

// sortedKeys returns m's keys in order, for writing deterministic files.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// errGGUFValue is returned for metadata values WriteGGUF cannot encode.
var errGGUFValue = errors.New("store: GGUF metadata value of an unsupported Go type")
