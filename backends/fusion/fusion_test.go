package fusion_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
	"github.com/kiln-ml/kiln/tensor"
)

// geluTanh is GELU's tanh approximation composed from nine primitives, as
// a user would write it.
func geluTanh(x *tensor.Tensor) *tensor.Tensor {
	c := math.Sqrt(2 / math.Pi)
	t := x.Mul(x).MulScalar(0.044715).AddScalar(1).Mul(x).MulScalar(c).Tanh()
	return t.AddScalar(1).Mul(x).MulScalar(0.5)
}

// swish is a user's own Swish with β = 1.5: x / (1 + e^(−βx)).
func swish(x *tensor.Tensor) *tensor.Tensor {
	return x.Div(x.MulScalar(-1.5).Exp().AddScalar(1))
}

// fusedBackend returns the fusion backend behind dev.
func fusedBackend(t testing.TB, dev tensor.Device) *fusion.Backend {
	t.Helper()
	fb, ok := dev.Backend().(*fusion.Backend)
	if !ok {
		t.Fatalf("%s runs on %T, not a fusion backend", dev, dev.Backend())
	}
	return fb
}

func randomData(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64() * 3
	}
	return v
}

// TestChainsMatchUnfused runs chains of element-wise ops on the CPU and on
// its fused twin and requires the same bits.
func TestChainsMatchUnfused(t *testing.T) {
	cases := []struct {
		name    string
		shape   []int
		dtype   tensor.DType
		f       func(x, y *tensor.Tensor) *tensor.Tensor
		scratch bool // intermediates stay in tiles
	}{
		{"composed GELU-tanh over several tiles", []int{3, 10007}, tensor.Float32,
			func(x, _ *tensor.Tensor) *tensor.Tensor { return geluTanh(x) }, true},
		{"composed GELU-tanh in float64", []int{5000}, tensor.Float64,
			func(x, _ *tensor.Tensor) *tensor.Tensor { return geluTanh(x) }, true},
		{"swish", []int{40000}, tensor.Float32,
			func(x, _ *tensor.Tensor) *tensor.Tensor { return swish(x) }, true},
		{"broadcast bias add then relu", []int{300, 129}, tensor.Float32,
			func(x, y *tensor.Tensor) *tensor.Tensor {
				return x.Add(y.Narrow(0, 0, 1)).Relu().MulScalar(2).Sub(y)
			}, true},
		{"transposed input", []int{130, 257}, tensor.Float32,
			func(x, y *tensor.Tensor) *tensor.Tensor {
				return x.Transpose(0, 1).Exp().Add(y.Transpose(0, 1)).Sigmoid()
			}, true},
		{"comparison and where", []int{20000}, tensor.Float32,
			func(x, y *tensor.Tensor) *tensor.Tensor {
				return tensor.Where(x.Gt(y), x.Square(), y.Neg()).AddScalar(0.5)
			}, true},
		{"a reshape between ops", []int{64, 300}, tensor.Float32,
			func(x, _ *tensor.Tensor) *tensor.Tensor {
				return x.Tanh().Reshape(300, 64).MulScalar(3).Reshape(64, 300).Add(x)
			}, false},
		{"a cast inside the chain", []int{9000}, tensor.Float32,
			func(x, _ *tensor.Tensor) *tensor.Tensor {
				return x.MulScalar(1.25).To(tensor.Float64).Exp().To(tensor.Float32).Sqrt()
			}, true},
		{"a reduction in the middle", []int{64, 513}, tensor.Float32,
			func(x, _ *tensor.Tensor) *tensor.Tensor {
				return x.Exp().Div(x.Exp().Sum(1).Unsqueeze(1)).MulScalar(3).Tanh()
			}, false},
	}
	plain := tensor.CPU()
	fused := plain.Fused()
	fb := fusedBackend(t, fused)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := backends.NumElements(tc.shape)
			xs, ys := randomData(n, uint64(i)), randomData(n, uint64(i)+100)
			run := func(dev tensor.Device) []float64 {
				var out []float64
				tensor.Scope(func() {
					x := tensor.FromFloat64s(dev, xs, tc.shape...).To(tc.dtype)
					y := tensor.FromFloat64s(dev, ys, tc.shape...).To(tc.dtype)
					out = tensor.ScopeResult(func() *tensor.Tensor { return tc.f(x, y) }).To(tensor.Float64).Float64s()
				})
				return out
			}
			before := fb.Stats()
			want, got := run(plain), run(fused)
			after := fb.Stats()
			if err := fused.Sync(); err != nil {
				t.Fatal(err)
			}
			for k := range want {
				if math.Float64bits(want[k]) != math.Float64bits(got[k]) {
					t.Fatalf("element %d: fused %v, unfused %v", k, got[k], want[k])
				}
			}
			if after.Groups == before.Groups {
				t.Errorf("nothing was fused: %+v", after)
			}
			if tc.scratch && after.Scratch == before.Scratch {
				t.Errorf("no intermediate stayed in tiles: before %+v after %+v", before, after)
			}
		})
	}
}

// TestEightOpChainIsOneGroup checks that the composed GELU is one group
// whose intermediates are never written to memory.
func TestEightOpChainIsOneGroup(t *testing.T) {
	dev := tensor.CPU().Fused()
	fb := fusedBackend(t, dev)
	x := tensor.FromFloat64s(dev, randomData(50000, 7), 50000)
	defer x.Release()
	_ = dev.Sync()
	before := fb.Stats()
	y := tensor.ScopeResult(func() *tensor.Tensor { return geluTanh(x) })
	defer y.Release()
	if p := fb.Pending(); p != 9 {
		t.Fatalf("%d ops pending before the read, want the chain's 9", p)
	}
	_ = y.Float32s()
	d := fb.Stats()
	if g, o, s := d.Groups-before.Groups, d.Ops-before.Ops, d.Scratch-before.Scratch; g != 1 || o != 9 || s != 8 {
		t.Errorf("ran %d groups of %d ops with %d scratch buffers, want 1 group of 9 ops with 8", g, o, s)
	}
}

// TestSyncPoints checks the hazards that end a group: reading a pending
// result, writing a buffer the group reads, and reading a result through
// another view than the one it was written through.
func TestSyncPoints(t *testing.T) {
	fb := fusion.NewTiled(cpu.New(1), 256)
	alloc := func(n int) backends.View {
		buf, err := fb.Alloc(backends.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		return backends.Contiguous(buf, backends.Float32, n)
	}
	read := func(v backends.View) []float32 {
		out := make([]byte, 4*v.NumElements())
		if err := fb.Read(v.Buf, 0, out); err != nil {
			t.Fatal(err)
		}
		f := make([]float32, v.NumElements())
		for i := range f {
			f[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
		}
		return f
	}
	const n = 1000
	x, y := alloc(n), alloc(n)
	fb.Fill(x, 2)
	fb.BinaryScalar(backends.Mul, y, x, 3, false) // y = 6
	if got := read(y); got[0] != 6 || got[n-1] != 6 {
		t.Fatalf("read of a pending result: %v … %v, want 6", got[0], got[n-1])
	}
	if fb.Pending() != 0 {
		t.Fatal("the read did not run the group")
	}

	// A write to a buffer the group reads runs the group first.
	fb.BinaryScalar(backends.Add, y, x, 1, false) // y = x + 1 = 3
	src := make([]byte, 4*n)                      // zeros
	fb.Write(x.Buf, 0, src)
	if got := read(y); got[7] != 3 {
		t.Fatalf("y = %v after x was overwritten, want 3 (the group must run before the write)", got[7])
	}

	// Reading y backwards (another view) after writing it must not cross
	// tiles: y[i] = 2·i must be complete before z[i] = y[n-1-i] + 1.
	for i := range src {
		src[i] = 0
	}
	fb.Fill(x, 1)
	fb.Scan(backends.Sum, x, x, 0) // x[i] = i+1 (not fused; runs after the group)
	fb.BinaryScalar(backends.Mul, y, x, 2, false)
	z := alloc(n)
	rev := backends.View{Buf: y.Buf, DType: backends.Float32, Shape: []int{n}, Strides: []int{-1}, Offset: n - 1}
	fb.BinaryScalar(backends.Add, z, rev, 1, false)
	got := read(z)
	for i, v := range got {
		if want := float32(2*(n-i) + 1); v != want {
			t.Fatalf("z[%d] = %v, want %v", i, v, want)
		}
	}
}

// TestFreedIntermediateIsNeverMaterialised frees a group's intermediate
// before the group runs: it must stay in tiles (its buffer keeps whatever
// it held) and the result must still be right.
func TestFreedIntermediateIsNeverMaterialised(t *testing.T) {
	fb := fusion.NewTiled(cpu.New(1), 256)
	const n = 3000
	mk := func() backends.View {
		buf, err := fb.Alloc(backends.Float64, n)
		if err != nil {
			t.Fatal(err)
		}
		return backends.Contiguous(buf, backends.Float64, n)
	}
	x, tmp, y := mk(), mk(), mk()
	fb.Fill(x, 0.5)
	fb.Unary(backends.Exp, tmp, x, 0, 0)
	fb.Binary(backends.Mul, y, tmp, x)
	fb.Free(tmp.Buf) // deferred: the group still names it
	if err := fb.Sync(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 8*n)
	if err := fb.Read(y.Buf, 0, out); err != nil {
		t.Fatal(err)
	}
	want := math.Exp(0.5) * 0.5
	if got := math.Float64frombits(binary.LittleEndian.Uint64(out[8*(n-1):])); got != want {
		t.Fatalf("y = %v, want %v", got, want)
	}

	if s := fb.Stats(); s.Scratch == 0 {
		t.Fatalf("the freed intermediate was written to memory: %+v", s)
	}
}

// TestParseFusedDevice checks the device names.
func TestParseFusedDevice(t *testing.T) {
	for _, name := range []string{"cpu+fused", "cpu+fused+autodiff", "cpu+autodiff+fused"} {
		d, err := tensor.ParseDevice(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !d.IsFused() || d.Same(tensor.CPU()) || !d.Same(tensor.CPU().Fused()) {
			t.Errorf("%s: fused %v, same as cpu %v", name, d.IsFused(), d.Same(tensor.CPU()))
		}
		if want := name != "cpu+fused"; d.IsAutodiff() != want {
			t.Errorf("%s: autodiff %v", name, d.IsAutodiff())
		}
		if d.Fused() != d {
			t.Errorf("%s: Fused of a fused device is another device", name)
		}
	}
}
