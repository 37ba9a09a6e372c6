package tensor_test

import (
	"errors"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// TestTraceInputRecordsGradientFreeOps checks that the ops carrying no
// gradient record a node on a traced tensor (with the attributes an
// exporter needs), that their results are traced in turn, and that none of
// them records outside a trace, on a tensor that requires gradients or not.
func TestTraceInputRecordsGradientFreeOps(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		cases := []struct {
			name  string
			op    string
			fn    func(x, k *tensor.Tensor) *tensor.Tensor
			attrs map[string]any
		}{
			{"Lt", "lt", func(x, k *tensor.Tensor) *tensor.Tensor { return x.Lt(k) }, map[string]any{"dtype": "float32"}},
			{"EqScalar on int64", "eq_scalar", func(_, k *tensor.Tensor) *tensor.Tensor { return k.EqScalar(2) },
				map[string]any{"dtype": "int64", "scalar": 2.0}},
			{"LtScalar fractional on int64", "lt_scalar", func(_, k *tensor.Tensor) *tensor.Tensor { return k.LtScalar(1.5) },
				map[string]any{"dtype": "float32", "scalar": 1.5}},
			{"LogicalAnd", "logical_and", func(x, k *tensor.Tensor) *tensor.Tensor { return x.GtScalar(0).LogicalAnd(k) },
				map[string]any{"dtype": "bool"}},
			{"LogicalNot", "logical_not", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.LogicalNot() }, nil},
			{"To int32", "cast", func(_, k *tensor.Tensor) *tensor.Tensor { return k.To(tensor.Int32) }, map[string]any{"dtype": "int32"}},
			{"AnyKeep", "any", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.GtScalar(0).AnyKeep(1) },
				map[string]any{"axes": []int{1}, "keepdim": true}},
			{"All", "all", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.All() }, map[string]any{"axes": []int{0, 1}, "keepdim": false}},
			{"OneHot", "one_hot", func(_, k *tensor.Tensor) *tensor.Tensor { return k.OneHot(4) }, map[string]any{"num_classes": 4}},
			{"Detach", "detach", func(x, _ *tensor.Tensor) *tensor.Tensor { return x.Detach() }, nil},
			{"integer arithmetic", "add_scalar", func(_, k *tensor.Tensor) *tensor.Tensor { return k.AddScalar(1) }, map[string]any{"scalar": 1.0}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				tensor.Scope(func() {
					x := tensor.FromFloat32s(ad, []float32{-1, 0.5, 2, 0, 3, -4}, 2, 3).RequireGrad()
					k := tensor.FromInt64s(ad, []int64{0, 2, 1, 3, 2, 0}, 2, 3)
					if out := c.fn(x, k); out.IsTraced() || out.Node() != nil && c.op != "add_scalar" && c.op != "detach" {
						t.Errorf("untraced %s recorded %v", c.name, out.Node())
					}
					out := c.fn(x.TraceInput(), k.TraceInput())
					n := out.Node()
					if n == nil || n.Op != c.op {
						t.Fatalf("traced %s: node %v, want op %q", c.name, n, c.op)
					}
					if !out.IsTraced() {
						t.Errorf("the result of a traced %s is not traced", c.name)
					}
					for key, want := range c.attrs {
						if got := n.Attrs[key]; !equalAttr(got, want) {
							t.Errorf("attribute %s = %v, want %v", key, got, want)
						}
					}
					if out.RequiresGrad() || n.RequiresGrad {
						t.Errorf("%s of a traced tensor requires a gradient", c.name)
					}
				})
			})
		}
	})
}

func equalAttr(a, b any) bool {
	as, ok1 := a.([]int)
	bs, ok2 := b.([]int)
	if ok1 && ok2 {
		if len(as) != len(bs) {
			return false
		}
		for i := range as {
			if as[i] != bs[i] {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestTraceInputKeepsGradients checks that tracing changes no gradient: a
// Huber-like loss whose branch mask comes from a comparison, a gather at
// integer indices and a detached factor have the same gradients traced or
// not, and the detached factor passes none back.
func TestTraceInputKeepsGradients(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		loss := func(trace bool) []float64 {
			var g []float64
			tensor.Scope(func() {
				ad := dev.Autodiff()
				x := tensor.FromFloat32s(ad, []float32{-1.5, 0.25, 2, -0.5, 3, -4}, 2, 3).RequireGrad()
				k := tensor.FromInt64s(ad, []int64{0, 2}, 2, 1)
				xs, ks := x, k
				if trace {
					xs, ks = x.TraceInput(), k.TraceInput()
				}
				z := xs.Abs()
				l := tensor.Where(z.LtScalar(1), xs.Square().MulScalar(0.5), z.SubScalar(0.5))
				picked := l.Gather(1, ks.AddScalar(0)).Sum()
				total := picked.Add(xs.Mul(xs.Detach()).Sum())
				if trace && (total.Node() == nil || !total.IsTraced()) {
					t.Fatalf("traced loss has node %v, traced %v", total.Node(), total.IsTraced())
				}
				g = total.Backward().Get(x).Float64s()
			})
			return g
		}
		plain, traced := loss(false), loss(true)
		// x (x·x.Detach() passes x.Detach() only), plus at the picked
		// positions [0, 0] and [1, 2] the branch's derivative: sign(x)
		// there, where |x| ≥ 1.
		want := []float64{-1.5 - 1, 0.25, 2, -0.5, 3, -4 - 1}
		testutil.AssertValues(t, "untraced gradient", tensor.FromFloat64s(tensor.CPU(), plain, 6), []int{6}, want, 1e-6, 1e-6)
		testutil.AssertValues(t, "traced gradient", tensor.FromFloat64s(tensor.CPU(), traced, 6), []int{6}, want, 1e-6, 1e-6)
	})
}

// TestTraceInputNeedsAutodiff checks that a tensor outside an autodiff
// view cannot be traced.
func TestTraceInputNeedsAutodiff(t *testing.T) {
	err := tensor.Try(func() { tensor.Ones(tensor.CPU(), 2).TraceInput() })
	if !errors.Is(err, tensor.ErrDevice) {
		t.Errorf("TraceInput on a plain device: %v, want ErrDevice", err)
	}
}
