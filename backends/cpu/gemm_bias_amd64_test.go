//go:build !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestGEMMBiasInKernelMatchesPass checks that adding the bias in the
// micro-kernel (kernel.asmBias) gives the bits of adding it in a pass over
// each finished tile, for every kernel that has the variant (AVX-512's
// 8×32, with A packed and read in place by rows, and AVX2's 6×16): edge
// tiles in both directions, several K-blocks, accumulation into C, and 1
// or 2 workers.
func TestGEMMBiasInKernelMatchesPass(t *testing.T) {
	var kerns []kernel[float32]
	for _, k := range kernelsF32 {
		if k.asmBias != nil {
			kerns = append(kerns, k)
		}
	}
	if len(kerns) == 0 {
		t.Skip("no kernel adds a bias on this CPU")
	}
	defer func() { biasInKernel = true }()
	cases := []struct {
		m, n, k int
		acc     bool
	}{
		{6, 16, 8, false},
		{7, 5, 3, false},
		{100, 70, 300, false},
		{131, 48, 600, true},
		{250, 260, 257, false},
		{512, 768, 256, false},
		{61, 33, 1024, true},
	}
	r := rand.New(rand.NewPCG(3, 4))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	for _, kern := range kerns {
		for _, c := range cases {
			for _, workers := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/%dx%dx%d/acc=%v/w=%d", kern.name, c.m, c.n, c.k, c.acc, workers), func(t *testing.T) {
					be := New(workers)
					a, bm, c0, bias := fill(c.m*c.k), fill(c.k*c.n), fill(c.m*c.n), fill(c.n)
					run := func(inKernel bool) []float32 {
						biasInKernel = inKernel
						out := slices.Clone(c0)
						gemm(be, kern, c.m, c.n, c.k,
							matSrc[float32]{s: a, rs: c.k, cs: 1},
							matSrc[float32]{s: bm, rs: c.n, cs: 1},
							matDst[float32]{s: out, rs: c.n, cs: 1, acc: c.acc, bias: bias}, true)
						return out
					}
					want, got := run(false), run(true)
					for i := range want {
						if want[i] != got[i] {
							t.Fatalf("element %d: in the kernel %v, in a pass %v", i, got[i], want[i])
						}
					}
				})
			}
		}
	}
}

// BenchmarkGEMMBias times x·Wᵀ + b for the shapes of a GPT block's
// projections (2048 tokens, d = 256) on one worker, the bias added by the
// micro-kernel and in a pass over each tile alternately in every
// iteration (the machine's load then hits both alike), and reports the
// fastest time of each (ms-kernel, ms-pass).
func BenchmarkGEMMBias(b *testing.B) {
	be := New(1)
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range [][3]int{{2048, 768, 256}, {2048, 256, 256}, {2048, 1024, 256}, {2048, 256, 1024}} {
		m, n, k := s[0], s[1], s[2]
		a, bm, out, bias := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n), make([]float32, n)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range bm {
			bm[i] = float32(r.NormFloat64())
		}
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			defer func() { biasInKernel = true }()
			best := [2]time.Duration{time.Hour, time.Hour}
			for b.Loop() {
				for i, inKernel := range []bool{false, true} {
					biasInKernel = inKernel
					start := time.Now()
					gemm(be, kernelF32, m, n, k, matSrc[float32]{s: a, rs: k, cs: 1},
						matSrc[float32]{s: bm, rs: 1, cs: k}, matDst[float32]{s: out, rs: n, cs: 1, bias: bias}, true)
					best[i] = min(best[i], time.Since(start))
				}
			}
			b.ReportMetric(best[0].Seconds()*1e3, "ms-pass")
			b.ReportMetric(best[1].Seconds()*1e3, "ms-kernel")
		})
	}
}
