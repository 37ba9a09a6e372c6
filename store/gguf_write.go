package store

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/tensor"
)

// isGGUFFile reports whether the file at path starts with the GGUF magic.
func isGGUFFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [4]byte
	_, err = io.ReadFull(f, head[:])
	return err == nil && IsGGUF(head[:])
}

// ggufSource lets a model load from a GGUF file: every tensor reads as
// float32 (dequantized).
type ggufSource struct{ f *GGUFFile }

func (g ggufSource) Names() []string { return g.f.Names() }

func (g ggufSource) Info(name string) (TensorInfo, bool) {
	t, ok := g.f.Info(name)
	if !ok {
		return TensorInfo{}, false
	}
	dt := tensor.Float32
	if t.Type.isInt() {
		dt = tensor.Int64
	}
	return TensorInfo{DType: dt, FileDType: t.Type.String(), Supported: t.Type.Dequantizable(),
		Shape: t.Shape, Size: t.Size}, true
}

func (g ggufSource) Tensor(name string, dev tensor.Device) (*tensor.Tensor, error) {
	return g.f.Tensor(name, dev)
}

// GGUFTensor is a tensor to write with WriteGGUF.
type GGUFTensor struct {
	Name   string
	Shape  []int     // Kiln's order (written reversed, as ggml's ne)
	Type   GGMLType  // GGMLF32, GGMLF16, GGMLBF16, GGMLQ8_0, or GGMLI32 for integers
	Values []float32 // row-major; the last dimension a multiple of 32 for Q8_0
}

// WriteGGUF writes a version 3 GGUF file at path (atomically: a temporary
// file renamed into place) holding metadata and tensors. Metadata values
// may be strings, bools, ints (written as int64), int32, uint32, uint64,
// float32, float64, or slices of these ([]any too); keys are written in
// sorted order, and general.alignment (32) is added when absent. Tensors
// are written in the order given, each aligned. It fails, writing nothing,
// on a value it cannot encode, a type it cannot write, a Q8_0 row that is
// not whole blocks, or an I/O error.
func WriteGGUF(path string, metadata map[string]any, tensors []GGUFTensor) (err error) {
	meta := map[string]any{"general.alignment": uint32(32)}
	for k, v := range metadata {
		meta[k] = v
	}
	align := 32
	if a, ok := meta["general.alignment"].(uint32); ok && a > 0 && a&(a-1) == 0 {
		align = int(a)
	}
	var hdr []byte
	le := binary.LittleEndian
	str := func(s string) {
		hdr = le.AppendUint64(hdr, uint64(len(s)))
		hdr = append(hdr, s...)
	}
	hdr = append(hdr, ggufMagic...)
	hdr = le.AppendUint32(hdr, 3)
	hdr = le.AppendUint64(hdr, uint64(len(tensors)))
	hdr = le.AppendUint64(hdr, uint64(len(meta)))
	for _, k := range sortedKeys(meta) {
		str(k)
		b, err := appendValue(nil, meta[k], true)
		if err != nil {
			return fmt.Errorf("store: write %s: metadata %q: %w", path, k, err)
		}
		hdr = append(hdr, b...)
	}
	datas := make([][]byte, len(tensors))
	var off int64
	for i, t := range tensors {
		d, err := encodeGGML(t)
		if err != nil {
			return fmt.Errorf("store: write %s: tensor %q: %w", path, t.Name, err)
		}
		datas[i] = d
		str(t.Name)
		hdr = le.AppendUint32(hdr, uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- {
			hdr = le.AppendUint64(hdr, uint64(t.Shape[j]))
		}
		hdr = le.AppendUint32(hdr, uint32(t.Type))
		hdr = le.AppendUint64(hdr, uint64(off))
		off += int64(len(d)+align-1) / int64(align) * int64(align)
	}
	return writeAtomic(path, func(w io.Writer) error {
		if _, err := w.Write(append(hdr, make([]byte, (align-len(hdr)%align)%align)...)); err != nil {
			return err
		}
		for _, d := range datas {
			if _, err := w.Write(append(d, make([]byte, (align-len(d)%align)%align)...)); err != nil {
				return err
			}
		}
		return nil
	})
}

// appendValue encodes one metadata value (with its type tag when tagged).
func appendValue(b []byte, v any, tagged bool) ([]byte, error) {
	le := binary.LittleEndian
	tag := func(t uint32) {
		if tagged {
			b = le.AppendUint32(b, t)
		}
	}
	switch x := v.(type) {
	case string:
		tag(ggufString)
		b = le.AppendUint64(b, uint64(len(x)))
		b = append(b, x...)
	case bool:
		tag(ggufBool)
		if x {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	case int:
		tag(ggufI64)
		b = le.AppendUint64(b, uint64(x))
	case int64:
		tag(ggufI64)
		b = le.AppendUint64(b, uint64(x))
	case int32:
		tag(ggufI32)
		b = le.AppendUint32(b, uint32(x))
	case uint32:
		tag(ggufU32)
		b = le.AppendUint32(b, x)
	case uint64:
		tag(ggufU64)
		b = le.AppendUint64(b, x)
	case float32:
		tag(ggufF32)
		b = le.AppendUint32(b, math.Float32bits(x))
	case float64:
		tag(ggufF64)
		b = le.AppendUint64(b, math.Float64bits(x))
	case []string:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		return appendArray(b, items, tagged)
	case []int32:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		return appendArray(b, items, tagged)
	case []float32:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		return appendArray(b, items, tagged)
	case []any:
		return appendArray(b, x, tagged)
	default:
		return nil, fmt.Errorf("%w %T", errGGUFValue, v)
	}
	return b, nil
}

// appendArray encodes an array whose items share one type.
func appendArray(b []byte, items []any, tagged bool) ([]byte, error) {
	le := binary.LittleEndian
	if tagged {
		b = le.AppendUint32(b, ggufArray)
	}
	et := uint32(ggufString)
	if len(items) > 0 {
		first, err := appendValue(nil, items[0], true)
		if err != nil {
			return nil, err
		}
		et = le.Uint32(first)
	}
	b = le.AppendUint32(b, et)
	b = le.AppendUint64(b, uint64(len(items)))
	for i, it := range items {
		enc, err := appendValue(nil, it, true)
		if err != nil {
			return nil, err
		}
		if le.Uint32(enc) != et {
			return nil, fmt.Errorf("array item %d is a %T, item 0 another type", i, it)
		}
		b = append(b, enc[4:]...)
	}
	return b, nil
}

// encodeGGML encodes t's values in its ggml type.
func encodeGGML(t GGUFTensor) ([]byte, error) {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	if n != len(t.Values) {
		return nil, fmt.Errorf("shape %v holds %d values, %d given", t.Shape, n, len(t.Values))
	}
	le := binary.LittleEndian
	var out []byte
	switch t.Type {
	case GGMLF32:
		for _, v := range t.Values {
			out = le.AppendUint32(out, math.Float32bits(v))
		}
	case GGMLF16:
		for _, v := range t.Values {
			out = le.AppendUint16(out, backends.Float32ToFloat16(v))
		}
	case GGMLBF16:
		for _, v := range t.Values {
			out = le.AppendUint16(out, backends.Float32ToBFloat16(v))
		}
	case GGMLI32:
		for _, v := range t.Values {
			out = le.AppendUint32(out, uint32(int32(v)))
		}
	case GGMLQ8_0:
		if len(t.Shape) == 0 || t.Shape[len(t.Shape)-1]%32 != 0 {
			return nil, fmt.Errorf("Q8_0 needs rows of whole 32-value blocks, shape %v", t.Shape)
		}
		for b := 0; b < n; b += 32 {
			out = appendQ8_0(out, t.Values[b:b+32])
		}
	default:
		return nil, fmt.Errorf("%w: Kiln writes GGUF tensors as F32, F16, BF16, Q8_0 or I32, not %s", ErrUnsupported, t.Type)
	}
	return out, nil
}

// appendQ8_0 quantizes 32 values: the scale is the largest magnitude over
// 127 (stored as float16), each value its scaled, rounded int8.
func appendQ8_0(out []byte, x []float32) []byte {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	out = binary.LittleEndian.AppendUint16(out, backends.Float32ToFloat16(d))
	for _, v := range x {
		out = append(out, byte(int8(math.Round(float64(v*id)))))
	}
	return out
}

// SaveModelGGUF writes the parameters and buffers of model to a GGUF file
// under their dotted names, as typ (GGMLF32, GGMLF16, GGMLBF16 or
// GGMLQ8_0; tensors whose rows are not whole 32-value blocks, such as
// biases, stay F32 under Q8_0), with metadata. Use NameMap.SaveGGUF for
// another naming (llama.cpp's, say).
func SaveModelGGUF(model any, path string, typ GGMLType, metadata map[string]any) error {
	return NameMap{}.SaveGGUF(model, path, typ, metadata)
}

// SaveGGUF is SaveModelGGUF with m's names and layouts.
func (m NameMap) SaveGGUF(model any, path string, typ GGMLType, metadata map[string]any) error {
	cm, err := m.compile(true)
	if err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	return cm.saveWith(model, path, func(out map[string]*tensor.Tensor) error {
		keys := make([]string, 0, len(out))
		for k := range out {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		tensors := make([]GGUFTensor, 0, len(keys))
		for _, k := range keys {
			t := out[k]
			var vals []float32
			if err := tensor.Try(func() { vals = t.Float32s() }); err != nil {
				return fmt.Errorf("store: write %s: %s: %w", path, k, err)
			}
			shape := t.Shape()
			tt := GGUFTypeFor(typ, t.DType(), shape)
			tensors = append(tensors, GGUFTensor{Name: k, Shape: shape, Type: tt, Values: vals})
		}
		return WriteGGUF(path, metadata, tensors)
	})
}

// GGUFTypeFor is the type a tensor of dtype and shape is written as when
// typ is asked for: integers as I32 (exact up to 2³¹), rows that are not
// whole 32-value blocks as F32 under Q8_0, else typ.
func GGUFTypeFor(typ GGMLType, dtype tensor.DType, shape []int) GGMLType {
	switch {
	case !dtype.IsFloat():
		return GGMLI32
	case typ == GGMLQ8_0 && (len(shape) == 0 || shape[len(shape)-1]%32 != 0):
		return GGMLF32
	}
	return typ
}
