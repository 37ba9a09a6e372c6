package train_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// stopper writes the run directory's STOP file at a given step, as another
// process (the workbench) would, then keeps training slowly enough for the
// run to notice it.
type stopper struct {
	L    *nn.Linear
	dir  string
	at   int
	step int
}

func (s *stopper) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	s.step++
	if s.step == s.at {
		os.WriteFile(filepath.Join(s.dir, train.StopFile), nil, 0o644)
	}
	if s.step >= s.at {
		time.Sleep(20 * time.Millisecond)
	}
	out := s.L.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

func TestStopFileStopsRunGracefully(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := t.TempDir()
		// A STOP file left from an earlier run must not stop this one.
		os.WriteFile(filepath.Join(dir, train.StopFile), nil, 0o644)
		m := &stopper{L: newLinear(dev, 3), dir: dir, at: 4}
		defer nn.Release(m)
		s := &train.Supervised{
			Config: train.Config{Epochs: 50, RunDir: dir, LogEvery: 1},
			Train:  loader(t, blobs(96, 6), dev, data.LoaderConfig{}),
		}
		res, err := s.Fit(context.Background(), &train.Learner{Model: m, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason != train.StopCancelled || m.step < 4 || res.Epochs >= 50 {
			t.Fatalf("result %+v after %d steps, want a cancelled run soon after step 4", res, m.step)
		}
		if _, err := os.Stat(filepath.Join(dir, train.StopFile)); !os.IsNotExist(err) {
			t.Errorf("the STOP file is still there (%v)", err)
		}
		evs, err := train.ReadEvents(filepath.Join(dir, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var sawCheckpoint bool
		for _, e := range evs {
			sawCheckpoint = sawCheckpoint || e.Kind == train.EventCheckpoint && e.Step == res.Steps
		}
		if end := evs[len(evs)-1]; end.Kind != train.EventEnd || end.Reason != train.StopCancelled || !sawCheckpoint {
			t.Fatalf("last event %+v, final checkpoint written: %v", end, sawCheckpoint)
		}
	})
}

// A run resumed from its run directory, without Config.RunDir, watches
// that directory's STOP file too (the workbench's Stop writes it there).
func TestStopFileStopsAResumedRun(t *testing.T) {
	dev := tensor.CPU()
	dir := t.TempDir()
	first := &stopper{L: newLinear(dev, 3), dir: dir, at: 1 << 30} // the same model, never stopping
	defer nn.Release(first)
	s := &train.Supervised{Config: train.Config{Epochs: 1, RunDir: dir, LogEvery: 1}, Train: loader(t, blobs(96, 6), dev, data.LoaderConfig{})}
	if _, err := s.Fit(context.Background(), &train.Learner{Model: first, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}); err != nil {
		t.Fatal(err)
	}
	m := &stopper{L: newLinear(dev, 3), dir: dir, at: 4}
	defer nn.Release(m)
	s = &train.Supervised{Config: train.Config{Epochs: 50, LogEvery: 1}, Train: loader(t, blobs(96, 6), dev, data.LoaderConfig{})}
	res, err := s.Resume(context.Background(), dir, &train.Learner{Model: m, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != train.StopCancelled || res.Epochs >= 50 {
		t.Fatalf("result %+v after %d steps, want a cancelled run soon after step 4", res, m.step)
	}
	if _, err := os.Stat(filepath.Join(dir, train.StopFile)); !os.IsNotExist(err) {
		t.Errorf("the STOP file is still there (%v)", err)
	}
}
