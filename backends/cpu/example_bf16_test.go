package cpu_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
)

// ExampleBackend_MatmulBF16 multiplies float32 matrices as a bfloat16
// autocast product: 1.00390625 (1 + 2⁻⁸) rounds to 1 in bfloat16 (8
// significant bits, ties to even), so the 1×2 by 2×1 product is 2, where
// Matmul gives 2·1.00390625² = 2.0156555 (rounded to float32).
func ExampleBackend_MatmulBF16() {
	be := cpu.New(1)
	a, _ := be.Alloc(backends.Float32, 2)
	c, _ := be.Alloc(backends.Float32, 1)
	be.Fill(backends.Contiguous(a, backends.Float32, 2), 1.00390625)
	x := backends.Contiguous(a, backends.Float32, 1, 2)
	y := backends.Contiguous(a, backends.Float32, 2, 1)
	out := backends.Contiguous(c, backends.Float32, 1, 1)
	read := func() float32 {
		b := make([]byte, 4)
		if err := be.Read(c, 0, b); err != nil {
			panic(err)
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(b))
	}
	be.MatmulBF16(out, x, y)
	fmt.Println("bfloat16:", read())
	be.Matmul(out, x, y)
	fmt.Println("float32: ", read())
	// Output:
	// bfloat16: 2
	// float32:  2.0156555
}
