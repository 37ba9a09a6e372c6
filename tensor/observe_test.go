package tensor_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/tensor"
)

func TestObserveNodes(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		x := tensor.Ones(ad, 2, 3).RequireGrad()
		c := tensor.Ones(dev, 2, 3) // a constant: ops on it alone record nothing
		// Subtests run on goroutines of their own: give each its Scope.
		run := func(name string, f func(t *testing.T)) {
			t.Run(name, func(t *testing.T) { tensor.Scope(func() { f(t) }) })
		}
		ops := func(n []*autodiff.Node) []string {
			var s []string
			for _, x := range n {
				s = append(s, x.Op)
			}
			return s
		}
		run("reports the nodes fn records, in order", func(t *testing.T) {
			var seen []*autodiff.Node
			var y *tensor.Tensor
			tensor.ObserveNodes(func() {
				c.Add(c) // records nothing
				y = x.Mul(c).Relu().Sum()
			}, func(n *autodiff.Node) { seen = append(seen, n) })
			if got := ops(seen); !slices.Equal(got, []string{"mul", "relu", "sum"}) {
				t.Fatalf("observed %v", got)
			}
			if seen[2] != y.Node() {
				t.Error("the last node observed is not the result's")
			}
		})
		run("nested calls both see inner nodes", func(t *testing.T) {
			var outer, inner []*autodiff.Node
			tensor.ObserveNodes(func() {
				x.Exp()
				tensor.ObserveNodes(func() { x.Neg() }, func(n *autodiff.Node) { inner = append(inner, n) })
				x.Abs()
			}, func(n *autodiff.Node) { outer = append(outer, n) })
			if got := ops(outer); !slices.Equal(got, []string{"exp", "neg", "abs"}) {
				t.Errorf("outer observed %v", got)
			}
			if got := ops(inner); !slices.Equal(got, []string{"neg"}) {
				t.Errorf("inner observed %v", got)
			}
		})
		run("other goroutines are not observed", func(t *testing.T) {
			var seen []*autodiff.Node
			tensor.ObserveNodes(func() {
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					tensor.Scope(func() { x.Sin() })
				}()
				wg.Wait()
			}, func(n *autodiff.Node) { seen = append(seen, n) })
			if len(seen) != 0 {
				t.Errorf("observed %v from another goroutine", ops(seen))
			}
		})
		run("a panic ends the observation", func(t *testing.T) {
			var seen []*autodiff.Node
			err := tensor.Try(func() {
				tensor.ObserveNodes(func() {
					x.Cos()
					x.Matmul(x) // [2 3]·[2 3]: a shape error
				}, func(n *autodiff.Node) { seen = append(seen, n) })
			})
			if err == nil {
				t.Fatal("the bad matmul did not fail")
			}
			x.Tanh()
			if got := ops(seen); !slices.Equal(got, []string{"cos"}) {
				t.Errorf("observed %v", got)
			}
		})
	})
}

// Observing is true inside ObserveNodes, nested calls included, and false
// again once the outermost returns.
func TestObserving(t *testing.T) {
	if tensor.Observing() {
		t.Fatal("Observing before any ObserveNodes call")
	}
	var inner, outer bool
	tensor.ObserveNodes(func() {
		outer = tensor.Observing()
		tensor.ObserveNodes(func() { inner = tensor.Observing() }, func(*autodiff.Node) {})
	}, func(*autodiff.Node) {})
	if !outer || !inner || tensor.Observing() {
		t.Errorf("Observing: %v in ObserveNodes, %v nested, %v after; want true, true, false", outer, inner, tensor.Observing())
	}
}
