package train_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// blobs returns n items of 4 features in 3 well-separated classes.
func blobs(n int, seed uint64) *data.InMemory {
	r := rand.New(rand.NewPCG(seed, 1))
	centers := [3][4]float32{{2, 0, 0, 1}, {-2, 1, 0, 0}, {0, -2, 2, 0}}
	items := make([]data.Item, n)
	for i := range items {
		c := i % 3
		x := make([]float32, 4)
		for j := range x {
			x[j] = centers[c][j] + float32(r.NormFloat64()*0.5)
		}
		items[i] = data.Item{X: x, Label: int64(c)}
	}
	return data.NewInMemory(items)
}

func loader(t *testing.T, ds data.Dataset, dev tensor.Device, cfg data.LoaderConfig) *data.DataLoader {
	t.Helper()
	cfg.Device = dev
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 16
	}
	l, err := data.NewLoader(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newLinear makes a 4→3 classifier on dev's autodiff view, outside the
// test's scope.
func newLinear(dev tensor.Device, seed uint64) *nn.Linear {
	ad := dev.Autodiff()
	ad.Seed(seed)
	var m *nn.Linear
	tensor.NoScope(func() { m = nn.NewLinear(ad, 4, 3) })
	return m
}

type recorder struct {
	mu  sync.Mutex
	evs []train.Event
}

func (r *recorder) OnEvent(e train.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

func TestFitLossFallsAndLogsEvents(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		model := newLinear(dev, 1)
		defer nn.Release(model)
		opt := optim.NewSGD(optim.SGDConfig{LR: 0.1, Momentum: 0.9})
		defer opt.ZeroState()
		dir := filepath.Join(t.TempDir(), "run")
		var log bytes.Buffer
		rec := &recorder{}
		s := &train.Supervised{
			Config:       train.Config{Epochs: 4, LogEvery: 2, RunDir: dir},
			Train:        loader(t, blobs(96, 1), dev, data.LoaderConfig{Shuffle: true, Seed: 3}),
			Valid:        loader(t, blobs(48, 2), dev, data.LoaderConfig{}),
			Metrics:      []metrics.Metric{metrics.NewAccuracy()},
			ValidMetrics: []metrics.Metric{metrics.NewAccuracy()},
			Observers:    []train.Observer{rec},
			Log:          &log,
		}
		res, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: opt})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason != train.StopCompleted || res.Epochs != 4 || res.Steps != 4*6 {
			t.Fatalf("result %+v", res)
		}
		first, last := res.Train[0]["loss"], res.Train[3]["loss"]
		if !(last < first*0.5) {
			t.Fatalf("training loss did not fall: %v → %v", first, last)
		}
		if acc := res.Valid[3]["accuracy"]; acc < 0.9 {
			t.Fatalf("valid accuracy %v", acc)
		}

		evs, err := train.ReadEvents(filepath.Join(dir, train.EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		count := map[train.EventKind]int{}
		for _, e := range evs {
			count[e.Kind]++
		}
		if evs[0].Kind != train.EventStart || evs[0].Version != train.EventLogVersion || len(evs[0].Config) == 0 {
			t.Fatalf("first event %+v", evs[0])
		}
		if end := evs[len(evs)-1]; end.Kind != train.EventEnd || end.Reason != train.StopCompleted || end.Step != 24 {
			t.Fatalf("last event %+v", end)
		}
		if count[train.EventStep] != 12 || count[train.EventEpoch] != 8 {
			t.Fatalf("event counts %v", count)
		}
		for _, e := range evs {
			if e.Kind == train.EventEpoch && e.Split == "valid" && e.Epoch == 4 && e.Metrics["accuracy"] != res.Valid[3]["accuracy"] {
				t.Fatalf("valid epoch event %+v, result %v", e, res.Valid[3])
			}
		}
		rec.mu.Lock()
		if len(rec.evs) != len(evs) {
			t.Errorf("observer got %d events, log has %d", len(rec.evs), len(evs))
		}
		rec.mu.Unlock()
		var cfg train.Config
		b, err := os.ReadFile(filepath.Join(dir, train.ConfigFile))
		if err != nil || json.Unmarshal(b, &cfg) != nil || cfg.Epochs != 4 || cfg.LogEvery != 2 {
			t.Fatalf("config.json %s: %v", b, err)
		}
		lines := strings.Split(strings.TrimSpace(log.String()), "\n")
		if len(lines) != 12+4 || !strings.HasPrefix(lines[len(lines)-1], "epoch 4/4 train loss") {
			t.Fatalf("log:\n%s", log.String())
		}
	})
}

func TestFitGradAccumulationAndClip(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		model := newLinear(dev, 2)
		defer nn.Release(model)
		opt := optim.NewSGD(optim.SGDConfig{LR: 0.2})
		s := &train.Supervised{
			// 7 batches an epoch: 3 steps of 2 and one of 1.
			Config: train.Config{Epochs: 3, GradAccumulation: 2, GradClip: optim.GradClip{MaxNorm: 1}},
			Train:  loader(t, blobs(100, 4), dev, data.LoaderConfig{}),
		}
		res, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: opt})
		if err != nil {
			t.Fatal(err)
		}
		if res.Steps != 12 || res.Epochs != 3 {
			t.Fatalf("result %+v", res)
		}
		if !(res.Train[2]["loss"] < res.Train[0]["loss"]) {
			t.Fatalf("loss did not fall: %v", res.Train)
		}
	})
}

func TestEarlyStoppingRule(t *testing.T) {
	cases := []struct {
		name   string
		rule   train.EarlyStopping
		series []float64
		stopAt int // epoch, 0 for never
	}{
		{"plateau after improvement", train.EarlyStopping{Metric: "loss", Patience: 2}, []float64{1, 0.5, 0.5, 0.5, 0.4}, 4},
		{"improving never stops", train.EarlyStopping{Metric: "loss", Patience: 1}, []float64{5, 4, 3, 2, 1}, 0},
		{"min delta", train.EarlyStopping{Metric: "loss", Patience: 2, MinDelta: 0.1}, []float64{1, 0.95, 0.92, 0.5}, 3},
		{"warm-up ignored", train.EarlyStopping{Metric: "loss", Patience: 1, WarmUp: 3}, []float64{1, 1, 1, 1, 1}, 5},
		{"maximize", train.EarlyStopping{Metric: "accuracy", Maximize: true, Patience: 1}, []float64{0.5, 0.6, 0.6}, 3},
		{"NaN is no improvement", train.EarlyStopping{Metric: "loss", Patience: 1}, []float64{1, math.NaN()}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rule := c.rule
			got := 0
			for i, v := range c.series {
				if stop, why := rule.ShouldStop(i+1, nil, train.Values{c.rule.Metric: v}); stop {
					if why == "" {
						t.Fatal("no reason given")
					}
					got = i + 1
					break
				}
			}
			if got != c.stopAt {
				t.Fatalf("stopped at epoch %d, want %d", got, c.stopAt)
			}
		})
	}
}

// plateau is a model whose loss never changes.
type plateau struct {
	W *nn.Param
}

func (p *plateau) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	return p.W.MulScalar(0).AddScalar(1).Sum(), nil
}

func TestFitStopsEarlyOnPlateau(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		var m *plateau
		tensor.NoScope(func() { m = &plateau{W: nn.NewParam(tensor.Ones(dev.Autodiff(), 2))} })
		defer nn.Release(m)
		s := &train.Supervised{
			Config: train.Config{Epochs: 20},
			Train:  loader(t, blobs(32, 5), dev, data.LoaderConfig{}),
			Stop:   &train.EarlyStopping{Metric: "loss", Patience: 2, WarmUp: 1},
		}
		res, err := s.Fit(context.Background(), &train.Learner{Model: m, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
		if err != nil {
			t.Fatal(err)
		}
		// Epoch 1 is warm-up, 2 sets the best, 3 and 4 do not improve.
		if res.Reason != train.StopEarly || res.Epochs != 4 || res.Why == "" {
			t.Fatalf("result %+v", res)
		}
	})
}

// probe wraps a Linear, records live bytes at each step and cancels a
// context at a given step.
type probe struct {
	L      *nn.Linear
	dev    tensor.Device
	live   []int64
	cancel context.CancelFunc
	at     int
}

func (p *probe) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	p.live = append(p.live, p.dev.MemoryStats().LiveBytes)
	if len(p.live) == p.at {
		p.cancel()
	}
	out := p.L.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

func TestFitCancelStopsAfterCurrentStep(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p := &probe{L: newLinear(dev, 3), dev: dev, cancel: cancel, at: 3}
		defer nn.Release(p)
		rec := &recorder{}
		s := &train.Supervised{
			Config:    train.Config{Epochs: 5},
			Train:     loader(t, blobs(96, 6), dev, data.LoaderConfig{}),
			Observers: []train.Observer{rec},
		}
		res, err := s.Fit(ctx, &train.Learner{Model: p, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason != train.StopCancelled || res.Steps != 3 || res.Epochs != 0 || len(p.live) != 3 {
			t.Fatalf("result %+v after %d steps", res, len(p.live))
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if end := rec.evs[len(rec.evs)-1]; end.Kind != train.EventEnd || end.Reason != train.StopCancelled {
			t.Fatalf("last event %+v", end)
		}
	})
}

func TestFitMemoryStaysFlat(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		p := &probe{L: newLinear(dev, 4), dev: dev}
		defer nn.Release(p)
		opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-2})
		defer opt.ZeroState()
		s := &train.Supervised{
			Config: train.Config{Epochs: 4},
			Train:  loader(t, blobs(96, 7), dev, data.LoaderConfig{Workers: 1, Prefetch: 1}),
		}
		if _, err := s.Fit(context.Background(), &train.Learner{Model: p, Optimizer: opt}); err != nil {
			t.Fatal(err)
		}
		// After step 2 the optimizer state exists; prefetched batches may
		// come and go (one batch: 16·4 float32 + 16 int64 = 384 bytes).
		base := max(p.live[2], p.live[3], p.live[4])
		for i, l := range p.live[2:] {
			if l > base+2*384 {
				t.Fatalf("live bytes at step %d: %d, baseline %d (all %v)", i+2, l, base, p.live)
			}
		}
	})
}
