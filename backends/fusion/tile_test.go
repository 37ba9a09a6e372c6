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

var _ fusion.TileKernels = (*cpu.Backend)(nil)

// tileInput is n float32 values with the awkward ones first: zeros of
// both signs, infinities, NaN, denormals, the extremes, values near the
// ops' interesting points; then a spread of ordinary values.
func tileInput(n int) []byte {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), -float32(math.NaN()), math.Float32frombits(0x7f800001), 1e-45, -1e-45, 1e-39, -3e-39, math.MaxFloat32, -math.MaxFloat32,
		1, -1, 0.5, -0.5, 2, 88.7, -88.7, 100, -100, 1e-8, 0.9999999, -0.78, 1.5}
	raw := make([]byte, 4*n)
	for i := range n {
		v := float32(math.Sin(float64(i)*0.731) * 6 * math.Exp(float64(i%7-3)))
		if i < len(special) {
			v = special[i]
		}
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return raw
}

// TestTileKernelsExact runs every float32 element-wise op the CPU's tile
// kernels serve, one group each, through a fusion backend over the CPU and
// through the CPU alone, on inputs with NaN, infinities, signed zeros and
// denormals, over several tiles and a ragged last one, and requires the
// same bits and that the tile kernels ran.
func TestTileKernelsExact(t *testing.T) {
	const n = 3*1024 + 13
	plain := cpu.New(1)
	fb := fusion.NewTiled(cpu.New(2), 1024)
	in := tileInput(n)
	in2 := tileInput(n + 5)[20:] // another order, another alignment
	alloc := func(be backends.Backend, src []byte) backends.View {
		buf, err := be.Alloc(backends.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		if src != nil {
			be.Write(buf, 0, src[:4*n])
		}
		return backends.Contiguous(buf, backends.Float32, n)
	}
	// run applies op on be to fresh copies of the inputs and returns the
	// output's bytes.
	run := func(be backends.Backend, op func(be backends.Backend, out, x, y backends.View)) []byte {
		x, y, out := alloc(be, in), alloc(be, in2), alloc(be, nil)
		op(be, out, x, y)
		got := make([]byte, 4*n)
		if err := be.Read(out.Buf, 0, got); err != nil {
			t.Fatal(err)
		}
		for _, v := range []backends.View{x, y, out} {
			be.Free(v.Buf)
		}
		return got
	}
	type opCase struct {
		name string
		f    func(be backends.Backend, out, x, y backends.View)
		fast bool // the tile kernels serve it
	}
	var cases []opCase
	for op := range backends.UnaryOp(len(backends.UnaryOps)) {
		if backends.UnaryOps[op].Predicate {
			continue
		}
		cases = append(cases,
			opCase{op.String(), func(be backends.Backend, out, x, _ backends.View) { be.Unary(op, out, x, 0.3, 2) }, true},
			opCase{op.String() + " grad", func(be backends.Backend, out, x, y backends.View) {
				be.UnaryGrad(op, out, x, y, 0.3, 2)
			}, true})
	}
	for op := range backends.BinaryOp(len(backends.BinaryOps)) {
		if backends.BinaryOps[op].Predicate {
			continue
		}
		// Binary computes the other ops in float64: the tiles call Binary
		typed := op == backends.Add || op == backends.Sub || op == backends.Mul || op == backends.Div ||
			op == backends.Maximum || op == backends.Minimum
		cases = append(cases,
			opCase{op.String(), func(be backends.Backend, out, x, y backends.View) { be.Binary(op, out, x, y) }, typed},
			opCase{op.String() + " broadcast", func(be backends.Backend, out, x, y backends.View) {
				y.Strides = []int{0}
				y.Offset = 3
				be.Binary(op, out, x, y)
			}, typed},
			opCase{"broadcast " + op.String(), func(be backends.Backend, out, x, y backends.View) {
				x.Strides = []int{0}
				be.Binary(op, out, x, y)
			}, typed})
		for _, s := range []float64{0.5, -1.5, 0.044715, math.Sqrt(2 / math.Pi), 1e300, -1e-320, 0, math.Inf(1), math.NaN(), -math.NaN(), math.Float64frombits(0xfff0000000000123)} {
			for _, rev := range []bool{false, true} {
				cases = append(cases, opCase{fmt.Sprintf("%s scalar %g reverse %v", op, s, rev),
					func(be backends.Backend, out, x, _ backends.View) { be.BinaryScalar(op, out, x, s, rev) }, true})
			}
		}
	}
	cases = append(cases, opCase{"copy", func(be backends.Backend, out, x, _ backends.View) { be.Copy(out, x) }, true},
		opCase{"copy broadcast", func(be backends.Backend, out, x, _ backends.View) {
			x.Strides = []int{0}
			be.Copy(out, x)
		}, true})
	for _, tc := range cases {
		before := fb.Stats()
		want, got := run(plain, tc.f), run(fb, tc.f)
		if err := errorsOf(plain, fb); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(want, got) {
			for i := 0; i < n; i++ {
				w, g := binary.LittleEndian.Uint32(want[4*i:]), binary.LittleEndian.Uint32(got[4*i:])
				if w != g {
					x := math.Float32frombits(binary.LittleEndian.Uint32(in[4*i:]))
					t.Errorf("%s: element %d (x = %g): fused %g (%#08x), unfused %g (%#08x)", tc.name, i, x,
						math.Float32frombits(g), g, math.Float32frombits(w), w)
					break
				}
			}
		}
		if ran := fb.Stats().TileKernelOps - before.TileKernelOps; tc.fast != (ran == 1) {
			t.Errorf("%s: %d ops ran through the tile kernels, want fast path %v", tc.name, ran, tc.fast)
		}
	}
}

// errorsOf syncs both backends and returns their errors.
func errorsOf(a, b backends.Backend) error {
	if err := a.Sync(); err != nil {
		return err
	}
	return b.Sync()
}
