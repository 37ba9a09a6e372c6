package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// hyperF32 returns h with every scalar rounded to a float32 value, as
// tensor.AdamStep makes them for a float32 parameter.
func hyperF32(h backends.AdamHyper) backends.AdamHyper {
	for _, x := range []*float64{&h.Decay, &h.WeightDecay, &h.Beta1, &h.Beta2, &h.InvDenom, &h.EpsTerm} {
		*x = float64(float32(*x))
	}
	return h
}

// adamTestValues returns n float32 values of magnitudes spread over many
// decades around scale, with zeros, subnormals and values near float32's
// largest mixed in.
func adamTestValues(rng *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		switch rng.IntN(40) {
		case 0:
			s[i] = 0
		case 1:
			s[i] = float32(rng.NormFloat64() * 1e-40) // subnormal
		case 2:
			s[i] = float32(rng.NormFloat64() * 1e18) // g·g overflows
		default:
			s[i] = float32(rng.NormFloat64() * scale * math.Pow(10, float64(rng.IntN(13)-6)))
		}
	}
	return s
}

// TestAdamF32KernelMatchesGo runs the float32 Adam kernel (through
// adamRange, which hands it the whole groups of eight) on parameters with
// float32 hyper-parameters, in place as AdamSteps runs it, and checks every
// output bit against the Go loop run one element at a time (a one-element
// adamRange never reaches a kernel). Parameters 0 and 1 are the Go loop's
// in any case; a length of 1003 leaves a tail of 3 to it too.
func TestAdamF32KernelMatchesGo(t *testing.T) {
	const n = 1003
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		name string
		h    backends.AdamHyper
	}{
		{"adamw early step", backends.AdamHyper{Decay: 1 - 1e-5, Beta1: 0.9, Beta2: 0.999, InvDenom: -31.6, EpsTerm: -1e-7, MovesParam: true}},
		{"adam late step", backends.AdamHyper{Decay: 1, Beta1: 0.9, Beta2: 0.999, InvDenom: -1000, EpsTerm: -1e-5, MovesParam: true}},
		{"other betas", backends.AdamHyper{Decay: 0.999, Beta1: 0.8, Beta2: 0.99, InvDenom: -300, EpsTerm: -3e-6, MovesParam: true}},
		{"ascending", backends.AdamHyper{Decay: 1, Beta1: 0.5, Beta2: 0.75, InvDenom: 7, EpsTerm: 1e-3, MovesParam: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := hyperF32(c.h)
			if _, ok := adamConstsF32(h); !ok {
				t.Fatalf("hyper-parameters %+v are not all float32 values", h)
			}
			p, g, m, v := adamTestValues(rng, n, 1), adamTestValues(rng, n, 1), adamTestValues(rng, n, 0.1), adamTestValues(rng, n, 0.01)
			for i := range v {
				v[i] = float32(math.Abs(float64(v[i])))
			}
			wantP, wantM, wantV := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range n {
				adamRange(wantP[i:i+1], wantM[i:i+1], wantV[i:i+1], p[i:i+1], g[i:i+1], m[i:i+1], v[i:i+1], h, 0, 1)
			}
			gotP, gotM, gotV := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
			// the kernel's share first, then the rest: the kernel alone
			// must report its groups of eight where it runs
			if done := vecAdamF32(gotP[2:], gotM[2:], gotV[2:], gotP[2:], g[2:], gotM[2:], gotV[2:], h); done == 0 {
				t.Skip("no float32 Adam kernel on this build or CPU")
			} else if done != (n-2)&^7 {
				t.Fatalf("kernel updated %d parameters, want %d", done, (n-2)&^7)
			}
			copy(gotP[2:], p[2:])
			copy(gotM[2:], m[2:])
			copy(gotV[2:], v[2:])
			adamRange(gotP, gotM, gotV, gotP, g, gotM, gotV, h, 2, n)
			adamRange(gotP, gotM, gotV, gotP, g, gotM, gotV, h, 0, 2)
			for i := range n {
				for _, w := range []struct {
					what      string
					got, want float32
				}{{"parameter", gotP[i], wantP[i]}, {"first moment", gotM[i], wantM[i]}, {"second moment", gotV[i], wantV[i]}} {
					if math.Float32bits(w.got) != math.Float32bits(w.want) {
						t.Fatalf("%s %d = %g, Go loop %g (p %g g %g m %g v %g)", w.what, i, w.got, w.want, p[i], g[i], m[i], v[i])
					}
				}
			}
		})
	}
}

// TestAdamConstsF32 checks which hyper-parameters the float32 kernel
// accepts: only those whose constants are all float32 values.
func TestAdamConstsF32(t *testing.T) {
	exact := hyperF32(backends.AdamHyper{Decay: 1 - 1e-5, Beta1: 0.9, Beta2: 0.999, InvDenom: -1000, EpsTerm: -1e-5})
	for _, c := range []struct {
		name string
		edit func(*backends.AdamHyper)
		want bool
	}{
		{"float32 values", func(*backends.AdamHyper) {}, true},
		{"float64 β₁", func(h *backends.AdamHyper) { h.Beta1 = 0.9 }, false},
		{"float64 decay", func(h *backends.AdamHyper) { h.Decay = 1 - 1e-5 }, false},
		{"float64 ε term", func(h *backends.AdamHyper) { h.EpsTerm = -1e-5 }, false},
		{"scale beyond float32", func(h *backends.AdamHyper) { h.InvDenom = -1e39 }, false},
		{"1−β₁ not a float32 value", func(h *backends.AdamHyper) { h.Beta1 = 0x1p-30 }, false},
		{"NaN", func(h *backends.AdamHyper) { h.Beta2 = math.NaN() }, false},
	} {
		h := exact
		c.edit(&h)
		if _, got := adamConstsF32(h); got != c.want {
			t.Errorf("%s: accepted %v, want %v", c.name, got, c.want)
		}
	}
}

// BenchmarkAdamStep235K updates as many float32 parameters as the MNIST
// MLP has, in place as an optimizer does, reporting the bytes moved per
// second (7 arrays of 4 bytes per parameter: p, g, m, v read; p, m, v
// written): with float64 hyper-parameters (the float64-scalar kernel) and
// with the same rounded to float32 values (the float32 kernel), so that
// -count interleaves the two.
func BenchmarkAdamStep235K(b *testing.B) {
	be := New(0)
	n := 235146
	p, g := randView(be, backends.Float32, 1, n), randView(be, backends.Float32, 2, n)
	m, v := randView(be, backends.Float32, 3, n), randView(be, backends.Float32, 4, n)
	be.Unary(backends.Abs, v, v, 0, 0)
	h64 := backends.AdamHyper{Decay: 1 - 1e-5, Beta1: 0.9, Beta2: 0.999, InvDenom: -1000, EpsTerm: -1e-5, MovesParam: true}
	for _, c := range []struct {
		name string
		h    backends.AdamHyper
	}{{"float64-scalars", h64}, {"float32-scalars", hyperF32(h64)}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				be.AdamStep(p, m, v, p, g, m, v, c.h)
			}
			b.ReportMetric(float64(7*4*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkMaxPool2x2 pools the MNIST CNN's first activations (128×16
// planes of 26×26, 2×2 windows, stride 2), reporting input bytes read per
// second.
func BenchmarkMaxPool2x2(b *testing.B) {
	be := New(0)
	g := backends.ConvGeometry{N: 128, C: 16, H: 26, W: 26, KH: 2, KW: 2, StrideH: 2, StrideW: 2,
		DilationH: 1, DilationW: 1, OutH: 13, OutW: 13}
	x := randView(be, backends.Float32, 1, g.N, g.C, g.H, g.W)
	out := allocView(be, backends.Float32, g.N, g.C, g.OutH, g.OutW)
	idx := allocView(be, backends.Int64, g.N, g.C, g.OutH, g.OutW)
	b.ResetTimer()
	for range b.N {
		be.MaxPool2d(out, idx, x, g)
	}
	b.ReportMetric(float64(4*g.N*g.C*g.H*g.W)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}
