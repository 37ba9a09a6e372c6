package remote_test

import (
	"slices"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/remote"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// Benchmarks over loopback. Run:
//
//	go test -run XXX -bench . -benchtime 2s ./backends/remote/
//
// Each remote figure is measured interleaved with the same work on the
// local CPU in the same run, best of many, so a busy machine moves both.

// BenchmarkSmallOpPipelined queues 4-element ops without waiting (a sync
// ends every block of 1024): the per-op cost of a call that does not wait.
// It reports the remote and local (the same op on the CPU backend) times
// per op, measured in interleaved blocks, best block of each, and their
// difference, the per-op overhead.
func BenchmarkSmallOpPipelined(b *testing.B) { benchmarkSmallOp(b, false) }

// BenchmarkSmallOpSynchronous runs a 4-element op and waits for it each
// time: one round trip per op. The overhead is the round trip.
func BenchmarkSmallOpSynchronous(b *testing.B) { benchmarkSmallOp(b, true) }

// smallOpBlock is how many ops benchmarkSmallOp times together.
const smallOpBlock = 1024

// benchmarkSmallOp runs a 4-element op b.N times on a remote device and on
// the local CPU, alternating blocks of smallOpBlock ops, syncing after each
// op when waitEach, else after each block. It reports the best block's time
// per op on each side and their difference as overhead-ns/op.
func benchmarkSmallOp(b *testing.B, waitEach bool) {
	_, addr := startServer(b, &remote.ServerConfig{Token: testToken, Open: openDefault})
	c := dial(b, addr)
	local := cpu.Default()
	sides := []backends.Backend{local, c}
	var views [2]backends.View
	for k, be := range sides {
		buf, err := be.Alloc(backends.Float32, 4)
		if err != nil {
			b.Fatal(err)
		}
		views[k] = backends.Contiguous(buf, backends.Float32, 4)
		be.Fill(views[k], 1)
	}
	best := [2]time.Duration{1 << 62, 1 << 62}
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(smallOpBlock, b.N-done)
		for k, be := range sides {
			t0 := time.Now()
			for range n {
				be.BinaryScalar(backends.Mul, views[k], views[k], 1, false)
				if waitEach {
					if err := be.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := be.Sync(); err != nil {
				b.Fatal(err)
			}
			if n == smallOpBlock || done == 0 {
				best[k] = min(best[k], time.Since(t0)/time.Duration(n))
			}
		}
		done += n
	}
	b.ReportMetric(float64(best[1].Nanoseconds()), "remote-ns/op")
	b.ReportMetric(float64(best[0].Nanoseconds()), "local-ns/op")
	b.ReportMetric(float64((best[1] - best[0]).Nanoseconds()), "overhead-ns/op")
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
// best time of each, their ratio remote/local, the median over the
// iterations of each pair's ratio (a local step and the remote step right
// after it share the machine's load), and what one remote step costs on
// the wire: calls, frames sent, bytes sent and round trips.
//
// The server serves the process's own CPU device, as kiln serve does
// (cpu.Default), so both sides run on one pool of CPU helpers: with a
// second pool in the same process, each side's idle helpers would spin
// on the cores the other side's step needs (a contest a separate client
// process, idle while its remote step runs, never sees).
func BenchmarkMLPStepRemoteVsLocal(b *testing.B) {
	_, addr := startServer(b, &remote.ServerConfig{Token: testToken, Open: openDefault})
	b.Setenv("KILN_REMOTE_TOKEN", testToken)
	b.Setenv("KILN_REMOTE_CA", "")
	dev, err := tensor.OpenURL("remote://" + addr + "/cpu:0")
	if err != nil {
		b.Fatal(err)
	}
	rb := remoteOf(b, dev)
	local, remote := mlpStep(tensor.CPU()), mlpStep(dev)
	local()
	remote()
	calls0, frames0, bytes0, waits0 := wireCounts(rb)
	bestL, bestR := time.Duration(1<<62), time.Duration(1<<62)
	ratios := make([]float64, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		local()
		t1 := time.Now()
		remote()
		t2 := time.Now()
		bestL, bestR = min(bestL, t1.Sub(t0)), min(bestR, t2.Sub(t1))
		ratios = append(ratios, float64(t2.Sub(t1))/float64(t1.Sub(t0)))
	}
	b.StopTimer()
	slices.Sort(ratios)
	calls, frames, bytes, waits := wireCounts(rb)
	n := float64(b.N)
	b.ReportMetric(float64(bestL.Microseconds()), "local-µs/step")
	b.ReportMetric(float64(bestR.Microseconds()), "remote-µs/step")
	b.ReportMetric(float64(bestR)/float64(bestL), "remote/local")
	b.ReportMetric(ratios[len(ratios)/2], "median-remote/local")
	b.ReportMetric(float64(calls-calls0)/n, "calls/step")
	b.ReportMetric(float64(frames-frames0)/n, "frames/step")
	b.ReportMetric(float64(bytes-bytes0)/n, "sent-B/step")
	b.ReportMetric(float64(waits-waits0)/n, "roundtrips/step")
}

// openDefault opens devices as kiln serve does: the registered drivers'
// (cpu:0 is cpu.Default, the process's CPU device).
func openDefault(kind string, index int) (backends.Backend, error) {
	drv, err := backends.Lookup(kind)
	if err != nil {
		return nil, err
	}
	return drv.Open(index)
}

// remoteOf returns the remote backend behind dev.
func remoteOf(b *testing.B, dev tensor.Device) *remote.Backend {
	switch rb := dev.Backend().(type) {
	case *remote.Fused:
		return rb.Backend
	case *remote.Backend:
		return rb
	}
	b.Fatalf("device %s has backend %T, not a remote one", dev, dev.Backend())
	return nil
}

// wireCounts returns rb's calls, frames and bytes sent, and round trips.
func wireCounts(rb *remote.Backend) (calls, frames, bytes, waits int64) {
	return remote.WireCounts(rb)
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
