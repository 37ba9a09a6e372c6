//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGeluF32PairedKernels: the GELU kernels that take sixteen lanes an
// iteration (geluF32AVX2Paired, geluGradF32AVX2Paired) give the bits of
// the template's eight-lane kernels, at every length to 70 and at 1001,
// with ±Inf, NaN and (backward) huge g in some blocks (which the paired
// kernels hand to the eight-lane ones), and write nothing past n.
func TestGeluF32PairedKernels(t *testing.T) {
	if !hasTranscendentalAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(41, 42))
	odd := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0x1p64, -3e38}
	lengths := []int{1001}
	for n := range 71 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, special := range []bool{false, true} {
			x, g := make([]float32, n+1), make([]float32, n+1)
			for i := range x {
				x[i], g[i] = float32(3*r.NormFloat64()), float32(r.NormFloat64())
				if special && r.IntN(40) == 0 {
					if r.IntN(2) == 0 {
						x[i] = odd[r.IntN(3)]
					} else {
						g[i] = odd[r.IntN(len(odd))]
					}
				}
			}
			sp, spd := [2]float32{float32(math.Inf(1)), float32(math.NaN())}, [2]float32{1, 0}
			want, got := make([]float32, n+1), make([]float32, n+1)
			got[n], want[n] = 7, 7
			check := func(dir string) {
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s, n = %d: lane %d (x = %g, g = %g): %g, the eight-lane kernel %g", dir, n, i, x[i], g[i], got[i], want[i])
					}
				}
			}
			if n > 0 {
				geluF32AVX2(&want[0], &x[0], n, &sp)
				geluF32AVX2Paired(&got[0], &x[0], n, &sp)
				check("forward")
				geluGradF32AVX2(&want[0], &x[0], &g[0], n, &spd)
				geluGradF32AVX2Paired(&got[0], &x[0], &g[0], n, &spd)
				check("backward")
			}
		}
	}
}

// BenchmarkGeluPaired compares GELU's float32 kernels sixteen lanes an
// iteration (paired) with the template's eight-lane ones (single), forward
// and backward, on one core, in cache (16K standard normal values) and
// not (16M), in one run:
//
//	go test -run xxx -bench GeluPaired -count 4 ./backends/cpu/
func BenchmarkGeluPaired(b *testing.B) {
	if !hasTranscendentalAVX2 {
		b.Skip("no AVX2")
	}
	sp := [2]float32{float32(math.Inf(1)), float32(math.NaN())}
	spd := [2]float32{1, 0}
	for _, n := range []int{1 << 14, 1 << 24} {
		r := rand.New(rand.NewPCG(1, 2))
		x, g, o := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		for _, dir := range []string{"fwd", "bwd"} {
			for _, impl := range []string{"single", "paired"} {
				b.Run(fmt.Sprintf("n=%d/dir=%s/impl=%s", n, dir, impl), func(b *testing.B) {
					run := func() { geluF32AVX2(&o[0], &x[0], n, &sp) }
					switch {
					case dir == "fwd" && impl == "paired":
						run = func() { geluF32AVX2Paired(&o[0], &x[0], n, &sp) }
					case dir == "bwd" && impl == "single":
						run = func() { geluGradF32AVX2(&o[0], &x[0], &g[0], n, &spd) }
					case dir == "bwd":
						run = func() { geluGradF32AVX2Paired(&o[0], &x[0], &g[0], n, &spd) }
					}
					c0 := cpuSeconds()
					for b.Loop() {
						run()
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
					if c := cpuSeconds() - c0; c > 0 {
						b.ReportMetric(float64(n)*float64(b.N)/c/1e9, "Gelem/cpu-s")
					}
				})
			}
		}
	}
}
