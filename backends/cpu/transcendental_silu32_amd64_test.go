//go:build !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// siluGradF32Kernels are the float32 SiLU backward kernels that run here
// with the AVX-512 float64 kernel whose bits they give where x < silu32Lo,
// x or g is ±Inf or NaN.
func siluGradF32Kernels() map[string]func(o, x, g []float32) {
	if !hasTranscendental {
		return nil
	}
	sp := [2]float32{float32(backends.UnaryOps[backends.Silu].DF(math.Inf(1), 0, 0)), float32(backends.UnaryOps[backends.Silu].DF(math.Inf(-1), 0, 0))}
	wrap := func(k func(dst, x, grad *float32, n int, sp *[2]float32)) func(o, x, g []float32) {
		return func(o, x, g []float32) {
			if len(o) > 0 {
				k(&o[0], &x[0], &g[0], len(o), &sp)
			}
		}
	}
	return map[string]func(o, x, g []float32){
		"paired": wrap(siluGradF32AVX512Paired), "one vector": wrap(siluGradF32AVX512), "wide": wrap(siluWideGradF32AVX512),
	}
}

// siluGradF32Covered reports whether the float32 SiLU kernels compute the
// lane (x, g) with their float32 body (else the float64 one).
func siluGradF32Covered(x, g float32) bool {
	return x >= silu32Lo && !math.IsInf(float64(x), 0) && !math.IsInf(float64(g), 0) && g == g
}

// TestSiluGradF32KernelMatchesModel checks the float32 SiLU backward
// kernels (thirty-two lanes an iteration and the template's one vector)
// against siluGradF32Model on silu32HardInputs with g of every magnitude
// (±0 and huge ones included), bit for bit, the sign of zero included: the
// model rounds its multiply-adds twice (through float64), which could
// differ from the hardware's single rounding in a halfway case, so a
// difference of 1 ulp is allowed in at most one input in 10^5, and none
// larger.
func TestSiluGradF32KernelMatchesModel(t *testing.T) {
	ks := siluGradF32Kernels()
	if ks == nil || !f32Kernels[backends.Silu].vecDF32 {
		t.Skip("no float32 SiLU backward kernel on this machine")
	}
	xs := silu32HardInputs()
	n := len(xs)
	r := rand.New(rand.NewPCG(77, 78))
	gs := make([]float32, n)
	for i := range gs {
		switch i % 8 {
		case 0:
			gs[i] = 1
		case 1:
			gs[i] = float32(math.Copysign(0, r.NormFloat64()))
		case 2:
			gs[i] = float32((1 + r.Float64()) * math.Ldexp(1, 100+r.IntN(27))) // products near or past overflow
		default:
			gs[i] = float32((1 + r.Float64()) * math.Ldexp(1, r.IntN(200)-100))
		}
		if r.IntN(2) == 0 {
			gs[i] = -gs[i]
		}
	}
	got := make([]float32, n)
	for _, name := range []string{"paired", "one vector"} {
		ks[name](got, xs, gs)
		off := 0
		for i, x := range xs {
			if !siluGradF32Covered(x, gs[i]) {
				continue
			}
			want := siluGradF32Model(x, gs[i])
			if math.Float32bits(got[i]) == math.Float32bits(want) {
				continue
			}
			if d := math.Float32bits(got[i]) - math.Float32bits(want); (d == 1 || d == math.MaxUint32) && off < n/100000 {
				off++
				continue
			}
			t.Fatalf("%s at x = %g (%#x), g = %g: kernel %g (%#x), model %g (%#x)", name, x, math.Float32bits(x), gs[i], got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
		t.Logf("%s: %d inputs, %d within 1 ulp of the model, the rest equal", name, n, off)
	}
}

// TestSiluGradF32KernelSpecials: lanes the float32 body does not cover (x
// < silu32Lo, x or g ±Inf or NaN) give the AVX-512 float64 kernel's bits,
// in whole blocks and in tails, and the other lanes of the same blocks the
// model's bits, for every length to 70 and offsets 0 to 3; the kernels
// write nothing outside dst[:n].
func TestSiluGradF32KernelSpecials(t *testing.T) {
	ks := siluGradF32Kernels()
	if ks == nil || !f32Kernels[backends.Silu].vecDF32 {
		t.Skip("no float32 SiLU backward kernel on this machine")
	}
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	oddX := []float32{inf, -inf, nan, -nan, silu32Lo - 1e-5, -85, -100, -200, -1e30, -math.MaxFloat32, 0, float32(math.Copysign(0, -1)), 1e30}
	oddG := []float32{inf, -inf, nan, 0x1p64, -3e38, math.MaxFloat32, 0, float32(math.Copysign(0, -1)), 1e-40}
	r := rand.New(rand.NewPCG(79, 80))
	for _, name := range []string{"paired", "one vector"} {
		for n := range 71 {
			for off := range 4 {
				x, g := make([]float32, off+n+1), make([]float32, off+n+1)
				for i := range x {
					x[i], g[i] = float32(4*r.NormFloat64()), float32(r.NormFloat64())
					if r.IntN(8) == 0 {
						x[i] = oddX[r.IntN(len(oddX))]
					}
					if r.IntN(8) == 0 {
						g[i] = oddG[r.IntN(len(oddG))]
					}
				}
				out, wide := make([]float32, off+n+1), make([]float32, n)
				for i := range out {
					out[i] = 7
				}
				ks[name](out[off:off+n], x[off:off+n], g[off:off+n])
				ks["wide"](wide, x[off:off+n], g[off:off+n])
				for i := range out {
					if i < off || i >= off+n {
						if out[i] != 7 {
							t.Fatalf("%s, n = %d, offset %d: wrote index %d outside dst", name, n, off, i)
						}
						continue
					}
					want := wide[i-off]
					if siluGradF32Covered(x[i], g[i]) {
						want = siluGradF32Model(x[i], g[i])
					}
					if got := out[i]; math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
						t.Fatalf("%s, n = %d, offset %d: lane %d (x = %g, g = %g): %g, want %g", name, n, off, i-off, x[i], g[i], got, want)
					}
				}
			}
		}
	}
}
