package cpu

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestPrepackParallel checks that prepackParallel packs A and B into the
// very layout prepackA and prepackB give, with the default blocks and with
// small ones that make several row blocks, K-blocks and tasks per block
// (and partial last panels), on one worker and on three that always share
// the tasks, for a plain and a transposed operand (the operands below
// prepackMinElems, 37×45×7, are packed by prepackA and prepackB themselves).
func TestPrepackParallel(t *testing.T) {
	forPackBlocks(func(blocks string) {
		for _, sz := range [][3]int{{300, 200, 513}, {37, 45, 7}, {1000, 999, 96}} {
			m, n, k := sz[0], sz[1], sz[2]
			for _, transposed := range []bool{false, true} {
				a, bm := packTestOperands(m, n, k)
				A := matSrc[float32]{s: a, rs: k, cs: 1}
				B := matSrc[float32]{s: bm, rs: n, cs: 1}
				if transposed {
					A = matSrc[float32]{s: a, rs: 1, cs: m}
					B = matSrc[float32]{s: bm, rs: 1, cs: k}
				}
				kern := kernelF32
				wantA := make([]float32, roundUp(m, kern.mr)*k)
				wantB := make([]float32, roundUp(n, kern.nr)*k)
				prepackA(wantA, kern, m, n, k, A)
				prepackB(wantB, kern, m, n, k, B)
				for _, be := range []*Backend{New(1), forcedBackend(3, forceParallel)} {
					name := fmt.Sprintf("%s blocks, %dx%dx%d, transposed %v, %d workers", blocks, m, n, k, transposed, be.workers)
					gotA := make([]float32, len(wantA))
					gotB := make([]float32, len(wantB))
					for i := range gotA {
						gotA[i] = -1 // the padding must be written too
					}
					for i := range gotB {
						gotB[i] = -1
					}
					prepackParallel(be, gotA, kern, m, n, k, A, B, false)
					prepackParallel(be, gotB, kern, m, n, k, A, B, true)
					if !slices.Equal(gotA, wantA) {
						t.Errorf("%s: packed A differs from prepackA's", name)
					}
					if !slices.Equal(gotB, wantB) {
						t.Errorf("%s: packed B differs from prepackB's", name)
					}
				}
			}
		}
	})
}

// forPackBlocks runs f with the default GEMM blocks ("default") and with
// small ones that make several row blocks, K-blocks and tasks per block,
// and partial last panels ("small"), and restores the defaults.
func forPackBlocks(f func(blocks string)) {
	old := [3]int{gemmKC, gemmNC, gemmMChunk}
	defer func() { gemmKC, gemmNC, gemmMChunk = old[0], old[1], old[2] }()
	for _, blocks := range []string{"default", "small"} {
		gemmKC, gemmNC, gemmMChunk = old[0], old[1], old[2]
		if blocks == "small" {
			gemmKC, gemmNC, gemmMChunk = 40, 3*kernelF32.nr+5, 5*kernelF32.mr
		}
		f(blocks)
	}
}

// packTestOperands returns the m·k elements of A and the k·n of B that the
// packing tests pack: i%1013 − 500 and i%997 + 0.5, no two neighbours
// alike.
func packTestOperands(m, n, k int) (a, b []float32) {
	a, b = make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%1013) - 500
	}
	for i := range b {
		b[i] = float32(i%997) + 0.5
	}
	return a, b
}

// BenchmarkGEMMWeightGradient times the weight gradients of a GPT layer's
// input projection (Xᵀ·dY: 768×2048 times 2048×256 into 768 × 256 and
// 256×2048 times 2048×768), GEMMs cut into strips whose shared operand
// is packed first, with that packing shared by the workers (shared) and on
// the caller alone (serial). Run with -cpu 2 and -count N, which
// alternates the two.
func BenchmarkGEMMWeightGradient(b *testing.B) {
	for _, sz := range [][3]int{{768, 256, 2048}, {256, 768, 2048}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, shared := range []bool{true, false} {
			name := fmt.Sprintf("%dx%dx%d/serial", m, n, k)
			if shared {
				name = fmt.Sprintf("%dx%dx%d/shared", m, n, k)
			}
			b.Run(name, func(b *testing.B) {
				old := prepackShared
				prepackShared = shared
				defer func() { prepackShared = old }()
				be := New(0)
				x := randView(be, backends.Float32, 1, k, m) // Xᵀ read transposed, as the backward pass does
				dy := randView(be, backends.Float32, 2, k, n)
				out := allocView(be, backends.Float32, m, n)
				xt := x
				xt.Shape, xt.Strides = []int{m, k}, []int{1, m}
				be.Matmul(out, xt, dy)
				b.ResetTimer()
				for range b.N {
					be.Matmul(out, xt, dy)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
