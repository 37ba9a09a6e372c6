package cpu

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/backends"
)

// The benchmarks call the backend directly; tensor/bench_test.go has twins
// through the tensor API, so the overhead of that layer shows up as the
// difference.

func benchMatmul(b *testing.B, n int) {
	be := New(0)
	x := randView(be, backends.Float32, 1, n, n)
	y := randView(be, backends.Float32, 2, n, n)
	out := allocView(be, backends.Float32, n, n)
	be.Matmul(out, x, y) // warm the packing buffers
	c0 := cpuSeconds()
	for b.Loop() {
		be.Matmul(out, x, y)
	}
	flops := 2 * float64(n) * float64(n) * float64(n) * float64(b.N)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if c := cpuSeconds() - c0; c > 0 {
		b.ReportMetric(flops/c/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkSgemm runs square float32 products on 1 and 2 worker
// goroutines (New(threads)); make bench-compare sets these against OpenBLAS.
func BenchmarkSgemm(b *testing.B) {
	for _, n := range []int{128, 256, 512, 1024, 2048} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("n=%d/threads=%d", n, threads), func(b *testing.B) {
				be := New(threads)
				x := randView(be, backends.Float32, 1, n, n)
				y := randView(be, backends.Float32, 2, n, n)
				out := allocView(be, backends.Float32, n, n)
				be.Matmul(out, x, y) // warm the packing buffers
				c0 := cpuSeconds()
				for b.Loop() {
					be.Matmul(out, x, y)
				}
				flops := 2 * float64(n) * float64(n) * float64(n) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if c := cpuSeconds() - c0; c > 0 {
					b.ReportMetric(flops/c/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}

func BenchmarkMatmul256(b *testing.B)  { benchMatmul(b, 256) }
func BenchmarkMatmul512(b *testing.B)  { benchMatmul(b, 512) }
func BenchmarkMatmul1024(b *testing.B) { benchMatmul(b, 1024) }
func BenchmarkMatmul2048(b *testing.B) { benchMatmul(b, 2048) }

// BenchmarkMatmulShapes covers shapes that are not square: a linear layer
// with a transposed weight, a batch of small matrices, and vector × matrix.
func BenchmarkMatmulShapes(b *testing.B) {
	be := New(0)
	for _, c := range []struct {
		name           string
		batch, m, k, n int
		transB         bool
	}{
		{"linear-256x784x128-Wt", 1, 256, 784, 128, true},
		{"batch-64x32x32x32", 64, 32, 32, 32, false},
		{"vecmat-1x1024x1024", 1, 1, 1024, 1024, false},
		{"tiny-16x16x16", 1, 16, 16, 16, false},
		// the MNIST MLP's layers at batch 128: forward, weight gradient
		{"mlp-128x784x256-Wt", 1, 128, 784, 256, true},
		{"mlp-256x128x784", 1, 256, 128, 784, false},
		{"mlp-128x256x128-Wt", 1, 128, 256, 128, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			x := randView(be, backends.Float32, 1, c.batch, c.m, c.k)
			y := randView(be, backends.Float32, 2, c.batch, c.k, c.n)
			if c.transB {
				y = randView(be, backends.Float32, 2, c.batch, c.n, c.k)
				y.Shape = []int{c.batch, c.k, c.n}
				y.Strides = []int{y.Strides[0], 1, c.k}
			}
			out := allocView(be, backends.Float32, c.batch, c.m, c.n)
			for b.Loop() {
				be.Matmul(out, x, y)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/matmul")
			b.ReportMetric(2*float64(c.batch*c.m*c.k*c.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

const elems16M = 1 << 24

// gbPerSec reports bytes read plus written per second.
func gbPerSec(b *testing.B, bytesPerOp int) {
	b.ReportMetric(float64(bytesPerOp)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

func BenchmarkAdd16M(b *testing.B) {
	be := New(0)
	x := randView(be, backends.Float32, 1, elems16M)
	y := randView(be, backends.Float32, 2, elems16M)
	out := allocView(be, backends.Float32, elems16M)
	for b.Loop() {
		be.Binary(backends.Add, out, x, y)
	}
	gbPerSec(b, 3*4*elems16M)
}

// BenchmarkStream measures STREAM-style kernels on 16M float32 elements
// (64 MiB an array, beyond the caches) on 1 and 2 worker goroutines,
// counting the bytes read plus written as STREAM does: copy out = x (8 bytes
// an element), add out = x + y (12), scale out = 3·x (8), and the Go
// runtime's own copy for reference.
func BenchmarkStream(b *testing.B) {
	for _, c := range []struct {
		name  string
		bytes int
		fn    func(be *Backend, out, x, y backends.View)
	}{
		{"copy", 8, func(be *Backend, out, x, _ backends.View) { be.Copy(out, x) }},
		{"add", 12, func(be *Backend, out, x, y backends.View) { be.Binary(backends.Add, out, x, y) }},
		{"scale", 8, func(be *Backend, out, x, _ backends.View) { be.BinaryScalar(backends.Mul, out, x, 3, false) }},
		{"gocopy", 8, func(_ *Backend, out, x, _ backends.View) { copy(buf(out).f32(), buf(x).f32()) }},
	} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("op=%s/threads=%d", c.name, threads), func(b *testing.B) {
				be := New(threads)
				x := randView(be, backends.Float32, 1, elems16M)
				y := randView(be, backends.Float32, 2, elems16M)
				out := allocView(be, backends.Float32, elems16M)
				c.fn(be, out, x, y)
				for b.Loop() {
					c.fn(be, out, x, y)
				}
				gbPerSec(b, c.bytes*elems16M)
			})
		}
	}
}

func BenchmarkExp16M(b *testing.B) {
	be := New(0)
	x := randView(be, backends.Float32, 1, elems16M)
	out := allocView(be, backends.Float32, elems16M)
	for b.Loop() {
		be.Unary(backends.Exp, out, x, 0, 0)
	}
	gbPerSec(b, 2*4*elems16M)
}

// BenchmarkKernels covers the other hot paths at 4M float32 elements.
func BenchmarkKernels(b *testing.B) {
	const n = 1 << 22
	be := New(0)
	x := randView(be, backends.Float32, 1, 2048, n/2048)
	row := randView(be, backends.Float32, 2, 1, n/2048)
	out := allocView(be, backends.Float32, 2048, n/2048)
	bcast := row
	bcast.Shape, bcast.Strides = []int{2048, n / 2048}, []int{0, 1}
	xT := x
	xT.Shape, xT.Strides = []int{n / 2048, 2048}, []int{1, n / 2048}
	outT := allocView(be, backends.Float32, n/2048, 2048)
	sumLast := allocView(be, backends.Float32, 2048, 1)
	sumFirst := allocView(be, backends.Float32, 1, n/2048)
	sumAll := allocView(be, backends.Float32, 1, 1)
	half := allocView(be, backends.BFloat16, 2048, n/2048)
	for _, c := range []struct {
		name  string
		bytes int
		fn    func()
	}{
		{"mul-broadcast-row", 8 * n, func() { be.Binary(backends.Mul, out, x, bcast) }},
		{"add-scalar", 8 * n, func() { be.BinaryScalar(backends.Add, out, x, 1, false) }},
		{"relu", 8 * n, func() { be.Unary(backends.Relu, out, x, 0, 0) }},
		{"copy-transpose", 8 * n, func() { be.Copy(outT, xT) }},
		{"cast-bf16", 6 * n, func() { be.Copy(half, x) }},
		{"sum-last", 4 * n, func() { be.Reduce(backends.Sum, sumLast, x, []int{1}) }},
		{"sum-first", 4 * n, func() { be.Reduce(backends.Sum, sumFirst, x, []int{0}) }},
		{"sum-all", 4 * n, func() { be.Reduce(backends.Sum, sumAll, x, []int{0, 1}) }},
		{"randn", 4 * n, func() { be.Random(out, backends.Normal, 1, 0, 0, 1) }},
	} {
		b.Run(fmt.Sprint(c.name), func(b *testing.B) {
			for b.Loop() {
				c.fn()
			}
			gbPerSec(b, c.bytes)
		})
	}
}

// BenchmarkAddSmall measures the fixed cost of an element-wise call (the
// view checks, the loop set-up) on 1 Ki float32 elements and one worker.
func BenchmarkAddSmall(b *testing.B) {
	be := New(1)
	x := randView(be, backends.Float32, 1, 32, 32)
	y := randView(be, backends.Float32, 2, 32, 32)
	out := allocView(be, backends.Float32, 32, 32)
	for b.Loop() {
		be.Binary(backends.Add, out, x, y)
	}
}
