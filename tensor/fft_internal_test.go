package tensor

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

// TestFFTPlanMatchesNaiveDFT checks the mixed-radix and Bluestein paths
// against the O(n²) definition, in both directions.
func TestFFTPlanMatchesNaiveDFT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 25, 31, 37, 49, 60, 64, 97, 100, 128, 210, 1000, 1009} {
		for _, inverse := range []bool{false, true} {
			x := make([]complex128, n)
			for i := range x {
				x[i] = complex(rng.NormFloat64(), rng.NormFloat64())
			}
			want := make([]complex128, n)
			sign := -1.0
			if inverse {
				sign = 1
			}
			for k := range n {
				var s complex128
				for j := range n {
					ang := sign * 2 * math.Pi * float64((j*k)%n) / float64(n)
					s += x[j] * complex(math.Cos(ang), math.Sin(ang))
				}
				want[k] = s
			}
			p := planFFT(n)
			got := append([]complex128(nil), x...)
			p.transform(got, make([]complex128, p.scratchLen()), inverse)
			var maxErr float64
			for k := range n {
				maxErr = max(maxErr, cmplx.Abs(got[k]-want[k]))
			}
			if tol := 1e-12 * float64(n); maxErr > tol {
				t.Errorf("n=%d inverse=%v: max error %g > %g", n, inverse, maxErr, tol)
			}
		}
	}
}

func BenchmarkFFTPlan(b *testing.B) {
	for _, n := range []int{1024, 1000, 4096} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := planFFT(n)
			x := make([]complex128, n)
			for i := range x {
				x[i] = complex(float64(i%7), 1)
			}
			s := make([]complex128, p.scratchLen())
			for b.Loop() {
				p.transform(x, s, false)
			}
		})
	}
}
