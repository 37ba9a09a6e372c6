package fusion_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
)

// Record three element-wise kernels and run them as one group at Read;
// the intermediate, freed before the read, never reaches memory.
func Example() {
	fb := fusion.New(cpu.New(1))
	mk := func() backends.View {
		buf, _ := fb.Alloc(backends.Float32, 4)
		return backends.Contiguous(buf, backends.Float32, 4)
	}
	x, tmp, y := mk(), mk(), mk()
	fb.Fill(x, 2)                                   // recorded
	fb.BinaryScalar(backends.Mul, tmp, x, 3, false) // tmp = 6, recorded
	fb.Binary(backends.Add, y, tmp, x)              // y = 8, recorded
	fb.Free(tmp.Buf)                                // the group still needs it: freed after it runs
	fmt.Println("pending:", fb.Pending())
	out := make([]byte, 16)
	if err := fb.Read(y.Buf, 0, out); err != nil {
		fmt.Println(err)
	}
	fmt.Println("y[0] =", math.Float32frombits(binary.LittleEndian.Uint32(out)))
	s := fb.Stats()
	fmt.Printf("%d group of %d ops, %d kept in tiles\n", s.Groups, s.Ops, s.Scratch)
	// Output:
	// pending: 3
	// y[0] = 8
	// 1 group of 3 ops, 1 kept in tiles
}
