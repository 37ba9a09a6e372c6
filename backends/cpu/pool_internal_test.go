package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// checkPool2x2 pools planes of many widths (whole blocks of sixteen
// outputs, partial ones, odd input widths) holding ties, signed zeros,
// infinities and NaNs of both signs with pool, and checks values (as bits)
// and positions against the generic Go loop maxPool2x2.
func checkPool2x2(t *testing.T, pool func(dst []float32, di []int64, src []float32, w, oh, ow int)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0xffc00000), 1, 1, -1}
	for _, ow := range []int{1, 2, 7, 13, 15, 16, 17, 31, 32, 33, 40} {
		for _, extra := range []int{0, 1, 3} {
			w, oh := 2*ow+extra, 3
			src := make([]float32, 2*oh*w+extra*w)
			for i := range src {
				if rng.IntN(3) == 0 {
					src[i] = specials[rng.IntN(len(specials))]
				} else {
					src[i] = float32(rng.IntN(5) - 2) // many ties
				}
			}
			want, wantIdx := make([]float32, oh*ow), make([]int64, oh*ow)
			got, gotIdx := make([]float32, oh*ow), make([]int64, oh*ow)
			maxPool2x2(want, wantIdx, src, w, oh, ow)
			pool(got, gotIdx, src, w, oh, ow)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || gotIdx[i] != wantIdx[i] {
					t.Fatalf("ow %d, w %d, output %d: %g at %d, Go loop %g at %d",
						ow, w, i, got[i], gotIdx[i], want[i], wantIdx[i])
				}
			}
		}
	}
}

// TestMaxPool2x2F32MatchesGo checks the branch-free float32 loop (used
// where the CPU has no AVX-512) against the generic one.
func TestMaxPool2x2F32MatchesGo(t *testing.T) { checkPool2x2(t, maxPool2x2F32) }
