package train_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// The resume tests train a small MLP with dropout (so the device's random
// stream matters) on synthetic data read by a shuffling loader with
// several workers and prefetching, with AdamW and a cosine schedule, for
// 3 epochs of 12 batches. Interrupted runs resumed from their checkpoints
// must end with the weights of an uninterrupted run, bit for bit, having
// computed the same batch losses from the resume point on.
const (
	mlpEpochs  = 3
	mlpBatches = 12 // 192 items in batches of 16
)

// synth returns n items of 8 features in 3 noisy classes.
func synth(n int, seed uint64) *data.InMemory {
	r := rand.New(rand.NewPCG(seed, 2))
	items := make([]data.Item, n)
	for i := range items {
		c := r.IntN(3)
		x := make([]float32, 8)
		for j := range x {
			x[j] = float32(r.NormFloat64())
			if j%3 == c {
				x[j] += 1.5
			}
		}
		items[i] = data.Item{X: x, Label: int64(c)}
	}
	return data.NewInMemory(items)
}

// mlpStepper computes the MLP's loss and records every training batch's
// loss; it can cancel a context during a given training or validation
// batch, or block for good during a training batch (the SIGKILL test).
type mlpStepper struct {
	M           nn.Sequential
	losses      []float64
	batches     int
	valids      int
	cancel      context.CancelFunc
	cancelAt    int // training batch (from 1, counted in this process) during which to cancel
	cancelValid int // validation batch during which to cancel
	blockAt     int // training batch during which to block
}

func (m *mlpStepper) TrainStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	m.batches++
	if m.batches == m.cancelAt {
		m.cancel()
	}
	if m.batches == m.blockAt {
		time.Sleep(time.Hour) // the parent kills the process meanwhile
	}
	out := m.M.Forward(x)
	loss = nn.CrossEntropy(out, y, nn.CrossEntropyOptions{})
	m.losses = append(m.losses, loss.Item())
	return loss, out
}

func (m *mlpStepper) ValidStep(x, y *tensor.Tensor) (loss, outputs *tensor.Tensor) {
	m.valids++
	if m.valids == m.cancelValid {
		m.cancel()
	}
	out := m.M.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

// cancelAfterEpoch is a StopRule that never stops but cancels a context
// at the end of an epoch, synchronously.
type cancelAfterEpoch struct {
	epoch  int
	cancel context.CancelFunc
}

func (c *cancelAfterEpoch) ShouldStop(epoch int, train, valid train.Values) (bool, string) {
	if epoch == c.epoch && c.cancel != nil {
		c.cancel()
	}
	return false, ""
}

// cancelAtStep is an Observer that cancels a context when it sees the
// step event of a given step: asynchronously, so the run stops a few steps
// later, wherever.
type cancelAtStep struct {
	step   int
	cancel context.CancelFunc
}

func (c *cancelAtStep) OnEvent(e train.Event) {
	if e.Kind == train.EventStep && e.Step == c.step {
		c.cancel()
	}
}

// mlpRun is one run's learner and loop, built the same way every time
// except for the initial weights' seed (a resumed run must not depend on
// them).
type mlpRun struct {
	st    *mlpStepper
	opt   *optim.AdamW
	sched *optim.Scheduler
	s     *train.Supervised
	l     *train.Learner
}

func newMLPRun(t testing.TB, dev tensor.Device, seed uint64, runDir string, gradAcc int) *mlpRun {
	t.Helper()
	ad := dev.Autodiff()
	ad.Seed(seed)
	var model nn.Sequential
	tensor.NoScope(func() {
		model = nn.NewSequential(nn.NewLinear(ad, 8, 32), nn.ReLU{}, nn.NewDropout(0.25), nn.NewLinear(ad, 32, 3))
	})
	st := &mlpStepper{M: model}
	opt := optim.NewAdamW(optim.AdamWConfig{LR: 3e-3})
	steps := mlpEpochs * ((mlpBatches + gradAcc - 1) / gradAcc)
	sched := optim.NewScheduler(opt, optim.NewCosineAnnealingLR(3e-3, steps, 1e-4))
	mk := func(ds data.Dataset, cfg data.LoaderConfig) *data.DataLoader {
		cfg.Device, cfg.BatchSize = dev, 16
		ld, err := data.NewLoader(ds, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return ld
	}
	s := &train.Supervised{
		Config:       train.Config{Epochs: mlpEpochs, LogEvery: 1, GradAccumulation: gradAcc, RunDir: runDir},
		Train:        mk(synth(16*mlpBatches, 11), data.LoaderConfig{Shuffle: true, Seed: 5, Workers: 3, Prefetch: 4}),
		Valid:        mk(synth(48, 12), data.LoaderConfig{Workers: 2}),
		Metrics:      []metrics.Metric{metrics.NewAccuracy()},
		ValidMetrics: []metrics.Metric{metrics.NewAccuracy()},
	}
	l := &train.Learner{Model: model, Optimizer: opt, Scheduler: sched}
	l.Stepper = st
	return &mlpRun{st: st, opt: opt, sched: sched, s: s, l: l}
}

func (m *mlpRun) release() {
	m.opt.ZeroState()
	nn.Release(m.st.M)
}

// weightBits returns the model's state dict as float32 bit patterns.
func weightBits(t testing.TB, model any) map[string][]uint32 {
	t.Helper()
	out := map[string][]uint32{}
	tensor.Scope(func() {
		for k, v := range nn.StateDict(model) {
			for _, f := range v.Float32s() {
				out[k] = append(out[k], math.Float32bits(f))
			}
		}
	})
	return out
}

func sameBits(t *testing.T, what string, got, want map[string][]uint32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tensors, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Fatalf("%s: %s has %d values, want %d", what, k, len(g), len(w))
		}
		for i := range w {
			if g[i] != w[i] {
				t.Fatalf("%s: %s[%d] = %v (bits %#x), uninterrupted run has %v (bits %#x)", what, k, i,
					math.Float32frombits(g[i]), g[i], math.Float32frombits(w[i]), w[i])
			}
		}
	}
}

func readEvents(t *testing.T, dir string) []train.Event {
	t.Helper()
	evs, err := train.ReadEvents(filepath.Join(dir, train.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// stepLosses maps each step event's step to its running loss, keeping
// the last record of a step (a resumed log repeats the steps lost).
func stepLosses(evs []train.Event) map[int]float64 {
	out := map[int]float64{}
	for _, e := range evs {
		if e.Kind == train.EventStep {
			out[e.Step] = e.Metrics["loss"]
		}
	}
	return out
}

// lastResume returns the last resume event.
func lastResume(t *testing.T, evs []train.Event) train.Event {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == train.EventResume {
			if evs[i].Position == nil {
				t.Fatalf("resume event without position: %+v", evs[i])
			}
			return evs[i]
		}
	}
	t.Fatal("no resume event")
	return train.Event{}
}

// baseline is an uninterrupted run's outcome.
type baseline struct {
	weights map[string][]uint32
	losses  []float64 // per training batch
	steps   map[int]float64
	res     train.Result
}

func runBaseline(t *testing.T, dev tensor.Device, gradAcc int) baseline {
	t.Helper()
	dir := t.TempDir()
	b := newMLPRun(t, dev, 1, dir, gradAcc)
	defer b.release()
	res, err := b.s.Fit(context.Background(), b.l)
	if err != nil || res.Reason != train.StopCompleted {
		t.Fatalf("uninterrupted run: %+v, %v", res, err)
	}
	if len(b.st.losses) != mlpEpochs*mlpBatches {
		t.Fatalf("uninterrupted run: %d batches", len(b.st.losses))
	}
	return baseline{weightBits(t, b.st.M), b.st.losses, stepLosses(readEvents(t, dir)), res}
}

// checkResumed compares a resumed run with the baseline: weights bit for
// bit, batch losses from the resume point, the running losses of the step
// events and the epochs' training loss.
func checkResumed(t *testing.T, base baseline, dir string, r *mlpRun, res train.Result, gradAcc int) train.Position {
	t.Helper()
	if res.Reason != train.StopCompleted || res.Epochs != mlpEpochs || res.Steps != base.res.Steps {
		t.Fatalf("resumed run: %+v", res)
	}
	sameBits(t, "resumed run's weights", weightBits(t, r.st.M), base.weights)
	evs := readEvents(t, dir)
	pos := *lastResume(t, evs).Position
	done := pos.Epoch*mlpBatches + pos.Batch
	if !slices.Equal(r.st.losses, base.losses[done:]) {
		t.Fatalf("batch losses after the resume at %+v:\n%v\nuninterrupted:\n%v", pos, r.st.losses, base.losses[done:])
	}
	got := stepLosses(evs)
	for step := 1; step <= base.res.Steps; step++ {
		if got[step] != base.steps[step] {
			t.Fatalf("step %d: running loss %v, uninterrupted %v (resumed at %+v)", step, got[step], base.steps[step], pos)
		}
	}
	for e := range mlpEpochs {
		if res.Train[e]["loss"] != base.res.Train[e]["loss"] || res.Valid[e]["loss"] != base.res.Valid[e]["loss"] {
			t.Fatalf("epoch %d: train %v valid %v, uninterrupted %v %v", e+1, res.Train[e], res.Valid[e], base.res.Train[e], base.res.Valid[e])
		}
	}
	return pos
}

func TestResumeAfterCancelIsBitExact(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		bases := map[int]baseline{1: runBaseline(t, dev, 1), 2: runBaseline(t, dev, 2)}
		cases := []struct {
			name    string
			gradAcc int
			setup   func(r *mlpRun, cancel context.CancelFunc)
			want    *train.Position // where the run must stop; nil: anywhere
		}{
			{"cancelled at the end of epoch 1", 1, func(r *mlpRun, cancel context.CancelFunc) {
				r.s.Stop = &cancelAfterEpoch{epoch: 1, cancel: cancel}
			}, &train.Position{Epoch: 1, Batch: 0, Step: 12}},
			{"cancelled inside epoch 2 at step 17", 1, func(r *mlpRun, cancel context.CancelFunc) {
				r.st.cancel, r.st.cancelAt = cancel, 17
			}, &train.Position{Epoch: 1, Batch: 5, Step: 17}},
			{"cancelled during epoch 2's validation", 1, func(r *mlpRun, cancel context.CancelFunc) {
				r.st.cancel, r.st.cancelValid = cancel, 4 // 3 validation batches an epoch
			}, &train.Position{Epoch: 1, Batch: 12, Step: 24}},
			{"cancelled by an observer after step 20", 1, func(r *mlpRun, cancel context.CancelFunc) {
				r.s.Observers = append(r.s.Observers, &cancelAtStep{step: 20, cancel: cancel})
			}, nil},
			{"gradient accumulation cancelled inside epoch 2", 2, func(r *mlpRun, cancel context.CancelFunc) {
				r.st.cancel, r.st.cancelAt = cancel, 17 // the step of batches 17 and 18
			}, &train.Position{Epoch: 1, Batch: 6, Step: 9}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				dir := t.TempDir()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				first := newMLPRun(t, dev, 1, dir, c.gradAcc)
				c.setup(first, cancel)
				res, err := first.s.Fit(ctx, first.l)
				first.release()
				if err != nil || res.Reason != train.StopCancelled {
					t.Fatalf("interrupted run: %+v, %v", res, err)
				}
				// Another seed: the initial weights and the random stream
				// must come from the checkpoint.
				second := newMLPRun(t, dev, 99, dir, c.gradAcc)
				defer second.release()
				res, err = second.s.Resume(context.Background(), dir, second.l)
				if err != nil {
					t.Fatal(err)
				}
				pos := checkResumed(t, bases[c.gradAcc], dir, second, res, c.gradAcc)
				if c.want != nil && pos != *c.want {
					t.Fatalf("resumed from %+v, want %+v", pos, *c.want)
				}
				if pos.Step == 0 || pos.Step >= bases[c.gradAcc].res.Steps {
					t.Fatalf("resumed from %+v: nothing to resume", pos)
				}
				// The log: one start, the first run's end (cancelled),
				// the resume, the second run's end.
				var kinds []train.EventKind
				for _, e := range readEvents(t, dir) {
					if e.Kind == train.EventStart || e.Kind == train.EventEnd || e.Kind == train.EventResume {
						kinds = append(kinds, e.Kind)
					}
				}
				if !slices.Equal(kinds, []train.EventKind{train.EventStart, train.EventEnd, train.EventResume, train.EventEnd}) {
					t.Fatalf("event log's start, end and resume records: %v", kinds)
				}
			})
		}
	})
}

// TestHelperProcessTrain is the training process TestResumeAfterSIGKILL
// kills; it does nothing in a normal test run.
func TestHelperProcessTrain(t *testing.T) {
	dir := os.Getenv("KILN_TRAIN_HELPER_RUNDIR")
	if dir == "" {
		t.Skip("helper process of TestResumeAfterSIGKILL")
	}
	r := newMLPRun(t, tensor.CPU(), 1, dir, 1)
	r.s.Checkpoint = &train.Checkpoints{EverySteps: 5, EveryEpochs: -1, Keep: []train.Retention{train.KeepLast{N: 2}}}
	r.st.blockAt = 17
	_, err := r.s.Fit(context.Background(), r.l)
	t.Fatalf("the helper's run ended (%v) instead of blocking", err)
}

// TestResumeAfterSIGKILL kills a training process (this test binary run
// as TestHelperProcessTrain, on one CPU worker) with SIGKILL once it has
// written the checkpoint of step 15 and trained on, then resumes the run
// here (with the default worker count) and requires the weights of an
// uninterrupted run, bit for bit. A copy of the killed run whose newest
// checkpoint is then damaged resumes from the one before, just as
// exactly.
func TestResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dev := tensor.CPU()
	base := runBaseline(t, dev, 1)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessTrain$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), "KILN_TRAIN_HELPER_RUNDIR="+dir, "GOMAXPROCS=1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The helper blocks in batch 17; step 16's event follows the
	// checkpoint of step 15.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if evs, err := train.ReadEvents(filepath.Join(dir, train.EventsFile)); err == nil && len(evs) > 0 && evs[len(evs)-1].Kind == train.EventStep && evs[len(evs)-1].Step == 16 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the helper did not reach step 16:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("helper: %v\n%s", err, out.String())
	}
	last, err := os.ReadFile(filepath.Join(dir, train.CheckpointsDir, train.LastCheckpointFile))
	if err != nil || string(last) != "epoch-0002-step-000015\n" {
		t.Fatalf("last checkpoint %q, %v", last, err)
	}
	damaged := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(damaged, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}

	r := newMLPRun(t, dev, 99, dir, 1)
	defer r.release()
	res, err := r.s.Resume(context.Background(), dir, r.l)
	if err != nil {
		t.Fatal(err)
	}
	pos := checkResumed(t, base, dir, r, res, 1)
	if pos != (train.Position{Epoch: 1, Batch: 3, Step: 15}) {
		t.Fatalf("resumed from %+v, want step 15", pos)
	}

	// The damaged copy: a flipped byte in the newest model.
	model := filepath.Join(damaged, train.CheckpointsDir, "epoch-0002-step-000015", "model.safetensors")
	b, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x40
	if err := os.WriteFile(model, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := newMLPRun(t, dev, 99, "", 1)
	defer r2.release()
	var log strings.Builder
	r2.s.Log = &log
	res, err = r2.s.Resume(context.Background(), damaged, r2.l)
	if err != nil {
		t.Fatal(err)
	}
	pos = checkResumed(t, base, damaged, r2, res, 1)
	if pos.Step != 10 {
		t.Fatalf("resumed the damaged run from %+v, want the checkpoint of step 10", pos)
	}
	ev := lastResume(t, readEvents(t, damaged))
	if !strings.Contains(log.String(), "falling back") || !strings.Contains(log.String(), "model.safetensors") ||
		!strings.Contains(ev.Error, "model.safetensors") || !strings.Contains(ev.Error, "checksum mismatch") {
		t.Fatalf("the fallback was not reported: log %q, resume event error %q", log.String(), ev.Error)
	}
}

func TestResumeRefusesWhatDoesNotFit(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := t.TempDir()
		src := newMLPRun(t, dev, 1, dir, 1)
		src.s.Epochs = 1
		if _, err := src.s.Fit(context.Background(), src.l); err != nil {
			t.Fatal(err)
		}
		src.release()
		ckpt := filepath.Join(dir, train.CheckpointsDir, "epoch-0001-step-000012")

		damaged := filepath.Join(t.TempDir(), "damaged")
		if err := os.CopyFS(damaged, os.DirFS(ckpt)); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(damaged, "optimizer.safetensors"), 10); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name  string
			dir   string
			build func() (*train.Supervised, *train.Learner, func())
			is    error
			match string
		}{
			{"damaged checkpoint named directly", damaged, nil, store.ErrCorrupt, "optimizer.safetensors"},
			{"no checkpoint there", t.TempDir(), nil, nil, "no checkpoint"},
			{"a model of other shapes", ckpt, func() (*train.Supervised, *train.Learner, func()) {
				return withModel(t, dev, func(ad tensor.Device) nn.Sequential {
					return nn.NewSequential(nn.NewLinear(ad, 8, 16), nn.ReLU{}, nn.NewLinear(ad, 16, 3))
				})
			}, optim.ErrState, "optimizer state does not fit"},
			// The optimizer's state fits this one (it is loaded first),
			// the model's does not: the optimizer's is put back.
			{"a model with an extra layer", ckpt, func() (*train.Supervised, *train.Learner, func()) {
				return withModel(t, dev, func(ad tensor.Device) nn.Sequential {
					return nn.NewSequential(nn.NewLinear(ad, 8, 32), nn.ReLU{}, nn.NewDropout(0.25), nn.NewLinear(ad, 32, 3), nn.NewLinear(ad, 3, 3))
				})
			}, nn.ErrStateDict, "missing keys: 4.bias, 4.weight"},
			{"another optimizer", ckpt, func() (*train.Supervised, *train.Learner, func()) {
				r := newMLPRun(t, dev, 2, "", 1)
				sgd := optim.NewSGD(optim.SGDConfig{LR: 0.1})
				r.l.Optimizer, r.l.Scheduler = sgd, optim.NewScheduler(sgd, optim.NewCosineAnnealingLR(0.1, 36, 0))
				return r.s, r.l, r.release
			}, optim.ErrState, `state of a "AdamW" optimizer, not "SGD"`},
			{"no scheduler", ckpt, func() (*train.Supervised, *train.Learner, func()) {
				r := newMLPRun(t, dev, 2, "", 1)
				r.l.Scheduler = nil
				return r.s, r.l, r.release
			}, optim.ErrState, "no Scheduler"},
			{"a shorter loader", ckpt + "-mid", func() (*train.Supervised, *train.Learner, func()) {
				r := newMLPRun(t, dev, 2, "", 1)
				short, err := data.NewLoader(synth(32, 1), data.LoaderConfig{BatchSize: 16, Device: dev})
				if err != nil {
					t.Fatal(err)
				}
				r.s.Train = short
				return r.s, r.l, r.release
			}, nil, "has 2 batches"},
		}
		// A checkpoint 5 batches into an epoch, for the loader case.
		mid := newMLPRun(t, dev, 1, "", 1)
		ctx, cancel := context.WithCancel(context.Background())
		mid.st.cancel, mid.st.cancelAt = cancel, 5
		mid.s.Checkpoint = &train.Checkpoints{Dir: t.TempDir(), EveryEpochs: -1}
		if _, err := mid.s.Fit(ctx, mid.l); err != nil {
			t.Fatal(err)
		}
		cancel()
		mid.release()
		if err := os.Rename(filepath.Join(mid.s.Checkpoint.(*train.Checkpoints).Dir, "epoch-0001-step-000005"), ckpt+"-mid"); err != nil {
			t.Fatal(err)
		}

		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var s *train.Supervised
				var l *train.Learner
				var release func()
				if c.build == nil {
					r := newMLPRun(t, dev, 2, "", 1)
					s, l, release = r.s, r.l, r.release
				} else {
					s, l, release = c.build()
				}
				defer release()
				s.Checkpoint = train.NoCheckpoints
				before := weightBits(t, l.Model)
				res, err := s.Resume(context.Background(), c.dir, l)
				if err == nil || res.Reason != train.StopFailed || !strings.Contains(err.Error(), c.match) || (c.is != nil && !errors.Is(err, c.is)) {
					t.Fatalf("got %+v, %v; want an error with %q (is %v)", res, err, c.match, c.is)
				}
				sameBits(t, "the model after a refused resume", weightBits(t, l.Model), before)
				if st, err := l.Optimizer.State(); err != nil || len(st.Steps) != 0 {
					t.Fatalf("the optimizer after a refused resume: %+v, %v", st, err)
				}
			})
		}
	})
}

// withModel is an mlpRun whose model is another one.
func withModel(t *testing.T, dev tensor.Device, build func(ad tensor.Device) nn.Sequential) (*train.Supervised, *train.Learner, func()) {
	r := newMLPRun(t, dev, 2, "", 1)
	var other nn.Sequential
	tensor.NoScope(func() { other = build(dev.Autodiff()) })
	orig := r.st.M
	r.l.Model, r.st.M = other, other
	return r.s, r.l, func() { r.release(); nn.Release(orig) }
}

// Resuming from an older checkpoint of a run directory starts a new
// course: the later checkpoints are left out of the index, "last" names
// the new course's, and a Resume of the run directory follows it.
func TestResumeFromAnOlderCheckpointFollowsTheNewCourse(t *testing.T) {
	dev := tensor.CPU()
	base := runBaseline(t, dev, 1)
	dir := t.TempDir()
	keepAll := func() train.Checkpointer { return &train.Checkpoints{} }
	a := newMLPRun(t, dev, 1, dir, 1)
	a.s.Checkpoint = keepAll()
	if _, err := a.s.Fit(context.Background(), a.l); err != nil {
		t.Fatal(err)
	}
	a.release()
	if got := checkpointDirs(t, dir); len(got) != 3 {
		t.Fatalf("checkpoints %v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := newMLPRun(t, dev, 99, "", 1)
	b.s.Checkpoint = keepAll()
	b.st.cancel, b.st.cancelAt = cancel, 5
	res, err := b.s.Resume(ctx, filepath.Join(dir, train.CheckpointsDir, "epoch-0001-step-000012"), b.l)
	b.release()
	if err != nil || res.Reason != train.StopCancelled || res.Steps != 17 {
		t.Fatalf("second run %+v, %v", res, err)
	}
	idx, err := train.ReadCheckpointIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range idx.Checkpoints {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"epoch-0001-step-000012", "epoch-0002-step-000017"}) || idx.Last != "epoch-0002-step-000017" {
		t.Fatalf("index after resuming from epoch 1: %+v", idx)
	}

	c := newMLPRun(t, dev, 99, "", 1)
	defer c.release()
	c.s.Checkpoint = keepAll()
	res, err = c.s.Resume(context.Background(), dir, c.l)
	if err != nil {
		t.Fatal(err)
	}
	if pos := checkResumed(t, base, dir, c, res, 1); pos.Step != 17 {
		t.Fatalf("resumed the run directory from %+v, want step 17", pos)
	}
}

// A record cut short by a crash is cut off when Resume appends to the log.
func TestResumeCutsOffAPartialRecord(t *testing.T) {
	dev := tensor.CPU()
	dir := t.TempDir()
	a := newMLPRun(t, dev, 1, dir, 1)
	a.s.Epochs = 1
	if _, err := a.s.Fit(context.Background(), a.l); err != nil {
		t.Fatal(err)
	}
	a.release()
	before := readEvents(t, dir)
	f, err := os.OpenFile(filepath.Join(dir, train.EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"kind":"step","time":"2026-`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := train.ReadEvents(filepath.Join(dir, train.EventsFile)); err == nil {
		t.Fatal("the damaged log reads")
	}
	b := newMLPRun(t, dev, 99, "", 1)
	defer b.release()
	b.s.Epochs = 2
	if _, err := b.s.Resume(context.Background(), dir, b.l); err != nil {
		t.Fatal(err)
	}
	after := readEvents(t, dir)
	if len(after) <= len(before) || after[len(before)].Kind != train.EventResume || after[len(after)-1].Kind != train.EventEnd {
		t.Fatalf("log after the resume: %d records before, %d after, record %d is %+v", len(before), len(after), len(before), after[len(before)])
	}
}
