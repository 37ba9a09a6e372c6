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
	words := make([]uint64, (nb+7)/8)
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

// accessor reads and writes elements of one dtype as float64. It is the
// generic path; hot kernels have typed loops instead.
type accessor struct {
	load  func(i int) float64
	store func(i int, v float64)
}

func (b *buffer) accessor() accessor {
	switch b.dtype {
	case backends.Float32:
		s := b.f32()
		return accessor{func(i int) float64 { return float64(s[i]) }, func(i int, v float64) { s[i] = float32(v) }}
	case backends.Float64:
		s := b.f64()
		return accessor{func(i int) float64 { return s[i] }, func(i int, v float64) { s[i] = v }}
	case backends.Float16:
		s := b.u16()
		return accessor{func(i int) float64 { return float64(backends.Float16ToFloat32(s[i])) },
			func(i int, v float64) { s[i] = backends.Float32ToFloat16(float32(v)) }}
	case backends.BFloat16:
		s := b.u16()
		return accessor{func(i int) float64 { return float64(backends.BFloat16ToFloat32(s[i])) },
			func(i int, v float64) { s[i] = backends.Float32ToBFloat16(float32(v)) }}
	case backends.Int64:
		s := b.i64()
		return accessor{func(i int) float64 { return float64(s[i]) }, func(i int, v float64) { s[i] = toInt64(v) }}
	case backends.Int32:
		s := b.i32()
		return accessor{func(i int) float64 { return float64(s[i]) }, func(i int, v float64) { s[i] = int32(toInt64(v)) }}
	case backends.Uint8:
		s := b.bytes
		return accessor{func(i int) float64 { return float64(s[i]) }, func(i int, v float64) { s[i] = uint8(toInt64(v)) }}
	case backends.Bool:
		s := b.bytes
		return accessor{func(i int) float64 {
			if s[i] != 0 {
				return 1
			}
			return 0
		}, func(i int, v float64) {
			if v != 0 { // NaN counts as true, as in C and PyTorch
				s[i] = 1
			} else {
				s[i] = 0
			}
		}}
	}
	panic("cpu: unknown dtype " + b.dtype.String())
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
