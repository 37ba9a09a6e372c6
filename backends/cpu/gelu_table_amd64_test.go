//go:build !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGeluTableKernelMatchesModel checks GELU's AVX-512 forward kernels
// lane by lane at lengths 0 to 100, 1001 and 5000: the table kernel with
// its fallback (geluF32AVX512Table), the erfc-based pairs (geluF32AVX512-
// Paired) and the template's kernel (geluF32AVX512) each give the table
// model's bits (geluTableF32Model) where |x| ≤ 3, whatever lies in the
// same block, and the erfc-based model's (geluF32Model) elsewhere; nothing
// past n is written. The inputs are geluTableInputs (interval boundaries,
// ±0, denormals) and normal values, with some lanes beyond 3, ±Inf or
// NaN (whose own results TestAct32PairedKernels checks).
func TestGeluTableKernelMatchesModel(t *testing.T) {
	if !hasTranscendental {
		t.Skip("no AVX-512")
	}
	hard := geluTableInputs()[:2000]
	r := rand.New(rand.NewPCG(71, 72))
	odd := []float32{3.0000002, -3.0000002, 40, -7, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	sp := [2]float32{float32(math.Inf(1)), float32(math.NaN())}
	for _, n := range geluTableLengths() {
		x := make([]float32, n+1)
		for i := range x {
			x[i] = geluTableDraw(r, hard, odd)
		}
		want := append(geluF32Models(x[:n], true), 7)
		for name, k := range map[string]func(dst, x *float32, n int, sp *[2]float32){
			"table": geluF32AVX512Table, "pairs": geluF32AVX512Paired, "template": geluF32AVX512} {
			got := make([]float32, n+1)
			got[n] = 7
			if n > 0 {
				k(&got[0], &x[0], n, &sp)
			}
			for i := range got {
				if i < n && (x[i] != x[i] || math.IsInf(float64(x[i]), 0)) {
					continue // sp's values: TestAct32PairedKernels
				}
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s, n = %d, lane %d (x = %g): %g, want %g", name, n, i, x[i], got[i], want[i])
				}
			}
		}
	}
}

// TestGeluGradTableKernelMatchesModel checks GELU's AVX-512 backward
// kernels lane by lane at lengths 0 to 100, 1001 and 5000: the table
// kernel with its fallback (geluGradF32AVX512Table), the erfc-based pairs
// (geluGradF32AVX512Paired) and the template's kernel (geluGradF32AVX512)
// each give the backward table model's bits (geluGradTableF32Model) where
// |x| ≤ 3 and |g| < 2^64, whatever lies in the same block, and the
// erfc-based model's (geluGradF32Model) elsewhere but for |g| ≥ 2^64
// (TestGeluF32KernelHugeGradients); nothing past n is written. As in
// TestGeluF32KernelsMatchModel, the models round their multiply-adds
// twice, through float64, so 1 ulp is allowed in at most one lane in
// 10^5. The inputs are geluGradTableInputs and normal values, g normal
// values of several scales and ±0, with some lanes beyond 3, ±Inf or NaN
// and some huge g.
func TestGeluGradTableKernelMatchesModel(t *testing.T) {
	if !hasTranscendental {
		t.Skip("no AVX-512")
	}
	hard := geluGradTableInputs()
	r := rand.New(rand.NewPCG(73, 74))
	odd := []float32{3.0000002, -3.0000002, 40, -7, -20, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	sp := [2]float32{float32(math.Inf(1)), float32(math.NaN())}
	total, off := 0, 0
	for _, n := range geluTableLengths() {
		x, g := make([]float32, n+1), make([]float32, n+1)
		for i := range x {
			x[i] = geluTableDraw(r, hard, odd)
			g[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(41)-20))
			switch r.IntN(101) {
			case 0:
				g[i] = float32(math.Copysign(0, float64(g[i])))
			case 1:
				g[i] = 0x1p70
			}
		}
		for name, k := range map[string]func(dst, x, g *float32, n int, sp *[2]float32){
			"table": geluGradF32AVX512Table, "pairs": geluGradF32AVX512Paired, "template": geluGradF32AVX512} {
			got := make([]float32, n+1)
			got[n] = 7
			if n > 0 {
				k(&got[0], &x[0], &g[0], n, &sp)
			}
			if got[n] != 7 {
				t.Fatalf("%s, n = %d: wrote past n", name, n)
			}
			for i := range n {
				if ax, ag := math.Abs(float64(x[i])), math.Abs(float64(g[i])); ax != ax || math.IsInf(ax, 0) || ag >= 0x1p64 {
					continue // TestAct32PairedKernels, TestGeluF32KernelHugeGradients
				}
				want := geluGradF32Models(x[i], g[i], true)
				total++
				if math.Float32bits(got[i]) == math.Float32bits(want) {
					continue
				}
				if d := math.Float32bits(got[i]) - math.Float32bits(want); d == 1 || d == math.MaxUint32 {
					off++
					continue
				}
				t.Fatalf("%s, n = %d, lane %d (x = %g, g = %g): %g, want %g", name, n, i, x[i], g[i], got[i], want)
			}
		}
	}
	if off > total/100000 {
		t.Errorf("%d of %d lanes 1 ulp from the models", off, total)
	}
}

// geluTableLengths are the lengths the table kernels' tests run: 0 to
// 100 (every tail and block boundary), 1001 and 5000.
func geluTableLengths() []int {
	lengths := []int{1001, 5000}
	for n := range 101 {
		lengths = append(lengths, n)
	}
	return lengths
}

// geluTableDraw returns an input for the table kernels' tests: one of
// hard or a standard normal value, each half the time, and one of odd
// one time in 97.
func geluTableDraw(r *rand.Rand, hard, odd []float32) float32 {
	x := hard[r.IntN(len(hard))]
	if r.IntN(2) == 0 {
		x = float32(r.NormFloat64())
	}
	if r.IntN(97) == 0 {
		x = odd[r.IntN(len(odd))]
	}
	return x
}
