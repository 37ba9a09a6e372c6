package nn_test

import (
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// TestHundredStepsKeepMemoryFlat trains a model with state everywhere a
// step can leave some (batch-norm running statistics, dropout masks, AdamW
// moments, a cosine schedule) for 100 steps, each in a tensor.Scope, and
// requires the device's live bytes never to grow after the first step
// (when the optimizer has made its state); on the strict device the
// harness also finds any buffer the steps leaked.
func TestHundredStepsKeepMemoryFlat(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		ad.Seed(11)
		var model nn.Sequential
		tensor.NoScope(func() {
			model = nn.NewSequential(
				nn.NewLinear(ad, 16, 32), nn.NewBatchNorm1d(ad, 32), nn.ReLU{}, nn.NewDropout(0.2),
				nn.NewLinear(ad, 32, 4),
			)
		})
		defer nn.Release(model)
		opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-2})
		sched := optim.NewScheduler(opt, optim.NewCosineAnnealingLR(1e-2, 100, 0))
		x := tensor.Randn(ad, 64, 16)
		y := tensor.RandInt(ad, 0, 4, 64)
		var live []int64
		var first, last float64
		for step := range 100 {
			tensor.Scope(func() {
				loss := nn.CrossEntropy(model.Forward(x), y, nn.CrossEntropyOptions{})
				opt.Step(model, loss.Backward())
				sched.Step()
				if step == 0 {
					first = loss.Item()
				}
				last = loss.Item()
			})
			live = append(live, dev.MemoryStats().LiveBytes)
		}
		// Tensors other tests left to the garbage collector may be freed
		// while this runs, so live bytes may drop; they must never grow.
		for i := 1; i < len(live); i++ {
			if live[i] > live[1] {
				t.Fatalf("live bytes after step %d: %d, after step 1: %d", i, live[i], live[1])
			}
		}
		if !(last < first) {
			t.Fatalf("loss did not fall: %v → %v", first, last)
		}
		opt.ZeroState()
	})
}
