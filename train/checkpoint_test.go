package train_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

func info(name string, epochEnd bool, tr, va train.Values) train.CheckpointInfo {
	return train.CheckpointInfo{Name: name, EpochEnd: epochEnd, Train: tr, Valid: va}
}

func TestRetentionPolicies(t *testing.T) {
	list := []train.CheckpointInfo{
		info("a", true, train.Values{"loss": 0.9, "accuracy": 0.5}, train.Values{"loss": 0.8}),
		info("b", false, train.Values{"loss": 0.1}, nil), // inside an epoch: never ranked
		info("c", true, train.Values{"loss": 0.7, "accuracy": 0.7}, train.Values{"loss": 0.4}),
		info("d", true, train.Values{"loss": 0.5, "accuracy": 0.7}, train.Values{"loss": math.NaN()}),
		info("e", true, train.Values{"loss": 0.4, "accuracy": 0.6}, train.Values{"loss": 0.4}),
		info("f", true, train.Values{"loss": 0.3}, nil), // no validation: "" falls back to train
	}
	cases := []struct {
		name string
		r    train.Retention
		want string // names kept
	}{
		{"last 2", train.KeepLast{N: 2}, "ef"},
		{"last 0 means 1", train.KeepLast{}, "f"},
		{"last more than there are", train.KeepLast{N: 10}, "abcdef"},
		{"best loss, valid falling back to train", train.KeepBest{Metric: "loss"}, "f"},
		{"best 3 by loss, ties to the older", train.KeepBest{Metric: "loss", N: 3}, "cef"},
		{"best valid loss only, NaN unranked", train.KeepBest{Metric: "loss", Split: "valid", N: 2}, "ce"},
		{"best train loss", train.KeepBest{Metric: "loss", Split: "train"}, "f"},
		{"highest accuracy, ties to the older", train.KeepBest{Metric: "accuracy", Maximize: true}, "c"},
		{"a metric nobody has", train.KeepBest{Metric: "bleu"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keep := c.r.Keep(list)
			got := ""
			for i, k := range keep {
				if k {
					got += list[i].Name
				}
			}
			if len(keep) != len(list) || got != c.want {
				t.Fatalf("kept %q (%v), want %q", got, keep, c.want)
			}
		})
	}
}

// scripted is a model whose validation loss follows a script, one value
// per epoch, so that which checkpoint is best is known.
type scripted struct {
	W     *nn.Param
	valid []float64
	calls int
}

func (s *scripted) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	return s.W.Square().Sum().MulScalar(0.01), nil
}

func (s *scripted) ValidStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	s.calls++
	return x.Sum().MulScalar(0).AddScalar(s.valid[s.calls-1]), nil
}

// checkpointDirs lists the checkpoint directories in dir, sorted.
func checkpointDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, train.CheckpointsDir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func pointer(t *testing.T, dir, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, train.CheckpointsDir, file))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

func TestCheckpointsPolicies(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		var m *scripted
		tensor.NoScope(func() { m = &scripted{W: nn.NewParam(tensor.Ones(dev.Autodiff(), 2))} })
		defer nn.Release(m)
		cases := []struct {
			name   string
			epochs int
			valid  []float64 // nil: no validation loader
			ck     train.Checkpointer
			stop   train.StopRule
			dirs   []string // left on disk
			events int      // checkpoint events
			best   string
		}{
			{"default: last 2 and the best valid loss", 5, []float64{0.9, 0.5, 0.7, 0.8, 0.6}, nil, nil,
				[]string{"epoch-0002-step-000008", "epoch-0004-step-000016", "epoch-0005-step-000020"}, 5, "epoch-0002-step-000008"},
			{"default without validation: the best train loss is the last", 3, nil, nil, nil,
				[]string{"epoch-0002-step-000008", "epoch-0003-step-000012"}, 3, "epoch-0003-step-000012"},
			{"every 5 steps, inside epochs, and the end", 3, []float64{1, 1, 1},
				&train.Checkpoints{EverySteps: 5, EveryEpochs: -1}, nil,
				[]string{"epoch-0002-step-000005", "epoch-0003-step-000010", "epoch-0003-step-000012"}, 3, ""},
			{"every 4 steps: those ending epochs are written at the epoch's end", 3, []float64{1, 1, 1},
				&train.Checkpoints{EverySteps: 4, EveryEpochs: -1}, nil,
				[]string{"epoch-0001-step-000004", "epoch-0002-step-000008", "epoch-0003-step-000012"}, 3, ""},
			{"every 2 epochs, and the end", 3, []float64{1, 1, 1}, &train.Checkpoints{EveryEpochs: 2}, nil,
				[]string{"epoch-0002-step-000008", "epoch-0003-step-000012"}, 2, ""},
			{"composed: best accuracy-like maximum or last 1", 4, []float64{0.2, 0.9, 0.3, 0.1},
				&train.Checkpoints{Keep: []train.Retention{train.KeepLast{N: 1}, train.KeepBest{Metric: "loss", Maximize: true}}}, nil,
				[]string{"epoch-0002-step-000008", "epoch-0004-step-000016"}, 4, "epoch-0002-step-000008"},
			{"best only: the newest stays too", 3, []float64{0.1, 0.5, 0.9},
				&train.Checkpoints{Keep: []train.Retention{train.KeepBest{Metric: "loss"}}}, nil,
				[]string{"epoch-0001-step-000004", "epoch-0003-step-000012"}, 3, "epoch-0001-step-000004"},
			{"an early stop is checkpointed", 10, []float64{0.5, 0.5, 0.5, 0.5, 0.5},
				&train.Checkpoints{EveryEpochs: -1}, train.NewEarlyStopping("loss", 2),
				[]string{"epoch-0003-step-000012"}, 1, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				dir := t.TempDir()
				m.calls, m.valid = 0, c.valid
				rec := &recorder{}
				s := &train.Supervised{
					Config:     train.Config{Epochs: c.epochs, RunDir: dir},
					Train:      loader(t, blobs(64, 60), dev, data.LoaderConfig{}), // 4 batches
					Checkpoint: c.ck,
					Stop:       c.stop,
					Observers:  []train.Observer{rec},
				}
				if c.valid != nil {
					s.Valid = loader(t, blobs(16, 61), dev, data.LoaderConfig{})
				}
				res, err := s.Fit(context.Background(), &train.Learner{Model: m, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
				if err != nil {
					t.Fatal(err)
				}
				if got := checkpointDirs(t, dir); !slices.Equal(got, c.dirs) {
					t.Fatalf("checkpoints %v, want %v", got, c.dirs)
				}
				if last := pointer(t, dir, train.LastCheckpointFile); last != c.dirs[len(c.dirs)-1] {
					t.Fatalf("last %q", last)
				}
				if best := pointer(t, dir, train.BestCheckpointFile); best != c.best {
					t.Fatalf("best %q, want %q", best, c.best)
				}
				idx, err := train.ReadCheckpointIndex(dir)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, ci := range idx.Checkpoints {
					names = append(names, ci.Name)
				}
				if !slices.Equal(names, c.dirs) || idx.Last != c.dirs[len(c.dirs)-1] || idx.Best != c.best {
					t.Fatalf("index %+v", idx)
				}
				// Checkpoint events name directories that were written,
				// with the metrics of the moment.
				rec.mu.Lock()
				defer rec.mu.Unlock()
				n := 0
				for _, e := range rec.evs {
					if e.Kind != train.EventCheckpoint {
						continue
					}
					n++
					if e.Position == nil || !strings.HasPrefix(e.Path, filepath.Join(dir, train.CheckpointsDir)) || e.Step != e.Position.Step {
						t.Fatalf("checkpoint event %+v", e)
					}
					if _, ok := e.Metrics["train.loss"]; !ok {
						t.Fatalf("checkpoint event without train.loss: %+v", e)
					}
					if e.Position.Batch == 0 && c.valid != nil && e.Metrics["valid.loss"] != float64(float32(c.valid[e.Position.Epoch-1])) {
						t.Fatalf("checkpoint event at %+v: metrics %v", *e.Position, e.Metrics)
					}
				}
				if n != c.events {
					t.Fatalf("%d checkpoint events, want %d", n, c.events)
				}
				if c.stop == nil && res.Reason != train.StopCompleted {
					t.Fatalf("result %+v", res)
				}
			})
		}
	})
}

func TestCheckpointContentRoundTrips(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := t.TempDir()
		r := newMLPRun(t, dev, 1, dir, 1)
		defer r.release()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r.st.cancel, r.st.cancelAt = cancel, 15
		if _, err := r.s.Fit(ctx, r.l); err != nil {
			t.Fatal(err)
		}
		want := weightBits(t, r.st.M)
		seed, pos := dev.RNGState()
		ck, err := store.LoadCheckpoint(filepath.Join(dir, train.CheckpointsDir, "epoch-0002-step-000015"), dev)
		if err != nil {
			t.Fatal(err)
		}
		defer ck.Release()
		got := map[string][]uint32{}
		for k, v := range ck.Model {
			for _, f := range v.Float32s() {
				got[k] = append(got[k], math.Float32bits(f))
			}
		}
		sameBits(t, "saved model", got, want)
		if ck.Epoch != 1 || ck.Step != 15 || ck.RNG != (store.RNGState{Seed: seed, Position: pos}) {
			t.Fatalf("epoch %d step %d rng %+v; want 1, 15, {%d %d}", ck.Epoch, ck.Step, ck.RNG, seed, pos)
		}
		compact := func(b []byte) string {
			var buf bytes.Buffer
			if err := json.Compact(&buf, b); err != nil {
				t.Fatal(err)
			}
			return buf.String()
		}
		opt, sched, cfg, extra := compact(ck.OptimizerJSON), compact(ck.Schedule), compact(ck.Config), compact(ck.Extra)
		if !strings.Contains(opt, `"kind":"AdamW"`) || sched != `{"step":15}` || !strings.Contains(cfg, `"epochs":3`) ||
			!strings.Contains(extra, `"batch":3`) || !strings.Contains(extra, `"last_log":15`) || !strings.Contains(extra, `"history":{"train":[{`) {
			t.Fatalf("JSON parts: optimizer %s schedule %s config %s extra %s", opt, sched, cfg, extra)
		}
		if len(ck.Optimizer) != 2*4 { // exp_avg and exp_avg_sq of 4 parameters
			t.Fatalf("optimizer tensors %d", len(ck.Optimizer))
		}
		// Inside an epoch: the running training values only.
		if _, ok := ck.Metrics["train.accuracy"]; !ok || !(ck.Metrics["train.loss"] > 0) || len(ck.Metrics) != 2 {
			t.Fatalf("metrics %v", ck.Metrics)
		}
	})
}

func TestFitReplacesAnEarlierRunsCheckpoints(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		model := newLinear(dev, 70)
		defer nn.Release(model)
		dir := t.TempDir()
		notOurs := filepath.Join(dir, train.CheckpointsDir, "notes")
		fit := func(ck train.Checkpointer) {
			s := &train.Supervised{Config: train.Config{Epochs: 2, RunDir: dir}, Train: loader(t, blobs(64, 71), dev, data.LoaderConfig{}), Checkpoint: ck}
			if _, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}); err != nil {
				t.Fatal(err)
			}
		}
		fit(&train.Checkpoints{EverySteps: 3})
		if err := os.WriteFile(notOurs, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		fit(nil)
		if got := checkpointDirs(t, dir); !slices.Equal(got, []string{"epoch-0001-step-000004", "epoch-0002-step-000008"}) {
			t.Fatalf("checkpoints after the second run: %v", got)
		}
		if _, err := os.Stat(notOurs); err != nil {
			t.Fatalf("a file that is no checkpoint was deleted: %v", err)
		}
		// NoCheckpoints: no directory at all.
		dir2 := t.TempDir()
		s := &train.Supervised{Config: train.Config{Epochs: 1, RunDir: dir2}, Train: loader(t, blobs(32, 72), dev, data.LoaderConfig{}), Checkpoint: train.NoCheckpoints}
		if _, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir2, train.CheckpointsDir)); !os.IsNotExist(err) {
			t.Fatalf("NoCheckpoints made a checkpoints directory: %v", err)
		}
	})
}

func TestResumeOfAnEarlyStoppedRunStopsAtOnce(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		var m *scripted
		tensor.NoScope(func() { m = &scripted{W: nn.NewParam(tensor.Ones(dev.Autodiff(), 2))} })
		defer nn.Release(m)
		dir := t.TempDir()
		run := func(resume bool) (train.Result, error) {
			m.calls, m.valid = 0, []float64{0.5, 0.4, 0.4, 0.4, 0.4, 0.4}
			s := &train.Supervised{
				Config: train.Config{Epochs: 10, RunDir: dir},
				Train:  loader(t, blobs(32, 80), dev, data.LoaderConfig{}),
				Valid:  loader(t, blobs(16, 81), dev, data.LoaderConfig{}),
				Stop:   train.NewEarlyStopping("loss", 2),
			}
			l := &train.Learner{Model: m, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}
			if resume {
				return s.Resume(context.Background(), dir, l)
			}
			return s.Fit(context.Background(), l)
		}
		res, err := run(false)
		if err != nil || res.Reason != train.StopEarly || res.Epochs != 4 {
			t.Fatalf("first run %+v, %v", res, err)
		}
		res, err = run(true)
		if err != nil || res.Reason != train.StopEarly || res.Epochs != 4 || res.Steps != 8 || len(res.Train) != 4 || m.calls != 0 {
			t.Fatalf("resumed run %+v, %v (validation calls %d)", res, err, m.calls)
		}
	})
}

// reporting is a CPU backend that reports device metrics, as a GPU
// backend would through metrics.DeviceReporter.
type reporting struct{ *cpu.Backend }

func (reporting) DeviceMetrics() map[string]float64 {
	return map[string]float64{"gpu_util_percent": 42}
}

type reportingDriver struct{}

func (reportingDriver) Kind() string                     { return "test-train-reporting" }
func (reportingDriver) Priority() int                    { return -100 }
func (reportingDriver) Enumerate() []backends.DeviceInfo { return nil }
func (reportingDriver) Open(int) (backends.Backend, error) {
	return reporting{cpu.New(1)}, nil
}

func TestEventsCarrySystemMetrics(t *testing.T) {
	backends.Register(reportingDriver{})
	dev, err := tensor.Open("test-train-reporting", 0)
	if err != nil {
		t.Fatal(err)
	}
	model := newLinear(dev, 90)
	defer nn.Release(model)
	dir := t.TempDir()
	s := &train.Supervised{
		Config: train.Config{Epochs: 2, LogEvery: 1, RunDir: dir},
		Train:  loader(t, blobs(48, 91), dev, data.LoaderConfig{}),
		Valid:  loader(t, blobs(16, 92), dev, data.LoaderConfig{}),
	}
	if _, err := s.Fit(context.Background(), &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})}); err != nil {
		t.Fatal(err)
	}
	var epochs, steps int
	for _, e := range readEvents(t, dir) {
		switch {
		case e.Kind == train.EventEpoch && e.Split == "train":
			epochs++
			if e.System["gpu_util_percent"] != 42 || !(e.System["device_live_mib"] > 0) || !(e.System["device_peak_mib"] >= e.System["device_live_mib"]) {
				t.Fatalf("train epoch event's system values %v", e.System)
			}
			if _, ok := e.System["process_rss_mib"]; !ok && runtime.GOOS == "linux" {
				t.Fatalf("no process_rss_mib in %v", e.System)
			}
		case e.Kind == train.EventEpoch:
			if e.System != nil {
				t.Fatalf("valid epoch event with system values: %+v", e)
			}
		case e.Kind == train.EventStep && e.System != nil:
			steps++
		}
	}
	// Six steps in well under 5 s: no step event samples.
	if epochs != 2 || steps != 0 {
		t.Fatalf("%d train epoch events, %d step events with system values", epochs, steps)
	}
}
