package train_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

func TestValuesJSONRoundTripsNonFinite(t *testing.T) {
	in := train.Values{"loss": math.NaN(), "a": math.Inf(1), "b": math.Inf(-1), "c": 0.25}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out train.Values
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(out["loss"]) || !math.IsInf(out["a"], 1) || !math.IsInf(out["b"], -1) || out["c"] != 0.25 {
		t.Fatalf("%s → %v", b, out)
	}
	if err := json.Unmarshal([]byte(`{"x":"huge"}`), &out); err == nil {
		t.Fatal("bad value accepted")
	}
}

// checker validates without gradients: its ValidStep fails the run if
// the batch or the loss records a graph.
type checker struct {
	L        *nn.Linear
	validSaw int
}

func (c *checker) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	out := c.L.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

func (c *checker) ValidStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	out := c.L.Forward(x)
	loss = nn.CrossEntropy(out, y, nn.CrossEntropyOptions{})
	if loss.RequiresGrad() {
		panic(errors.New("validation recorded a graph"))
	}
	c.validSaw++
	return loss, out
}

func TestFitValidatesWithoutGradientsAndSchedules(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		c := &checker{L: newLinear(dev, 8)}
		defer nn.Release(c)
		opt := optim.NewSGD(optim.SGDConfig{LR: 0.1})
		sched := optim.NewScheduler(opt, optim.NewLinearLR(0.1, 1, 0.5, 12))
		rec := &recorder{}
		s := &train.Supervised{
			Config:    train.Config{Epochs: 2, LogEvery: 6},
			Train:     loader(t, blobs(96, 9), dev, data.LoaderConfig{}),
			Valid:     loader(t, blobs(40, 10), dev, data.LoaderConfig{}),
			Observers: []train.Observer{rec},
		}
		res, err := s.Fit(context.Background(), &train.Learner{Model: c, Optimizer: opt, Scheduler: sched})
		if err != nil {
			t.Fatal(err)
		}
		if c.validSaw != 2*3 || len(res.Valid) != 2 || sched.Steps() != 12 {
			t.Fatalf("valid batches %d, result %+v, schedule steps %d", c.validSaw, res, sched.Steps())
		}
		if math.Abs(opt.LR()-0.05) > 1e-9 {
			t.Fatalf("LR after the schedule: %v", opt.LR())
		}
	})
}

type noForward struct{ W *nn.Param }

type badBatches struct{ data.Dataset }

func (b badBatches) Get(i int) (data.Item, error) {
	if i == 20 {
		return data.Item{}, errors.New("corrupt item")
	}
	return b.Dataset.Get(i)
}

func TestFitFailures(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		lin := newLinear(dev, 11)
		defer nn.Release(lin)
		var nf *noForward
		tensor.NoScope(func() { nf = &noForward{W: nn.NewParam(tensor.Ones(dev.Autodiff(), 2))} })
		defer nn.Release(nf)
		sgd := optim.NewSGD(optim.SGDConfig{LR: 0.1})
		good := loader(t, blobs(48, 12), dev, data.LoaderConfig{})
		cases := []struct {
			name  string
			s     *train.Supervised
			l     *train.Learner
			match string
		}{
			{"no train loader", &train.Supervised{}, &train.Learner{Model: lin, Optimizer: sgd}, "needs Train"},
			{"no optimizer", &train.Supervised{Train: good}, &train.Learner{Model: lin}, "needs Train"},
			{"model without a step", &train.Supervised{Train: good}, &train.Learner{Model: nf, Optimizer: sgd}, "neither TrainStep"},
			{"bad item", &train.Supervised{Train: loader(t, badBatches{blobs(48, 13)}, dev, data.LoaderConfig{})},
				&train.Learner{Model: lin, Optimizer: sgd}, "corrupt item"},
			{"bad valid item", &train.Supervised{Train: good, Valid: loader(t, badBatches{blobs(48, 14)}, dev, data.LoaderConfig{})},
				&train.Learner{Model: lin, Optimizer: sgd}, "corrupt item"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res, err := c.s.Fit(context.Background(), c.l)
				if err == nil || !strings.Contains(err.Error(), c.match) || res.Reason != train.StopFailed {
					t.Fatalf("got %+v, %v; want an error with %q", res, err, c.match)
				}
			})
		}
	})
}

type panicky struct{}

func (panicky) OnEvent(e train.Event) { panic("observer bug") }

func TestFitSurvivesPanickingObserver(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ad := dev.Autodiff()
		ad.Seed(30)
		var model nn.Sequential
		tensor.NoScope(func() { model = nn.NewSequential(nn.NewLinear(ad, 4, 3), nn.NewDropout(0.1)) })
		defer nn.Release(model)
		var log strings.Builder
		rec := &recorder{}
		s := &train.Supervised{
			Config:    train.Config{Epochs: 1},
			Train:     loader(t, blobs(32, 31), dev, data.LoaderConfig{}),
			Valid:     loader(t, blobs(16, 32), dev, data.LoaderConfig{}),
			Observers: []train.Observer{panicky{}, rec},
			Log:       &log,
		}
		res, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
		if err != nil || res.Reason != train.StopCompleted {
			t.Fatalf("%+v, %v", res, err)
		}
		rec.mu.Lock()
		n := len(rec.evs)
		rec.mu.Unlock()
		if n != 4 { // start, train epoch, valid epoch, end
			t.Fatalf("recorder got %d events", n)
		}
		if !strings.HasPrefix(log.String(), "epoch 1/1 train loss") || !strings.Contains(log.String(), "| valid loss") {
			t.Fatalf("log:\n%s", log.String())
		}
	})
}

type buggy struct{ L *nn.Linear }

func (b *buggy) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) { panic("bug in step") }

func TestFitPanicInStepPropagatesAfterLogging(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		b := &buggy{L: newLinear(dev, 40)}
		defer nn.Release(b)
		dir := t.TempDir()
		s := &train.Supervised{
			Config: train.Config{Epochs: 1, RunDir: dir},
			Train:  loader(t, blobs(32, 41), dev, data.LoaderConfig{}),
		}
		func() {
			defer func() {
				if p := recover(); p != "bug in step" {
					t.Fatalf("recovered %v", p)
				}
			}()
			_, _ = s.Fit(context.Background(), &train.Learner{Model: b, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
		}()
		evs, err := train.ReadEvents(dir + "/" + train.EventsFile)
		if err != nil || len(evs) != 2 || evs[1].Reason != train.StopFailed || !strings.Contains(evs[1].Error, "bug in step") {
			t.Fatalf("events %+v, %v", evs, err)
		}
	})
}

// stepOnly computes a loss for a model it does not own, as a Stepper.
type stepOnly struct {
	M     *nn.Linear
	calls int
}

func (s *stepOnly) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	s.calls++
	out := s.M.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

func TestFitUsesLearnerStepper(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		model := newLinear(dev, 50)
		defer nn.Release(model)
		st := &stepOnly{M: model}
		s := &train.Supervised{Config: train.Config{Epochs: 1}, Train: loader(t, blobs(32, 51), dev, data.LoaderConfig{})}
		res, err := s.Fit(context.Background(), &train.Learner{Model: model, Stepper: st, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
		if err != nil || res.Steps != 2 || st.calls != 2 {
			t.Fatalf("%+v, %v, stepper calls %d", res, err, st.calls)
		}
	})
}
