package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// This file holds the slow, obviously correct references the kernel tests
// compare against: element access by multi-index, dtype conversions written
// out from the backend contract, and views in several memory layouts.

var allDTypes = []backends.DType{backends.Float32, backends.Float64, backends.Float16, backends.BFloat16,
	backends.Int64, backends.Int32, backends.Uint8, backends.Bool}

// allocView returns a zeroed contiguous view of a new buffer.
func allocView(be *Backend, dt backends.DType, shape ...int) backends.View {
	buf, err := be.Alloc(dt, backends.NumElements(shape))
	if err != nil {
		panic(err)
	}
	return backends.Contiguous(buf, dt, shape...)
}

// randomValue draws a test value for dt: floats in [-2, 2) with some
// special values mixed in when specials is set, small integers, 0/1 bools.
func randomValue(r *rand.Rand, dt backends.DType, specials bool) float64 {
	switch {
	case dt == backends.Bool:
		return float64(r.IntN(2))
	case dt == backends.Uint8:
		return float64(r.IntN(256))
	case dt.IsInt():
		return float64(r.IntN(41) - 20)
	}
	if specials && r.IntN(16) == 0 {
		return []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1, -1, 0.5}[r.IntN(8)]
	}
	return r.Float64()*4 - 2
}

// fillRandom writes random values into every element of buf.
func fillRandom(v backends.View, seed uint64, specials bool) {
	r := rand.New(rand.NewPCG(seed, 7))
	b := buf(v)
	for i := range b.n {
		refStore(b, i, randomValue(r, v.DType, specials))
	}
}

// randView returns a contiguous view of random values.
func randView(be *Backend, dt backends.DType, seed uint64, shape ...int) backends.View {
	v := allocView(be, dt, shape...)
	fillRandom(v, seed, false)
	return v
}

// refLoad reads element i of a buffer as float64, as the contract defines.
func refLoad(b *buffer, i int) float64 {
	switch b.dtype {
	case backends.Float32:
		return float64(b.f32()[i])
	case backends.Float64:
		return b.f64()[i]
	case backends.Float16:
		return float64(backends.Float16ToFloat32(b.u16()[i]))
	case backends.BFloat16:
		return float64(backends.BFloat16ToFloat32(b.u16()[i]))
	case backends.Int64:
		return float64(b.i64()[i])
	case backends.Int32:
		return float64(b.i32()[i])
	case backends.Uint8:
		return float64(b.bytes[i])
	case backends.Bool:
		if b.bytes[i] != 0 {
			return 1
		}
		return 0
	}
	panic("bad dtype")
}

// refLoadInt reads element i of an integer or Bool buffer exactly.
func refLoadInt(b *buffer, i int) int64 {
	switch b.dtype {
	case backends.Int64:
		return b.i64()[i]
	case backends.Int32:
		return int64(b.i32()[i])
	case backends.Uint8, backends.Bool:
		return int64(b.bytes[i])
	}
	panic("bad dtype")
}

// refTrunc converts like a saturating C cast (NaN to 0).
func refTrunc(v float64) int64 {
	switch {
	case math.IsNaN(v):
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return int64(v)
}

// refStore writes v into element i, rounding as the contract defines.
func refStore(b *buffer, i int, v float64) {
	switch b.dtype {
	case backends.Float32:
		b.f32()[i] = float32(v)
	case backends.Float64:
		b.f64()[i] = v
	case backends.Float16:
		b.u16()[i] = backends.Float32ToFloat16(float32(v))
	case backends.BFloat16:
		b.u16()[i] = backends.Float32ToBFloat16(float32(v))
	case backends.Int64:
		b.i64()[i] = refTrunc(v)
	case backends.Int32:
		b.i32()[i] = int32(refTrunc(v))
	case backends.Uint8:
		b.bytes[i] = uint8(refTrunc(v))
	case backends.Bool:
		if v != 0 {
			b.bytes[i] = 1
		} else {
			b.bytes[i] = 0
		}
	}
}

// refStoreInt writes an exact integer (wrapping; Bool stores v != 0).
func refStoreInt(b *buffer, i int, v int64) {
	switch b.dtype {
	case backends.Int64:
		b.i64()[i] = v
	case backends.Int32:
		b.i32()[i] = int32(v)
	case backends.Uint8:
		b.bytes[i] = uint8(v)
	case backends.Bool:
		if v != 0 {
			b.bytes[i] = 1
		} else {
			b.bytes[i] = 0
		}
	default:
		panic("bad dtype")
	}
}

// offsetOf returns the element offset of idx in v.
func offsetOf(v backends.View, idx []int) int {
	o := v.Offset
	for d, i := range idx {
		o += i * v.Strides[d]
	}
	return o
}

// forEachIndex calls fn with every multi-index of shape in row-major order.
func forEachIndex(shape []int, fn func(idx []int)) {
	n := backends.NumElements(shape)
	idx := make([]int, len(shape))
	for k := 0; k < n; k++ {
		r := k
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d] = r % shape[d]
			r /= shape[d]
		}
		fn(idx)
	}
}

// snapshot returns every element of v (in row-major order of its shape) as
// float64, for comparisons.
func snapshot(v backends.View) []float64 {
	var out []float64
	b := buf(v)
	forEachIndex(v.Shape, func(idx []int) { out = append(out, refLoad(b, offsetOf(v, idx))) })
	return out
}

// rawSnapshot returns the bytes of every element of v in row-major order.
func rawSnapshot(v backends.View) []byte {
	var out []byte
	b := buf(v)
	sz := v.DType.Size()
	forEachIndex(v.Shape, func(idx []int) {
		o := offsetOf(v, idx) * sz
		out = append(out, b.bytes[o:o+sz]...)
	})
	return out
}

// layout names a way of laying a logical shape out in memory.
type layout string

const (
	contiguous layout = "contiguous"
	transposed layout = "transposed" // dimensions stored in reverse order
	strided    layout = "strided"    // every stride doubled, with an offset
	broadcast  layout = "broadcast"  // the first dimension of size > 1 has stride 0
	scalar     layout = "scalar"     // one element, every stride 0
)

var inputLayouts = []layout{contiguous, transposed, strided, broadcast, scalar}
var outputLayouts = []layout{contiguous, transposed, strided}

// makeView returns a view of shape laid out as lay, over a fresh buffer of
// random values (with special values when specials is set).
func makeView(be *Backend, dt backends.DType, lay layout, seed uint64, specials bool, shape ...int) backends.View {
	r := len(shape)
	switch lay {
	case transposed:
		rev := make([]int, r)
		for d := range shape {
			rev[d] = shape[r-1-d]
		}
		v := allocView(be, dt, rev...)
		fillRandom(v, seed, specials)
		st := make([]int, r)
		for d := range shape {
			st[d] = v.Strides[r-1-d]
		}
		return backends.View{Buf: v.Buf, DType: dt, Shape: append([]int(nil), shape...), Strides: st}
	case strided:
		big := make([]int, r)
		for d, s := range shape {
			big[d] = 2*s + 1
		}
		v := allocView(be, dt, big...)
		fillRandom(v, seed, specials)
		st := make([]int, r)
		off := 0
		for d := range shape {
			st[d] = 2 * v.Strides[d]
			off += v.Strides[d]
		}
		return backends.View{Buf: v.Buf, DType: dt, Shape: append([]int(nil), shape...), Strides: st, Offset: off}
	case scalar:
		v := allocView(be, dt, 1)
		fillRandom(v, seed, specials)
		return backends.View{Buf: v.Buf, DType: dt, Shape: append([]int(nil), shape...), Strides: make([]int, r)}
	case broadcast:
		small := append([]int(nil), shape...)
		bd := -1
		for d, s := range shape {
			if s > 1 {
				bd = d
				small[d] = 1
				break
			}
		}
		v := allocView(be, dt, small...)
		fillRandom(v, seed, specials)
		st := append([]int(nil), v.Strides...)
		if bd >= 0 {
			st[bd] = 0
		}
		return backends.View{Buf: v.Buf, DType: dt, Shape: append([]int(nil), shape...), Strides: st}
	}
	v := allocView(be, dt, shape...)
	fillRandom(v, seed, specials)
	return v
}

// sameBits reports whether two float64 values are identical, NaN matching
// NaN and -0 not matching +0.
func sameBits(a, b float64) bool {
	if math.IsNaN(a) && math.IsNaN(b) {
		return true
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

// checkExact compares got (a view) with want element by element.
func checkExact(t *testing.T, what string, got backends.View, want []float64) {
	t.Helper()
	g := snapshot(got)
	bad := 0
	for i := range g {
		if !sameBits(g[i], want[i]) {
			if bad < 5 {
				t.Errorf("%s: element %d = %v, want %v", what, i, g[i], want[i])
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d elements differ", what, bad)
	}
}

// checkWithinULP compares got (a Float32, Float16 or BFloat16 view) with
// want element by element, accepting the neighbours of want in got's
// dtype; NaN, infinities and zeros must match exactly.
func checkWithinULP(t *testing.T, what string, got backends.View, want []float64) {
	t.Helper()
	g := snapshot(got)
	bad := 0
	for i := range g {
		if !sameBits(g[i], want[i]) && !adjacent(got.DType, g[i], want[i]) {
			if bad < 5 {
				t.Errorf("%s: element %d = %v, want %v (within one ulp)", what, i, g[i], want[i])
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d elements differ", what, bad)
	}
}

// adjacent reports whether a and b, both finite, nonzero values of dtype
// dt, are neighbours in it.
func adjacent(dt backends.DType, a, b float64) bool {
	if a == 0 || b == 0 || math.IsInf(a, 0) || math.IsInf(b, 0) || a != a || b != b {
		return false
	}
	bits := func(v float64) int64 {
		f := float32(v)
		switch dt {
		case backends.Float16:
			return int64(backends.Float32ToFloat16(f))
		case backends.BFloat16:
			return int64(backends.Float32ToBFloat16(f))
		}
		return int64(math.Float32bits(f))
	}
	d := bits(a) - bits(b)
	return (a > 0) == (b > 0) && (d == 1 || d == -1)
}

// testShapes are the shapes element-wise kernels are checked on: scalars,
// edge lengths around blocking boundaries, and ranks up to 4.
var testShapes = [][]int{{}, {1}, {7}, {65}, {3, 17}, {2, 1, 129}, {2, 3, 4, 5}, {600}}

// roundTo returns v as stored into dtype dt and read back.
func roundTo(dt backends.DType, v float64) float64 {
	b := newBuffer(dt, 1)
	refStore(b, 0, v)
	return refLoad(b, 0)
}

// roundIntTo returns the exact integer v as stored into dt and read back.
func roundIntTo(dt backends.DType, v int64) float64 {
	b := newBuffer(dt, 1)
	refStoreInt(b, 0, v)
	return refLoad(b, 0)
}

// loadAt reads the element of v at idx as float64 (and exactly as int64
// for integer dtypes).
func loadAt(v backends.View, idx []int) (float64, int64) {
	b := buf(v)
	o := offsetOf(v, idx)
	if isIntLike(v.DType) {
		return refLoad(b, o), refLoadInt(b, o)
	}
	return refLoad(b, o), 0
}
