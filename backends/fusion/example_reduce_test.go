package fusion_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/fusion"
)

// A sum of squares per row as a reduction tail: the squares are computed
// tile by tile and summed inside the group's pass, never written to
// memory, and the sums are the CPU backend's bits.
func Example_reductionTail() {
	fb := fusion.New(cpu.New(1))
	x, _ := fb.Alloc(backends.Float32, 6)
	sq, _ := fb.Alloc(backends.Float32, 6)
	sums, _ := fb.Alloc(backends.Float32, 2)
	raw := make([]byte, 24)
	for i, v := range []float32{1, 2, 3, -1, 0, 4} {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	fb.Write(x, 0, raw)
	shape := []int{2, 3}
	view := func(buf backends.Buffer, shape []int) backends.View {
		return backends.View{Buf: buf, DType: backends.Float32, Shape: shape, Strides: backends.RowMajorStrides(shape)}
	}
	fb.Unary(backends.Square, view(sq, shape), view(x, shape), 0, 0)            // recorded
	fb.Reduce(backends.Sum, view(sums, []int{2, 1}), view(sq, shape), []int{1}) // joins the group
	fb.Free(sq)                                                                 // only the sum reads it: it stays in tiles
	out := make([]byte, 8)
	if err := fb.Read(sums, 0, out); err != nil {
		fmt.Println(err)
	}
	fmt.Println(math.Float32frombits(binary.LittleEndian.Uint32(out)), math.Float32frombits(binary.LittleEndian.Uint32(out[4:])))
	s := fb.Stats()
	fmt.Printf("%d group, %d reduction, %d kept in tiles\n", s.Groups, s.Reductions, s.Scratch)
	// Output:
	// 14 17
	// 1 group, 1 reduction, 1 kept in tiles
}
