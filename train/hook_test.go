package train_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
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
	ends   []bool // EpochEnd of each moment
	final  []int  // indices of final moments
	failAt int
}

func (f *fakeCheckpointer) Checkpoint(ctx context.Context, m *train.Moment) error {
	if _, ok := m.Train()["loss"]; !ok || (m.EpochEnd && m.Valid() == nil) || (!m.EpochEnd && m.Valid() != nil) {
		return fmt.Errorf("metric values at %+v: train %v, valid %v", m.Position, m.Train(), m.Valid())
	}
	if m.Final {
		f.final = append(f.final, len(f.got))
	}
	f.got = append(f.got, m.Position)
	f.ends = append(f.ends, m.EpochEnd)
	if m.EpochEnd && m.Position.Epoch == f.failAt {
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
			// 3 batches an epoch: moments after steps 1 and 2 inside
			// the epoch, the third step's at the epoch's end.
			switch failAt {
			case 0:
				want := []train.Position{{0, 1, 1}, {0, 2, 2}, {1, 0, 3}, {1, 1, 4}, {1, 2, 5}, {2, 0, 6}, {2, 1, 7}, {2, 2, 8}, {3, 0, 9}}
				if err != nil || !slices.Equal(ck.got, want) || !slices.Equal(ck.final, []int{8}) {
					t.Fatalf("positions %v (final %v), want %v; %v", ck.got, ck.final, want, err)
				}
				if !slices.Equal(ck.ends, []bool{false, false, true, false, false, true, false, false, true}) {
					t.Fatalf("epoch ends %v", ck.ends)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), "disk full") || res.Reason != train.StopFailed || len(ck.got) != 6 {
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
