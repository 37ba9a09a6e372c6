package autodiff

import "testing"

// scalar gradients as float64 values let the engine be tested without tensors.
type floatOps struct{ released int }

func (o *floatOps) Add(a, b Value) Value { return a.(float64) + b.(float64) }
func (o *floatOps) Release(Value)        { o.released++ }

func TestBackwardAccumulatesThroughDiamond(t *testing.T) {
	// y = a·b + a with a = 3, b = 4: dy/da = b + 1 = 5, dy/db = a = 3.
	a := NewLeaf(nil, "float64", true)
	b := NewLeaf(nil, "float64", true)
	mul := NewNode("mul", nil, []*Node{a, b}, nil, "float64", func(g Value) []Value {
		return []Value{g.(float64) * 4, g.(float64) * 3}
	})
	add := NewNode("add", nil, []*Node{mul, a}, nil, "float64", func(g Value) []Value { return []Value{g, g} })
	ops := &floatOps{}
	grads := Backward(add, 1.0, ops)
	if grads[a] != 5.0 || grads[b] != 3.0 {
		t.Fatalf("grads a=%v b=%v, want 5 and 3", grads[a], grads[b])
	}
	if len(grads) != 2 {
		t.Fatalf("got %d gradients, want the 2 leaves only", len(grads))
	}
}

func TestConstantInputsAreSkipped(t *testing.T) {
	c := NewLeaf(nil, "float64", false)
	x := NewLeaf(nil, "float64", true)
	called := 0
	n := NewNode("mul", nil, []*Node{c, x}, nil, "float64", func(g Value) []Value {
		called++
		return []Value{nil, g}
	})
	grads := Backward(n, 2.0, &floatOps{})
	if called != 1 || grads[x] != 2.0 || grads[c] != nil {
		t.Fatalf("called %d, grads %v", called, grads)
	}
	// A node with no input requiring gradients keeps no backward rule.
	k := NewNode("neg", nil, []*Node{c}, nil, "float64", func(Value) []Value { panic("must not run") })
	if k.RequiresGrad || k.backward != nil {
		t.Fatal("constant node kept a backward rule")
	}
}

func TestDeepChainDoesNotOverflow(t *testing.T) {
	x := NewLeaf(nil, "float64", true)
	n := x
	for range 100000 {
		n = NewNode("id", nil, []*Node{n}, nil, "float64", func(g Value) []Value { return []Value{g} })
	}
	if g := Backward(n, 1.0, &floatOps{}); g[x] != 1.0 {
		t.Fatalf("gradient through 100000 nodes = %v", g[x])
	}
}

func TestWalkVisitsInputsFirst(t *testing.T) {
	a := NewLeaf(nil, "f", false)
	b := NewNode("b", nil, []*Node{a}, nil, "f", nil)
	c := NewNode("c", nil, []*Node{a, b}, nil, "f", nil)
	var order []string
	Walk([]*Node{c}, func(n *Node) { order = append(order, n.Op) })
	if len(order) != 3 || order[0] != "leaf" || order[1] != "b" || order[2] != "c" {
		t.Fatalf("order %v", order)
	}
}
