package kernel_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// stepsPerCell is how many training steps each benchmark cell runs.
const stepsPerCell = 100

// trainStepSetup builds the benchmark's model, optimizer and batch: an MLP
// 784-128-10, AdamW, a batch of 64 random images and labels. The same code
// runs compiled (trainStepCompiled) and in a cell.
const trainStepSetup = `
dev := tensor.CPU()
ad := dev.Autodiff()
ad.Seed(1)
model := nn.NewSequential(nn.NewLinear(ad, 784, 128), nn.ReLU{}, nn.NewLinear(ad, 128, 10))
opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
x := tensor.Randn(dev, 64, 784)
y := tensor.RandInt(dev, 0, 10, 64)
`

// trainStepCell runs stepsPerCell training steps, each in a Scope:
// forward, cross-entropy, backward, AdamW step.
var trainStepCell = fmt.Sprintf(`
for i := 0; i < %d; i++ {
	tensor.Scope(func() {
		loss := nn.CrossEntropy(model.Forward(x), y, nn.CrossEntropyOptions{})
		opt.Step(model, loss.Backward())
	})
}
`, stepsPerCell)

// BenchmarkTrainStep compares a training step (MLP 784-128-10, batch 64,
// AdamW) in compiled Go with the same step driven from a notebook cell
// (stepsPerCell steps per cell, so the cell's own cost — parsing,
// compiling, showing — is spread over them). Each iteration runs
// stepsPerCell compiled steps, then one cell, interleaved so that both see
// the same machine load; the reported figures are medians over the
// iterations: µs per step each way, and the cell's overhead in percent
// (the median of the iterations' cell/compiled ratios, less 1).
//
//	go test -run '^$' -bench 'BenchmarkTrainStep$' -benchtime 40x -count 3 ./kernel
func BenchmarkTrainStep(b *testing.B) {
	// Compiled.
	dev := tensor.CPU()
	ad := dev.Autodiff()
	ad.Seed(1)
	model := nn.NewSequential(nn.NewLinear(ad, 784, 128), nn.ReLU{}, nn.NewLinear(ad, 128, 10))
	defer nn.Release(model)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
	defer opt.ZeroState()
	x := tensor.Randn(dev, 64, 784)
	y := tensor.RandInt(dev, 0, 10, 64)
	compiled := func() {
		for range stepsPerCell {
			tensor.Scope(func() {
				loss := nn.CrossEntropy(model.Forward(x), y, nn.CrossEntropyOptions{})
				opt.Step(model, loss.Backward())
			})
		}
	}

	// From a cell.
	s, err := kernel.New(kernel.Options{MemoryLimit: -1, MaxStack: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Execute(context.Background(), trainStepSetup, nil); err != nil {
		b.Fatal(err)
	}
	cell := func() {
		if _, err := s.Execute(context.Background(), trainStepCell, nil); err != nil {
			b.Fatal(err)
		}
	}

	// Warm up both (the optimizer's state, the interpreter's caches).
	compiled()
	cell()
	b.ResetTimer()
	var compiledTimes, cellTimes []float64
	for range b.N {
		start := time.Now()
		compiled()
		compiledTimes = append(compiledTimes, float64(time.Since(start).Microseconds())/stepsPerCell)
		start = time.Now()
		cell()
		cellTimes = append(cellTimes, float64(time.Since(start).Microseconds())/stepsPerCell)
	}
	b.StopTimer()
	// The overhead is the median of each iteration's ratio: the two halves
	// of an iteration run back to back, so a change of machine load
	// between iterations cancels out.
	ratios := make([]float64, len(cellTimes))
	for i := range ratios {
		ratios[i] = cellTimes[i] / compiledTimes[i]
	}
	b.ReportMetric(median(compiledTimes), "compiled-µs/step")
	b.ReportMetric(median(cellTimes), "cell-µs/step")
	b.ReportMetric(100*(median(ratios)-1), "%overhead")
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
