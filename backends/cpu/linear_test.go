package cpu

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestMatmulBiasIsMatmulThenAdd requires MatmulBias to equal Matmul
// followed by Binary's Add bit for bit: several K-blocks (the bias goes in
// after the last), strips and shared tiles on 1 to 3 workers, transposed
// operands, vector shapes and an empty K.
func TestMatmulBiasIsMatmulThenAdd(t *testing.T) {
	old := gemmKC
	defer func() { gemmKC = old }()
	gemmKC = 64
	for _, dt := range []backends.DType{backends.Float32, backends.Float64} {
		for _, s := range []struct{ m, k, n int }{{300, 200, 130}, {1, 70, 50}, {40, 70, 1}, {9, 0, 7}, {700, 300, 600}} {
			for _, w := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s %dx%dx%d %d workers", dt, s.m, s.k, s.n, w), func(t *testing.T) {
					be := New(w)
					x := randView(be, dt, 1, s.k, s.m) // read transposed
					x.Shape, x.Strides = []int{s.m, s.k}, []int{1, s.m}
					y := randView(be, dt, 2, s.k, s.n)
					bias := randView(be, dt, 3, s.n)
					got, prod, want := allocView(be, dt, s.m, s.n), allocView(be, dt, s.m, s.n), allocView(be, dt, s.m, s.n)
					be.MatmulBias(got, x, y, bias)
					be.Matmul(prod, x, y)
					bb := bias
					bb.Shape, bb.Strides = []int{s.m, s.n}, []int{0, 1}
					be.Binary(backends.Add, want, prod, bb)
					if err := be.Sync(); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(rawSnapshot(got), rawSnapshot(want)) {
						t.Errorf("MatmulBias differs from Matmul then Add")
					}
				})
			}
		}
	}
}
