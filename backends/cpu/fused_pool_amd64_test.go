//go:build !purego

package cpu

import "testing"

// TestMaxPool2x2AVX2MatchesGo checks the AVX2 2×2 max-pooling kernel (used
// where the CPU has no AVX-512) against the Go loop: values as bits and
// positions, on whole and partial blocks of eight outputs.
func TestMaxPool2x2AVX2MatchesGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	checkPool2x2(t, func(dst []float32, di []int64, src []float32, w, oh, ow int) {
		if !vecMaxPool2x2AVX2(dst, di, src, w, oh, ow) {
			t.Fatal("the kernel did not run")
		}
	})
}

// BenchmarkMaxPool2x2Kernels times the 2×2 pooling of the MNIST CNN's two
// convolution outputs (batch 128) with the branch-free Go loop and the
// AVX2 kernel, one after the other, reporting input elements per second.
func BenchmarkMaxPool2x2Kernels(b *testing.B) {
	if !hasAVX2 {
		b.Skip("no AVX2 on this CPU")
	}
	for _, s := range []struct {
		name       string
		planes, hw int
	}{{"128x16x26x26", 128 * 16, 26}, {"128x32x11x11", 128 * 32, 11}} {
		src := make([]float32, s.planes*s.hw*s.hw)
		for i := range src {
			src[i] = float32((i*7919)%1000) - 500
		}
		oh := s.hw / 2
		dst, di := make([]float32, s.planes*oh*oh), make([]int64, s.planes*oh*oh)
		for _, k := range []struct {
			name string
			pool func(dst []float32, di []int64, src []float32, w, oh, ow int)
		}{
			{"go", maxPool2x2F32},
			{"avx2", func(dst []float32, di []int64, src []float32, w, oh, ow int) {
				vecMaxPool2x2AVX2(dst, di, src, w, oh, ow)
			}},
		} {
			b.Run(s.name+"/"+k.name, func(b *testing.B) {
				for b.Loop() {
					for p := range s.planes {
						k.pool(dst[p*oh*oh:], di[p*oh*oh:], src[p*s.hw*s.hw:], s.hw, oh, oh)
					}
				}
				b.ReportMetric(float64(len(src))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
}
