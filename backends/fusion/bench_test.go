package fusion_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends/fusion"
	"github.com/kiln-ml/kiln/tensor"
)

// benchChain times f over 16M float32 values unfused, fused, and the
// hand-written kernel hand, interleaved, best of three rounds per b.N
// iteration, and reports the best times and the ratios
// unfused/fused (the fusion speedup) and fused/hand. Where the CPU has a
// segment kernel, it also times the fused run with the kernel off (each
// op of a segment then runs as a tile kernel, as on CPUs without one) and
// reports tiles/fused, the segment kernel's own share of the speedup.
func benchChain(b *testing.B, f, hand func(x *tensor.Tensor) *tensor.Tensor) {
	const n = 16 << 20
	plain := tensor.CPU()
	fused := plain.Fused()
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i%2001-1000) / 250
	}
	xp := tensor.FromFloat32s(plain, data, n)
	xf := tensor.FromFloat32s(fused, data, n)
	defer xp.Release()
	defer xf.Release()
	// run returns the wall time and the process's CPU time (user and
	// system) of one evaluation of g; on a shared machine the CPU time is
	// the steadier measure.
	run := func(dev tensor.Device, x *tensor.Tensor, g func(*tensor.Tensor) *tensor.Tensor) (wall, cpu time.Duration) {
		c0, start := cpuTime(), time.Now()
		y := tensor.ScopeResult(func() *tensor.Tensor { return g(x) })
		if err := dev.Sync(); err != nil {
			b.Fatal(err)
		}
		wall, cpu = time.Since(start), cpuTime()-c0
		y.Release()
		return wall, cpu
	}
	// tiles is run on fused with the segment kernel off: the group's
	// plan keeps its segments, but runSegment does none of their blocks,
	// so every op runs through its tile kernel.
	tiles := func() (time.Duration, time.Duration) {
		restore, _ := fusion.UseSegmentKernel("")
		defer restore()
		return run(fused, xf, f)
	}
	variants := []func() (time.Duration, time.Duration){
		func() (time.Duration, time.Duration) { return run(plain, xp, f) },
		func() (time.Duration, time.Duration) { return run(fused, xf, f) },
		func() (time.Duration, time.Duration) { return run(plain, xp, hand) },
	}
	kernel := fusion.SegmentKernel()
	if kernel != "" {
		variants = append(variants, tiles)
	}
	var best, bestCPU [4]time.Duration
	for i := range best {
		best[i], bestCPU[i] = 1<<62, 1<<62
	}
	b.ResetTimer()
	for range b.N {
		for range 3 {
			for i, g := range variants {
				w, c := g()
				best[i], bestCPU[i] = min(best[i], w), min(bestCPU[i], c)
			}
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(best[0]), "unfused-ms")
	b.ReportMetric(ms(best[1]), "fused-ms")
	b.ReportMetric(ms(best[2]), "hand-ms")
	b.ReportMetric(float64(best[0])/float64(best[1]), "speedup")
	b.ReportMetric(float64(best[1])/float64(best[2]), "fused/hand")
	b.ReportMetric(ms(bestCPU[0]), "unfused-cpu-ms")
	b.ReportMetric(ms(bestCPU[1]), "fused-cpu-ms")
	b.ReportMetric(ms(bestCPU[2]), "hand-cpu-ms")
	b.ReportMetric(float64(bestCPU[0])/float64(bestCPU[1]), "cpu-speedup")
	if kernel != "" {
		b.ReportMetric(ms(best[3]), "tiles-ms")
		b.ReportMetric(float64(best[3])/float64(best[1]), "tiles/fused")
		b.ReportMetric(ms(bestCPU[3]), "tiles-cpu-ms")
		b.ReportMetric(float64(bestCPU[3])/float64(bestCPU[1]), "cpu-tiles/fused")
	}
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFusionGeluTanh is the nine-op composed GELU-tanh against the
// backend's GeluTanh kernel.
func BenchmarkFusionGeluTanh(b *testing.B) {
	benchChain(b, geluTanh, (*tensor.Tensor).GeluTanh)
}

// BenchmarkFusionSwish is a user's four-op Swish (β = 1.5), against the
// SiLU kernel (β = 1, the nearest hand-written one).
func BenchmarkFusionSwish(b *testing.B) {
	benchChain(b, swish, (*tensor.Tensor).Silu)
}

// BenchmarkFusionSumSquaredDiff is sum((x − y)²) over 16M float32 values,
// unfused (the difference and the square written to memory, then summed)
// against fused (the sum a reduction tail of the group, the intermediates
// in tiles), interleaved, best of three rounds per b.N iteration; the
// results are checked equal bit for bit.
func BenchmarkFusionSumSquaredDiff(b *testing.B) {
	const n = 16 << 20
	plain := tensor.CPU()
	fused := plain.Fused()
	xd, yd := make([]float32, n), make([]float32, n)
	for i := range xd {
		xd[i] = float32(i%2001-1000) / 250
		yd[i] = float32(i%997-498) / 100
	}
	f := func(x, y *tensor.Tensor) *tensor.Tensor { return x.Sub(y).Square().Sum() }
	type inputs struct{ x, y *tensor.Tensor }
	in := map[tensor.Device]inputs{}
	for _, dev := range []tensor.Device{plain, fused} {
		in[dev] = inputs{tensor.FromFloat32s(dev, xd, n), tensor.FromFloat32s(dev, yd, n)}
		defer in[dev].x.Release()
		defer in[dev].y.Release()
		_ = dev.Sync()
	}
	run := func(dev tensor.Device) (wall, cpu time.Duration, v float32) {
		c0, start := cpuTime(), time.Now()
		y := tensor.ScopeResult(func() *tensor.Tensor { return f(in[dev].x, in[dev].y) })
		v = y.Float32s()[0]
		wall, cpu = time.Since(start), cpuTime()-c0
		y.Release()
		return wall, cpu, v
	}
	var best, bestCPU [2]time.Duration
	for i := range best {
		best[i], bestCPU[i] = 1<<62, 1<<62
	}
	b.ResetTimer()
	for range b.N {
		for range 3 {
			var vals [2]float32
			for i, dev := range []tensor.Device{plain, fused} {
				w, c, v := run(dev)
				best[i], bestCPU[i], vals[i] = min(best[i], w), min(bestCPU[i], c), v
			}
			if vals[0] != vals[1] {
				b.Fatalf("fused sum %v, unfused %v", vals[1], vals[0])
			}
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(best[0]), "unfused-ms")
	b.ReportMetric(ms(best[1]), "fused-ms")
	b.ReportMetric(float64(best[0])/float64(best[1]), "speedup")
	b.ReportMetric(ms(bestCPU[0]), "unfused-cpu-ms")
	b.ReportMetric(ms(bestCPU[1]), "fused-cpu-ms")
	b.ReportMetric(float64(bestCPU[0])/float64(bestCPU[1]), "cpu-speedup")
}

// benchRuntime times the fused chain f over 16M float32 values with the
// group's tiles on the CPU backend's pool (fusion.TileRunner) and on this
// package's own goroutines, interleaved, best of three rounds per b.N
// iteration; run it with -cpu 1,2 for one and two threads.
func benchRuntime(b *testing.B, f func(x *tensor.Tensor) *tensor.Tensor) {
	const n = 16 << 20
	fused := tensor.CPU().Fused()
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i%2001-1000) / 250
	}
	x := tensor.FromFloat32s(fused, data, n)
	defer x.Release()
	defer fusion.SetUseTileRunner(fusion.SetUseTileRunner(true))
	run := func(pool bool) time.Duration {
		fusion.SetUseTileRunner(pool)
		start := time.Now()
		y := tensor.ScopeResult(func() *tensor.Tensor { return f(x) })
		if err := fused.Sync(); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		y.Release()
		return d
	}
	best := [2]time.Duration{1 << 62, 1 << 62}
	b.ResetTimer()
	for range b.N {
		for range 3 {
			for i, pool := range []bool{false, true} {
				best[i] = min(best[i], run(pool))
			}
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(best[0]), "goroutines-ms")
	b.ReportMetric(ms(best[1]), "pool-ms")
	b.ReportMetric(float64(best[0])/float64(best[1]), "goroutines/pool")
}

// BenchmarkFusionRuntimeGeluTanh compares the runtimes on the composed
// GELU-tanh.
func BenchmarkFusionRuntimeGeluTanh(b *testing.B) { benchRuntime(b, geluTanh) }

// BenchmarkFusionRuntimeSwish compares the runtimes on the user's Swish.
func BenchmarkFusionRuntimeSwish(b *testing.B) { benchRuntime(b, swish) }

// BenchmarkFusionSegmentPolynomial is a degree-4 polynomial in Horner form
// (eight float32 ops, all of them segment kernel instructions) over 1M
// float32 values, fused, with the segment kernel on and off (every op
// then a tile kernel), interleaved, best of three rounds per b.N
// iteration: the segment kernel's speedup where nothing else in the group
// costs more than it.
func BenchmarkFusionSegmentPolynomial(b *testing.B) {
	kernel := fusion.SegmentKernel()
	if kernel == "" {
		b.Skip("no segment kernel in this build or CPU")
	}
	const n = 1 << 20
	fused := tensor.CPU().Fused()
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i%2001-1000) / 1000
	}
	x := tensor.FromFloat32s(fused, data, n)
	defer x.Release()
	poly := func(x *tensor.Tensor) *tensor.Tensor {
		return x.MulScalar(0.5).AddScalar(-1).Mul(x).AddScalar(2).Mul(x).AddScalar(0.25).Mul(x).AddScalar(3)
	}
	run := func(on bool) (wall, cpu time.Duration) {
		if !on {
			restore, _ := fusion.UseSegmentKernel("")
			defer restore()
		}
		c0, start := cpuTime(), time.Now()
		y := tensor.ScopeResult(func() *tensor.Tensor { return poly(x) })
		if err := fused.Sync(); err != nil {
			b.Fatal(err)
		}
		wall, cpu = time.Since(start), cpuTime()-c0
		y.Release()
		return wall, cpu
	}
	run(true) // plan the group with its segment
	var best, bestCPU [2]time.Duration
	for i := range best {
		best[i], bestCPU[i] = 1<<62, 1<<62
	}
	b.ResetTimer()
	for range b.N {
		for range 3 {
			for i, on := range []bool{true, false} {
				w, c := run(on)
				best[i], bestCPU[i] = min(best[i], w), min(bestCPU[i], c)
			}
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(best[0]), kernel+"-ms")
	b.ReportMetric(ms(best[1]), "tiles-ms")
	b.ReportMetric(float64(best[1])/float64(best[0]), "tiles/"+kernel)
	b.ReportMetric(ms(bestCPU[0]), kernel+"-cpu-ms")
	b.ReportMetric(ms(bestCPU[1]), "tiles-cpu-ms")
	b.ReportMetric(float64(bestCPU[1])/float64(bestCPU[0]), "cpu-tiles/"+kernel)
}
