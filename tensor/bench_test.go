package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

// Twins of backends/cpu/bench_test.go through the tensor API on the CPU
// device, so the cost of the tensor layer (allocation, views, scopes) shows
// as the difference from the backend numbers.

func benchTensorMatmul(b *testing.B, n int) {
	dev := tensor.CPU()
	tensor.Scope(func() {
		x := tensor.Randn(dev, n, n)
		y := tensor.Randn(dev, n, n)
		for b.Loop() {
			z := x.Matmul(y)
			if err := dev.Sync(); err != nil {
				b.Fatal(err)
			}
			z.Release()
		}
	})
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkMatmul256(b *testing.B)  { benchTensorMatmul(b, 256) }
func BenchmarkMatmul512(b *testing.B)  { benchTensorMatmul(b, 512) }
func BenchmarkMatmul1024(b *testing.B) { benchTensorMatmul(b, 1024) }
func BenchmarkMatmul2048(b *testing.B) { benchTensorMatmul(b, 2048) }

const elems16M = 1 << 24

func BenchmarkAdd16M(b *testing.B) {
	dev := tensor.CPU()
	tensor.Scope(func() {
		x := tensor.Randn(dev, elems16M)
		y := tensor.Randn(dev, elems16M)
		for b.Loop() {
			z := x.Add(y)
			if err := dev.Sync(); err != nil {
				b.Fatal(err)
			}
			z.Release()
		}
	})
	b.ReportMetric(3*4*elems16M*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

func BenchmarkExp16M(b *testing.B) {
	dev := tensor.CPU()
	tensor.Scope(func() {
		x := tensor.Randn(dev, elems16M)
		for b.Loop() {
			z := x.Exp()
			if err := dev.Sync(); err != nil {
				b.Fatal(err)
			}
			z.Release()
		}
	})
	b.ReportMetric(2*4*elems16M*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkSmallOps measures per-op overhead on tiny tensors, where the
// tensor layer dominates.
func BenchmarkSmallOps(b *testing.B) {
	dev := tensor.CPU()
	tensor.Scope(func() {
		x := tensor.Randn(dev, 16, 16)
		y := tensor.Randn(dev, 16, 16)
		for b.Loop() {
			z := x.Add(y)
			w := z.Matmul(y)
			w.Release()
			z.Release()
		}
	})
}
