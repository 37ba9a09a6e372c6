package cpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/kiln-ml/kiln/backends"
)

// buffer is host memory, 8-byte aligned, holding n elements of dtype.
type buffer struct {
	words []uint64 // backing store; keeps 8-byte alignment for every dtype
	bytes []byte
	dtype backends.DType
	n     int
}

func newBuffer(dtype backends.DType, n int) *buffer {
	nb := n * dtype.Size()
	return wrapWords(make([]uint64, (nb+7)/8), dtype, n)
}

// wrapWords makes a buffer of n elements of dtype over words, which holds at
// least n·dtype.Size() bytes.
func wrapWords(words []uint64, dtype backends.DType, n int) *buffer {
	nb := n * dtype.Size()
	var bytes []byte
	if len(words) > 0 {
		bytes = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), nb)
	}
	return &buffer{words: words, bytes: bytes, dtype: dtype, n: n}
}

// Bytes implements backends.Buffer.
func (b *buffer) Bytes() int64 { return int64(len(b.bytes)) }

// The typed views below reinterpret a buffer's words as its elements. Each
// checks that the buffer holds the dtype it is read as, and that the words
// hold n elements of it, and panics otherwise: kernel methods check their
// views' dtypes before choosing a typed loop (check.go), so a mismatch here
// is a bug in a kernel, caught before it reads or writes past the buffer.

func (b *buffer) f32() []float32 { return elemsOf[float32](b, "float32", b.dtype == backends.Float32) }

func (b *buffer) f64() []float64 { return elemsOf[float64](b, "float64", b.dtype == backends.Float64) }

func (b *buffer) i64() []int64 { return elemsOf[int64](b, "int64", b.dtype == backends.Int64) }

func (b *buffer) i32() []int32 { return elemsOf[int32](b, "int32", b.dtype == backends.Int32) }

// u16 views Float16 and BFloat16 buffers as their bits.
func (b *buffer) u16() []uint16 {
	return elemsOf[uint16](b, "float16 or bfloat16", b.dtype == backends.Float16 || b.dtype == backends.BFloat16)
}

// i16 views Int16 buffers.
func (b *buffer) i16() []int16 { return elemsOf[int16](b, "int16", b.dtype == backends.Int16) }

// i8 views Int8 buffers.
func (b *buffer) i8() []int8 { return elemsOf[int8](b, "int8", b.dtype == backends.Int8) }

// u8 views Uint8 and Bool buffers.
func (b *buffer) u8() []uint8 {
	return elemsOf[uint8](b, "uint8 or bool", b.dtype == backends.Uint8 || b.dtype == backends.Bool)
}

// elemsOf returns b's n elements as a []T, panicking unless match (b's
// dtype is what T stands for) and b's words hold them.
func elemsOf[T any](b *buffer, kind string, match bool) []T {
	if !match {
		panic(fmt.Sprintf("cpu: %s view of a buffer of %d %s elements", kind, b.n, b.dtype))
	}
	if b.n == 0 {
		return nil
	}
	if size := int(unsafe.Sizeof(*new(T))); b.n > len(b.words)*8/size {
		panic(fmt.Sprintf("cpu: %s view of %d elements over %d bytes", kind, b.n, len(b.words)*8))
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b.words[0])), b.n)
}

// toInt64 converts like a C cast, truncating toward zero; NaN and
// out-of-range values become 0 or saturate instead of being undefined.
func toInt64(v float64) int64 {
	switch {
	case v != v:
		return 0
	case v >= 9.223372036854775807e18:
		return math.MaxInt64
	case v <= -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(v)
}
