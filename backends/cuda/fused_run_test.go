//go:build !kiln_nocuda && linux

package cuda

import (
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
)

// fusedLaunches returns the fused kernels f has launched.
func fusedLaunches(f *fakeDriver) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, name := range f.launches {
		if strings.HasPrefix(name, "kiln_fused_") {
			out = append(out, name)
		}
	}
	return out
}

func TestRunGroupCompilesEachStructureOnce(t *testing.T) {
	f := newFakeDriver(0)
	comp := &fakeCompiler{major: 12, minor: 4}
	b, err := newBackend(f, comp, 0, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	alloc := func(n int) backends.Buffer {
		buf, err := b.Alloc(backends.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		return buf
	}
	for _, g := range []*backends.ElementwiseGroup{
		reluOfScaled(alloc(1000), alloc(1000), []int{1000}, []int{1}, 2),
		reluOfScaled(alloc(1000), alloc(1000), []int{40, 25}, []int{25, 1}, 0.5),
	} {
		if !b.RunGroup(g) {
			t.Fatalf("group refused:\n%s", g)
		}
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	got := fusedLaunches(f)
	if len(got) != 2 || got[0] != got[1] {
		t.Errorf("launched %v, want one kernel twice", got)
	}
	if comp.calls != 1 {
		t.Errorf("%d compilations, want 1", comp.calls)
	}
}

func TestRunGroupRefusesWhatItCannotRun(t *testing.T) {
	f := newFakeDriver(0)
	b := newFakeBackend(t, f)
	f32 := backends.Float32
	buf := func(dt backends.DType, n int) backends.Buffer {
		x, err := b.Alloc(dt, n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	x, y := buf(f32, 64), buf(f32, 64)
	mem := func(v backends.Buffer, dt backends.DType, load, store bool) backends.GroupValue {
		return backends.GroupValue{DType: dt, View: backends.Contiguous(v, dt, 64), Load: load, Store: store}
	}
	many := &backends.ElementwiseGroup{Shape: []int{64}}
	for i := range 600 {
		many.Values = append(many.Values, mem(x, f32, true, false))
		if i > 0 {
			many.Ops = append(many.Ops, backends.GroupOp{Kind: backends.GroupBinary, Binary: backends.Add, Out: 600, In: []int{0, i}})
		}
	}
	many.Values = append(many.Values, mem(y, f32, false, true))
	broadcastOut := mem(y, f32, false, true)
	broadcastOut.View.Strides = []int{0}
	cases := []struct {
		name string
		g    *backends.ElementwiseGroup
	}{
		{"a value read before anything writes it", &backends.ElementwiseGroup{Shape: []int{64},
			Values: []backends.GroupValue{{DType: f32}, mem(y, f32, false, true)},
			Ops:    []backends.GroupOp{{Kind: backends.GroupUnary, Unary: backends.Exp, Out: 1, In: []int{0}}}}},
		{"a buffer of another backend", reluOfScaled(mustAlloc(t, cpu.New(1), 64), y, []int{64}, []int{1}, 2)},
		{"a gradient of another dtype than its input", &backends.ElementwiseGroup{Shape: []int{64},
			Values: []backends.GroupValue{mem(x, f32, true, false), mem(buf(backends.Float64, 64), backends.Float64, true, false), mem(y, f32, false, true)},
			Ops:    []backends.GroupOp{{Kind: backends.GroupUnaryGrad, Unary: backends.Tanh, Out: 2, In: []int{0, 1}}}}},
		{"an output that writes one element many times", &backends.ElementwiseGroup{Shape: []int{64},
			Values: []backends.GroupValue{mem(x, f32, true, false), broadcastOut},
			Ops:    []backends.GroupOp{{Kind: backends.GroupUnary, Unary: backends.Exp, Out: 1, In: []int{0}}}}},
		{"more arguments than a launch takes", many},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if b.RunGroup(c.g) {
				t.Fatalf("accepted:\n%s", c.g)
			}
		})
	}
	if err := b.Sync(); err != nil {
		t.Errorf("a refused group left an error: %v", err)
	}
	if got := fusedLaunches(f); len(got) != 0 {
		t.Errorf("refused groups launched %v", got)
	}
}

func mustAlloc(t *testing.T, b backends.Backend, n int) backends.Buffer {
	t.Helper()
	buf, err := b.Alloc(backends.Float32, n)
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

// BenchmarkFusedHostCost measures what a composed GELU-tanh (nine ops)
// costs the host per call on a fake driver whose launches do nothing:
// nine per-op launches unfused, against recording, translating, keying
// and binding one fused launch. On a GPU, where each launch also costs the
// driver a few microseconds, this is the host side of the fused path.
func BenchmarkFusedHostCost(b *testing.B) {
	for _, fused := range []bool{false, true} {
		name := map[bool]string{false: "unfused", true: "fused"}[fused]
		b.Run(name, func(b *testing.B) {
			dev, err := newBackend(newFakeDriver(0), &fakeCompiler{major: 12, minor: 4}, 0, "", nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer dev.Close()
			var be backends.Backend = dev
			if fused {
				be = fusion.New(dev)
			}
			x, err := be.Alloc(backends.Float32, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			be.Write(x, 0, make([]byte, 4<<20))
			in := backends.Contiguous(x, backends.Float32, 1<<20)
			gelu := fusedCases()[0].build
			b.ResetTimer()
			for range b.N {
				c := &chain{b: be, in: []backends.View{in}}
				out := gelu(c)
				for _, buf := range c.tmps {
					if buf != out.Buf {
						be.Free(buf)
					}
				}
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
				be.Free(out.Buf)
			}
		})
	}
}
