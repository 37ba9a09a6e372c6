package cpu

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// transcendentalULPBound is the documented bound (transcendental.go) on the
// error of every float32 kernel, in float32 ulps of the exact value.
const transcendentalULPBound = 2

// float64KernelULP is the measured bound of the kernels that compute in
// float64 and round once (all but float32ForwardULP's and
// float32BackwardULP's).
const float64KernelULP = 0.52

// float32ForwardULP is the measured maximum error of the forward kernels
// that compute in float32 (their models, the vector kernels where they are
// those: f32Kernel.vecF32, altF32), over every float32 input
// (transcendental.go).
var float32ForwardULP = map[backends.UnaryOp]float64{backends.Exp: 0.99, backends.Tanh: 1.34, backends.Gelu: max(gelu32ULP, geluTableULP), backends.GeluTanh: geluTanh32ULP}

// float32BackwardULP is the same for the backward kernels in float32
// (vecDF32, altDF32), of the derivative (g = 1) and of g·f' alike.
var float32BackwardULP = map[backends.UnaryOp]float64{backends.Gelu: max(gelu32GradULP, geluGradTableULP)}

// gelu32GradULP bounds the float32 GELU backward kernel (AVX2): the
// maximum over every float32 input of its model, geluGradF32Model (1.8176
// ulp at x = -0.82667005, TestGeluF32ModelExhaustive), rounded up.
const gelu32GradULP = 1.82

// ulpBound is the bound TestTranscendentalULP holds implementation impl of
// k to in direction dir ("f", "f'" or "g·f'"): float32ForwardULP's and
// float32BackwardULP's for the kernels that compute in float32 (the models
// of exp and tanh forward, whose "model" implementations are those, and
// the vector kernels marked by f32Kernel's vecF32, vecDF32, altF32 and
// altDF32).
func ulpBound(impl string, k *f32Kernel, dir string) float64 {
	in32 := false
	switch impl {
	case "model":
		in32 = dir == "f" && modelKernels[k.op].rowF != nil
	case "vec":
		in32 = dir == "f" && k.vecF32 || dir != "f" && k.vecDF32
	case "alt":
		in32 = dir == "f" && k.altF32 || dir != "f" && k.altDF32
	}
	if !in32 {
		return float64KernelULP
	}
	if dir == "f" {
		return float32ForwardULP[k.op]
	}
	return float32BackwardULP[k.op]
}

// refSigmoid is 1/(1+e^-x) without overflow or cancellation.
func refSigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// transcendentalRefs are float64 references for the float32 kernels,
// accurate to a few float64 ulps (far below a float32 ulp) over the whole
// float32 range: unlike some of backends' definitions they keep their
// relative accuracy where the result is tiny (GELU's negative tail,
// sech² at large |x|).
var transcendentalRefs = map[backends.UnaryOp]struct{ f, df func(float64) float64 }{
	backends.Exp: {math.Exp, math.Exp},
	backends.Log: {math.Log, func(x float64) float64 { return 1 / x }},
	backends.Tanh: {math.Tanh, func(x float64) float64 {
		c := math.Cosh(x)
		return 1 / (c * c)
	}},
	backends.Erf:     {math.Erf, func(x float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) }},
	backends.Sigmoid: {refSigmoid, func(x float64) float64 { return refSigmoid(x) * refSigmoid(-x) }},
	backends.Silu: {func(x float64) float64 { return x * refSigmoid(x) },
		func(x float64) float64 {
			if math.Abs(x-siluRoot.hi) < 0.1 {
				return bigDeriv(backends.Silu, x)
			}
			return refSigmoid(x) * (1 + x*refSigmoid(-x))
		}},
	backends.Gelu: {func(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) },
		func(x float64) float64 {
			if math.Abs(x-geluRoot.hi) < 0.1 {
				return bigDeriv(backends.Gelu, x)
			}
			return 0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
		}},
	backends.GeluTanh: {func(x float64) float64 {
		return x * refSigmoid(2*geluC*(x+0.044715*x*x*x))
	}, func(x float64) float64 {
		if math.Abs(x-geluTanhRoot.hi) < 0.1 {
			return bigDeriv(backends.GeluTanh, x)
		}
		u2 := 2 * geluC * (x + 0.044715*x*x*x)
		return refSigmoid(u2) + x*2*geluC*(1+3*0.044715*x*x)*refSigmoid(u2)*refSigmoid(-u2)
	}},
}

// bigDeriv computes the derivative of SiLU, GELU or GELU's tanh form at x
// (within about 1 of zero) with 256-bit floats and Taylor series for exp
// and erf, for the references near the zeros of these derivatives, where
// float64 formulas cancel to a relative error of 2^-30 or so.
func bigDeriv(op backends.UnaryOp, x float64) float64 {
	const prec = 256
	nf := func(v float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(v) }
	add := func(a, b *big.Float) *big.Float { return new(big.Float).SetPrec(prec).Add(a, b) }
	mul := func(a, b *big.Float) *big.Float { return new(big.Float).SetPrec(prec).Mul(a, b) }
	quo := func(a, b *big.Float) *big.Float { return new(big.Float).SetPrec(prec).Quo(a, b) }
	neg := func(a *big.Float) *big.Float { return new(big.Float).SetPrec(prec).Neg(a) }
	one := nf(1)
	exp := func(y *big.Float) *big.Float { // Σ yⁿ/n!, |y| < 4
		sum, term := nf(1), nf(1)
		for n := 1; n < 120; n++ {
			term = quo(mul(term, y), nf(float64(n)))
			sum = add(sum, term)
		}
		return sum
	}
	pi, _ := new(big.Float).SetPrec(prec).SetString("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899")
	sqrtPi := new(big.Float).SetPrec(prec).Sqrt(pi)
	erf := func(z *big.Float) *big.Float { // 2/√π Σ (-1)ⁿ z^(2n+1)/(n!(2n+1)), |z| < 2
		z2 := neg(mul(z, z))
		sum, p := nf(0), z // p = (-1)ⁿ z^(2n+1)/n!
		for n := 0; n < 120; n++ {
			sum = add(sum, quo(p, nf(float64(2*n+1))))
			p = quo(mul(p, z2), nf(float64(n+1)))
		}
		return quo(mul(nf(2), sum), sqrtPi)
	}
	sig := func(y *big.Float) *big.Float { return quo(one, add(one, exp(neg(y)))) }
	bx := nf(x)
	var d *big.Float
	switch op {
	case backends.Silu: // s·(1 + x·(1-s))
		s := sig(bx)
		d = mul(s, add(one, mul(bx, add(one, neg(s)))))
	case backends.Gelu: // (1 + erf(x/√2))/2 + x·e^(-x²/2)/√(2π)
		sqrt2 := new(big.Float).SetPrec(prec).Sqrt(nf(2))
		phi := mul(nf(0.5), add(one, erf(quo(bx, sqrt2))))
		d = add(phi, quo(mul(bx, exp(mul(nf(-0.5), mul(bx, bx)))), mul(sqrt2, sqrtPi)))
	case backends.GeluTanh: // S + x·(2u)'·S·(1-S), 2u = 2c(x + 0.044715x³)
		c2, a := mul(nf(2), nf(geluC)), nf(0.044715)
		x2 := mul(bx, bx)
		s := sig(mul(c2, add(bx, mul(a, mul(x2, bx)))))
		du := mul(c2, add(one, mul(nf(3), mul(a, x2))))
		d = add(s, mul(mul(bx, du), mul(s, add(one, neg(s)))))
	default:
		panic("bigDeriv: " + op.String())
	}
	v, _ := d.Float64()
	return v
}

// ulpError returns |got - want| in float32 ulps at want (the spacing of
// float32 values around want; 2^-149 below the normal range). A want
// beyond float32's range must round to the same infinity, and NaN must
// meet NaN; otherwise the error is +Inf.
func ulpError(got float32, want float64) float64 {
	switch {
	case math.IsNaN(want) || got != got:
		if math.IsNaN(want) && got != got {
			return 0
		}
		return math.Inf(1)
	case math.IsInf(float64(float32(want)), 0) || math.IsInf(float64(got), 0):
		if float32(want) == got {
			return 0
		}
		return math.Inf(1)
	}
	ulp := math.Ldexp(1, -149)
	if math.Abs(want) >= 0x1p-126 {
		_, e := math.Frexp(want)
		ulp = math.Ldexp(1, e-24)
	}
	return math.Abs(float64(got)-want) / ulp
}

// ulpSweep returns the inputs the ulp tests use: a stride through every
// float32 bit pattern (all signs and magnitudes, denormals, infinities and
// NaNs), every float32 in windows around the places where the kernels
// switch methods, saturate, underflow or cancel, and a dense random sample
// of the range activations see.
func ulpSweep(stride uint64, window, random int) []float32 {
	var xs []float32
	for u := uint64(0); u < 1<<32; u += stride {
		xs = append(xs, math.Float32frombits(uint32(u)))
	}
	centres := []float32{
		0, 0x1p-126, 1.0 / 16, 1, 0.5, 2, 0.699, 1.398,
		-0.7517915, -1.2784645, // zeros of GELU' and SiLU'
		88.72284, -87.33655, -103.97208, // exp overflows, leaves the normal range, underflows
		9.01, -9.01, 52.4, 6, 3.92, // tanh, sech² and erf saturate
		-14.3, -10.1, -7, -5, -3, // GELU's tail into the denormals
		-300, 300, -600, 600, 1000, -1000, // the clamps
	}
	for _, c := range centres {
		for _, s := range []float32{1, -1} {
			x := s * c
			for range window {
				xs = append(xs, x)
				x = math.Nextafter32(x, float32(math.Inf(1)))
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range random {
		xs = append(xs, float32(r.Float64()*24-12))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32)
	return xs
}

// transcendentalImpls returns the implementations of k to test: the Go
// loops, the model of the assembly kernels (transcendental_model_test.go)
// in the same loops, and the vector kernels where this machine runs them
// ("vec", "alt": the AVX2 ones on an AVX-512 machine, and "wide",
// "altwide": the kernels in float64 of those instruction sets that float32
// ones replaced).
func transcendentalImpls(k *f32Kernel) map[string]struct {
	fwd func(o, x []float32)
	bwd func(o, x, g []float32)
} {
	m := map[string]struct {
		fwd func(o, x []float32)
		bwd func(o, x, g []float32)
	}{"go": {k.forwardGo, k.backwardGo}, "model": {modelKernels[k.op].forwardGo, modelKernels[k.op].backwardGo}}
	if k.vecF != nil {
		m["vec"] = struct {
			fwd func(o, x []float32)
			bwd func(o, x, g []float32)
		}{k.vecF, k.vecDF}
	}
	if k.altF != nil {
		m["alt"] = struct {
			fwd func(o, x []float32)
			bwd func(o, x, g []float32)
		}{k.altF, k.altDF}
	}
	if k.wideF != nil {
		m["wide"] = struct {
			fwd func(o, x []float32)
			bwd func(o, x, g []float32)
		}{k.wideF, k.wideDF}
	}
	if k.altWideF != nil {
		m["altwide"] = struct {
			fwd func(o, x []float32)
			bwd func(o, x, g []float32)
		}{k.altWideF, k.altWideDF}
	}
	return m
}

// sortedKernelOps lists the ops with float32 kernels in a fixed order.
func sortedKernelOps() []backends.UnaryOp {
	var ops []backends.UnaryOp
	for op := range f32Kernels {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	return ops
}

// TestTranscendentalULP measures the error of every float32 kernel, forward
// and backward (with g = 1, so the derivative itself, and with random g,
// against float64(g)·f'(x)), in every implementation, over ulpSweep's
// inputs against float64 references, logs the maximum in ulps with the
// input where it occurs, and fails above the measured bounds (ulpBound),
// all within the documented transcendentalULPBound. Special
// inputs must give exactly what the op's definition gives. The default
// sweep has about a million inputs; KILN_ULP_STRIDE=1021 runs the dense one
// (6.4 million, every 1021st bit pattern) that transcendental.go's numbers
// come from.
func TestTranscendentalULP(t *testing.T) {
	stride, window, random := uint64(8191), 2500, 1<<18
	if testing.Short() || raceEnabled {
		stride, window, random = 1<<16+1, 500, 1<<14
	}
	if v, err := strconv.ParseUint(os.Getenv("KILN_ULP_STRIDE"), 10, 64); err == nil && v > 0 {
		stride, window, random = v, 20000, 1<<20 // the dense sweep: KILN_ULP_STRIDE=1021 (about a minute)
	}
	xs := ulpSweep(stride, window, random)
	n := len(xs)
	ones, gs := make([]float32, n), make([]float32, n)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range ones {
		ones[i] = 1
		gs[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(9)-4)))
	}
	got := make([]float32, n)
	for _, op := range sortedKernelOps() {
		k := f32Kernels[op]
		ref := transcendentalRefs[op]
		def := backends.UnaryOps[op]
		wantF, wantD := make([]float64, n), make([]float64, n)
		for i, x := range xs {
			d := float64(x)
			if d-d == 0 && !(op == backends.Log && d <= 0) {
				wantF[i], wantD[i] = ref.f(d), ref.df(d)
			} else { // ±Inf, NaN (and log's domain edge): the definition, exactly
				wantF[i], wantD[i] = float64(float32(def.F(d, 0, 0))), def.DF(d, 0, 0)
			}
		}
		for name, impl := range transcendentalImpls(k) {
			for _, c := range []struct {
				dir  string
				g    []float32
				run  func()
				want func(i int) float64
			}{
				{"f", nil, func() { impl.fwd(got, xs) }, func(i int) float64 { return wantF[i] }},
				{"f'", nil, func() { impl.bwd(got, xs, ones) }, func(i int) float64 { return wantD[i] }},
				{"g·f'", gs, func() { impl.bwd(got, xs, gs) }, func(i int) float64 { return float64(gs[i]) * wantD[i] }},
			} {
				c.run()
				worst, at := 0.0, 0
				for i := range xs {
					if e := ulpError(got[i], c.want(i)); e > worst || math.IsNaN(e) {
						worst, at = e, i
					}
				}
				what := fmt.Sprintf("%s %s %s", name, def.Name, c.dir)
				t.Logf("%-26s max error %.4f ulp at x = %g (got %g, want %g)", what, worst, xs[at], got[at], c.want(at))
				if bound := ulpBound(name, k, c.dir); !(worst <= bound && worst <= transcendentalULPBound) {
					t.Errorf("%s: error %g ulp at x = %g (bits %#x): got %g, want %g (bound %g)", what, worst, xs[at],
						math.Float32bits(xs[at]), got[at], c.want(at), bound)
				}
			}
		}
	}
}

// TestTranscendentalSpecials checks the kernels at ±0, ±Inf and NaN
// against the op's definition bit for bit (the sign of zero included),
// forward and backward with gradients of several kinds, in every
// implementation, at every position of a vector block and of a tail.
func TestTranscendentalSpecials(t *testing.T) {
	inf := math.Inf(1)
	xs := []float64{0, math.Copysign(0, -1), inf, -inf, math.NaN()}
	gs := []float64{1, -2.5, 0, math.Copysign(0, -1), inf, -inf, math.NaN()}
	for _, op := range sortedKernelOps() {
		def := backends.UnaryOps[op]
		for name, impl := range transcendentalImpls(f32Kernels[op]) {
			for _, n := range []int{1, 15, 16, 17, 37} { // tails and whole blocks
				for _, x := range xs {
					for _, g := range gs {
						for at := range n {
							xv, gv := make([]float32, n), make([]float32, n)
							for i := range xv {
								xv[i], gv[i] = 0.75, 1
							}
							xv[at], gv[at] = float32(x), float32(g)
							o := make([]float32, n)
							impl.fwd(o, xv)
							if want := float64(float32(def.F(x, 0, 0))); !sameBits(float64(o[at]), want) {
								t.Fatalf("%s %s(%v) at %d of %d = %v, want %v", name, def.Name, x, at, n, o[at], want)
							}
							impl.bwd(o, xv, gv)
							if want := float64(float32(g * def.DF(x, 0, 0))); !sameBits(float64(o[at]), want) {
								t.Fatalf("%s %s'(%v)·%v at %d of %d = %v, want %v", name, def.Name, x, g, at, n, o[at], want)
							}
						}
					}
				}
			}
		}
	}
}

// TestTranscendentalDerivatives checks the derivative of each portable
// kernel and of each model of an assembly kernel against central
// differences of its function (both in float64, before the rounding to
// float32), across the range where they vary and close to the zeros of the
// derivatives.
func TestTranscendentalDerivatives(t *testing.T) {
	for _, op := range sortedKernelOps() {
		for _, k := range []*f32Kernel{f32Kernels[op], modelKernels[op]} {
			checkDerivative(t, k)
		}
	}
}

// checkDerivative compares k.df with central differences of k.f.
func checkDerivative(t *testing.T, k *f32Kernel) {
	t.Helper()
	lo, hi := -12.0, 12.0
	if k.op == backends.Log {
		lo, hi = 1e-3, 1e3
	}
	var xs []float64
	for i := 0; i <= 2000; i++ {
		xs = append(xs, lo+(hi-lo)*float64(i)/2000)
	}
	for _, r := range []derivRoot{geluRoot, siluRoot, geluTanhRoot} {
		for _, d := range []float64{-0.04, -rootWindow, -1e-3, -1e-6, 0, 1e-6, 1e-3, rootWindow, 0.04} {
			xs = append(xs, r.hi+d)
		}
	}
	for _, x := range xs {
		if x < lo || x > hi {
			continue
		}
		h := 1e-5 * math.Max(0.01, math.Abs(x))
		num := (k.f(x+h) - k.f(x-h)) / (2 * h)
		if got := k.df(x); math.Abs(num-got) > 1e-7*math.Max(1, math.Abs(num)) {
			t.Errorf("%s at %v: derivative %v, central difference %v", backends.UnaryOps[k.op].Name, x, got, num)
		}
	}
}

// TestTranscendentalDrivers runs the kernels through Unary and UnaryGrad
// on contiguous runs long enough to be split across workers (1, 2 and 3),
// in place, on strided, transposed and broadcast views, and in Float16 and
// BFloat16, and checks every element against the kernel applied to that
// element's float32 value alone: the drivers must not change a bit.
func TestTranscendentalDrivers(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	n := 3*ewMinChunk + 37
	if raceEnabled {
		n = ewMinChunk + 37
	}
	xs, gs := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * 3)
		gs[i] = float32(r.NormFloat64())
	}
	one := func(k *f32Kernel, x, g float32, bwd bool) float32 {
		o := []float32{0}
		if bwd {
			k.backward(o, []float32{x}, []float32{g})
		} else {
			k.forward(o, []float32{x})
		}
		return o[0]
	}
	for _, op := range sortedKernelOps() {
		k := f32Kernels[op]
		name := backends.UnaryOps[op].Name
		for _, workers := range []int{1, 2, 3} {
			be := New(workers)
			x, g, out := allocView(be, backends.Float32, n), allocView(be, backends.Float32, n), allocView(be, backends.Float32, n)
			copy(buf(x).f32(), xs)
			copy(buf(g).f32(), gs)
			for _, bwd := range []bool{false, true} {
				for _, inPlace := range []bool{false, true} {
					o := out
					copy(buf(x).f32(), xs) // the run before may have been in place
					if inPlace {
						o = x
					}
					if bwd {
						be.UnaryGrad(op, o, x, g, 0, 0)
					} else {
						be.Unary(op, o, x, 0, 0)
					}
					got := buf(o).f32()
					for i := range n {
						if want := one(k, xs[i], gs[i], bwd); math.Float32bits(got[i]) != math.Float32bits(want) && !(want != want && got[i] != got[i]) {
							t.Fatalf("%s bwd=%v in place=%v, %d workers: element %d = %v, want %v", name, bwd, inPlace, workers, i, got[i], want)
						}
					}
				}
			}
		}
		be := New(2)
		for _, dt := range []backends.DType{backends.Float32, backends.Float16, backends.BFloat16} {
			layoutCases(func(shape []int, in, outLay layout, seed uint64) {
				x := makeView(be, dt, in, seed, true, shape...)
				g := makeView(be, dt, inputLayouts[int(seed)%len(inputLayouts)], seed+50, true, shape...)
				for _, bwd := range []bool{false, true} {
					out := makeView(be, dt, outLay, seed+100, false, shape...)
					var want []float64
					forEachIndex(shape, func(idx []int) {
						xv, _ := loadAt(x, idx)
						gv, _ := loadAt(g, idx)
						want = append(want, roundTo(dt, float64(one(k, float32(xv), float32(gv), bwd))))
					})
					if bwd {
						be.UnaryGrad(op, out, x, g, 0, 0)
					} else {
						be.Unary(op, out, x, 0, 0)
					}
					checkExact(t, fmt.Sprintf("%s bwd=%v %s %v %s→%s", name, bwd, dt, shape, in, outLay), out, want)
				}
			})
		}
	}
}

// TestTranscendentalKernelGradients checks each kernel's backward (g = 1)
// against central differences of its own float32 forward, on points where
// x ± h are float32 values: a check of the running kernels, with a
// tolerance (10^-3) set by the float32 rounding of f(x ± h), not by the
// kernels' accuracy, which TestTranscendentalULP measures.
func TestTranscendentalKernelGradients(t *testing.T) {
	const h = 1.0 / 128
	for _, op := range sortedKernelOps() {
		k := f32Kernels[op]
		var xs, xp, xm []float32
		for i := -6 * 64; i <= 6*64; i++ {
			x := float32(i) / 64
			if op == backends.Log {
				x = float32(i+7*64) / 64 // [1, 13]
			}
			xs, xp, xm = append(xs, x), append(xp, x+h), append(xm, x-h)
		}
		n := len(xs)
		ones, d, fp, fm := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range ones {
			ones[i] = 1
		}
		k.backward(d, xs, ones)
		k.forward(fp, xp)
		k.forward(fm, xm)
		for i := range xs {
			num := (float64(fp[i]) - float64(fm[i])) / (2 * h)
			if math.Abs(num-float64(d[i])) > 1e-3*math.Max(1, math.Abs(num)) {
				t.Errorf("%s at %v: backward %v, central difference of forward %v", backends.UnaryOps[op].Name, xs[i], d[i], num)
			}
		}
	}
}

// TestAVX2KernelsVEXRegisters checks that the generated AVX2 kernels
// (kernels_amd64.s, functions named …AVX2) use only the sixteen vector
// registers VEX encodes and no AVX-512 state: avo's allocator hands out
// X16-X31 when a kernel needs more, which the Go assembler then encodes
// with EVEX, and the kernel faults (SIGILL) on AVX2 machines alone.
func TestAVX2KernelsVEXRegisters(t *testing.T) {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Skip(err)
	}
	bad := regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z[0-9]+|K[0-7])\b`)
	name, n := "", 0
	for line := range strings.Lines(string(src)) {
		if strings.HasPrefix(line, "TEXT ") {
			name = strings.Fields(line)[1]
			if strings.Contains(name, "AVX2(") {
				n++
			}
			continue
		}
		if strings.Contains(name, "AVX2(") && !strings.HasPrefix(strings.TrimSpace(line), "//") {
			if r := bad.FindString(line); r != "" {
				t.Errorf("%s uses %s: %s", name, r, strings.TrimSpace(line))
			}
		}
	}
	if n < 16 {
		t.Errorf("found %d AVX2 kernels, want the 16 transcendental ones at least", n)
	}
}
