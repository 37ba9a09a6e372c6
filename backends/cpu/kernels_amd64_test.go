//go:build !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// TestAdamKernelsMatchGo runs both widths of the Adam assembly kernel on
// the same parameters and checks every output bit against the Go loop,
// element by element (a one-element adamRange never reaches a kernel).
func TestAdamKernelsMatchGo(t *testing.T) {
	const n = 1000
	rng := rand.New(rand.NewPCG(3, 4))
	vals := func(scale float64) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64() * scale * math.Pow(10, float64(rng.IntN(9)-4)))
		}
		return s
	}
	p, g, m, v := vals(1), vals(1), vals(0.1), vals(0.01)
	for i := range v {
		v[i] = float32(math.Abs(float64(v[i])))
	}
	h := backends.AdamHyper{Decay: 1 - 1e-4, Beta1: 0.9, Beta2: 0.999, InvDenom: -300, EpsTerm: -3e-6, MovesParam: true}
	k := [7]float64{h.Decay, h.Beta1, h.Beta2, 1 - h.Beta1, 1 - h.Beta2, h.InvDenom, h.EpsTerm}
	wantP, wantM, wantV := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		adamRange(wantP[i:i+1], wantM[i:i+1], wantV[i:i+1], p[i:i+1], g[i:i+1], m[i:i+1], v[i:i+1], h, 0, 1)
	}
	kernels := map[string]func(outP, outM, outV, param, grad, mom, vel *float32, n int, k *[7]float64){"avx2": adamF32}
	if hasAVX512 {
		kernels["avx512"] = adamF32AVX512
	} else {
		t.Log("no AVX-512 on this CPU: only the AVX2 kernel is checked")
	}
	for name, kern := range kernels {
		if !hasAVX2 {
			t.Skip("no AVX2 on this CPU")
		}
		op, om, ov := make([]float32, n), make([]float32, n), make([]float32, n)
		kern(&op[0], &om[0], &ov[0], &p[0], &g[0], &m[0], &v[0], n, &k)
		for i := range n {
			for _, c := range []struct {
				what      string
				got, want float32
			}{{"param", op[i], wantP[i]}, {"first moment", om[i], wantM[i]}, {"second moment", ov[i], wantV[i]}} {
				if math.Float32bits(c.got) != math.Float32bits(c.want) {
					t.Fatalf("%s: %s %d = %g, Go loop %g", name, c.what, i, c.got, c.want)
				}
			}
		}
	}
}

// TestMaxPoolKernelMatchesGo checks the AVX-512 2×2 max-pooling kernel
// against the Go loop on poolPlanes' planes (values as bits, positions).
func TestMaxPoolKernelMatchesGo(t *testing.T) {
	if !hasAVX512 || !hasBMI2 {
		t.Skip("no AVX-512 or BMI2 on this CPU")
	}
	checkPool2x2(t, func(dst []float32, di []int64, src []float32, w, oh, ow int) {
		if !vecMaxPool2x2(dst, di, src, w, oh, ow) {
			t.Fatal("the kernel did not run")
		}
	})
}

// TestSumKernelMatchesFloat64 checks the AVX2 float32 sum (float64 partial
// sums) against a plain float64 sum of the same values, on lengths that
// are and are not whole groups of sixteen.
func TestSumKernelMatchesFloat64(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{16, 17, 31, 32, 48, 100, 1000, 4099} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3)))
		}
		got := reduceRun[float32, float64](backends.Sum, x, 0, 1, n)
		var want, scale float64
		for _, v := range x {
			want += float64(v)
			scale += math.Abs(float64(v))
		}
		if math.Abs(got-want) > 1e-12*scale {
			t.Errorf("n=%d: sum %v, float64 loop %v", n, got, want)
		}
		if s, done := vecSumWide[float32, float64](x); done != n&^15 || (done > 0 && s == 0) {
			t.Errorf("n=%d: the kernel covered %d elements", n, done)
		}
	}
}

// TestAccKernelMatchesGo checks the AVX2 widening accumulation against the
// Go loop bit for bit.
func TestAccKernelMatchesGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{8, 9, 15, 16, 33, 100} {
		x := make([]float32, n)
		acc, want := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			acc[i] = rng.NormFloat64() * 1e3
			want[i] = acc[i] + float64(x[i])
		}
		accumulateRow(backends.Sum, acc, x, 0, 1)
		for i := range acc {
			if math.Float64bits(acc[i]) != math.Float64bits(want[i]) {
				t.Fatalf("n=%d: acc[%d] = %v, Go loop %v", n, i, acc[i], want[i])
			}
		}
	}
}
