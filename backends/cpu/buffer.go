package cpu

import (
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

func (b *buffer) f32() []float32 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b.words[0])), b.n)
}

func (b *buffer) f64() []float64 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b.words[0])), b.n)
}

func (b *buffer) i64() []int64 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(&b.words[0])), b.n)
}

func (b *buffer) i32() []int32 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&b.words[0])), b.n)
}

func (b *buffer) u16() []uint16 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b.words[0])), b.n)
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
