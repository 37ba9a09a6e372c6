package tensor

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// Zeros returns a Float32 tensor of zeros with the given shape on dev.
func Zeros(dev Device, shape ...int) *Tensor { return rawFull("Zeros", dev, Float32, shape, 0) }

// Ones returns a Float32 tensor of ones with the given shape on dev.
func Ones(dev Device, shape ...int) *Tensor { return rawFull("Ones", dev, Float32, shape, 1) }

// Full returns a Float32 tensor filled with v.
func Full(dev Device, v float64, shape ...int) *Tensor { return FullOf(dev, Float32, v, shape...) }

// FullOf returns a tensor of dtype filled with v.
func FullOf(dev Device, dtype DType, v float64, shape ...int) *Tensor {
	return rawFull("Full", dev, dtype, shape, v)
}

// ZerosOf returns a tensor of dtype filled with zeros.
func ZerosOf(dev Device, dtype DType, shape ...int) *Tensor {
	return rawFull("ZerosOf", dev, dtype, shape, 0)
}

// OnesOf returns a tensor of dtype filled with ones.
func OnesOf(dev Device, dtype DType, shape ...int) *Tensor {
	return rawFull("OnesOf", dev, dtype, shape, 1)
}

// ZerosLike returns zeros with t's shape, dtype and device.
func ZerosLike(t *Tensor) *Tensor { return FullLike(t, 0) }

// OnesLike returns ones with t's shape, dtype and device.
func OnesLike(t *Tensor) *Tensor { return FullLike(t, 1) }

// FullLike returns a tensor with t's shape, dtype and device filled with v.
func FullLike(t *Tensor, v float64) *Tensor {
	t.live("FullLike")
	return rawFull("FullLike", t.dev, t.dtype, t.shape, v)
}

// checkData panics unless n values fill shape (an empty shape means a 1-D
// tensor of all the values).
func checkData(op string, n int, shape []int) []int {
	if len(shape) == 0 {
		return []int{n}
	}
	shape = inferShape(op, n, shape)
	if checkedNumel(op, shape) != n {
		fail(op, ErrShape, "%d values cannot fill shape %s (%d elements)", n, shapeString(shape), backends.NumElements(shape))
	}
	return shape
}

// inferShape resolves one -1 in shape so that it holds n elements.
func inferShape(op string, n int, shape []int) []int {
	neg, known := -1, 1
	for i, s := range shape {
		switch {
		case s == -1 && neg < 0:
			neg = i
		case s < 0:
			fail(op, ErrShape, "invalid shape %s", shapeString(shape))
		default:
			known = checkedMul(op, "shape "+shapeString(shape), known, s)
		}
	}
	if neg < 0 {
		return shape
	}
	if known == 0 || n%known != 0 {
		fail(op, ErrShape, "cannot infer -1 in %s for %d elements", shapeString(shape), n)
	}
	out := append([]int(nil), shape...)
	out[neg] = n / known
	return out
}

// fromBytes uploads raw little-endian element bytes into a new tensor.
func fromBytes(op string, dev Device, dtype DType, shape []int, raw []byte) *Tensor {
	t := newTensor(op, dev, dtype, shape)
	if len(raw) > 0 {
		t.backend().Write(t.st.buf, 0, raw)
	}
	return t
}

// FromFloat32s returns a Float32 tensor holding data with the given shape
// (1-D when no shape is given; one dimension may be -1).
func FromFloat32s(dev Device, data []float32, shape ...int) *Tensor {
	shape = checkData("FromFloat32s", len(data), shape)
	return fromBytes("FromFloat32s", dev, Float32, shape, leBytes(data, func(b []byte, v float32) {
		binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	}))
}

// FromFloat64s returns a Float64 tensor holding data with the given shape.
func FromFloat64s(dev Device, data []float64, shape ...int) *Tensor {
	shape = checkData("FromFloat64s", len(data), shape)
	return fromBytes("FromFloat64s", dev, Float64, shape, leBytes(data, func(b []byte, v float64) {
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	}))
}

// FromInt64s returns an Int64 tensor holding data with the given shape.
func FromInt64s(dev Device, data []int64, shape ...int) *Tensor {
	shape = checkData("FromInt64s", len(data), shape)
	return fromBytes("FromInt64s", dev, Int64, shape, leBytes(data, func(b []byte, v int64) {
		binary.LittleEndian.PutUint64(b, uint64(v))
	}))
}

// FromInt32s returns an Int32 tensor holding data with the given shape.
func FromInt32s(dev Device, data []int32, shape ...int) *Tensor {
	shape = checkData("FromInt32s", len(data), shape)
	return fromBytes("FromInt32s", dev, Int32, shape, leBytes(data, func(b []byte, v int32) {
		binary.LittleEndian.PutUint32(b, uint32(v))
	}))
}

// FromInt16s returns an Int16 tensor holding data with the given shape.
func FromInt16s(dev Device, data []int16, shape ...int) *Tensor {
	shape = checkData("FromInt16s", len(data), shape)
	return fromBytes("FromInt16s", dev, Int16, shape, leBytes(data, func(b []byte, v int16) {
		binary.LittleEndian.PutUint16(b, uint16(v))
	}))
}

// FromInt8s returns an Int8 tensor holding data with the given shape.
func FromInt8s(dev Device, data []int8, shape ...int) *Tensor {
	shape = checkData("FromInt8s", len(data), shape)
	return fromBytes("FromInt8s", dev, Int8, shape, leBytes(data, func(b []byte, v int8) {
		b[0] = uint8(v)
	}))
}

// hostLittleEndian reports whether this machine stores numbers little-end
// first, as tensors' bytes are laid out.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// leBytes returns data's elements as little-endian bytes: on a
// little-endian host data's own memory, viewed as bytes (the backend copies
// it), elsewhere a new slice filled by put.
func leBytes[T int8 | int16 | int32 | int64 | float32 | float64](data []T, put func([]byte, T)) []byte {
	size := int(unsafe.Sizeof(*new(T)))
	if len(data) == 0 {
		return nil
	}
	if hostLittleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), size*len(data))
	}
	raw := make([]byte, size*len(data))
	for i, v := range data {
		put(raw[size*i:], v)
	}
	return raw
}

// FromBools returns a Bool tensor holding data with the given shape.
func FromBools(dev Device, data []bool, shape ...int) *Tensor {
	shape = checkData("FromBools", len(data), shape)
	raw := make([]byte, len(data))
	for i, v := range data {
		if v {
			raw[i] = 1
		}
	}
	return fromBytes("FromBools", dev, Bool, shape, raw)
}

// FromBytes returns a tensor of dtype from raw little-endian element bytes
// (as stored in safetensors files).
func FromBytes(dev Device, dtype DType, raw []byte, shape ...int) *Tensor {
	if len(raw)%dtype.Size() != 0 {
		fail("FromBytes", ErrShape, "%d bytes is not a whole number of %s elements", len(raw), dtype)
	}
	shape = checkData("FromBytes", len(raw)/dtype.Size(), shape)
	return fromBytes("FromBytes", dev, dtype, shape, raw)
}

// Scalar returns a 0-dimensional Float32 tensor holding v.
func Scalar(dev Device, v float64) *Tensor { return rawFull("Scalar", dev, Float32, []int{}, v) }

// ScalarOf returns a 0-dimensional tensor of dtype holding v.
func ScalarOf(dev Device, dtype DType, v float64) *Tensor {
	return rawFull("Scalar", dev, dtype, []int{}, v)
}

// random draws a tensor from the device's counter-based stream.
func random(op string, dev Device, dtype DType, kind backends.RandomKind, p0, p1 float64, shape []int) *Tensor {
	t := newTensor(op, dev, dtype, shape)
	n := uint64(t.NumElements())
	pos := dev.st.counter.Add(n) - n
	t.backend().Random(t.view(), kind, dev.st.seed.Load(), pos, p0, p1)
	return t
}

// Rand returns Float32 values uniform on [0, 1).
func Rand(dev Device, shape ...int) *Tensor {
	return random("Rand", dev, Float32, backends.Uniform, 0, 1, shape)
}

// Uniform returns Float32 values uniform on [lo, hi).
func Uniform(dev Device, lo, hi float64, shape ...int) *Tensor {
	return random("Uniform", dev, Float32, backends.Uniform, lo, hi, shape)
}

// Randn returns Float32 values from the standard normal distribution.
func Randn(dev Device, shape ...int) *Tensor {
	return random("Randn", dev, Float32, backends.Normal, 0, 1, shape)
}

// Normal returns Float32 values from a normal distribution.
func Normal(dev Device, mean, std float64, shape ...int) *Tensor {
	return random("Normal", dev, Float32, backends.Normal, mean, std, shape)
}

// RandInt returns Int64 values uniform on [lo, hi).
func RandInt(dev Device, lo, hi int64, shape ...int) *Tensor {
	if hi <= lo {
		fail("RandInt", ErrArgument, "empty range [%d, %d)", lo, hi)
	}
	return random("RandInt", dev, Int64, backends.RandInt, float64(lo), float64(hi), shape)
}

// Bernoulli returns Float32 ones with probability p and zeros otherwise.
func Bernoulli(dev Device, p float64, shape ...int) *Tensor {
	if p < 0 || p > 1 {
		fail("Bernoulli", ErrArgument, "probability %v outside [0, 1]", p)
	}
	return random("Bernoulli", dev, Float32, backends.Bernoulli, p, 0, shape)
}

// RandLike returns uniform [0, 1) values with t's shape, dtype and device.
func RandLike(t *Tensor) *Tensor {
	t.live("RandLike")
	return random("RandLike", t.dev, floatType(t.dtype), backends.Uniform, 0, 1, t.shape)
}

// RandnLike returns standard normal values with t's shape, dtype and device.
func RandnLike(t *Tensor) *Tensor {
	t.live("RandnLike")
	return random("RandnLike", t.dev, floatType(t.dtype), backends.Normal, 0, 1, t.shape)
}
