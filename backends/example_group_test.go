package backends_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
)

// Describe y = relu(2·x) as one group: x is read from memory, the product
// stays in the group, y is written. A backend implementing
// backends.GroupCompiler (the CUDA backend) runs it as one kernel.
func ExampleElementwiseGroup() {
	dev := cpu.New(1)
	xb, _ := dev.Alloc(backends.Float32, 6)
	yb, _ := dev.Alloc(backends.Float32, 6)
	g := &backends.ElementwiseGroup{
		Shape: []int{2, 3},
		Values: []backends.GroupValue{
			{DType: backends.Float32, View: backends.Contiguous(xb, backends.Float32, 2, 3), Load: true},
			{DType: backends.Float32}, // kept in registers
			{DType: backends.Float32, View: backends.Contiguous(yb, backends.Float32, 2, 3), Store: true},
		},
		Ops: []backends.GroupOp{
			{Kind: backends.GroupScalar, Binary: backends.Mul, P0: 2, Out: 1, In: []int{0}},
			{Kind: backends.GroupUnary, Unary: backends.Relu, Out: 2, In: []int{1}},
		},
	}
	fmt.Println(g.Validate())
	fmt.Print(g)
	_, compiles := backends.Backend(dev).(backends.GroupCompiler)
	fmt.Println("the CPU compiles groups:", compiles)
	// Output:
	// <nil>
	// group [2 3], 2 ops
	//   v0 float32 strides [3 1] offset 0 load
	//   v1 float32 registers
	//   v2 float32 strides [3 1] offset 0 store
	//   v1 = mul(v0, 2)
	//   v2 = relu(v1)
	// the CPU compiles groups: false
}
