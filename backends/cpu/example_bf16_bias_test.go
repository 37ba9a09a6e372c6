package cpu_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
)

// ExampleBackend_MatmulBiasBF16 computes a Linear layer's x·w + bias as a
// bfloat16 autocast product with the bias added in the GEMM's epilogue:
// 1.00390625 rounds to 1 in bfloat16, so each output is 2 + its bias.
func ExampleBackend_MatmulBiasBF16() {
	be := cpu.New(1)
	a, _ := be.Alloc(backends.Float32, 4)
	b, _ := be.Alloc(backends.Float32, 2)
	c, _ := be.Alloc(backends.Float32, 2)
	be.Fill(backends.Contiguous(a, backends.Float32, 4), 1.00390625)
	be.Fill(backends.Contiguous(b, backends.Float32, 2), 0.5)
	x := backends.Contiguous(a, backends.Float32, 1, 2)
	w := backends.Contiguous(a, backends.Float32, 2, 2)
	bias := backends.Contiguous(b, backends.Float32, 2)
	out := backends.Contiguous(c, backends.Float32, 1, 2)
	be.MatmulBiasBF16(out, x, w, bias)
	raw := make([]byte, 8)
	if err := be.Read(c, 0, raw); err != nil {
		panic(err)
	}
	fmt.Println(math.Float32frombits(binary.LittleEndian.Uint32(raw)), math.Float32frombits(binary.LittleEndian.Uint32(raw[4:])))
	// Output: 2.5 2.5
}
