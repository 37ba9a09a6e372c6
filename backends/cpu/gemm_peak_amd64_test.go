//go:build !purego

package cpu

import "testing"

// BenchmarkGEMMKernelPeak measures the rate of each float32 assembly
// micro-kernel of this CPU on its own, with its operands in the caches a
// GEMM keeps them in: one kc×nr panel of B (kc = gemmKC), which stays in
// L1, times eight mr×kc panels of A in turn (a 2048-row block of A goes
// through a B panel the same way, from L2), into one mr×nr tile of C. It
// is the ceiling of a whole product's rate, which adds packing, the
// tiles' edges and cache misses: `BenchmarkSgemm` and the GEMM share of a
// training step's profile divided by it tell how close to the kernel's
// own speed a real product runs. GFLOP/s counts 2·mr·nr·kc a call.
func BenchmarkGEMMKernelPeak(b *testing.B) {
	for _, k := range kernelsF32 {
		if k.asm == nil {
			continue
		}
		b.Run(k.name, func(b *testing.B) {
			const panels = 8
			kc := gemmKC
			a := make([]float32, panels*k.mr*kc)
			bp := make([]float32, kc*k.nr)
			c := make([]float32, k.mr*k.nr)
			for i := range a {
				a[i] = float32(i%7) / 8
			}
			for i := range bp {
				bp[i] = float32(i%5) / 8
			}
			i := 0
			for b.Loop() {
				k.asm(kc, &a[(i%panels)*k.mr*kc], &bp[0], &c[0], k.nr, k.mr, 1<<k.nr-1, false)
				i++
			}
			b.ReportMetric(2*float64(k.mr*k.nr*kc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
