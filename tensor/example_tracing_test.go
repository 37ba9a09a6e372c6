package tensor_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/autodiff"
	"github.com/kiln-ml/kiln/tensor"
)

// A traced input records the ops that carry no gradient too: here the
// comparison that picks the branch of a Huber loss, which an exporter
// must compute rather than freeze.
func ExampleTensor_TraceInput() {
	dev := tensor.CPU().Autodiff()
	x := tensor.FromFloat32s(dev, []float32{-2, 0.5, 3}, 3).RequireGrad()
	fmt.Println(x.Abs().LtScalar(1).Node() == nil) // untraced: a constant mask

	x.TraceInput()
	mask := x.Abs().LtScalar(1)
	n := mask.Node()
	fmt.Println(n.Op, n.Inputs[0].Op, n.Attrs["scalar"], mask.RequiresGrad())
	loss := tensor.Where(mask, x.Square(), x.Abs())
	autodiff.Walk([]*autodiff.Node{loss.Node()}, func(m *autodiff.Node) {
		if !m.Leaf {
			fmt.Print(m.Op, " ")
		}
	})
	fmt.Println()
	// Output:
	// true
	// lt_scalar abs 1 false
	// abs lt_scalar square abs where
}
