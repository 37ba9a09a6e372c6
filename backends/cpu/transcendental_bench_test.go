package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
)

// benchActivationOps are the ops BenchmarkActivation measures, with the
// names make bench-compare matches PyTorch's functions against.
var benchActivationOps = []struct {
	name string
	op   backends.UnaryOp
}{
	{"exp", backends.Exp}, {"log", backends.Log}, {"tanh", backends.Tanh}, {"erf", backends.Erf},
	{"sigmoid", backends.Sigmoid}, {"gelu", backends.Gelu}, {"gelu_tanh", backends.GeluTanh},
	{"silu", backends.Silu},
}

// normalView returns a contiguous float32 view of standard normal values
// (log gets their absolute values), the inputs an activation sees.
func normalView(be *Backend, seed uint64, abs bool, shape ...int) backends.View {
	v := allocView(be, backends.Float32, shape...)
	r := rand.New(rand.NewPCG(seed, 11))
	s := buf(v).f32()
	for i := range s {
		x := r.NormFloat64()
		if abs && x < 0 {
			x = -x
		}
		s[i] = float32(x)
	}
	return v
}

// BenchmarkActivation measures the float32 transcendental kernels forward
// (out = f(x)) and backward (out = g·f'(x), one fused pass) on a
// [64·256, 1024] tensor, a GPT-sized batch of activations, on 1 and 2
// worker goroutines. The backward is the one autodiff runs: from the
// forward's output y for the ops with UnaryDef.DFOut (exp, tanh, sigmoid:
// UnaryGradOutput, as PyTorch's), whose backward from x (UnaryGrad) is
// dir=bwdx, and from x for the others. It reports elements per second,
// bytes read plus written per second (8 bytes an element forward, 12
// backward), and elements per CPU-second, steadier when other processes
// share the cores.
func BenchmarkActivation(b *testing.B) {
	useWideKernels()
	shape := []int{64 * 256, 1024}
	n := shape[0] * shape[1]
	for _, c := range benchActivationOps {
		fromY := backends.UnaryOps[c.op].DFOut != nil
		dirs := []string{"fwd", "bwd"}
		if fromY {
			dirs = append(dirs, "bwdx")
		}
		for _, dir := range dirs {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("op=%s/dir=%s/threads=%d", c.name, dir, threads), func(b *testing.B) {
					be := New(threads)
					x := normalView(be, 1, c.op == backends.Log, shape...)
					g := normalView(be, 2, false, shape...)
					out := allocView(be, backends.Float32, shape...)
					run, bytes := func() { be.Unary(c.op, out, x, 0, 0) }, 8
					switch {
					case dir == "bwd" && fromY:
						y := allocView(be, backends.Float32, shape...)
						be.Unary(c.op, y, x, 0, 0)
						run, bytes = func() { be.UnaryGradOutput(c.op, out, y, g) }, 12
					case dir != "fwd":
						run, bytes = func() { be.UnaryGrad(c.op, out, x, g, 0, 0) }, 12
					}
					run()
					c0 := cpuSeconds()
					for b.Loop() {
						run()
					}
					s := b.Elapsed().Seconds()
					b.ReportMetric(float64(n)*float64(b.N)/s/1e9, "Gelem/s")
					b.ReportMetric(float64(bytes*n)*float64(b.N)/s/1e9, "GB/s")
					if c := cpuSeconds() - c0; c > 0 {
						b.ReportMetric(float64(n)*float64(b.N)/c/1e9, "Gelem/cpu-s")
					}
				})
			}
		}
	}
}

// useWideKernels switches the ops with float32 AVX2 kernels back to their
// float64 ones (f32Kernel.wideF, wideDF: GELU's, GELU-tanh's forward,
// sigmoid's, SiLU's and log's forward, exp's and tanh's backward, and with
// them exp's and tanh's forward, which were in float32 before them too;
// on AVX-512 those of transcendentalAsmWide, SiLU's backward among them)
// where KILN_ACT_WIDE is set, or
// GELU's alone where KILN_GELU_WIDE is set (its forward alone where that
// is "fwd"), so that one test binary measures both, run after run:
//
//	go test -c -o cpu.test ./backends/cpu/
//	for i in 1 2 3 4; do for w in "" 1; do KILN_ACT_WIDE=$w ./cpu.test -test.run xxx -test.bench 'GeluStep|Activation/op=(gelu|gelu_tanh|sigmoid|silu|exp)/' -test.benchtime 20x; done; done
//
// It is called from the benchmarks that go through the backend, once: it
// changes the kernel table the whole package uses.
func useWideKernels() {
	all, gelu := os.Getenv("KILN_ACT_WIDE") != "", os.Getenv("KILN_GELU_WIDE")
	if !all && gelu == "" {
		return
	}
	for op, k := range f32Kernels {
		if k.wideF == nil || !(all || op == backends.Gelu) {
			continue
		}
		k.vecF, k.vecF32 = k.wideF, false
		if all || gelu != "fwd" {
			k.vecDF, k.vecDF32 = k.wideDF, false
		}
	}
}

// BenchmarkGeluStep is a GELU forward and backward on a [64·256, 1024]
// float32 tensor, as one layer of a GPT-style training step does them, on 1
// and 2 worker goroutines; make bench-compare sets it against PyTorch.
func BenchmarkGeluStep(b *testing.B) {
	useWideKernels()
	shape := []int{64 * 256, 1024}
	n := shape[0] * shape[1]
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			be := New(threads)
			x := normalView(be, 1, false, shape...)
			g := normalView(be, 2, false, shape...)
			y := allocView(be, backends.Float32, shape...)
			dx := allocView(be, backends.Float32, shape...)
			step := func() {
				be.Unary(backends.Gelu, y, x, 0, 0)
				be.UnaryGrad(backends.Gelu, dx, x, g, 0, 0)
			}
			step()
			c0 := cpuSeconds()
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/step")
			if c := cpuSeconds() - c0; c > 0 {
				b.ReportMetric(float64(n)*float64(b.N)/c/1e9, "Gelem/cpu-s")
			}
		})
	}
}

// BenchmarkTranscendentalKernels measures each float32 kernel on one core,
// forward and backward, on 16384 standard normal values (in cache), in
// every implementation this machine runs (transcendentalImpls: "go" the
// portable loops, "vec" the vector kernels, "alt" the AVX2 ones on an
// AVX-512 machine, "wide" and "altwide" the float64 kernels of those
// instruction sets that float32 ones replaced: f32Kernel.wideF, wideDF,
// altWideF, altWideDF), so that they compare in one run.
func BenchmarkTranscendentalKernels(b *testing.B) {
	const n = 1 << 14
	be := New(1)
	for _, c := range benchActivationOps {
		k := f32Kernels[c.op]
		x := buf(normalView(be, 1, c.op == backends.Log, n)).f32()
		g := buf(normalView(be, 2, false, n)).f32()
		o := make([]float32, n)
		impls := transcendentalImpls(k)
		for _, name := range []string{"go", "vec", "alt", "wide", "altwide"} {
			impl, ok := impls[name]
			if !ok {
				continue
			}
			for _, dir := range []string{"fwd", "bwd"} {
				b.Run(fmt.Sprintf("op=%s/dir=%s/impl=%s", c.name, dir, name), func(b *testing.B) {
					run := func() { impl.fwd(o, x) }
					if dir == "bwd" {
						run = func() { impl.bwd(o, x, g) }
					}
					c0 := cpuSeconds()
					for b.Loop() {
						run()
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
					if c := cpuSeconds() - c0; c > 0 { // steadier where other processes share the core
						b.ReportMetric(float64(n)*float64(b.N)/c/1e9, "Gelem/cpu-s")
					}
				})
			}
		}
	}
}

// BenchmarkTranscendentalWide compares, in cache (16384 standard normal
// values, one core), each vector kernel that computes in float32 with the
// float64 kernel it replaced (f32Kernel.wideF, wideDF), interleaved:
// every iteration runs both once and times each, and the fastest call of
// each counts (a machine shared with other processes preempts some calls;
// the fastest are those it did not). It reports both rates and their ratio
// (vec/wide).
func BenchmarkTranscendentalWide(b *testing.B) {
	const n = 1 << 14
	be := New(1)
	for _, c := range benchActivationOps {
		k := f32Kernels[c.op]
		if k.wideF == nil {
			continue
		}
		x := buf(normalView(be, 1, c.op == backends.Log, n)).f32()
		g := buf(normalView(be, 2, false, n)).f32()
		o := make([]float32, n)
		for _, dir := range []string{"fwd", "bwd"} {
			vec, wide := func() { k.vecF(o, x) }, func() { k.wideF(o, x) }
			in32 := k.vecF32
			if dir == "bwd" {
				vec, wide, in32 = func() { k.vecDF(o, x, g) }, func() { k.wideDF(o, x, g) }, k.vecDF32
			}
			if !in32 {
				continue
			}
			b.Run(fmt.Sprintf("op=%s/dir=%s", c.name, dir), func(b *testing.B) {
				tv, tw := time.Hour, time.Hour
				for b.Loop() {
					t0 := time.Now()
					vec()
					t1 := time.Now()
					wide()
					tv, tw = min(tv, t1.Sub(t0)), min(tw, time.Since(t1))
				}
				b.ReportMetric(n/tv.Seconds()/1e9, "vec-Gelem/s")
				b.ReportMetric(n/tw.Seconds()/1e9, "wide-Gelem/s")
				b.ReportMetric(tw.Seconds()/tv.Seconds(), "vec/wide")
			})
		}
	}
}
