package train_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// ExampleSupervised_Resume trains with checkpoints in a run directory,
// then, as a later program would after an interruption, builds the same
// learner afresh and resumes the run from the directory, here with more
// epochs.
func ExampleSupervised_Resume() {
	runDir, err := os.MkdirTemp("", "kiln-example-run")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(runDir)

	// newRun builds the loop and the learner the same way every time.
	newRun := func(epochs int) (*train.Supervised, *train.Learner) {
		items := make([]data.Item, 60)
		for i := range items {
			c := i % 2
			items[i] = data.Item{X: []float32{float32(2*c - 1), float32(i%5) / 5}, Label: int64(c)}
		}
		ld, _ := data.NewLoader(data.NewInMemory(items), data.LoaderConfig{BatchSize: 10, Shuffle: true, Seed: 1})
		ad := tensor.CPU().Autodiff()
		ad.Seed(1)
		opt := optim.NewAdamW(optim.AdamWConfig{LR: 0.05})
		s := &train.Supervised{
			Config: train.Config{Epochs: epochs, RunDir: runDir, LogEvery: 1000},
			Train:  ld,
			// A checkpoint every 4 steps and after every epoch; keep the
			// last 2 and the one of lowest training loss.
			Checkpoint: &train.Checkpoints{EverySteps: 4, Keep: []train.Retention{
				train.KeepLast{N: 2}, train.KeepBest{Metric: "loss"}}},
		}
		return s, &train.Learner{Model: nn.NewLinear(ad, 2, 2), Optimizer: opt,
			Scheduler: optim.NewScheduler(opt, optim.NewCosineAnnealingLR(0.05, 24, 0))}
	}

	s, l := newRun(2)
	res, err := s.Fit(context.Background(), l)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first run:", res.Reason, res.Epochs, "epochs", res.Steps, "steps")

	s, l = newRun(4)
	res, err = s.Resume(context.Background(), runDir, l)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("resumed:", res.Reason, res.Epochs, "epochs", res.Steps, "steps")
	idx, _ := train.ReadCheckpointIndex(runDir)
	for _, c := range idx.Checkpoints {
		fmt.Println(c.Name)
	}
	last, _ := os.ReadFile(filepath.Join(runDir, train.CheckpointsDir, train.LastCheckpointFile))
	fmt.Print("last: ", string(last))
	fmt.Println("best:", idx.Best)
	// Output:
	// first run: completed 2 epochs 12 steps
	// resumed: completed 4 epochs 24 steps
	// epoch-0004-step-000020
	// epoch-0004-step-000024
	// last: epoch-0004-step-000024
	// best: epoch-0004-step-000024
}
