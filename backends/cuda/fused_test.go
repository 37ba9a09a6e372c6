//go:build !kiln_nocuda

package cuda

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
	"github.com/kiln-ml/kiln/internal/conformance"
)

// chain issues element-wise calls on one backend, allocating each result.
type chain struct {
	b    backends.Backend
	in   []backends.View
	tmps []backends.Buffer
}

func (c *chain) tmp(dt backends.DType, shape []int) backends.View {
	buf, err := c.b.Alloc(dt, backends.NumElements(shape))
	if err != nil {
		panic(err)
	}
	c.tmps = append(c.tmps, buf)
	return backends.Contiguous(buf, dt, slices.Clone(shape)...)
}

func (c *chain) unary(op backends.UnaryOp, x backends.View, p0, p1 float64) backends.View {
	dt := x.DType
	if backends.UnaryOps[op].Predicate {
		dt = backends.Bool
	}
	out := c.tmp(dt, x.Shape)
	c.b.Unary(op, out, x, p0, p1)
	return out
}

func (c *chain) binary(op backends.BinaryOp, x, y backends.View) backends.View {
	dt := x.DType
	if backends.BinaryOps[op].Predicate {
		dt = backends.Bool
	}
	out := c.tmp(dt, x.Shape)
	c.b.Binary(op, out, x, y)
	return out
}

func (c *chain) scalar(op backends.BinaryOp, x backends.View, s float64) backends.View {
	out := c.tmp(x.DType, x.Shape)
	c.b.BinaryScalar(op, out, x, s, false)
	return out
}

func (c *chain) cast(x backends.View, dt backends.DType) backends.View {
	out := c.tmp(dt, x.Shape)
	c.b.Copy(out, x)
	return out
}

// fusedInput is one input of a fusedCase: values in [lo, hi) (small
// integers for integer dtypes).
type fusedInput struct {
	dt     backends.DType
	shape  []int
	lo, hi float64
}

// fusedCase is a chain of element-wise calls.
type fusedCase struct {
	name   string
	inputs []fusedInput
	build  func(c *chain) backends.View
}

func fusedCases() []fusedCase {
	f32, f16, bf16, f64 := backends.Float32, backends.Float16, backends.BFloat16, backends.Float64
	geluTanh := func(c *chain, x backends.View) backends.View { // nine primitives, as a user composes it
		t := c.binary(backends.Mul, x, x)
		t = c.scalar(backends.Mul, t, 0.044715)
		t = c.scalar(backends.Add, t, 1)
		t = c.binary(backends.Mul, t, x)
		t = c.scalar(backends.Mul, t, 0.7978845608028654)
		t = c.unary(backends.Tanh, t, 0, 0)
		t = c.scalar(backends.Add, t, 1)
		t = c.binary(backends.Mul, t, x)
		return c.scalar(backends.Mul, t, 0.5)
	}
	return []fusedCase{
		{"composed GELU-tanh, ragged size", []fusedInput{{f32, []int{3, 337}, -5, 5}},
			func(c *chain) backends.View { return geluTanh(c, c.in[0]) }},
		{"composed GELU-tanh in float64", []fusedInput{{f64, []int{555}, -5, 5}},
			func(c *chain) backends.View { return geluTanh(c, c.in[0]) }},
		{"user's swish", []fusedInput{{f32, []int{1000}, -8, 8}},
			func(c *chain) backends.View {
				x := c.in[0]
				return c.binary(backends.Div, x, c.scalar(backends.Add, c.unary(backends.Exp, c.scalar(backends.Mul, x, -1.5), 0, 0), 1))
			}},
		{"broadcast bias add then relu", []fusedInput{{f32, []int{37, 29}, -3, 3}, {f32, []int{29}, -1, 1}},
			func(c *chain) backends.View {
				x, b := c.in[0], c.in[1]
				bias := backends.View{Buf: b.Buf, DType: f32, Shape: []int{37, 29}, Strides: []int{0, 1}}
				t := c.unary(backends.Relu, c.binary(backends.Add, x, bias), 0, 0)
				return c.binary(backends.Sub, c.scalar(backends.Mul, t, 2), x)
			}},
		{"where with a computed mask", []fusedInput{{f32, []int{501}, -2, 2}, {f32, []int{501}, -2, 2}},
			func(c *chain) backends.View {
				x, y := c.in[0], c.in[1]
				mask := c.binary(backends.Gt, x, y)
				out := c.tmp(f32, x.Shape)
				c.b.Where(out, mask, c.unary(backends.Square, x, 0, 0), c.unary(backends.Neg, y, 0, 0))
				return c.scalar(backends.Add, out, 0.5)
			}},
		{"where with a mask from memory", []fusedInput{{backends.Bool, []int{300}, 0, 0}, {f32, []int{300}, -2, 2}, {f32, []int{300}, -2, 2}},
			func(c *chain) backends.View {
				out := c.tmp(f32, []int{300})
				c.b.Where(out, c.in[0], c.scalar(backends.Mul, c.in[1], 2), c.in[2])
				return c.unary(backends.Exp, out, 0, 0)
			}},
		{"float16 intermediates round as stored", []fusedInput{{f16, []int{777}, -4, 4}, {f16, []int{777}, -4, 4}},
			func(c *chain) backends.View {
				x, y := c.in[0], c.in[1]
				t := c.unary(backends.Sigmoid, c.binary(backends.Add, c.scalar(backends.Mul, x, 1.5), y), 0, 0)
				return c.binary(backends.Mul, t, y)
			}},
		{"bfloat16 GELU-tanh op", []fusedInput{{bf16, []int{777}, -4, 4}, {bf16, []int{777}, -4, 4}},
			func(c *chain) backends.View {
				x, y := c.in[0], c.in[1]
				return c.binary(backends.Mul, c.unary(backends.GeluTanh, x, 0, 0), c.scalar(backends.Sub, y, 0.25))
			}},
		{"transposed input and broadcast column", []fusedInput{{f32, []int{13, 17}, -2, 2}, {f32, []int{17}, -1, 1}},
			func(c *chain) backends.View {
				xt := backends.View{Buf: c.in[0].Buf, DType: f32, Shape: []int{17, 13}, Strides: []int{1, 17}}
				col := backends.View{Buf: c.in[1].Buf, DType: f32, Shape: []int{17, 13}, Strides: []int{1, 0}}
				return c.unary(backends.Tanh, c.binary(backends.Mul, c.unary(backends.Exp, xt, 0, 0), col), 0, 0)
			}},
		{"offset views of one buffer", []fusedInput{{f32, []int{2, 400}, -3, 3}},
			func(c *chain) backends.View {
				lo := backends.View{Buf: c.in[0].Buf, DType: f32, Shape: []int{400}, Strides: []int{1}}
				hi := backends.View{Buf: c.in[0].Buf, DType: f32, Shape: []int{400}, Strides: []int{1}, Offset: 400}
				return c.binary(backends.Maximum, c.unary(backends.Sin, lo, 0, 0), hi)
			}},
		{"casts inside the chain", []fusedInput{{f32, []int{500}, 0, 3}},
			func(c *chain) backends.View {
				t := c.cast(c.unary(backends.Exp, c.cast(c.scalar(backends.Mul, c.in[0], 1.25), f64), 0, 0), f32)
				return c.unary(backends.Sqrt, t, 0, 0)
			}},
		{"in-place update of a loaded buffer", []fusedInput{{f32, []int{300}, -1, 1}, {f32, []int{300}, -1, 1}},
			func(c *chain) backends.View {
				x, g := c.in[0], c.in[1]
				c.b.BinaryScalar(backends.Mul, x, x, 0.9, false)
				c.b.Binary(backends.Add, x, x, c.scalar(backends.Mul, g, 0.1))
				return x
			}},
		{"op parameters, a fill and a reversed scalar", []fusedInput{{f32, []int{640}, -6, 6}},
			func(c *chain) backends.View {
				s := c.unary(backends.Clamp, c.unary(backends.Softplus, c.in[0], 2, 3), -1, 1.5)
				three := c.tmp(f32, s.Shape)
				c.b.Fill(three, 3)
				r := c.tmp(f32, s.Shape)
				c.b.BinaryScalar(backends.Sub, r, c.binary(backends.Mul, s, three), 1, true)
				return r
			}},
		{"gradient of GELU-tanh", []fusedInput{{f64, []int{400}, -4, 4}, {f64, []int{400}, -1, 1}},
			func(c *chain) backends.View {
				out := c.tmp(f64, c.in[0].Shape)
				c.b.UnaryGrad(backends.GeluTanh, out, c.in[0], c.in[1], 0, 0)
				return c.binary(backends.Mul, out, c.in[0])
			}},
		{"int32 arithmetic and a predicate", []fusedInput{{backends.Int32, []int{99}, 0, 0}, {backends.Int32, []int{99}, 0, 0}},
			func(c *chain) backends.View {
				t := c.unary(backends.Abs, c.scalar(backends.Add, c.binary(backends.Mul, c.in[0], c.in[1]), 3), 0, 0)
				return c.binary(backends.Ge, t, c.in[1])
			}},
	}
}

// compareFused runs each case three ways — on the CPU backend, on
// dev op by op, and on dev behind the fusing decorator, where each chain
// becomes one generated kernel — and requires the fused results to equal
// the unfused ones bit for bit, and both to be within the conformance
// suite's tolerance of the CPU's (whose float32 transcendental kernels
// are not libm's). launched, when not nil, lists the kernels dev has
// launched so far: each fused chain must have launched one fused kernel.
func compareFused(t *testing.T, dev *Backend, launched func() []string, cases []fusedCase) {
	fb := fusion.New(dev)
	type side struct {
		b      backends.Backend
		chains []*chain
		outs   []backends.View
	}
	sides := []*side{{b: cpu.New(1)}, {b: dev}, {b: fb}}
	// Every input is written before any kernel runs, so that an emulator
	// builds one program for all the launches.
	for _, s := range sides {
		for ci, c := range cases {
			ch := &chain{b: s.b}
			for k, in := range c.inputs {
				n := backends.NumElements(in.shape)
				buf, err := s.b.Alloc(in.dt, n)
				if err != nil {
					t.Fatal(err)
				}
				s.b.Write(buf, 0, conformance.Encode(in.dt, conformance.Values(in.dt, n, in.lo, in.hi, 10*ci+k)))
				ch.in = append(ch.in, backends.Contiguous(buf, in.dt, in.shape...))
			}
			s.chains = append(s.chains, ch)
		}
	}
	launches := make([][]string, len(cases))
	for ci, c := range cases {
		for si, s := range sides {
			ch := s.chains[ci]
			mark := 0
			if launched != nil {
				dev.thread.call(func() {}) // the launches queued so far have reached the driver
				mark = len(launched())
			}
			out := c.build(ch)
			s.outs = append(s.outs, out)
			if si == 2 {
				for _, buf := range ch.tmps {
					if buf != out.Buf {
						fb.Free(buf) // the chain's intermediates: kept in registers
					}
				}
				fb.Flush()
				if launched != nil {
					dev.thread.call(func() {})
					launches[ci] = launched()[mark:]
				}
			}
		}
	}
	read := func(s *side, ci int) []byte {
		v := s.outs[ci]
		out := make([]byte, v.Buf.Bytes())
		if err := s.b.Read(v.Buf, 0, out); err != nil {
			t.Fatalf("reading %s: %v", cases[ci].name, err)
		}
		return out
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, unfused, fused := read(sides[0], ci), read(sides[1], ci), read(sides[2], ci)
			if launched != nil && (len(launches[ci]) != 1 || !strings.HasPrefix(launches[ci][0], "kiln_fused_")) {
				t.Errorf("fused chain launched %v, want one fused kernel", launches[ci])
			}
			dt := sides[1].outs[ci].DType
			if err := conformance.WithinTolerance(conformance.Case{DType: dt}, dt, want, unfused); err != nil {
				t.Errorf("unfused CUDA against the CPU: %v", err)
			}
			if !bytes.Equal(fused, unfused) {
				g, w := conformance.Decode(dt, fused), conformance.Decode(dt, unfused)
				for i := range w {
					if g[i] != w[i] {
						t.Fatalf("element %d: fused %v, unfused %v (%s)", i, g[i], w[i], dt)
					}
				}
			}
		})
	}
	if err := fb.Sync(); err != nil {
		t.Fatal(err)
	}
}

// hostBytes is a stand-in buffer for tests that only lay groups out.
type hostBytes int64

func (h hostBytes) Bytes() int64 { return int64(h) }

func TestFusedLayoutMergesAndClassifies(t *testing.T) {
	f32 := backends.Float32
	buf := hostBytes(1 << 20)
	view := func(shape, strides []int) backends.View {
		return backends.View{Buf: buf, DType: f32, Shape: shape, Strides: strides}
	}
	cases := []struct {
		name    string
		shape   []int
		views   [][]int // strides of each value in memory
		merged  []int
		classes []fusedClass
	}{
		{"contiguous dimensions merge into one", []int{4, 5, 6}, [][]int{{30, 6, 1}, {30, 6, 1}},
			[]int{120}, []fusedClass{fusedDense, fusedDense}},
		{"size-1 dimensions go", []int{1, 50, 1}, [][]int{{50, 1, 1}, {7, 1, 3}},
			[]int{50}, []fusedClass{fusedDense, fusedDense}},
		{"a broadcast bias keeps rows and columns apart", []int{37, 29}, [][]int{{29, 1}, {0, 1}},
			[]int{37, 29}, []fusedClass{fusedDense, fusedStrided}},
		{"one element broadcast everywhere", []int{37, 29}, [][]int{{29, 1}, {0, 0}},
			[]int{1073}, []fusedClass{fusedDense, fusedBroadcast}},
		{"a transposed input", []int{17, 13}, [][]int{{13, 1}, {1, 17}},
			[]int{17, 13}, []fusedClass{fusedDense, fusedStrided}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &backends.ElementwiseGroup{Shape: c.shape}
			for _, st := range c.views {
				g.Values = append(g.Values, backends.GroupValue{DType: f32, View: view(c.shape, st), Load: true})
			}
			g.Values = append(g.Values, backends.GroupValue{DType: f32}) // in registers: no say in merging
			l := layoutGroup(g)
			if !slices.Equal(l.shape, c.merged) {
				t.Errorf("merged shape %v, want %v", l.shape, c.merged)
			}
			if got := l.class[:len(c.views)]; !slices.Equal(got, c.classes) || l.class[len(c.views)] != fusedRegister {
				t.Errorf("classes %v, want %v then a register", l.class, c.classes)
			}
		})
	}
}

// reluOfScaled is the group y = relu(x·s) over shape, with x in memory
// through strides, the product kept in registers, and y stored.
func reluOfScaled(x, y backends.Buffer, shape, strides []int, s float64) *backends.ElementwiseGroup {
	f32 := backends.Float32
	return &backends.ElementwiseGroup{
		Shape: shape,
		Values: []backends.GroupValue{
			{DType: f32, View: backends.View{Buf: x, DType: f32, Shape: shape, Strides: strides}, Load: true},
			{DType: f32},
			{DType: f32, View: backends.Contiguous(y, f32, shape...), Store: true},
		},
		Ops: []backends.GroupOp{
			{Kind: backends.GroupScalar, Binary: backends.Mul, P0: s, Out: 1, In: []int{0}},
			{Kind: backends.GroupUnary, Unary: backends.Relu, Out: 2, In: []int{1}},
		},
	}
}

func TestFusedKernelKeyIsTheStructure(t *testing.T) {
	buf := hostBytes(1 << 20)
	g := reluOfScaled(buf, buf+1, []int{1000}, []int{1}, 2)
	p := fusedProgramFor(g, layoutGroup(g))
	if p.err != nil {
		t.Fatal(p.err)
	}
	// Other buffers, sizes and scalars: the same kernel.
	same := reluOfScaled(buf+2, buf+3, []int{40, 25}, []int{25, 1}, -3)
	if q := fusedProgramFor(same, layoutGroup(same)); q != p {
		t.Errorf("a group of the same structure got kernel %s, want %s", q.k.Name, p.k.Name)
	}
	// A strided input: another kernel.
	tr := reluOfScaled(buf, buf+1, []int{40, 25}, []int{1, 40}, 2)
	q := fusedProgramFor(tr, layoutGroup(tr))
	if q.k.Name == p.k.Name {
		t.Error("a transposed input reused the contiguous kernel")
	}
	if !strings.Contains(q.k.Source, "unsigned int r_ = (unsigned int)i;") {
		t.Errorf("a small strided group does not compute coordinates in 32 bits:\n%s", q.k.Source)
	}
	// The intermediate lives in a register: the kernel takes two pointers
	// (input and output), the scalars and the size, and no view.
	src := p.k.Source[strings.Index(p.k.Source, "extern \"C\""):]
	if got := strings.Count(src, "* __restrict__"); got != 2 || strings.Contains(src, "KView") {
		t.Errorf("kernel takes %d pointers (want 2) or views:\n%s", got, src)
	}
	if !strings.Contains(src, "kiln_keep(t0)") {
		t.Errorf("no contraction fence after the first op:\n%s", src)
	}
}
