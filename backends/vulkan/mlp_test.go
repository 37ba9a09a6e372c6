//go:build !kiln_novulkan && !js && !wasip1

package vulkan_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// The MNIST MLP of the nn tests (784-256-128-10, ReLU, cross-entropy,
// AdamW at 1e-3) trained on vulkan:0 and on the CPU from the same seeded
// initialisation (Random is bit-identical on both) with the same batches:
// the losses must agree within 1e-4 at every one of 50 steps, so every
// kernel a training step uses (matmuls, reductions, gathers, the fused
// Adam and cross-entropy where present, element-wise ops) agrees with the
// CPU's along a whole run, not just on one op.

const (
	mlpSteps = 50
	mlpBatch = 64
	mlpSeed  = 1
)

// openVulkan returns vulkan:0 or skips the test, saying why.
func openVulkan(t testing.TB) tensor.Device {
	t.Helper()
	dev, err := tensor.ParseDevice("vulkan:0")
	if err != nil {
		t.Skipf("no Vulkan device: %v", err)
	}
	return dev
}

// mnistBatches returns the first steps·batch training images of MNIST,
// standardised.
func mnistBatches(t testing.TB, steps, batch int) *data.MNIST {
	t.Helper()
	dir, err := data.MNISTDir()
	if err != nil {
		t.Fatal(err)
	}
	train, _, err := data.LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	train = train.Subset(steps * batch)
	train.Standardize = true
	return train
}

func mlp(dev tensor.Device) nn.Module {
	return nn.NewSequential(
		nn.NewLinear(dev, 784, 256), nn.ReLU{},
		nn.NewLinear(dev, 256, 128), nn.ReLU{},
		nn.NewLinear(dev, 128, 10),
	)
}

// trainLosses trains the MLP on dev for steps batches in order and
// returns each step's loss.
func trainLosses(t testing.TB, dev tensor.Device, train *data.MNIST, steps, batch int) []float64 {
	adev := dev.Autodiff()
	adev.Seed(mlpSeed)
	model := mlp(adev)
	defer nn.Release(model)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
	defer opt.ZeroState()
	losses := make([]float64, 0, steps)
	idx := make([]int, batch)
	for s := range steps {
		for i := range idx {
			idx[i] = s*batch + i
		}
		tensor.Scope(func() {
			x, y := train.Batch(idx, adev)
			loss := nn.CrossEntropy(model.Forward(x), y, nn.CrossEntropyOptions{})
			opt.Step(model, loss.Backward())
			losses = append(losses, loss.Item())
		})
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	return losses
}

func TestMNISTMLPMatchesCPU(t *testing.T) {
	if raceEnabled {
		t.Skip("long; the plain run checks it (the race detector cannot see into the driver)")
	}
	dev := openVulkan(t)
	train := mnistBatches(t, mlpSteps, mlpBatch)
	want := trainLosses(t, tensor.CPU(), train, mlpSteps, mlpBatch)
	got := trainLosses(t, dev, train, mlpSteps, mlpBatch)
	worst := 0.0
	for s := range want {
		d := math.Abs(got[s] - want[s])
		worst = max(worst, d)
		if !(d <= 1e-4) {
			t.Errorf("step %d: loss %.7f on %s, %.7f on the CPU (differ by %.2g > 1e-4)", s+1, got[s], dev, want[s], d)
		}
	}
	if want[mlpSteps-1] > 0.8*want[0] {
		t.Errorf("the loss did not fall: %.4f at step 1, %.4f at step %d", want[0], want[mlpSteps-1], mlpSteps)
	}
	t.Logf("%s: loss %.4f → %.4f over %d steps; largest difference from the CPU %.2g", dev, got[0], got[mlpSteps-1],
		mlpSteps, worst)
	if live := dev.MemoryStats().LiveBytes; live != 0 {
		t.Errorf("%d bytes still live on %s after the run", live, dev)
	}
}
