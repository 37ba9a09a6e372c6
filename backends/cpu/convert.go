package cpu

import (
	"github.com/kiln-ml/kiln/backends"
)

// Row converters: the generic paths of every kernel move a run of elements
// (element offset off, element stride st, which may be 0 or negative) between
// a buffer of any dtype and a float64, float32 or int64 scratch row. They
// define the dtype semantics of the backend, exactly as the accessors do:
//   - floats widen exactly; stores round to nearest even (halves go through
//     float32, as float32(v) then the half conversion);
//   - integer stores from float64 truncate toward zero and saturate (toInt64),
//     then wrap to the narrower integer type;
//   - Bool loads as 0 or 1 and stores v != 0 (NaN is true).

// loadF64 reads len(dst) elements of b into dst.
func loadF64(b *buffer, off, st int, dst []float64) {
	n := len(dst)
	if n == 0 {
		return
	}
	switch b.dtype {
	case backends.Float32:
		s := b.f32()
		if st == 1 {
			for i, v := range s[off : off+n] {
				dst[i] = float64(v)
			}
			return
		}
		for i := range dst {
			dst[i] = float64(s[off+i*st])
		}
	case backends.Float64:
		s := b.f64()
		if st == 1 {
			copy(dst, s[off:off+n])
			return
		}
		for i := range dst {
			dst[i] = s[off+i*st]
		}
	case backends.Float16:
		s := b.u16()
		for i := range dst {
			dst[i] = float64(backends.Float16ToFloat32(s[off+i*st]))
		}
	case backends.BFloat16:
		s := b.u16()
		for i := range dst {
			dst[i] = float64(backends.BFloat16ToFloat32(s[off+i*st]))
		}
	case backends.Int64:
		gatherStrided(dst, b.i64(), off, st)
	case backends.Int32:
		gatherStrided(dst, b.i32(), off, st)
	case backends.Int16:
		gatherStrided(dst, b.i16(), off, st)
	case backends.Int8:
		gatherStrided(dst, b.i8(), off, st)
	case backends.Uint8:
		gatherStrided(dst, b.u8(), off, st)
	case backends.Bool:
		s := b.u8()
		for i := range dst {
			if s[off+i*st] != 0 {
				dst[i] = 1
			} else {
				dst[i] = 0
			}
		}
	default:
		panic("cpu: unknown dtype " + b.dtype.String())
	}
}

// storeF64 writes src into len(src) elements of b.
func storeF64(b *buffer, off, st int, src []float64) {
	n := len(src)
	if n == 0 {
		return
	}
	switch b.dtype {
	case backends.Float32:
		s := b.f32()
		if st == 1 {
			d := s[off : off+n]
			for i, v := range src {
				d[i] = float32(v)
			}
			return
		}
		for i, v := range src {
			s[off+i*st] = float32(v)
		}
	case backends.Float64:
		s := b.f64()
		if st == 1 {
			copy(s[off:off+n], src)
			return
		}
		for i, v := range src {
			s[off+i*st] = v
		}
	case backends.Float16:
		s := b.u16()
		for i, v := range src {
			s[off+i*st] = backends.Float32ToFloat16(float32(v))
		}
	case backends.BFloat16:
		s := b.u16()
		for i, v := range src {
			s[off+i*st] = backends.Float32ToBFloat16(float32(v))
		}
	case backends.Int64:
		storeFloatsAsInts(b.i64(), off, st, src)
	case backends.Int32:
		storeFloatsAsInts(b.i32(), off, st, src)
	case backends.Int16:
		storeFloatsAsInts(b.i16(), off, st, src)
	case backends.Int8:
		storeFloatsAsInts(b.i8(), off, st, src)
	case backends.Uint8:
		storeFloatsAsInts(b.u8(), off, st, src)
	case backends.Bool:
		s := b.u8()
		for i, v := range src {
			if v != 0 {
				s[off+i*st] = 1
			} else {
				s[off+i*st] = 0
			}
		}
	default:
		panic("cpu: unknown dtype " + b.dtype.String())
	}
}

// loadI64 reads len(dst) elements of an integer or Bool buffer exactly.
func loadI64(b *buffer, off, st int, dst []int64) {
	if len(dst) == 0 {
		return
	}
	switch b.dtype {
	case backends.Int64:
		s := b.i64()
		if st == 1 {
			copy(dst, s[off:off+len(dst)])
			return
		}
		for i := range dst {
			dst[i] = s[off+i*st]
		}
	case backends.Int32:
		gatherStrided(dst, b.i32(), off, st)
	case backends.Int16:
		gatherStrided(dst, b.i16(), off, st)
	case backends.Int8:
		gatherStrided(dst, b.i8(), off, st)
	case backends.Uint8, backends.Bool:
		gatherStrided(dst, b.u8(), off, st)
	default:
		panic("cpu: not an integer dtype: " + b.dtype.String())
	}
}

// storeI64 writes src into an integer or Bool buffer, wrapping to the
// narrower type (Bool stores v != 0).
func storeI64(b *buffer, off, st int, src []int64) {
	if len(src) == 0 {
		return
	}
	switch b.dtype {
	case backends.Int64:
		s := b.i64()
		if st == 1 {
			copy(s[off:off+len(src)], src)
			return
		}
		for i, v := range src {
			s[off+i*st] = v
		}
	case backends.Int32:
		scatterStrided(b.i32(), off, st, src)
	case backends.Int16:
		scatterStrided(b.i16(), off, st, src)
	case backends.Int8:
		scatterStrided(b.i8(), off, st, src)
	case backends.Uint8:
		scatterStrided(b.u8(), off, st, src)
	case backends.Bool:
		s := b.u8()
		for i, v := range src {
			if v != 0 {
				s[off+i*st] = 1
			} else {
				s[off+i*st] = 0
			}
		}
	default:
		panic("cpu: not an integer dtype: " + b.dtype.String())
	}
}

// loadF32 reads len(dst) elements of b as float32: exact for Float32,
// Float16 and BFloat16, rounded for the others.
func loadF32(b *buffer, off, st int, dst []float32) {
	n := len(dst)
	if n == 0 {
		return
	}
	switch b.dtype {
	case backends.Float32:
		s := b.f32()
		if st == 1 {
			copy(dst, s[off:off+n])
			return
		}
		for i := range dst {
			dst[i] = s[off+i*st]
		}
	case backends.Float16:
		s := b.u16()
		for i := range dst {
			dst[i] = backends.Float16ToFloat32(s[off+i*st])
		}
	case backends.BFloat16:
		s := b.u16()
		for i := range dst {
			dst[i] = backends.BFloat16ToFloat32(s[off+i*st])
		}
	default:
		var tmp [256]float64
		for len(dst) > 0 {
			m := min(len(dst), len(tmp))
			loadF64(b, off, st, tmp[:m])
			for i, v := range tmp[:m] {
				dst[i] = float32(v)
			}
			dst, off = dst[m:], off+m*st
		}
	}
}

// storeF32 writes float32 values into b, rounding as storeF64 would.
func storeF32(b *buffer, off, st int, src []float32) {
	n := len(src)
	if n == 0 {
		return
	}
	switch b.dtype {
	case backends.Float32:
		s := b.f32()
		if st == 1 {
			copy(s[off:off+n], src)
			return
		}
		for i, v := range src {
			s[off+i*st] = v
		}
	case backends.Float16:
		s := b.u16()
		for i, v := range src {
			s[off+i*st] = backends.Float32ToFloat16(v)
		}
	case backends.BFloat16:
		s := b.u16()
		for i, v := range src {
			s[off+i*st] = backends.Float32ToBFloat16(v)
		}
	default:
		var tmp [256]float64
		for len(src) > 0 {
			m := min(len(src), len(tmp))
			for i, v := range src[:m] {
				tmp[i] = float64(v)
			}
			storeF64(b, off, st, tmp[:m])
			src, off = src[m:], off+m*st
		}
	}
}

// intElem is an integer element type of a buffer.
type intElem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8
}

// gatherStrided converts len(dst) elements s[off], s[off+st], … into dst
// (each element type is its own instantiation, so the loop is as tight as
// a hand-written one).
func gatherStrided[D int64 | float64, S intElem](dst []D, s []S, off, st int) {
	for i := range dst {
		dst[i] = D(s[off+i*st])
	}
}

// scatterStrided writes src to s[off], s[off+st], …, wrapping each value
// to the narrower type as a conversion does.
func scatterStrided[S intElem](s []S, off, st int, src []int64) {
	for i, v := range src {
		s[off+i*st] = S(v)
	}
}

// storeFloatsAsInts is scatterStrided of float values, each truncated
// toward zero (toInt64) first.
func storeFloatsAsInts[S intElem](s []S, off, st int, src []float64) {
	for i, v := range src {
		s[off+i*st] = S(toInt64(v))
	}
}

// isIntLike reports whether d holds integers or Bool (exact int64 paths).
func isIntLike(d backends.DType) bool { return d.IsInt() || d == backends.Bool }
