//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// act32Paired lists the sixteen-lane kernels (transcendental_act32_amd64.go,
// and GELU's and GELU-tanh's) with the eight-lane ones whose bits they
// must give, and the scale of the inputs they are tested and measured on.
var act32Paired = []struct {
	name        string
	single, two func(dst, x *float32, n int, sp *[2]float32)
	singleDF    func(dst, x, grad *float32, n int, sp *[2]float32)
	twoDF       func(dst, x, grad *float32, n int, sp *[2]float32)
	scale       float64
}{
	{name: "sigmoid fwd", single: sigmoidF32AVX2, two: sigmoidF32AVX2Paired, scale: 8},
	{name: "silu fwd", single: siluF32AVX2, two: siluF32AVX2Paired, scale: 8},
	{name: "sigmoid bwd", singleDF: sigmoidGradF32AVX2, twoDF: sigmoidGradF32AVX2Paired, scale: 8},
	{name: "exp bwd", singleDF: expGradF32AVX2, twoDF: expGradF32AVX2Paired, scale: 30},
	{name: "tanh bwd", singleDF: tanhGradF32AVX2, twoDF: tanhGradF32AVX2Paired, scale: 8},
	{name: "gelu fwd", single: geluF32AVX2, two: geluF32AVX2Paired, scale: 3},
	{name: "gelu bwd", singleDF: geluGradF32AVX2, twoDF: geluGradF32AVX2Paired, scale: 3},
	{name: "gelu_tanh fwd", single: geluTanhF32AVX2, two: geluTanhF32AVX2Paired, scale: 3},
}

// TestAct32PairedKernels: the sixteen-lane sigmoid, SiLU, exp, tanh, GELU
// and GELU-tanh kernels give the bits of the template's eight-lane ones at every length to 70
// and at 1001, with ±Inf, NaN and (backward) huge g in some blocks (which
// they hand to the eight-lane ones), and write nothing past n.
func TestAct32PairedKernels(t *testing.T) {
	if !hasTranscendentalAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(47, 48))
	odd := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0x1p64, -3e38}
	lengths := []int{1001}
	for n := range 71 {
		lengths = append(lengths, n)
	}
	for _, k := range act32Paired {
		for _, n := range lengths {
			for _, special := range []bool{false, true} {
				x, g := make([]float32, n+1), make([]float32, n+1)
				for i := range x {
					x[i], g[i] = float32(k.scale*r.NormFloat64()), float32(r.NormFloat64())
					if special && r.IntN(40) == 0 {
						if r.IntN(2) == 0 {
							x[i] = odd[r.IntN(3)]
						} else {
							g[i] = odd[r.IntN(len(odd))]
						}
					}
				}
				sp := [2]float32{float32(math.Inf(1)), float32(math.NaN())}
				want, got := make([]float32, n+1), make([]float32, n+1)
				got[n], want[n] = 7, 7
				if n == 0 {
					continue
				}
				if k.single != nil {
					k.single(&want[0], &x[0], n, &sp)
					k.two(&got[0], &x[0], n, &sp)
				} else {
					k.singleDF(&want[0], &x[0], &g[0], n, &sp)
					k.twoDF(&got[0], &x[0], &g[0], n, &sp)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s, n = %d: lane %d (x = %g, g = %g): %g, the eight-lane kernel %g", k.name, n, i, x[i], g[i], got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkAct32Paired compares the sixteen-lane sigmoid, SiLU, exp, tanh,
// GELU and GELU-tanh kernels with the eight-lane ones, on one core, in cache (16K values)
// and not (16M), interleaved: every iteration runs both once and times
// each, and the fastest call of each counts (a shared machine preempts
// some calls; the fastest are those it did not):
//
//	go test -run xxx -bench Act32Paired -benchtime 200x ./backends/cpu/
func BenchmarkAct32Paired(b *testing.B) {
	if !hasTranscendentalAVX2 {
		b.Skip("no AVX2")
	}
	sp := [2]float32{1, 0}
	for _, n := range []int{1 << 14, 1 << 24} {
		for _, k := range act32Paired {
			r := rand.New(rand.NewPCG(1, 2))
			x, g, o := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range x {
				x[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			one := func() { k.single(&o[0], &x[0], n, &sp) }
			two := func() { k.two(&o[0], &x[0], n, &sp) }
			if k.single == nil {
				one = func() { k.singleDF(&o[0], &x[0], &g[0], n, &sp) }
				two = func() { k.twoDF(&o[0], &x[0], &g[0], n, &sp) }
			}
			b.Run(fmt.Sprintf("n=%d/%s", n, k.name), func(b *testing.B) {
				t1, t2 := time.Hour, time.Hour
				for b.Loop() {
					t0 := time.Now()
					one()
					tm := time.Now()
					two()
					t1, t2 = min(t1, tm.Sub(t0)), min(t2, time.Since(tm))
				}
				b.ReportMetric(float64(n)/t1.Seconds()/1e9, "single-Gelem/s")
				b.ReportMetric(float64(n)/t2.Seconds()/1e9, "paired-Gelem/s")
				b.ReportMetric(t1.Seconds()/t2.Seconds(), "paired/single")
			})
		}
	}
}
