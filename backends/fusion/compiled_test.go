package fusion_test

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
	"github.com/kiln-ml/kiln/tensor"
)

// groupCompiler is a CPU backend that also implements
// backends.GroupCompiler: it records every group it is offered and, when
// accepting, runs the group's ops one by one over whole views with the
// CPU's own kernels (values kept "in registers" get a temporary buffer),
// so results must equal the unfused CPU's bit for bit.
type groupCompiler struct {
	*cpu.Backend
	mu     sync.Mutex
	accept bool
	groups []*backends.ElementwiseGroup
}

func (c *groupCompiler) RunGroup(g *backends.ElementwiseGroup) bool {
	c.mu.Lock()
	c.groups = append(c.groups, g)
	accept := c.accept
	c.mu.Unlock()
	if err := g.Validate(); err != nil {
		panic(err) // the decorator handed over a malformed group
	}
	if !accept {
		return false
	}
	views := make([]backends.View, len(g.Values))
	var temps []backends.Buffer
	for i, v := range g.Values {
		if v.InMemory() {
			views[i] = v.View
			continue
		}
		buf, err := c.Alloc(v.DType, backends.NumElements(g.Shape))
		if err != nil {
			panic(err)
		}
		temps = append(temps, buf)
		views[i] = backends.Contiguous(buf, v.DType, g.Shape...)
	}
	for _, op := range g.Ops {
		out, in := views[op.Out], make([]backends.View, len(op.In))
		for k, v := range op.In {
			in[k] = views[v]
		}
		switch op.Kind {
		case backends.GroupFill:
			c.Fill(out, op.P0)
		case backends.GroupCopy:
			c.Copy(out, in[0])
		case backends.GroupUnary:
			c.Unary(op.Unary, out, in[0], op.P0, op.P1)
		case backends.GroupUnaryGrad:
			c.UnaryGrad(op.Unary, out, in[0], in[1], op.P0, op.P1)
		case backends.GroupBinary:
			c.Binary(op.Binary, out, in[0], in[1])
		case backends.GroupScalar:
			c.BinaryScalar(op.Binary, out, in[0], op.P0, op.Reverse)
		case backends.GroupWhere:
			c.Where(out, in[0], in[1], in[2])
		}
	}
	for _, buf := range temps {
		c.Free(buf)
	}
	return true
}

// offered returns the groups offered since the last call.
func (c *groupCompiler) offered() []*backends.ElementwiseGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups
	c.groups = nil
	return g
}

var compilerDevice = &groupCompiler{Backend: cpu.New(1)}

// compilerDriver serves compilerDevice as device kind "groupcompiler".
type compilerDriver struct{}

func (compilerDriver) Kind() string  { return "groupcompiler" }
func (compilerDriver) Priority() int { return -100 }
func (compilerDriver) Enumerate() []backends.DeviceInfo {
	return []backends.DeviceInfo{{Kind: "groupcompiler", Name: "test group compiler"}}
}
func (compilerDriver) Open(int) (backends.Backend, error) { return compilerDevice, nil }

func init() { backends.Register(compilerDriver{}) }

// counts returns how many values of g live only in the group, are
// loaded, and are stored.
func counts(g *backends.ElementwiseGroup) (registers, loads, stores int) {
	for _, v := range g.Values {
		switch {
		case !v.InMemory():
			registers++
		case v.Load && v.Store:
			loads++
			stores++
		case v.Load:
			loads++
		case v.Store:
			stores++
		}
	}
	return
}

// TestGroupReachesCompiler drives tensor ops through
// ParseDevice("groupcompiler+fused") and checks the group the decorator
// hands the inner backend: which values live in memory, which only in the
// group, the ops in order; and that the results are the unfused CPU's,
// whether the inner backend runs the group (true) or refuses it (false,
// and the decorator runs it tile by tile).
func TestGroupReachesCompiler(t *testing.T) {
	dev, err := tensor.ParseDevice("groupcompiler+fused")
	if err != nil {
		t.Fatal(err)
	}
	fb := fusedBackend(t, dev)
	cases := []struct {
		name             string
		shape            []int
		f                func(x, y *tensor.Tensor) *tensor.Tensor
		ops              []string // the group's ops as "kind op"
		registers, loads int
	}{
		{"composed GELU-tanh", []int{3, 1001}, func(x, _ *tensor.Tensor) *tensor.Tensor { return geluTanh(x) },
			[]string{"binary mul", "scalar mul", "scalar add", "binary mul", "scalar mul", "unary tanh", "scalar add", "binary mul", "scalar mul"}, 8, 1},
		{"user's swish", []int{5000}, func(x, _ *tensor.Tensor) *tensor.Tensor { return swish(x) },
			[]string{"scalar mul", "unary exp", "scalar add", "binary div"}, 3, 1},
		{"broadcast bias add then relu", []int{30, 129}, func(x, y *tensor.Tensor) *tensor.Tensor {
			return x.Add(y.Narrow(0, 0, 1)).Relu()
		}, []string{"binary add", "unary relu"}, 1, 2},
		{"where with a mask", []int{2000}, func(x, y *tensor.Tensor) *tensor.Tensor {
			return tensor.Where(x.Gt(y), x.Square(), y.Neg()).AddScalar(0.5)
		}, []string{"binary gt", "unary square", "unary neg", "where", "scalar add"}, 4, 2},
	}
	for _, accept := range []bool{true, false} {
		for i, tc := range cases {
			name := tc.name + map[bool]string{true: ", compiled", false: ", refused"}[accept]
			t.Run(name, func(t *testing.T) {
				compilerDevice.mu.Lock()
				compilerDevice.accept = accept
				compilerDevice.mu.Unlock()
				n := backends.NumElements(tc.shape)
				xs, ys := randomData(n, uint64(i)), randomData(n, uint64(i)+7)
				run := func(d tensor.Device) []float64 {
					var out []float64
					tensor.Scope(func() {
						x := tensor.FromFloat32s(d, f32s(xs), tc.shape...)
						y := tensor.FromFloat32s(d, f32s(ys), tc.shape...)
						if err := d.Sync(); err != nil {
							t.Fatal(err)
						}
						compilerDevice.offered()
						out = tensor.ScopeResult(func() *tensor.Tensor { return tc.f(x, y) }).Float64s()
					})
					return out
				}
				before := fb.Stats()
				want, got := run(tensor.CPU()), run(dev)
				for k := range want {
					if math.Float64bits(want[k]) != math.Float64bits(got[k]) {
						t.Fatalf("element %d: fused %v, unfused %v", k, got[k], want[k])
					}
				}
				groups := compilerDevice.offered()
				if len(groups) != 1 {
					t.Fatalf("%d groups offered, want 1", len(groups))
				}
				g := groups[0]
				var ops []string
				for _, op := range g.Ops {
					s := op.Kind.String()
					switch op.Kind {
					case backends.GroupUnary:
						s += " " + backends.UnaryOps[op.Unary].Name
					case backends.GroupBinary, backends.GroupScalar:
						s += " " + backends.BinaryOps[op.Binary].Name
					}
					ops = append(ops, s)
				}
				if strings.Join(ops, ", ") != strings.Join(tc.ops, ", ") {
					t.Errorf("ops %v, want %v\n%s", ops, tc.ops, g)
				}
				regs, loads, stores := counts(g)
				if regs != tc.registers || loads != tc.loads || stores != 1 {
					t.Errorf("%d values in registers, %d loaded, %d stored; want %d, %d, 1\n%s", regs, loads, stores, tc.registers, tc.loads, g)
				}
				after := fb.Stats()
				if tiled := after.Tiles > before.Tiles; tiled == accept {
					t.Errorf("tiles run: %v, but the compiler accepted: %v", tiled, accept)
				}
			})
		}
	}
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// TestGroupValuesFollowBuffers checks the translation of buffers at the
// backend level: a buffer updated in place is one value both loaded and
// stored; a buffer read through two views is two values; a buffer written
// and freed before the group runs lives only in the group, while one freed
// after its earlier contents were read keeps its memory.
func TestGroupValuesFollowBuffers(t *testing.T) {
	inner := &groupCompiler{Backend: cpu.New(1), accept: true}
	fb := fusion.New(inner)
	f32 := backends.Float32
	alloc := func(n int) backends.Buffer {
		buf, err := fb.Alloc(f32, n)
		if err != nil {
			t.Fatal(err)
		}
		fb.Write(buf, 0, make([]byte, 4*n))
		return buf
	}
	p, g, two := alloc(8), alloc(8), alloc(16)
	tmp, _ := fb.Alloc(f32, 8)
	pv, gv, tv := backends.Contiguous(p, f32, 8), backends.Contiguous(g, f32, 8), backends.Contiguous(tmp, f32, 8)
	lo := backends.Contiguous(two, f32, 8)
	hi := lo
	hi.Offset = 8
	fb.BinaryScalar(backends.Mul, pv, pv, 0.9, false) // p *= 0.9: in place
	fb.Binary(backends.Add, tv, lo, hi)               // tmp = lo + hi
	fb.Binary(backends.Mul, tv, tv, gv)               // tmp *= g
	fb.Binary(backends.Sub, pv, pv, tv)               // p -= tmp
	fb.Free(tmp)
	if err := fb.Sync(); err != nil {
		t.Fatal(err)
	}
	groups := inner.offered()
	if len(groups) != 1 {
		t.Fatalf("%d groups, want 1", len(groups))
	}
	grp := groups[0]
	want := []struct {
		buf         backends.Buffer
		offset      int
		load, store bool
	}{{p, 0, true, true}, {two, 0, true, false}, {two, 8, true, false}, {nil, 0, false, false}, {g, 0, true, false}}
	if len(grp.Values) != len(want) {
		t.Fatalf("%d values, want %d\n%s", len(grp.Values), len(want), grp)
	}
	for i, w := range want {
		v := grp.Values[i]
		inMemory := w.buf != nil
		if v.InMemory() != inMemory || v.Load != w.load || v.Store != w.store || (inMemory && v.View.Offset != w.offset) {
			t.Errorf("value %d: %+v, want buffer %v offset %d load %v store %v\n%s", i, v, inMemory, w.offset, w.load, w.store, grp)
		}
	}
	if grp.Ops[0].Out != 0 || grp.Ops[0].In[0] != 0 || grp.Ops[3].Out != 0 {
		t.Errorf("the in-place update does not read and write one value:\n%s", grp)
	}
}
