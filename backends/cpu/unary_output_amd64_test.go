//go:build !purego

package cpu

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestUnaryGradOutputFactorsExhaustive compares the vector kernels' factors
// with the Go loop's over every float32 in the ops' output ranges ([0, 1]
// for Sigmoid, |y| ≤ 1 for Tanh; the Go loop's double rounding through
// float64 is the concern, and the vector kernel's VFNMADD231PS rounds
// once): 2·2³⁰ values, a few seconds.
func TestUnaryGradOutputFactorsExhaustive(t *testing.T) {
	if !hasAVX2 || testing.Short() || raceEnabled {
		t.Skip("needs the AVX2 kernels and a few seconds (minutes under the race detector)")
	}
	const chunk = 1 << 20
	ys, ones, vec, gof := make([]float32, chunk), make([]float32, chunk), make([]float32, chunk), make([]float32, chunk)
	for i := range ones {
		ones[i] = 1
	}
	for _, op := range []backends.UnaryOp{backends.Tanh, backends.Sigmoid} {
		for start := uint32(0); start <= 0x3f800000; start += chunk {
			n := min(chunk, int(0x3f800000-start)+1)
			for i := range n {
				ys[i] = math.Float32frombits(start + uint32(i))
			}
			outGradF32(op, vec[:n], ys[:n], ones[:n], false)
			outGradGoF32(op, gof[:n], ys[:n], ones[:n])
			for i := range n {
				if math.Float32bits(vec[i]) != math.Float32bits(gof[i]) {
					t.Fatalf("%s at y = %g (%#x): vector %g, Go %g", op, ys[i], math.Float32bits(ys[i]), vec[i], gof[i])
				}
			}
		}
	}
}
