package train_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

type fakeCheckpointer struct {
	got    []train.Position
	failAt int
}

func (f *fakeCheckpointer) Checkpoint(ctx context.Context, l *train.Learner, pos train.Position, tr, va train.Values) error {
	if _, ok := tr["loss"]; !ok || va == nil {
		return errors.New("missing metric values")
	}
	f.got = append(f.got, pos)
	if pos.Epoch == f.failAt {
		return errors.New("disk full")
	}
	return nil
}

func TestFitCallsCheckpointer(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		model := newLinear(dev, 21)
		defer nn.Release(model)
		for _, failAt := range []int{0, 2} {
			ck := &fakeCheckpointer{failAt: failAt}
			s := &train.Supervised{
				Config:     train.Config{Epochs: 3},
				Train:      loader(t, blobs(48, 22), dev, data.LoaderConfig{}),
				Valid:      loader(t, blobs(16, 23), dev, data.LoaderConfig{}),
				Checkpoint: ck,
			}
			res, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
			switch failAt {
			case 0:
				if err != nil || len(ck.got) != 3 || ck.got[2] != (train.Position{Epoch: 3, Step: 9}) {
					t.Fatalf("positions %v, %v", ck.got, err)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), "disk full") || res.Reason != train.StopFailed || len(ck.got) != 2 {
					t.Fatalf("result %+v, %v, positions %v", res, err, ck.got)
				}
			}
		}
	})
}

// Example trains a linear classifier on a toy data set for two epochs,
// logging a line per epoch.
func Example() {
	dev := tensor.CPU()
	ad := dev.Autodiff()
	ad.Seed(1)
	items := make([]data.Item, 60)
	for i := range items {
		c := i % 2
		items[i] = data.Item{X: []float32{float32(2*c - 1), float32(i%5) / 5}, Label: int64(c)}
	}
	trainLoader, _ := data.NewLoader(data.NewInMemory(items), data.LoaderConfig{BatchSize: 10})
	model := nn.NewLinear(ad, 2, 2)
	defer nn.Release(model)
	s := &train.Supervised{
		Config:  train.Config{Epochs: 2, LogEvery: 1000},
		Train:   trainLoader,
		Metrics: []metrics.Metric{metrics.NewAccuracy()},
	}
	res, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.5})})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(res.Reason, res.Epochs, res.Steps, res.Train[1]["accuracy"])
	// Output: completed 2 12 1
}
