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

// BenchmarkConv2dLayers times the forward and backward passes (input and
// weight gradients) of the MNIST CNN's two convolutions at batch 128,
// reporting GFLOP/s: three convolution-sized products (2·N·O·L·C·K each).
func BenchmarkConv2dLayers(b *testing.B) {
	for _, c := range []struct {
		name             string
		cin, cout, h, kk int
	}{{"conv1", 1, 16, 28, 3}, {"conv2", 16, 32, 13, 3}} {
		b.Run(c.name, func(b *testing.B) {
			dev := tensor.CPU().Autodiff()
			n := 128
			x := tensor.Randn(dev, n, c.cin, c.h, c.h).RequireGrad()
			w := tensor.Randn(dev, c.cout, c.cin, c.kk, c.kk).RequireGrad()
			for b.Loop() {
				tensor.Scope(func() {
					y := tensor.Conv2d(x, w, nil, tensor.ConvConfig{})
					grads := y.Sum().Backward()
					grads.Get(w).Sum().Item()
				})
			}
			out := c.h - c.kk + 1
			flops := 3 * 2 * float64(n*c.cout*out*out*c.cin*c.kk*c.kk)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
