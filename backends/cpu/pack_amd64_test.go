//go:build !purego

package cpu

import (
	"fmt"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// avx2Kernel returns the AVX2 float32 kernel, or skips t where the CPU
// lacks AVX2 and FMA.
func avx2Kernel(t testing.TB) kernel[float32] {
	for _, k := range asmKernelsF32 {
		if k.name == "avx2-6x16" && hasAVX2 {
			return k
		}
	}
	t.Skip("no AVX2+FMA")
	return kernel[float32]{}
}

// TestMatmulAVX2Blocking runs the matmul cases with the AVX2 kernel and the
// blocking a CPU without AVX-512 picks (kc from 64-byte micro-panel rows),
// so that an AVX-512 machine tests what AVX2-only machines run.
func TestMatmulAVX2Blocking(t *testing.T) {
	kern := avx2Kernel(t)
	oldKern, old := kernelF32, [4]int{gemmKC, gemmMC, gemmNB, gemmNC}
	defer func() {
		kernelF32 = oldKern
		gemmKC, gemmMC, gemmNB, gemmNC = old[0], old[1], old[2], old[3]
	}()
	kernelF32 = kern
	gemmKC, gemmMC, gemmNB, gemmNC = blockSizes(detectCaches(), 64)
	runMatmulCases(t, New(2), []backends.DType{backends.Float32}, "avx2-blocking")
}

// packPanels (the assembly row moves for 6-, 8-, 16- and 32-wide panels)
// packs what the generic loops pack: full and partial panels, a line
// count that is not a multiple of anything, from an offset, with the line
// stride positive and negative.
func TestPackPanelsMatchesGeneric(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	defer func() { packAVX2 = true }()
	const ld = 300
	src := make([]float32, ld*40)
	for i := range src {
		src[i] = float32(i) + 0.5
	}
	tmp := make([]float32, 64)
	for _, w := range []int{6, 8, 16, 32} {
		for _, rn := range []int{1, w - 1, w, 2*w + 3, 5 * w} {
			for _, cn := range []int{1, 7, 33} {
				for _, neg := range []bool{false, true} {
					m := matSrc[float32]{s: src, off: 2, rs: 1, cs: ld}
					if neg {
						m.off, m.cs = 2+(cn-1)*ld, -ld
					}
					var got, want []float32
					for _, fast := range []bool{false, true} {
						packAVX2 = fast
						dst := make([]float32, roundUp(rn, w)*cn)
						pack(dst, m, 1, rn, 0, cn, w, tmp)
						if fast {
							got = dst
						} else {
							want = dst
						}
					}
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("w=%d rows=%d lines=%d negative stride %v: element %d is %v, want %v", w, rn, cn, neg, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// BenchmarkPackPanels measures packing a 256-deep block of 1020 rows of a
// 2048×1024 float32 operand into the AVX2 kernel's 6-row A panels and
// 16-column B panels and the AVX-512 8×32 kernel's panels, from either
// layout, with the generic Go loops and
// with the assembly ones (run with -count to compare them interleaved).
func BenchmarkPackPanels(b *testing.B) {
	const m, k = 2048, 1024
	src := make([]float32, m*k)
	for i := range src {
		src[i] = float32(i % 7)
	}
	tmp := make([]float32, k)
	rn, cn := 1020, 256
	for _, w := range []int{6, 8, 16, 32} {
		for _, l := range []struct {
			name string
			mat  matSrc[float32]
		}{
			{"rows-contiguous", matSrc[float32]{s: src, rs: k, cs: 1}},
			{"panel-contiguous", matSrc[float32]{s: src, rs: 1, cs: m}},
		} {
			for _, fast := range []bool{false, true} {
				b.Run(fmt.Sprintf("w=%d/%s/%s", w, l.name, map[bool]string{false: "generic", true: "avx2"}[fast]), func(b *testing.B) {
					defer func() { packAVX2 = true }()
					packAVX2 = fast
					dst := make([]float32, roundUp(rn, w)*cn)
					for b.Loop() {
						pack(dst, l.mat, 0, rn, 0, cn, w, tmp)
					}
					b.ReportMetric(float64(rn*cn)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
				})
			}
		}
	}
}

// BenchmarkSgemmAVX2 compares the AVX2 GEMM as it was ("before": kc from
// 128-byte micro-panel rows, generic packing loops) with what AVX2-only
// machines now run ("after": kc from 64-byte rows, assembly packing), on
// square products and the shapes of a GPT training step (2048 tokens,
// widths 256 to 1024; tA and tB for operands read transposed, as the
// backward pass and x·Wᵀ do). Each iteration runs both, one after the
// other, so that load from other processes falls on both alike, and the
// rates reported are each one's fastest call (-benchtime 20x gives 20
// interleaved pairs).
func BenchmarkSgemmAVX2(b *testing.B) {
	kern := avx2Kernel(b)
	oldKern, old := kernelF32, [4]int{gemmKC, gemmMC, gemmNB, gemmNC}
	defer func() {
		kernelF32 = oldKern
		gemmKC, gemmMC, gemmNB, gemmNC = old[0], old[1], old[2], old[3]
		packAVX2 = true
	}()
	kernelF32 = kern
	caches := detectCaches()
	for _, s := range []struct {
		m, k, n int
		tA, tB  bool
	}{
		{256, 256, 256, false, false},
		{1024, 1024, 1024, false, false},
		{2048, 256, 768, false, true},
		{2048, 1024, 256, false, true},
		{2048, 256, 1024, false, false},
		{256, 2048, 1024, true, false},
		{1024, 2048, 256, true, false},
	} {
		name := fmt.Sprintf("%dx%dx%d", s.m, s.k, s.n)
		if s.tA {
			name += "-tA"
		}
		if s.tB {
			name += "-tB"
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", name, threads), func(b *testing.B) {
				be := New(threads)
				x := randView(be, backends.Float32, 1, s.m, s.k)
				if s.tA {
					x = randView(be, backends.Float32, 1, s.k, s.m)
					x.Shape, x.Strides = []int{s.m, s.k}, []int{1, s.m}
				}
				y := randView(be, backends.Float32, 2, s.k, s.n)
				if s.tB {
					y = randView(be, backends.Float32, 2, s.n, s.k)
					y.Shape, y.Strides = []int{s.k, s.n}, []int{1, s.k}
				}
				out := allocView(be, backends.Float32, s.m, s.n)
				var best [2]time.Duration
				for b.Loop() {
					for i, after := range []bool{false, true} {
						row := 128
						if after {
							row = 64
						}
						gemmKC, gemmMC, gemmNB, gemmNC = blockSizes(caches, row)
						packAVX2 = after
						t0 := time.Now()
						be.Matmul(out, x, y)
						if d := time.Since(t0); best[i] == 0 || d < best[i] {
							best[i] = d
						}
					}
				}
				flop := 2 * float64(s.m*s.n*s.k)
				b.ReportMetric(flop/best[0].Seconds()/1e9, "before-GFLOP/s")
				b.ReportMetric(flop/best[1].Seconds()/1e9, "after-GFLOP/s")
				b.ReportMetric(best[0].Seconds()/best[1].Seconds(), "speedup")
			})
		}
	}
}
