package fusion_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
)

// The CPU backend implements TileKernels, so a group of float32 ops over
// contiguous views runs tile by tile through its vector kernels directly,
// with no per-call checks or thread hand-offs; Stats counts those ops.
func ExampleTileKernels() {
	inner := cpu.New(1)
	_, ok := backends.Backend(inner).(fusion.TileKernels)
	fmt.Println("cpu serves tile kernels:", ok)
	fb := fusion.New(inner)
	buf, _ := fb.Alloc(backends.Float32, 1000)
	x := backends.Contiguous(buf, backends.Float32, 1000)
	fb.Fill(x, 0.25)                                     // a fill runs through the backend's Fill
	fb.BinaryScalar(backends.Mul, x, x, 0.044715, false) // x·s in float64, rounded: a tile kernel
	fb.Unary(backends.Tanh, x, x, 0, 0)                  // the float32 tanh kernel
	fb.BinaryScalar(backends.Add, x, x, 1, false)        // exact in float32: the AVX2 kernel
	if err := fb.Sync(); err != nil {
		fmt.Println(err)
	}
	s := fb.Stats()
	fmt.Printf("%d group of %d ops, %d through tile kernels\n", s.Groups, s.Ops, s.TileKernelOps)
	fb.Free(buf)
	// Output:
	// cpu serves tile kernels: true
	// 1 group of 4 ops, 3 through tile kernels
}
