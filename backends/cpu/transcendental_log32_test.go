package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// log's forward in float32 (asm/gen/transcendental_log32.go, the AVX2
// kernel): the same steps and constants in scalar Go (log32Model), which
// the kernel equals bit for bit (TestLog32KernelMatchesModel) and whose
// error is measured over every positive float32
// (TestLog32ModelExhaustive).

// The kernel's constants (asm/gen/transcendental_log32.go).
const (
	// log32Off is the bits of float32(√½): m's interval starts there.
	log32Off = 0x3f3504f3
	// log32Ln2Hi is ln2 to 15 significant bits: k·log32Ln2Hi is exact for
	// |k| < 512.
	log32Ln2Hi = 0x1.62e4p-1
)

var (
	// log32Ln2Lo is ln2 - log32Ln2Hi rounded to float32.
	log32Ln2Lo = float32(math.Ln2 - log32Ln2Hi)
	// log32P is P(f) ≈ (log(1+f) - f)/f² on [√½ - 1, √2 - 1]
	// (scripts/fit_log32.py).
	log32P = [...]float32{
		-0x1.fffff8p-2, 0x1.55555p-2, -0x1.000436p-2, 0x1.99a426p-3, -0x1.5424d6p-3,
		0x1.226bf4p-3, -0x1.0f45a6p-3, 0x1.087376p-3, -0x1.385ce4p-4,
	}
)

// log32Model is log(x) as the float32 kernel computes it, for finite x >
// 0: x = 2^k·m with m in [√½, √2) (a denormal x scaled by 2^23 first), f =
// m - 1 exact, k·ln2Hi + f = s + e exactly (Fast2Sum), and log(x) = s +
// (e + k·ln2Lo + f²·P(f)), rounded once at the end.
func log32Model(x float32) float32 {
	b, adj := math.Float32bits(x), int32(0)
	if b < 0x00800000 { // denormal: x·2^23 is exact and normal
		b, adj = math.Float32bits(x*0x1p23), 23
	}
	u := b - log32Off
	k := int32(u)>>23 - adj
	f := math.Float32frombits(u&0x007fffff+log32Off) - 1
	f2 := float32(f * f)
	p := log32Poly(f, f2)
	kf := float32(k)
	s := fma32(kf, log32Ln2Hi, f)
	e := f - fma32(-kf, log32Ln2Hi, s)
	e = fma32(kf, log32Ln2Lo, e)
	e = fma32(fma32(f, f, -f2), p, e) // f²'s rounding error
	e = fma32(f2, p, e)
	return s + e
}

// log32Poly is P(f) as the kernel evaluates it, with f2 = f² rounded:
// c0 + f·(c1 + f·S(f)), S by Estrin's scheme.
func log32Poly(f, f2 float32) float32 {
	c := log32P
	a0, a1, a2 := fma32(f, c[3], c[2]), fma32(f, c[5], c[4]), fma32(f, c[7], c[6])
	f4 := float32(f2 * f2)
	b0, b1 := fma32(f2, a1, a0), fma32(f2, c[8], a2)
	return fma32(f, fma32(f, fma32(f4, b1, b0), c[1]), c[0])
}

// log32ULP bounds the float32 log forward kernel (AVX2): the maximum of
// log32Model over every positive finite float32 (TestLog32ModelExhaustive:
// 0.7757 ulp at x = 1.2799082), rounded up.
const log32ULP = 0.78

func init() { float32ForwardULP[backends.Log] = log32ULP }

// log32HardInputs returns positive inputs where the float32 log is hardest
// or switches behaviour: x near 1 from both sides (log is tiny there and
// needs its relative accuracy), the reduction's switch at m = √½ in every
// binade, powers of two, denormals, the least and greatest floats, x just
// below √½ (where k·ln2 and log(m) cancel), and random positive floats.
func log32HardInputs() []float32 {
	var xs []float32
	walk := func(x float32, n int) {
		up, down := x, x
		for range n {
			xs = append(xs, up, down)
			up, down = math.Nextafter32(up, float32(math.Inf(1))), math.Nextafter32(down, 0)
		}
	}
	walk(1, 1<<14)
	for e := -149; e <= 127; e++ {
		p := float32(math.Ldexp(1, e))
		walk(p, 16)
		if e >= -126 {
			walk(math.Float32frombits(uint32(e+127)<<23|log32Off&0x007fffff), 64) // m's switch
		}
	}
	walk(math.MaxFloat32, 256)
	walk(0x1p-126, 256)
	r := rand.New(rand.NewPCG(51, 52))
	for range 1 << 16 {
		xs = append(xs,
			float32(1+math.Ldexp(r.Float64()*2-1, -r.IntN(24))), // x - 1 down to 2^-24
			float32(math.Sqrt(0.5)*(1-r.Float64()/16)),
			math.Float32frombits(r.Uint32()&0x007fffff), // denormals
			math.Float32frombits(r.Uint32()&0x7fffffff)) // every binade (a few NaN and Inf)
	}
	return xs
}

// TestLog32Model measures log32Model on log32HardInputs against
// math.Log and fails above log32ULP.
func TestLog32Model(t *testing.T) {
	worst, at := 0.0, float32(0)
	for _, x := range log32HardInputs() {
		if x != x || math.IsInf(float64(x), 0) || x <= 0 {
			continue
		}
		if e := ulpError(log32Model(x), math.Log(float64(x))); e > worst {
			worst, at = e, x
		}
	}
	t.Logf("log32Model: max %.4f ulp at x = %g (%#x)", worst, at, math.Float32bits(at))
	if worst > log32ULP {
		t.Errorf("log32Model: %.4f ulp at x = %g (bound %g)", worst, at, log32ULP)
	}
}

// TestLog32ModelExhaustive runs log32Model over every positive finite
// float32 (denormals included) where KILN_LOG32_EXHAUSTIVE is set:
//
//	KILN_LOG32_EXHAUSTIVE=1 go test -run Log32ModelExhaustive -v ./backends/cpu/
//
// (about two and a half minutes on two busy cores).
func TestLog32ModelExhaustive(t *testing.T) {
	if os.Getenv("KILN_LOG32_EXHAUSTIVE") == "" {
		t.Skip("set KILN_LOG32_EXHAUSTIVE=1 to run over every float32")
	}
	worst, at := worstOverFloat32(func(x float32) float64 {
		if x <= 0 {
			return 0
		}
		return ulpError(log32Model(x), math.Log(float64(x)))
	})
	t.Logf("every positive float32: log max %.4f ulp at x = %g (%#x)", worst, at, math.Float32bits(at))
	if worst > log32ULP {
		t.Errorf("log: %.4f ulp (bound %g)", worst, log32ULP)
	}
}

// TestLog32KernelMatchesModel checks the float32 log kernels ("vec", and
// "alt" on an AVX-512 machine) against log32Model on log32HardInputs bit
// for bit: the model rounds its multiply-adds twice (through float64),
// which could differ from the hardware's single rounding in a halfway
// case, so a difference of 1 ulp is allowed in at most one input in 10^5,
// and none larger. Special inputs (±0, negatives, ±Inf, NaN), in whole
// blocks and in tails, densely and sparsely (blocks of sixteen with and
// without them take different kernels: logF32AVX2Paired), must give the
// float64 kernel's bits (NaN any NaN), and the inputs beside them the
// model's.
func TestLog32KernelMatchesModel(t *testing.T) {
	xs := log32HardInputs()
	n := len(xs)
	got := make([]float32, n)
	ran := false
	for name, im := range f32KernelImpls(backends.Log) {
		if !im.f32 {
			continue
		}
		ran = true
		im.fwd(got, xs)
		off := 0
		for i, x := range xs {
			if x != x || math.IsInf(float64(x), 0) || x <= 0 {
				continue
			}
			want := log32Model(x)
			if math.Float32bits(got[i]) == math.Float32bits(want) {
				continue
			}
			if d := math.Float32bits(got[i]) - math.Float32bits(want); (d == 1 || d == math.MaxUint32) && off < n/100000 {
				off++
				continue
			}
			t.Fatalf("%s log at x = %g (%#x): kernel %g (%#x), model %g (%#x)", name, x, math.Float32bits(x),
				got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
		t.Logf("%s log: %d inputs, %d within 1 ulp of the model, the rest equal", name, n, off)

		// special lanes among ordinary ones, against the float64 kernel
		// (or the definition where there is none)
		inf := float32(math.Inf(1))
		special := []float32{0, float32(math.Copysign(0, -1)), -1, -1e-45, -3e38, inf, -inf, float32(math.NaN()),
			math.Float32frombits(0xffc00001), 1e-45, math.MaxFloat32, 1}
		r := rand.New(rand.NewPCG(53, 54))
		for _, c := range []struct{ m, oneIn int }{{1, 3}, {5, 3}, {8, 3}, {13, 3}, {16, 3}, {64, 3}, {1001, 3}, {1001, 60}, {4099, 300}} {
			// one special input in oneIn: at 1 in 60 and 300 most blocks
			// of sixteen have none (the sixteen-lane kernel's), the rest
			// go to the eight-lane one
			m := c.m
			in, out, ref := make([]float32, m), make([]float32, m), make([]float32, m)
			for i := range in {
				in[i] = float32(math.Exp(r.NormFloat64() * 4))
				if r.IntN(c.oneIn) == 0 {
					in[i] = special[r.IntN(len(special))]
				}
			}
			im.fwd(out, in)
			if im.wideF != nil {
				im.wideF(ref, in)
			} else {
				for i, x := range in {
					ref[i] = float32(math.Log(float64(x)))
				}
			}
			for i, x := range in {
				want := ref[i]
				if x > 0 && !math.IsInf(float64(x), 0) {
					want = log32Model(x)
				}
				if math.Float32bits(out[i]) != math.Float32bits(want) && !(out[i] != out[i] && want != want) {
					t.Fatalf("%s log, n = %d: x = %g (%#x): %g, want %g", name, m, x, math.Float32bits(x), out[i], want)
				}
			}
		}
	}
	if !ran {
		t.Skip("no float32 log kernel on this machine")
	}
}
