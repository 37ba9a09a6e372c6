package tensor

import (
	"fmt"
	"math"
	"testing"
)

// sgdCase is one combination of SGDStep's options.
type sgdCase struct {
	name string
	cfg  SGDConfig
}

// sgdCases returns every combination of momentum, dampening, Nesterov,
// weight decay and maximize (Nesterov with dampening too: torch refuses
// it, but SGDStep defines it and the fused kernel must agree there too).
// Momentum 0.5 comes with learning rate 0.25: scalars that are exact
// float32 values, for which the CPU's composed ops multiply in float32.
func sgdCases() []sgdCase {
	var cases []sgdCase
	for _, mom := range []float64{0, 0.9, 0.5} {
		lr := 0.1
		if mom == 0.5 {
			lr = 0.25
		}
		for _, damp := range []float64{0, 0.3} {
			for _, nesterov := range []bool{false, true} {
				for _, wd := range []float64{0, 0.01} {
					for _, maximize := range []bool{false, true} {
						cfg := SGDConfig{LR: lr, Momentum: mom, Dampening: damp, WeightDecay: wd, Nesterov: nesterov,
							Maximize: maximize}
						name := fmt.Sprintf("lr=%v,momentum=%v,dampening=%v,nesterov=%v,wd=%v,maximize=%v", lr, mom, damp, nesterov, wd, maximize)
						cases = append(cases, sgdCase{name, cfg})
					}
				}
			}
		}
	}
	return cases
}

// sgdRun takes four SGDStep steps from a fixed start on dev, and returns
// copies of the parameter and buffer after each step. With fused it checks
// that the fused kernel ran: updates in place keep the buffer tensor.
func sgdRun(t *testing.T, dev Device, dtype DType, cfg SGDConfig, fused bool) [][]float64 {
	dev = dev.NoGrad()
	dev.Seed(9)
	p := Randn(dev, 37, 29).To(dtype)
	var st SGDState
	var out [][]float64
	for step := 1; step <= 4; step++ {
		// gradients of varied magnitude, so that every product rounds
		g := Randn(dev, 37, 29).MulScalar(math.Pow(3.7, float64(step))).To(dtype)
		before := st.MomentumBuffer
		next, nst := SGDStep(p, g, st, cfg)
		if cfg.InPlace && next != p {
			t.Fatalf("step %d in place returned a new parameter tensor", step)
		}
		if !cfg.InPlace && next == p {
			t.Fatalf("step %d returned p itself", step)
		}
		if cfg.Momentum == 0 && nst.MomentumBuffer != nil {
			t.Fatalf("step %d without momentum made a buffer", step)
		}
		if cfg.Momentum != 0 && (nst.MomentumBuffer == nil || nst.MomentumBuffer == g || nst.MomentumBuffer == next) {
			t.Fatalf("step %d: the new buffer is missing or shares a tensor", step)
		}
		if before != nil && !cfg.InPlace && nst.MomentumBuffer == before {
			t.Fatalf("step %d: the buffer was updated in place without InPlace", step)
		}
		if before != nil && cfg.InPlace && (nst.MomentumBuffer == before) != fused {
			t.Fatalf("step %d: buffer kept %v, want %v (the fused kernel runs in place)", step, !fused, fused)
		}
		p, st = next, nst
		out = append(out, p.Float64s())
		if st.MomentumBuffer != nil {
			out = append(out, st.MomentumBuffer.Float64s())
		}
	}
	return out
}

// sameBits fails t unless got and want hold the same values bit for bit
// (float32 results widen to float64 exactly, so their bits compare too).
func sameBits(t *testing.T, what string, got, want [][]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s: result %d has %d values, want %d", what, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if math.Float64bits(got[i][j]) != math.Float64bits(want[i][j]) {
				t.Fatalf("%s: result %d element %d: %v, want %v", what, i, j, got[i][j], want[i][j])
			}
		}
	}
}

// TestFusedSGDMatchesComposed: the fused update (the CPU's kernel, and
// the same kernel behind the strict and fusion decorators) gives the bits
// of the composed one for every option, dtype and in place or not.
func TestFusedSGDMatchesComposed(t *testing.T) {
	cpu, err := ParseDevice("cpu")
	if err != nil {
		t.Fatal(err)
	}
	strict, err := ParseDevice("strict")
	if err != nil {
		t.Fatal(err)
	}
	devices := map[string]Device{"cpu": cpu, "strict": strict, "cpu+fused": cpu.Fused()}
	for _, dtype := range []DType{Float32, Float64} {
		for _, c := range sgdCases() {
			for _, inPlace := range []bool{false, true} {
				name := c.name + "/" + dtype.String()
				if inPlace {
					name += "/in place"
				}
				cfg := c.cfg
				cfg.InPlace = inPlace
				t.Run(name, func(t *testing.T) {
					for devName, dev := range devices {
						run := func(compose bool) [][]float64 {
							composeOnly.Store(compose)
							defer composeOnly.Store(false)
							var out [][]float64
							Scope(func() { out = sgdRun(t, dev, dtype, cfg, !compose) })
							if err := dev.Sync(); err != nil {
								t.Fatalf("%s: %v", devName, err)
							}
							return out
						}
						want, got := run(true), run(false)
						sameBits(t, devName, got, want)
					}
				})
			}
		}
	}
}

// TestSGDStepDefinition checks the composed update (and so the fused one)
// against SGD's definition computed here in float64, element by element,
// on float64 tensors where every operation rounds as float64 does.
func TestSGDStepDefinition(t *testing.T) {
	dev := CPU().NoGrad()
	for _, c := range sgdCases() {
		t.Run(c.name, func(t *testing.T) {
			dev.Seed(5)
			p := Randn(dev, 4, 7).To(Float64)
			pv := p.Float64s()
			bv := make([]float64, len(pv))
			var st SGDState
			cfg := c.cfg
			for step := 1; step <= 3; step++ {
				g := Randn(dev, 4, 7).To(Float64)
				gv := g.Float64s()
				// explicit float64 conversions round every product, as the
				// ops do (Go may otherwise fuse a product and a sum)
				for i := range pv {
					d := gv[i]
					if cfg.Maximize {
						d = -d
					}
					if cfg.WeightDecay != 0 {
						d += float64(pv[i] * cfg.WeightDecay)
					}
					if cfg.Momentum != 0 {
						if step == 1 {
							bv[i] = d
						} else {
							bv[i] = float64(bv[i]*cfg.Momentum) + float64(d*(1-cfg.Dampening))
						}
						if cfg.Nesterov {
							d += float64(bv[i] * cfg.Momentum)
						} else {
							d = bv[i]
						}
					}
					pv[i] -= float64(d * cfg.LR)
				}
				p, st = SGDStep(p, g, st, cfg)
				want := [][]float64{pv}
				got := [][]float64{p.Float64s()}
				if cfg.Momentum != 0 {
					want, got = append(want, bv), append(got, st.MomentumBuffer.Float64s())
				}
				sameBits(t, fmt.Sprintf("step %d", step), got, want)
			}
		})
	}
}

// TestSGDStepInPlaceFused: on the CPU an update in place overwrites the
// parameter and, after the first step, the momentum buffer (no new
// tensors), and leaves the gradient alone.
func TestSGDStepInPlaceFused(t *testing.T) {
	dev := CPU().NoGrad()
	dev.Seed(3)
	p, g := Randn(dev, 100), Randn(dev, 100)
	gv := g.Float64s()
	cfg := SGDConfig{LR: 0.01, Momentum: 0.9, InPlace: true}
	next, st := SGDStep(p, g, SGDState{}, cfg)
	if next != p || st.MomentumBuffer == nil || st.MomentumBuffer == g {
		t.Fatalf("first step: parameter %p (want %p), buffer %p", next, p, st.MomentumBuffer)
	}
	buf := st.MomentumBuffer
	next, st = SGDStep(p, g, st, cfg)
	if next != p || st.MomentumBuffer != buf {
		t.Fatalf("second step made new tensors: parameter %p (want %p), buffer %p (want %p)", next, p, st.MomentumBuffer, buf)
	}
	sameBits(t, "gradient", [][]float64{g.Float64s()}, [][]float64{gv})
}

// TestSGDStepStrided: operands that are not contiguous (a transposed
// gradient and buffer) take the composed path and still agree with
// contiguous copies of them, which take the fused one.
func TestSGDStepStrided(t *testing.T) {
	dev := CPU().NoGrad()
	dev.Seed(4)
	cfg := SGDConfig{LR: 0.05, Momentum: 0.8, WeightDecay: 0.1, Nesterov: true}
	p := Randn(dev, 6, 5)
	g := Randn(dev, 5, 6).Transpose(0, 1)
	buf := Randn(dev, 5, 6).Transpose(0, 1)
	p1, st1 := SGDStep(p, g, SGDState{MomentumBuffer: buf}, cfg)
	p2, st2 := SGDStep(p, g.Contiguous(), SGDState{MomentumBuffer: buf.Contiguous()}, cfg)
	sameBits(t, "strided", [][]float64{p1.Float64s(), st1.MomentumBuffer.Float64s()},
		[][]float64{p2.Float64s(), st2.MomentumBuffer.Float64s()})
}

// TestSGDStepErrors: mismatched or non-float operands panic with ErrShape.
func TestSGDStepErrors(t *testing.T) {
	dev := CPU().NoGrad()
	cases := []struct {
		name string
		p, g *Tensor
	}{
		{"shapes differ", Zeros(dev, 3), Zeros(dev, 4)},
		{"integer parameter", Zeros(dev, 3).To(Int64), Zeros(dev, 3)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				e, ok := recover().(*Error)
				if !ok || e.Err != ErrShape {
					t.Fatalf("panic %v, want a *Error wrapping ErrShape", e)
				}
			}()
			SGDStep(c.p, c.g, SGDState{}, SGDConfig{LR: 0.1})
		})
	}
}

// BenchmarkSGDStep11M updates as many float32 parameters as ResNet-18 has
// (11.7M) with momentum 0.9 in place, as optim.SGD does, composed and
// fused (run with -count to interleave the two); it reports the bytes a
// fused update moves per second (p, g and the buffer read, p and the
// buffer written).
func BenchmarkSGDStep11M(b *testing.B) {
	dev := CPU().NoGrad()
	const n = 11_689_512
	p, g := Randn(dev, n), Randn(dev, n)
	_, st := SGDStep(p, g, SGDState{}, SGDConfig{LR: 0.01, Momentum: 0.9, InPlace: true})
	for _, mode := range []string{"composed", "fused"} {
		b.Run(mode, func(b *testing.B) {
			composeOnly.Store(mode == "composed")
			defer composeOnly.Store(false)
			for range b.N {
				Scope(func() {
					old := st.MomentumBuffer
					_, st = SGDStep(p, g, st, SGDConfig{LR: 0.01, Momentum: 0.9, InPlace: true})
					if st.MomentumBuffer != old { // composed: a new buffer
						st.MomentumBuffer.Keep()
						old.Release()
					}
				})
			}
			if err := dev.Sync(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(5*4*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
