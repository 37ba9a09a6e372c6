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
	lengths := []int{1001, 5000}
	for n := range 101 {
		lengths = append(lengths, n)
	}
	sp := [2]float32{float32(math.Inf(1)), float32(math.NaN())}
	for _, n := range lengths {
		x := make([]float32, n+1)
		for i := range x {
			x[i] = hard[r.IntN(len(hard))]
			if r.IntN(2) == 0 {
				x[i] = float32(r.NormFloat64())
			}
			if r.IntN(97) == 0 {
				x[i] = odd[r.IntN(len(odd))]
			}
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
