//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
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
	avx512      bool // AVX-512 kernels (sixteen lanes a vector, thirty-two an iteration)
}{
	{name: "sigmoid fwd", single: sigmoidF32AVX2, two: sigmoidF32AVX2Paired, scale: 8},
	{name: "silu fwd", single: siluF32AVX2, two: siluF32AVX2Paired, scale: 8},
	{name: "sigmoid bwd", singleDF: sigmoidGradF32AVX2, twoDF: sigmoidGradF32AVX2Paired, scale: 8},
	{name: "exp bwd", singleDF: expGradF32AVX2, twoDF: expGradF32AVX2Paired, scale: 30},
	{name: "tanh bwd", singleDF: tanhGradF32AVX2, twoDF: tanhGradF32AVX2Paired, scale: 8},
	{name: "gelu fwd", single: geluF32AVX2, two: geluF32AVX2Paired, scale: 3},
	{name: "gelu bwd", singleDF: geluGradF32AVX2, twoDF: geluGradF32AVX2Paired, scale: 3},
	{name: "gelu_tanh fwd", single: geluTanhF32AVX2, two: geluTanhF32AVX2Paired, scale: 3},
	{name: "sigmoid fwd avx512", single: sigmoidF32AVX512, two: sigmoidF32AVX512Paired, scale: 8, avx512: true},
	{name: "silu fwd avx512", single: siluF32AVX512, two: siluF32AVX512Paired, scale: 8, avx512: true},
	{name: "sigmoid bwd avx512", singleDF: sigmoidGradF32AVX512, twoDF: sigmoidGradF32AVX512Paired, scale: 8, avx512: true},
	{name: "tanh bwd avx512", singleDF: tanhGradF32AVX512, twoDF: tanhGradF32AVX512Paired, scale: 8, avx512: true},
	{name: "gelu fwd avx512", single: geluF32AVX512, two: geluF32AVX512Paired, scale: 3, avx512: true},
	{name: "gelu bwd avx512", singleDF: geluGradF32AVX512, twoDF: geluGradF32AVX512Paired, scale: 3, avx512: true},
	{name: "silu bwd avx512", singleDF: siluGradF32AVX512, twoDF: siluGradF32AVX512Paired, scale: 8, avx512: true},
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
		if k.avx512 && !hasTranscendental {
			continue
		}
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
			if k.avx512 && !hasTranscendental {
				continue
			}
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

// TestF32AVX512KernelTails checks the AVX-512 float32 kernels (those of
// transcendentalAsm that compute in float32 but exp's and tanh's forward,
// and the template's one-vector kernels under their …Paired forms)
// against their scalar models bit for bit at every length 0 to 33 and
// offsets 0 to 3, with ±Inf and NaN among x and (backward) huge finite g
// among the gradients, whose lanes must give the AVX-512 float64 kernel's
// bits (f32Kernel.wideF, wideDF; NaN any NaN) where the float32 body does
// not cover them (|g| ≥ 2^64 but for SiLU's, which covers every finite g:
// siluGradF32Covered); and that they write nothing outside dst[:n].
func TestF32AVX512KernelTails(t *testing.T) {
	if !hasTranscendental {
		t.Skip("no AVX-512")
	}
	type model struct {
		op  backends.UnaryOp
		dir string
		f   func(x, g float32) float32
		// covered, when set, tells the lanes the float32 body computes
		// (else those with x finite and |g| < 2^64)
		covered func(x, g float32) bool
	}
	models := []model{
		{backends.Gelu, "f", func(x, _ float32) float32 { return geluF32Models([]float32{x}, true)[0] }, nil}, // the table's result for |x| ≤ 3
		{backends.Gelu, "f'", func(x, g float32) float32 { return geluGradF32Models(x, g, true) }, nil},       // the table's for |x| ≤ 3
		{backends.Silu, "f'", siluGradF32Model, siluGradF32Covered},
	}
	for _, m := range act32Models {
		models = append(models, model{m.op, m.dir, m.f, nil})
	}
	single := map[string]struct {
		fwd func(dst, x *float32, n int, sp *[2]float32)
		bwd func(dst, x, grad *float32, n int, sp *[2]float32)
	}{
		"sigmoid f": {fwd: sigmoidF32AVX512}, "silu f": {fwd: siluF32AVX512}, "gelu f": {fwd: geluF32AVX512},
		"sigmoid f'": {bwd: sigmoidGradF32AVX512}, "tanh f'": {bwd: tanhGradF32AVX512}, "gelu f'": {bwd: geluGradF32AVX512},
		"silu f'": {bwd: siluGradF32AVX512},
	}
	r := rand.New(rand.NewPCG(61, 62))
	inf := float32(math.Inf(1))
	oddX := []float32{inf, -inf, float32(math.NaN())}
	hugeG := []float32{0x1p64, -0x1p64, 1e30, -3e38}
	ran := 0
	for _, m := range models {
		k := f32Kernels[m.op]
		if m.dir == "f" && (!k.vecF32 || m.op == backends.Exp || m.op == backends.Tanh) || m.dir != "f" && !k.vecDF32 {
			continue
		}
		name := backends.UnaryOps[m.op].Name + " " + m.dir
		sp := [2]float32{float32(backends.UnaryOps[m.op].F(math.Inf(1), 0, 0)), float32(backends.UnaryOps[m.op].F(math.Inf(-1), 0, 0))}
		if m.dir != "f" {
			sp = [2]float32{float32(backends.UnaryOps[m.op].DF(math.Inf(1), 0, 0)), float32(backends.UnaryOps[m.op].DF(math.Inf(-1), 0, 0))}
		}
		s := single[name]
		impls := map[string]func(o, x, g []float32){
			"vec": func(o, x, g []float32) {
				if m.dir == "f" {
					k.vecF(o, x)
				} else {
					k.vecDF(o, x, g)
				}
			},
			"one vector": func(o, x, g []float32) {
				if len(o) == 0 {
					return
				}
				if m.dir == "f" {
					s.fwd(&o[0], &x[0], len(o), &sp)
				} else {
					s.bwd(&o[0], &x[0], &g[0], len(o), &sp)
				}
			},
		}
		for impl, run := range impls {
			ran++
			for n := range 34 {
				for off := range 4 {
					for _, special := range []bool{false, true} {
						x, g := make([]float32, off+n+1), make([]float32, off+n+1)
						for i := range x {
							x[i], g[i] = float32(4*r.NormFloat64()), float32(r.NormFloat64())
							if special && r.IntN(6) == 0 {
								if r.IntN(2) == 0 || m.dir == "f" {
									x[i] = oddX[r.IntN(len(oddX))]
								} else {
									g[i] = hugeG[r.IntN(len(hugeG))]
								}
							}
						}
						out, wide := make([]float32, off+n+1), make([]float32, n)
						for i := range out {
							out[i] = 7
						}
						run(out[off:off+n], x[off:off+n], g[off:off+n])
						if m.dir == "f" {
							k.wideF(wide, x[off:off+n])
						} else {
							k.wideDF(wide, x[off:off+n], g[off:off+n])
						}
						for i := range out {
							if i < off || i >= off+n {
								if out[i] != 7 {
									t.Fatalf("%s %s, n = %d, offset %d: wrote index %d outside dst", impl, name, n, off, i)
								}
								continue
							}
							xi, gi := x[i], g[i]
							want := wide[i-off]
							covered := xi == xi && !math.IsInf(float64(xi), 0) && math.Abs(float64(gi)) < 0x1p64
							if m.covered != nil {
								covered = m.covered(xi, gi)
							}
							if covered {
								want = m.f(xi, gi)
							}
							if got := out[i]; math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
								t.Fatalf("%s %s, n = %d, offset %d: lane %d (x = %g, g = %g): %g, want %g", impl, name, n, off, i-off, xi, gi, got, want)
							}
						}
					}
				}
			}
		}
	}
	if ran == 0 {
		t.Skip("no AVX-512 float32 kernels selected")
	}
	t.Logf("%d kernels checked", ran)
}
