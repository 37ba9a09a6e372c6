package gpubench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// Result is one measured workload, as written to KILN_BENCH_OUT.
type Result struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

var (
	device tensor.Device
	quick  = os.Getenv("KILN_BENCH_QUICK") == "1"
)

func TestMain(m *testing.M) {
	if os.Getenv("KILN_GPU_CHECK") != "1" {
		os.Exit(m.Run()) // TestGPUBench skips
	}
	name := os.Getenv("KILN_BENCH_DEVICE")
	if name == "" {
		name = "cuda:0"
	}
	d, err := tensor.ParseDevice(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	device = d
	os.Exit(m.Run())
}

func TestGPUBench(t *testing.T) {
	if os.Getenv("KILN_GPU_CHECK") != "1" {
		t.Skip("set KILN_GPU_CHECK=1 (make gpu-check does) to run the GPU benchmarks")
	}
	if quick {
		t.Log("KILN_BENCH_QUICK=1: reduced sizes, numbers are not comparable")
	}
	var results []Result
	report := func(name string, v float64, unit string) {
		results = append(results, Result{name, v, unit})
		fmt.Printf("%-34s %12.3f %s\n", name, v, unit)
	}
	n := 4096
	if quick {
		n = 128
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.BFloat16} {
		report(fmt.Sprintf("gemm_%s_%d", dt, n), gemm(t, dt, n), "TFLOP/s")
	}
	size := 64 << 20
	if quick {
		size = 1 << 16
	}
	report("add_f32_64M", elementwise(t, size), "GB/s")
	mlp, cnn := 5, 5
	for _, w := range []struct {
		name   string
		model  func(tensor.Device) nn.Module
		nchw   bool
		epochs int
	}{{"mnist_mlp", mlpModel, false, mlp}, {"mnist_cnn", cnnModel, true, cnn}} {
		secs, mem := mnist(t, w.model, w.nchw, w.epochs)
		for i, s := range secs {
			report(fmt.Sprintf("%s_epoch%d_seconds", w.name, i+1), s, "s")
			report(fmt.Sprintf("%s_epoch%d_reserved_mib", w.name, i+1), mem[i], "MiB")
		}
		for i := 1; i < len(mem); i++ {
			if mem[i] > mem[0]*1.05+1 {
				t.Errorf("%s: memory grows epoch over epoch: %v MiB", w.name, mem)
				break
			}
		}
	}
	if out := os.Getenv("KILN_BENCH_OUT"); out != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// timeIt runs f until at least a second (a tenth when quick) has passed
// and returns the seconds per call, after one warm-up call.
func timeIt(t *testing.T, f func()) float64 {
	f()
	if err := device.Sync(); err != nil {
		t.Fatal(err)
	}
	budget := time.Second
	if quick {
		budget = 100 * time.Millisecond
	}
	start, calls := time.Now(), 0
	for time.Since(start) < budget {
		f()
		calls++
		if err := device.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return time.Since(start).Seconds() / float64(calls)
}

func gemm(t *testing.T, dt tensor.DType, n int) float64 {
	var secs float64
	tensor.Scope(func() {
		a := tensor.Randn(device, n, n).To(dt)
		b := tensor.Randn(device, n, n).To(dt)
		secs = timeIt(t, func() { tensor.Scope(func() { a.Matmul(b) }) })
	})
	return 2 * float64(n) * float64(n) * float64(n) / secs / 1e12
}

func elementwise(t *testing.T, n int) float64 {
	var secs float64
	tensor.Scope(func() {
		a, b := tensor.Randn(device, n), tensor.Randn(device, n)
		secs = timeIt(t, func() { tensor.Scope(func() { a.Add(b) }) })
	})
	return 3 * 4 * float64(n) / secs / 1e9 // two reads and a write of float32
}

func mlpModel(dev tensor.Device) nn.Module {
	return nn.NewSequential(nn.NewLinear(dev, 784, 256), nn.ReLU{}, nn.NewLinear(dev, 256, 128), nn.ReLU{},
		nn.NewLinear(dev, 128, 10))
}

func cnnModel(dev tensor.Device) nn.Module {
	return nn.NewSequential(
		nn.NewConv2d(dev, 1, 16, 3), nn.ReLU{}, nn.NewMaxPool2d(2),
		nn.NewConv2d(dev, 16, 32, 3), nn.ReLU{}, nn.NewMaxPool2d(2),
		nn.NewFlatten(), nn.NewLinear(dev, 800, 10))
}

// mnist trains model for epochs with AdamW at batch 128 and returns the
// seconds of each epoch and the device's reserved MiB after each.
func mnist(t *testing.T, model func(tensor.Device) nn.Module, nchw bool, epochs int) (secs, mem []float64) {
	dir, err := data.MNISTDir()
	if err != nil {
		t.Fatal(err)
	}
	train, _, err := data.LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if quick {
		train, epochs = train.Subset(512), 2
	}
	train.NCHW, train.Standardize = nchw, true
	adev := device.Autodiff()
	adev.Seed(1)
	m := model(adev)
	defer nn.Release(m)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
	defer opt.ZeroState()
	rng := rand.New(rand.NewPCG(1, 0))
	for range epochs {
		perm := rng.Perm(train.Len())
		start := time.Now()
		for b := 0; b < len(perm); b += 128 {
			tensor.Scope(func() {
				x, y := train.Batch(perm[b:min(b+128, len(perm))], adev)
				loss := nn.CrossEntropy(m.Forward(x), y, nn.CrossEntropyOptions{})
				opt.Step(m, loss.Backward())
			})
		}
		if err := device.Sync(); err != nil {
			t.Fatal(err)
		}
		secs = append(secs, time.Since(start).Seconds())
		st := device.Backend().MemoryStats()
		mem = append(mem, float64(st.ReservedBytes)/(1<<20))
	}
	return secs, mem
}
