package nn_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// mnistStepsPerEpoch is the number of batches of 128 in MNIST's 60,000
// training images.
const mnistStepsPerEpoch = (60000 + mnistBatch - 1) / mnistBatch

// benchmarkMNISTEpoch times training steps of model on real MNIST batches
// (batch 128, AdamW, each step in a Scope, as trainMNIST runs them) and
// reports the time of a whole epoch (s/epoch: the time per step times the
// 469 steps of an epoch), the process's CPU time per epoch, and per step the
// garbage collections, their stop-the-world pauses and the heap bytes
// allocated.
func benchmarkMNISTEpoch(b *testing.B, model func(tensor.Device) nn.Module, nchw bool) {
	train, _ := loadMNIST(b)
	train.NCHW, train.Standardize = nchw, true
	adev := tensor.CPU().Autodiff()
	adev.Seed(mnistSeed)
	m := model(adev)
	defer nn.Release(m)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
	defer opt.ZeroState()
	rng := rand.New(rand.NewPCG(mnistSeed, 0))
	perm := rng.Perm(train.Len())
	step := func(i int) {
		b := (i * mnistBatch) % (len(perm) - mnistBatch)
		tensor.Scope(func() {
			x, y := train.Batch(perm[b:b+mnistBatch], adev)
			loss := nn.CrossEntropy(m.Forward(x), y, nn.CrossEntropyOptions{})
			opt.Step(m, loss.Backward())
			loss.Item()
		})
	}
	for i := range 3 { // warm up: optimizer state, pools, caches
		step(i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu := cpuSeconds()
	b.ResetTimer()
	for i := range b.N {
		step(i)
	}
	b.StopTimer()
	cpu = cpuSeconds() - cpu
	runtime.ReadMemStats(&after)
	n := float64(b.N)
	b.ReportMetric(b.Elapsed().Seconds()/n*mnistStepsPerEpoch, "s/epoch")
	b.ReportMetric(n*mnistBatch/b.Elapsed().Seconds(), "img/s")
	b.ReportMetric(cpu/n*mnistStepsPerEpoch, "cpu-s/epoch")
	b.ReportMetric(float64(after.NumGC-before.NumGC)/n, "gc/step")
	b.ReportMetric(float64(after.PauseTotalNs-before.PauseTotalNs)/n/1e6, "gc-pause-ms/step")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n/1e6, "heap-MB/step")
}

// BenchmarkMNISTMLPEpoch is the MLP (784-256-128-10, ReLU) of issue 11's
// comparison with PyTorch.
func BenchmarkMNISTMLPEpoch(b *testing.B) { benchmarkMNISTEpoch(b, mnistMLP, false) }

// BenchmarkMNISTCNNEpoch is the CNN (conv16-pool-conv32-pool-linear) of
// issue 11's comparison with PyTorch.
func BenchmarkMNISTCNNEpoch(b *testing.B) { benchmarkMNISTEpoch(b, mnistCNN, true) }
