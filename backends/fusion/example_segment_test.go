package fusion_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
)

// A group is planned once per structure: a training loop that records the
// same chain every step reuses the plan (and, on CPUs with AVX-512 or AVX2, the
// register program its arithmetic runs as) and only binds new buffers.
func ExampleStats_compiled() {
	fb := fusion.New(cpu.New(1))
	const n = 10000
	step := func() float32 {
		alloc := func() backends.View {
			buf, _ := fb.Alloc(backends.Float32, n)
			return backends.Contiguous(buf, backends.Float32, n)
		}
		x, t, y := alloc(), alloc(), alloc()
		fb.Fill(x, 3)
		fb.BinaryScalar(backends.Mul, t, x, -1.5, false) // t = −1.5x
		fb.Binary(backends.Add, y, t, x)                 // y = t + x
		fb.Free(t.Buf)                                   // t lives only in tiles
		out := make([]byte, 4)
		_ = fb.Read(y.Buf, 0, out)
		fb.Free(x.Buf)
		fb.Free(y.Buf)
		return math.Float32frombits(binary.LittleEndian.Uint32(out))
	}
	for range 3 {
		fmt.Println(step())
	}
	s := fb.Stats()
	fmt.Printf("%d groups, %d planned\n", s.Groups, s.Compiled)
	// Output:
	// -1.5
	// -1.5
	// -1.5
	// 3 groups, 1 planned
}
