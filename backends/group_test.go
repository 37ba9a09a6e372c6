package backends

import (
	"errors"
	"strings"
	"testing"
)

// sized is a buffer of n bytes for groups that are only checked.
type sized int64

func (s sized) Bytes() int64 { return int64(s) }

func TestElementwiseGroupValidate(t *testing.T) {
	x, y := sized(40), sized(44) // distinct sizes: distinct buffers
	in := GroupValue{DType: Float32, View: Contiguous(x, Float32, 10), Load: true}
	out := GroupValue{DType: Float32, View: Contiguous(y, Float32, 10), Store: true}
	tmp := GroupValue{DType: Float32}
	chain := []GroupOp{
		{Kind: GroupUnary, Unary: Exp, Out: 1, In: []int{0}},
		{Kind: GroupBinary, Binary: Add, Out: 2, In: []int{1, 0}},
	}
	ok := &ElementwiseGroup{Shape: []int{10}, Values: []GroupValue{in, tmp, out}, Ops: chain}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a well-formed group: %v", err)
	}
	with := func(edit func(g *ElementwiseGroup)) *ElementwiseGroup {
		g := &ElementwiseGroup{Shape: []int{10}, Values: []GroupValue{in, tmp, out}}
		for _, op := range chain {
			op.In = append([]int(nil), op.In...)
			g.Ops = append(g.Ops, op)
		}
		edit(g)
		return g
	}
	cases := []struct {
		name, want string
		g          *ElementwiseGroup
	}{
		{"too few inputs", "op 1 (binary): 1 inputs, want 2", with(func(g *ElementwiseGroup) { g.Ops[1].In = g.Ops[1].In[:1] })},
		{"a value out of range", "op 0 (unary): value 7 out of range", with(func(g *ElementwiseGroup) { g.Ops[0].In[0] = 7 })},
		{"an unknown unary op", "op 0: unknown unary op", with(func(g *ElementwiseGroup) { g.Ops[0].Unary = 250 })},
		{"a read before any write", "op 0 (unary) reads value 1 before anything writes it", with(func(g *ElementwiseGroup) { g.Ops[0].In[0] = 1 })},
		{"a stored value nobody writes", "value 0: stored but never written", with(func(g *ElementwiseGroup) { g.Values[0].Store = true })},
		{"a register value loaded", "value 1: loaded or stored without memory", with(func(g *ElementwiseGroup) { g.Values[1].Load = true })},
		{"a view outside its buffer", "reaches outside its 40-byte buffer", with(func(g *ElementwiseGroup) { g.Values[0].View.Offset = 1 })},
		{"a view of another shape", "group shape [10]", with(func(g *ElementwiseGroup) { g.Values[2].View = Contiguous(y, Float32, 2, 5) })},
		{"a view of another dtype", "view dtype float64", with(func(g *ElementwiseGroup) { g.Values[0].View.DType = Float64 })},
		{"a written view that overlaps itself", "maps two elements to one address", with(func(g *ElementwiseGroup) {
			g.Shape = []int{2, 5}
			g.Values[0].View = View{Buf: x, DType: Float32, Shape: []int{2, 5}, Strides: []int{5, 1}}
			g.Values[2].View = View{Buf: y, DType: Float32, Shape: []int{2, 5}, Strides: []int{1, 1}}
		})},
		{"a written buffer read through a second value", "share a buffer that the group writes", with(func(g *ElementwiseGroup) {
			g.Values[0].View.Buf = y
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.g.Validate()
			if !errors.Is(err, ErrGroup) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want ErrGroup saying %q", err, c.want)
			}
		})
	}
	// A broadcast input (stride 0) is fine: only written views must not overlap.
	b := with(func(g *ElementwiseGroup) {
		g.Values[0].View = View{Buf: x, DType: Float32, Shape: []int{10}, Strides: []int{0}}
	})
	if err := b.Validate(); err != nil {
		t.Errorf("a broadcast input: %v", err)
	}
}
