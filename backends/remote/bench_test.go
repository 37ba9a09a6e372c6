package remote_test

import (
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// Benchmarks over loopback. Run:
//
//	go test -run XXX -bench . -benchtime 2s ./backends/remote/

// BenchmarkSmallOpPipelined queues a 4-element op per iteration and syncs
// once at the end: the cost of a call that does not wait.
func BenchmarkSmallOpPipelined(b *testing.B) { benchmarkSmallOp(b, false, "ops/s") }

// BenchmarkSmallOpSynchronous runs a 4-element op and waits for it each
// iteration: one round trip per op.
func BenchmarkSmallOpSynchronous(b *testing.B) { benchmarkSmallOp(b, true, "roundtrips/s") }

// benchmarkSmallOp runs a 4-element op per iteration on a remote device,
// syncing after each when waitEach, else once at the end, and reports the
// ops per second as unit.
func benchmarkSmallOp(b *testing.B, waitEach bool, unit string) {
	_, addr := startServer(b, nil)
	c := dial(b, addr)
	buf, _ := c.Alloc(backends.Float32, 4)
	v := backends.Contiguous(buf, backends.Float32, 4)
	c.Fill(v, 1)
	b.ResetTimer()
	for range b.N {
		c.BinaryScalar(backends.Mul, v, v, 1, false)
		if waitEach {
			if err := c.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := c.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

const transferBytes = 64 << 20

// BenchmarkWrite64MB writes 64 MiB and syncs.
func BenchmarkWrite64MB(b *testing.B) {
	_, addr := startServer(b, nil)
	c := dial(b, addr)
	buf, _ := c.Alloc(backends.Uint8, transferBytes)
	src := make([]byte, transferBytes)
	b.SetBytes(transferBytes)
	b.ResetTimer()
	for range b.N {
		c.Write(buf, 0, src)
		if err := c.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead64MB reads 64 MiB back.
func BenchmarkRead64MB(b *testing.B) {
	_, addr := startServer(b, nil)
	c := dial(b, addr)
	buf, _ := c.Alloc(backends.Uint8, transferBytes)
	c.Fill(backends.Contiguous(buf, backends.Uint8, transferBytes), 7)
	dst := make([]byte, transferBytes)
	b.SetBytes(transferBytes)
	b.ResetTimer()
	for range b.N {
		if err := c.Read(buf, 0, dst); err != nil {
			b.Fatal(err)
		}
	}
}

// mlpStep returns a function running one training step of an MNIST-sized
// MLP (784-256-10, batch 64, Adam) on dev, reading the loss back.
func mlpStep(dev tensor.Device) func() float64 {
	ad := dev.Autodiff()
	ad.Seed(1)
	model := nn.NewSequential(nn.NewLinear(ad, 784, 256), nn.ReLU{}, nn.NewLinear(ad, 256, 10))
	x := tensor.Randn(ad, 64, 784)
	y := tensor.RandInt(ad, 0, 10, 64)
	opt := optim.NewAdam(optim.AdamConfig{LR: 1e-3})
	return func() float64 {
		loss := nn.CrossEntropy(model.Forward(x), y, nn.CrossEntropyOptions{})
		opt.Step(model, loss.Backward())
		return loss.Item()
	}
}

// BenchmarkMLPStepRemoteVsLocal times training steps of the same MLP on
// the CPU and on a remote CPU over loopback, interleaved, and reports the
// best time of each and their ratio remote/local.
func BenchmarkMLPStepRemoteVsLocal(b *testing.B) {
	_, addr := startServer(b, nil)
	b.Setenv("KILN_REMOTE_TOKEN", testToken)
	b.Setenv("KILN_REMOTE_CA", "")
	dev, err := tensor.OpenURL("remote://" + addr + "/cpu:0")
	if err != nil {
		b.Fatal(err)
	}
	local, remote := mlpStep(tensor.CPU()), mlpStep(dev)
	local()
	remote()
	bestL, bestR := time.Duration(1<<62), time.Duration(1<<62)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		local()
		t1 := time.Now()
		remote()
		t2 := time.Now()
		bestL, bestR = min(bestL, t1.Sub(t0)), min(bestR, t2.Sub(t1))
	}
	b.ReportMetric(float64(bestL.Microseconds()), "local-µs/step")
	b.ReportMetric(float64(bestR.Microseconds()), "remote-µs/step")
	b.ReportMetric(float64(bestR)/float64(bestL), "remote/local")
}

// BenchmarkLocalWrite64MB is the in-process baseline of BenchmarkWrite64MB:
// the CPU backend's own Write of 64 MiB.
func BenchmarkLocalWrite64MB(b *testing.B) {
	c := cpu.New(0)
	buf, _ := c.Alloc(backends.Uint8, transferBytes)
	src := make([]byte, transferBytes)
	b.SetBytes(transferBytes)
	for range b.N {
		c.Write(buf, 0, src)
	}
}
