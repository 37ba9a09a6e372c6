package fusion_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
)

// chainEnv builds a chain of ops on one backend: x and y inputs, out the
// result, tmp a fresh intermediate freed once the chain is recorded (so
// that a fusion backend keeps it in tiles).
type chainEnv struct {
	be    backends.Backend
	x, y  backends.View
	out   backends.View
	n     int
	temps []backends.View
	t     testing.TB
}

func (e *chainEnv) tmp() backends.View {
	buf, err := e.be.Alloc(backends.Float32, e.n)
	if err != nil {
		e.t.Fatal(err)
	}
	v := backends.Contiguous(buf, backends.Float32, e.n)
	e.temps = append(e.temps, v)
	return v
}

// one is element k of v broadcast over the group's shape.
func one(v backends.View, k int) backends.View {
	v.Strides = []int{0}
	v.Offset += k
	return v
}

// runChain runs chain on be over inputs xs and ys (n float32 values each,
// as bytes) and returns out's bytes; out starts ofs elements into its
// buffer.
func runChain(t testing.TB, be backends.Backend, n, ofs int, xs, ys []byte, chain func(e *chainEnv)) []byte {
	alloc := func(m int, src []byte) backends.Buffer {
		buf, err := be.Alloc(backends.Float32, m)
		if err != nil {
			t.Fatal(err)
		}
		if src != nil {
			be.Write(buf, 0, src)
		}
		return buf
	}
	e := &chainEnv{be: be, n: n, t: t}
	e.x = backends.Contiguous(alloc(n, xs[:4*n]), backends.Float32, n)
	e.y = backends.Contiguous(alloc(n, ys[:4*n]), backends.Float32, n)
	e.out = backends.Contiguous(alloc(n+ofs, nil), backends.Float32, n)
	e.out.Offset = ofs
	chain(e)
	for _, v := range e.temps {
		be.Free(v.Buf)
	}
	got := make([]byte, 4*n)
	if err := be.Read(e.out.Buf, int64(4*ofs), got); err != nil {
		t.Fatal(err)
	}
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []backends.View{e.x, e.y, e.out} {
		be.Free(v.Buf)
	}
	return got
}

// segmentChains are chains whose ops all run in segments, covering every
// instruction of the segment kernel and the ways a value is handed on:
// in the accumulator, through scratch when read again later, read twice
// by one op, written twice.
var segmentChains = []struct {
	name  string
	chain func(e *chainEnv)
}{
	{"binary ops with the accumulator left", func(e *chainEnv) {
		a, b, c, d := e.tmp(), e.tmp(), e.tmp(), e.tmp()
		e.be.Binary(backends.Add, a, e.x, e.y)
		e.be.Binary(backends.Sub, b, a, e.y)
		e.be.Binary(backends.Mul, c, b, e.x)
		e.be.Binary(backends.Div, d, c, e.y)
		e.be.Binary(backends.Add, e.out, d, e.x)
	}},
	{"binary ops with the accumulator right", func(e *chainEnv) {
		a, b, c, d := e.tmp(), e.tmp(), e.tmp(), e.tmp()
		e.be.Binary(backends.Sub, a, e.y, e.x)
		e.be.Binary(backends.Add, b, e.x, a)
		e.be.Binary(backends.Sub, c, e.y, b)
		e.be.Binary(backends.Mul, d, e.x, c)
		e.be.Binary(backends.Div, e.out, e.y, d)
	}},
	{"an op reading one value twice", func(e *chainEnv) {
		a, b, c, d := e.tmp(), e.tmp(), e.tmp(), e.tmp()
		e.be.Binary(backends.Mul, a, e.x, e.x)
		e.be.Binary(backends.Add, b, a, a)
		e.be.Binary(backends.Div, c, b, b)
		e.be.Binary(backends.Sub, d, e.y, e.y)
		e.be.Binary(backends.Mul, e.out, d, c)
	}},
	{"a value read again later", func(e *chainEnv) {
		a, b, c := e.tmp(), e.tmp(), e.tmp()
		e.be.Binary(backends.Add, a, e.x, e.y)
		e.be.BinaryScalar(backends.Mul, b, a, 3, false)
		e.be.Binary(backends.Div, c, b, a)
		e.be.Binary(backends.Sub, e.out, a, c)
	}},
	{"a buffer written twice", func(e *chainEnv) {
		a := e.tmp()
		e.be.Binary(backends.Mul, a, e.x, e.y)
		e.be.BinaryScalar(backends.Add, a, a, 0.5, false)
		e.be.Binary(backends.Sub, a, e.y, a)
		e.be.Binary(backends.Mul, e.out, a, a)
	}},
	{"float32 scalars both ways", func(e *chainEnv) {
		var v [7]backends.View
		for i := range v {
			v[i] = e.tmp()
		}
		e.be.BinaryScalar(backends.Add, v[0], e.x, 1.5, false)
		e.be.BinaryScalar(backends.Add, v[1], v[0], -2, true)
		e.be.BinaryScalar(backends.Sub, v[2], v[1], 0.25, false)
		e.be.BinaryScalar(backends.Sub, v[3], v[2], 3, true)
		e.be.BinaryScalar(backends.Mul, v[4], v[3], -0.5, false)
		e.be.BinaryScalar(backends.Mul, v[5], v[4], 4, true)
		e.be.BinaryScalar(backends.Div, v[6], v[5], 3, false)
		e.be.BinaryScalar(backends.Div, e.out, v[6], -7, true)
	}},
	{"float64 scalars both ways", func(e *chainEnv) {
		var v [7]backends.View
		for i := range v {
			v[i] = e.tmp()
		}
		e.be.BinaryScalar(backends.Mul, v[0], e.x, 0.044715, false)
		e.be.BinaryScalar(backends.Add, v[1], v[0], math.Pi, false)
		e.be.BinaryScalar(backends.Add, v[2], v[1], 1e-320, true)
		e.be.BinaryScalar(backends.Sub, v[3], v[2], 0.1, false)
		e.be.BinaryScalar(backends.Sub, v[4], v[3], math.E, true)
		e.be.BinaryScalar(backends.Mul, v[5], v[4], 1e300, true)
		e.be.BinaryScalar(backends.Div, v[6], v[5], 1e300, false)
		e.be.BinaryScalar(backends.Div, e.out, v[6], -0.3, true)
	}},
	{"float64 division by a tiny scalar", func(e *chainEnv) {
		a := e.tmp()
		e.be.BinaryScalar(backends.Div, a, e.x, math.SmallestNonzeroFloat64, false)
		e.be.BinaryScalar(backends.Mul, e.out, a, math.SmallestNonzeroFloat64, true)
	}},
	{"broadcast elements", func(e *chainEnv) {
		var v [7]backends.View
		for i := range v {
			v[i] = e.tmp()
		}
		e.be.Binary(backends.Add, v[0], e.x, one(e.y, 3))
		e.be.Binary(backends.Add, v[1], one(e.y, 4), v[0]) // a NaN broadcast left of a NaN
		e.be.Binary(backends.Sub, v[2], v[1], one(e.y, 5))
		e.be.Binary(backends.Sub, v[3], one(e.y, 6), v[2])
		e.be.Binary(backends.Mul, v[4], one(e.y, 7), v[3])
		e.be.Binary(backends.Mul, v[5], v[4], one(e.y, 8))
		e.be.Binary(backends.Div, v[6], one(e.y, 9), v[5])
		e.be.Binary(backends.Div, e.out, v[6], one(e.x, 13))
	}},
	{"unary ops and a copy", func(e *chainEnv) {
		a, b, c, d, f := e.tmp(), e.tmp(), e.tmp(), e.tmp(), e.tmp()
		e.be.Unary(backends.Neg, a, e.x, 0, 0)
		e.be.Unary(backends.Relu, b, a, 0, 0)
		e.be.Binary(backends.Sub, c, b, e.x)
		e.be.Unary(backends.Abs, d, c, 0, 0)
		e.be.Copy(f, d)
		e.be.Unary(backends.Square, e.out, f, 0, 0)
	}},
	{"relu of signed zeros and NaNs", func(e *chainEnv) {
		a := e.tmp()
		e.be.Copy(a, e.x)
		e.be.Unary(backends.Relu, e.out, a, 0, 0)
	}},
}

// segmentKernels runs check once with each segment kernel the CPU runs
// ("avx512", "avx2") and once with none, where the ops run as tile
// kernels: CI machines may have AVX-512, AVX2 only, or (purego, other
// architectures) no kernel at all, and each must give the unfused bits.
func segmentKernels(t *testing.T, check func(t *testing.T, kernel string)) {
	ran := false
	for _, kernel := range []string{"avx512", "avx2", ""} {
		restore, ok := fusion.UseSegmentKernel(kernel)
		if !ok {
			continue
		}
		ran = true
		name := kernel
		if name == "" {
			name = "none"
		}
		t.Run(name, func(t *testing.T) { check(t, kernel) })
		restore()
	}
	if !ran {
		t.Fatal("no segment kernel selectable, not even none")
	}
}

// wantSegments checks a group's stats against the kernel it ran on: with
// one (and at least a block of elements), segment ops of its ops in
// segments; without, every op as a tile kernel.
func wantSegments(t *testing.T, name, kernel string, s fusion.Stats, segment int64, blocks bool) {
	t.Helper()
	if kernel == "" || !blocks {
		if s.SegmentOps != 0 || s.TileKernelOps != s.Ops {
			t.Errorf("%s: %+v, want every op run as a tile kernel", name, s)
		}
		return
	}
	if s.SegmentOps != segment {
		t.Errorf("%s: %+v, want %d ops run in segments", name, s, segment)
	}
}

// segmentInput is tileInput with its first 32 elements (its special
// values: NaNs, infinities, signed zeros, denormals, ...) repeated every 97
// elements, so that they reach every lane of every accumulator register of
// the kernels, not only the first few.
func segmentInput(n int) []byte {
	raw := tileInput(n)
	const period = 97
	special := tileInput(period)
	for i := 0; i < n; i += period {
		copy(raw[4*i:], special[:4*min(32, n-i)])
	}
	return raw
}

// TestSegmentsMatchUnfused runs chains that the segment kernel serves, on
// inputs with NaNs of several payloads and signs, infinities, signed zeros
// and denormals, over tiles with ragged ends and an output that starts
// off its buffer's alignment, and requires the CPU's own bits.
func TestSegmentsMatchUnfused(t *testing.T) {
	segmentKernels(t, func(t *testing.T, kernel string) {
		for _, size := range []struct{ n, tile, ofs int }{{3*1024 + 77, 1024, 0}, {5000, 4096, 3}, {100, 256, 0}} {
			xs, ys := segmentInput(size.n), segmentInput(size.n + 31)[4*29:]
			for _, tc := range segmentChains {
				plain := cpu.New(1)
				fb := fusion.NewTiled(cpu.New(2), size.tile)
				want := runChain(t, plain, size.n, size.ofs, xs, ys, tc.chain)
				got := runChain(t, fb, size.n, size.ofs, xs, ys, tc.chain)
				compareF32(t, tc.name, want, got, xs)
				s := fb.Stats()
				if s.Groups != 1 {
					t.Errorf("%s: %+v, want one group", tc.name, s)
				}
				// below one block of the kernel, the ops run one by one
				wantSegments(t, tc.name, kernel, s, s.Ops, size.n >= 128)
			}
		}
	})
}

// TestSegmentStreamedOutput runs the composed GELU over more than 32 MiB,
// where the segment kernel writes the output with non-temporal stores
// (64-byte aligned) or plain ones (not).
func TestSegmentStreamedOutput(t *testing.T) {
	if raceEnabled {
		t.Skip("numbers through the assembly the race detector does not see (over 32 MiB); the plain run checks them")
	}
	if testing.Short() {
		t.Skip("64 MiB of buffers")
	}
	const n = 8<<20 + 77
	xs := tileInput(n)
	gelu := func(e *chainEnv) {
		c := math.Sqrt(2 / math.Pi)
		v := make([]backends.View, 8)
		for i := range v {
			v[i] = e.tmp()
		}
		e.be.Binary(backends.Mul, v[0], e.x, e.x)
		e.be.BinaryScalar(backends.Mul, v[1], v[0], 0.044715, false)
		e.be.BinaryScalar(backends.Add, v[2], v[1], 1, false)
		e.be.Binary(backends.Mul, v[3], v[2], e.x)
		e.be.BinaryScalar(backends.Mul, v[4], v[3], c, false)
		e.be.Unary(backends.Tanh, v[5], v[4], 0, 0)
		e.be.BinaryScalar(backends.Add, v[6], v[5], 1, false)
		e.be.Binary(backends.Mul, v[7], v[6], e.x)
		e.be.BinaryScalar(backends.Mul, e.out, v[7], 0.5, false)
	}
	want := runChain(t, cpu.New(2), n, 0, xs, xs, gelu)
	segmentKernels(t, func(t *testing.T, kernel string) {
		for _, ofs := range []int{0, 5} {
			fb := fusion.New(cpu.New(2))
			got := runChain(t, fb, n, ofs, xs, xs, gelu)
			compareF32(t, "composed GELU", want, got, xs)
			s := fb.Stats()
			if s.Scratch != 8 {
				t.Errorf("offset %d: %+v, want 8 intermediates in scratch", ofs, s)
			}
			wantSegments(t, fmt.Sprintf("offset %d", ofs), kernel, s, 8, true)
		}
	})
}

// compareF32 reports the first element where got differs from want.
func compareF32(t *testing.T, name string, want, got, xs []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	for i := 0; i < len(want)/4; i++ {
		w, g := binary.LittleEndian.Uint32(want[4*i:]), binary.LittleEndian.Uint32(got[4*i:])
		if w != g {
			x := math.Float32frombits(binary.LittleEndian.Uint32(xs[4*i:]))
			t.Errorf("%s: element %d (x = %g): fused %g (%#08x), unfused %g (%#08x)", name, i, x,
				math.Float32frombits(g), g, math.Float32frombits(w), w)
			return
		}
	}
}
