//go:build !kiln_novulkan && !js && !wasip1

package vulkan_test

import (
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/vulkan"
	"github.com/kiln-ml/kiln/internal/conformance"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// Benchmarks of vulkan:0 beside the CPU backend in the same run. On lavapipe
// (a software device on the CPU) they show that the path works end to end,
// not GPU speed; on a GPU they are the numbers `make gpu-check` reports.
//
//	go test -run '^$' -bench . -benchtime 3x ./backends/vulkan/

// BenchmarkGEMM times an n×n·n×n float32 Matmul (including the wait for
// the result) and reports GFLOP/s.
func BenchmarkGEMM(b *testing.B) {
	devs := []struct {
		name string
		open func() (backends.Backend, error)
	}{
		{"vulkan", func() (backends.Backend, error) { return vulkan.Open(0) }},
		{"cpu", func() (backends.Backend, error) { return cpu.New(0), nil }},
	}
	for _, n := range []int{256, 512, 1024} {
		for _, d := range devs {
			b.Run(fmt.Sprintf("n=%d/%s", n, d.name), func(b *testing.B) {
				be, err := d.open()
				if err != nil {
					b.Skipf("no Vulkan device: %v", err)
				}
				s := &conformance.Session{B: be}
				defer s.Free()
				x := s.Tensor(backends.Float32, conformance.Values(backends.Float32, n*n, -1, 1, 1), n, n)
				y := s.Tensor(backends.Float32, conformance.Values(backends.Float32, n*n, -1, 1, 2), n, n)
				out := s.Empty(backends.Float32, n, n)
				be.Matmul(out, x, y) // warm up: pipeline creation
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					be.Matmul(out, x, y)
					if err := be.Sync(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMNISTStep times one training step of the MNIST MLP (batch 64:
// forward, cross-entropy, backward, AdamW, the loss read back) and reports
// samples/s.
func BenchmarkMNISTStep(b *testing.B) {
	train := mnistBatches(b, 4, mlpBatch)
	for _, name := range []string{"vulkan:0", "cpu"} {
		b.Run(name, func(b *testing.B) {
			dev, err := tensor.ParseDevice(name)
			if err != nil {
				b.Skipf("no Vulkan device: %v", err)
			}
			adev := dev.Autodiff()
			adev.Seed(mlpSeed)
			model := mlp(adev)
			defer nn.Release(model)
			opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
			defer opt.ZeroState()
			idx := make([]int, mlpBatch)
			step := func(s int) {
				for i := range idx {
					idx[i] = (s%4)*mlpBatch + i
				}
				tensor.Scope(func() {
					x, y := train.Batch(idx, adev)
					loss := nn.CrossEntropy(model.Forward(x), y, nn.CrossEntropyOptions{})
					opt.Step(model, loss.Backward())
					_ = loss.Item()
				})
			}
			step(0) // warm up: pipelines, the optimizer's moments
			b.ResetTimer()
			for i := range b.N {
				step(i + 1)
			}
			b.ReportMetric(float64(mlpBatch*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
