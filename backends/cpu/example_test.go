package cpu_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
)

// Example multiplies a 2×3 matrix of ones by a 3×2 matrix of twos.
func Example() {
	be := cpu.New(0)
	a, _ := be.Alloc(backends.Float32, 6)
	b, _ := be.Alloc(backends.Float32, 6)
	c, _ := be.Alloc(backends.Float32, 4)
	be.Fill(backends.Contiguous(a, backends.Float32, 2, 3), 1)
	be.Fill(backends.Contiguous(b, backends.Float32, 3, 2), 2)
	be.Matmul(backends.Contiguous(c, backends.Float32, 2, 2),
		backends.Contiguous(a, backends.Float32, 2, 3), backends.Contiguous(b, backends.Float32, 3, 2))
	out := make([]byte, 16)
	if err := be.Read(c, 0, out); err != nil {
		panic(err)
	}
	for i := range 4 {
		fmt.Print(math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])), " ")
	}
	fmt.Println()
	// Output: 6 6 6 6
}
