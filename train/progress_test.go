package train_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// The start event says how many batches an epoch has, and each step event
// how far into the epoch it is, for dashboards' progress bars and ETAs.
func TestEventsCarryEpochProgress(t *testing.T) {
	cases := []struct {
		name      string
		items     int
		accum     int
		wantSteps []string // "epoch:batch/batches:samples" of each step event
	}{
		// 100 items in batches of 16: six of 16 and one of 4.
		{"one batch per step", 100, 1, []string{
			"1:2/7:32", "1:4/7:64", "1:6/7:96", "2:1/7:16", "2:3/7:48", "2:5/7:80", "2:7/7:100"}},
		{"two batches per step", 100, 2, []string{
			"1:4/7:64", "1:7/7:100", "2:4/7:64", "2:7/7:100"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				model := newLinear(dev, 1)
				defer nn.Release(model)
				rec := &recorder{}
				s := &train.Supervised{
					Config:    train.Config{Epochs: 2, LogEvery: 2, GradAccumulation: c.accum},
					Train:     loader(t, blobs(c.items, 1), dev, data.LoaderConfig{}),
					Observers: []train.Observer{rec},
				}
				opt := optim.NewSGD(optim.SGDConfig{LR: 0.1})
				if _, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: opt}); err != nil {
					t.Fatal(err)
				}
				var steps []string
				for _, e := range rec.evs {
					switch e.Kind {
					case train.EventStart:
						if e.Batches != 7 {
							t.Errorf("start event: batches %d, want 7", e.Batches)
						}
					case train.EventStep:
						steps = append(steps, fmt.Sprintf("%d:%d/%d:%d", e.Epoch, e.Batch, e.Batches, e.Samples))
					}
				}
				if fmt.Sprint(steps) != fmt.Sprint(c.wantSteps) {
					t.Errorf("step events %v, want %v", steps, c.wantSteps)
				}
			})
		})
	}
}
