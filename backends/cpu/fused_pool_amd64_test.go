//go:build !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

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

// TestMaxPool3x3s2AVX2MatchesDefinition checks vecMaxPool3x3s2 against the
// definition, values as bits and positions, on planes whose rows hold one
// block of windows inside, several, and several and a part, with padding
// 0, 1 and 2 and odd and even sides, filled with values drawn from a few
// (ties, ±0, ±Inf, NaNs with different bits).
func TestMaxPool3x3s2AVX2MatchesDefinition(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	vals := []float32{-2, -1, float32(math.Copysign(0, -1)), 0, 1, 2, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00002)}
	rng := rand.New(rand.NewPCG(3, 3))
	ran := 0
	for _, side := range []struct{ h, w int }{{17, 17}, {18, 19}, {32, 32}, {21, 40}, {9, 64}, {56, 56}} {
		for pad := range 3 {
			g := backends.ConvGeometry{H: side.h, W: side.w, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadTop: pad,
				PadLeft: pad, DilationH: 1, DilationW: 1}
			g.OutH, g.OutW = (g.H+2*pad-3)/2+1, (g.W+2*pad-3)/2+1
			for _, nanRate := range []int{0, 50} {
				src := make([]float32, g.H*g.W+1) // one more: no kernel reads past the plane
				for i := range src {
					src[i] = vals[rng.IntN(6)]
					if r := rng.IntN(100); r < nanRate/10 {
						src[i] = vals[6+rng.IntN(4)]
					}
				}
				src = src[:g.H*g.W]
				n := g.OutH * g.OutW
				got, want := make([]float32, n), make([]float32, n)
				gi, wi := make([]int64, n), make([]int64, n)
				maxPoolReference(want, wi, src, g)
				if !vecMaxPool3x3s2(got, gi, src, g) {
					continue // a row of fewer than eight windows inside
				}
				ran++
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) || gi[i] != wi[i] {
						t.Fatalf("%+v: output %d = %v (%#x) at %d, want %v (%#x) at %d", g, i, got[i],
							math.Float32bits(got[i]), gi[i], want[i], math.Float32bits(want[i]), wi[i])
					}
				}
			}
		}
	}
	if ran < 20 {
		t.Fatalf("the kernel ran on %d planes only", ran)
	}
}
