package cpu_test

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
)

// TileScalarF32 gives the function a fusing decorator calls per tile: here
// x·√(2/π) on plain slices, rounded from float64 exactly as BinaryScalar
// rounds it for Float32 tensors.
func ExampleBackend_TileScalarF32() {
	b := cpu.New(1)
	mul := b.TileScalarF32(backends.Mul, math.Sqrt(2/math.Pi), false, false)
	x := []float32{1, 2, -3}
	o := make([]float32, len(x))
	mul(o, x)
	fmt.Println(o)
	// Output: [0.7978846 1.5957692 -2.3936536]
}
