package cpu

import (
	"math"
	"testing"
)

// TestMathExpF32MatchesMathExp compares mathExpF32 with float32(math.Exp)
// on a stride through every float32 bit pattern (about 4 million values, all
// signs, magnitudes, NaNs and infinities) and on the edges of its range.
// An exhaustive run over all 2^32 values passed when it was written.
func TestMathExpF32MatchesMathExp(t *testing.T) {
	var got1 [1]float32
	check := func(x float32) {
		want := float32(math.Exp(float64(x)))
		mathExpF32(got1[:], []float32{x})
		got := got1[0]
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("mathExpF32(%v) = %v, want %v", x, got, want)
		}
	}
	for u := uint64(0); u < 1<<32; u += 1021 {
		check(math.Float32frombits(uint32(u)))
	}
	for _, x := range []float32{0, -0, 1, -1, -87, -87.0001, 88.5, 88.50001, 88.72, 88.73, -103, -104,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, -1e-30} {
		check(x)
		check(math.Nextafter32(x, 0))
	}
}
