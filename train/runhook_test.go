package train_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// stepHook calls at(n) after the n-th training step.
type stepHook struct {
	M  *nn.Linear
	n  int
	at func(n int)
}

func (s *stepHook) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	out := s.M.Forward(x)
	loss = nn.CrossEntropy(out, y, nn.CrossEntropyOptions{})
	s.n++
	if s.at != nil {
		s.at(s.n)
	}
	return loss, out
}

func TestRunHookCancelsRunGracefully(t *testing.T) {
	dev := tensor.CPU()
	model := newLinear(dev, 7)
	defer nn.Release(model)
	dir := filepath.Join(t.TempDir(), "run")

	var infos []train.RunInfo
	var cancel context.CancelFunc
	rec := &recorder{}
	prev := train.SetRunHook(func(ctx context.Context, info train.RunInfo) (context.Context, train.Observer) {
		infos = append(infos, info)
		ctx, cancel = context.WithCancel(ctx)
		return ctx, rec
	})
	defer func() { train.SetRunHook(prev) }()

	st := &stepHook{M: model, at: func(n int) {
		if n == 3 {
			cancel() // as the kernel does on interrupt
		}
	}}
	s := &train.Supervised{Config: train.Config{Epochs: 4, RunDir: dir, LogEvery: 1},
		Train: loader(t, blobs(96, 8), dev, data.LoaderConfig{})}
	l := &train.Learner{Model: model, Stepper: st, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}
	// The caller's own context is never cancelled: the hook's is.
	res, err := s.Fit(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != train.StopCancelled || res.Steps != 3 {
		t.Fatalf("result %+v", res)
	}
	if len(infos) != 1 || infos[0].Resume || infos[0].RunDir != dir || infos[0].Config.Epochs != 4 {
		t.Fatalf("hook saw %+v", infos)
	}
	rec.mu.Lock()
	evs := rec.evs
	rec.mu.Unlock()
	if len(evs) < 3 || evs[0].Kind != train.EventStart {
		t.Fatalf("hook observer got %d events", len(evs))
	}
	ck, end := evs[len(evs)-2], evs[len(evs)-1]
	if end.Kind != train.EventEnd || end.Reason != train.StopCancelled {
		t.Fatalf("last event %+v", end)
	}
	if ck.Kind != train.EventCheckpoint || ck.Step != 3 {
		t.Fatalf("event before the end %+v", ck)
	}
	if _, err := os.Stat(filepath.Join(ck.Path, "model.safetensors")); err != nil {
		t.Fatalf("final checkpoint: %v", err)
	}

	// Resume is seen too, and runs to the end.
	infos = nil
	rec.evs = nil
	st.at = nil
	res, err = s.Resume(context.Background(), dir, l)
	if err != nil || res.Reason != train.StopCompleted {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	if len(infos) != 1 || !infos[0].Resume {
		t.Fatalf("hook saw %+v on resume", infos)
	}

	// Removing the hook: runs are no longer seen.
	train.SetRunHook(nil)
	infos = nil
	s.Config.RunDir = ""
	if _, err := s.Fit(context.Background(), l); err != nil || len(infos) != 0 {
		t.Fatalf("without a hook: %v, hook called %d times", err, len(infos))
	}
}

// blocked is an observer stuck on its first event until release closes.
type blocked struct {
	recorder
	release chan struct{}
}

func (b *blocked) OnEvent(e train.Event) {
	<-b.release
	b.recorder.OnEvent(e)
}

func TestRunHookObserverNeverMissesTheEnd(t *testing.T) {
	dev := tensor.CPU()
	model := newLinear(dev, 9)
	defer nn.Release(model)
	obs := &blocked{release: make(chan struct{})}
	prev := train.SetRunHook(func(ctx context.Context, info train.RunInfo) (context.Context, train.Observer) {
		return nil, obs
	})
	defer func() { train.SetRunHook(prev) }()
	// One event per step; the observer is released only once far more
	// events than it can buffer have been published.
	steps := train.ObserverBuffer + 200
	st := &stepHook{M: model, at: func(n int) {
		if n == steps-10 {
			close(obs.release)
		}
	}}
	s := &train.Supervised{Config: train.Config{Epochs: 1, LogEvery: 1},
		Train: loader(t, blobs(steps, 10), dev, data.LoaderConfig{BatchSize: 1})}
	res, err := s.Fit(context.Background(), &train.Learner{Model: model, Stepper: st, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.01})})
	if err != nil || res.Steps != steps {
		t.Fatalf("%+v, %v", res, err)
	}
	if res.DroppedEvents == 0 {
		t.Fatal("no events dropped: the test did not slow the observer enough")
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if end := obs.evs[len(obs.evs)-1]; end.Kind != train.EventEnd || end.Reason != train.StopCompleted {
		t.Fatalf("the slow observer's last event %+v", end)
	}
}
