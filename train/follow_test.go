package train_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

// logLine is one events.jsonl record as Fit writes it.
func logLine(e train.Event) []byte {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// waitFor polls ok for up to 10 s.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func (r *recorder) events() []train.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]train.Event(nil), r.evs...)
}

// kinds lists the kinds and steps of evs, "start@0 step@2 …".
func kinds(evs []train.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, string(e.Kind)+"@"+itoa(e.Step))
	}
	return strings.Join(s, " ")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A log written by another goroutine, created after Follow began, grows
// record by record, each record written in two parts with a pause between
// (the follower sees half a line): every record reaches the observer, in
// order, once whole, and Follow returns the run's Result at its end record.
func TestFollowGrowingLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	records := []train.Event{
		{Version: train.EventLogVersion, Kind: train.EventStart, Config: json.RawMessage(`{"epochs":2}`), Batches: 4, WorldSize: 2},
		{Kind: train.EventStep, Epoch: 1, Step: 2, Split: "train", Metrics: train.Values{"loss": 1.5}, Batch: 2, Batches: 4},
		{Kind: train.EventStep, Epoch: 1, Step: 4, Split: "train", Metrics: train.Values{"loss": 1.25}, Batch: 4, Batches: 4},
		{Kind: train.EventEpoch, Epoch: 1, Step: 4, Split: "train", Metrics: train.Values{"loss": 1.3}},
		{Kind: train.EventEpoch, Epoch: 1, Step: 4, Split: "valid", Metrics: train.Values{"loss": 1.1, "accuracy": 0.5}},
		{Kind: train.EventCheckpoint, Epoch: 1, Step: 4, Path: filepath.Join(dir, "checkpoints", "epoch-0001-step-000004")},
		{Kind: train.EventStep, Epoch: 2, Step: 6, Split: "train", Metrics: train.Values{"loss": 0.9}, Batch: 2, Batches: 4},
		{Kind: train.EventEpoch, Epoch: 2, Step: 8, Split: "train", Metrics: train.Values{"loss": 0.8}},
		{Kind: train.EventEpoch, Epoch: 2, Step: 8, Split: "valid", Metrics: train.Values{"loss": 0.7, "accuracy": 0.75}},
		{Kind: train.EventEnd, Epoch: 2, Step: 8, Reason: train.StopCompleted},
	}
	rec := &recorder{}
	written := make(chan int, len(records)) // records written whole so far
	go func() {
		time.Sleep(150 * time.Millisecond) // Follow starts before the log exists
		if err := os.MkdirAll(dir, 0o755); err != nil {
			panic(err)
		}
		f, err := os.Create(filepath.Join(dir, train.EventsFile))
		if err != nil {
			panic(err)
		}
		defer f.Close()
		for i, e := range records {
			line := logLine(e)
			half := len(line) / 2
			f.Write(line[:half])
			time.Sleep(30 * time.Millisecond)
			f.Write(line[half:])
			written <- i + 1
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	res, err := train.Follow(context.Background(), dir, []train.Observer{rec})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(records) {
		t.Errorf("Follow returned after %d of %d records were written", len(written), len(records))
	}
	got := rec.events()
	if len(got) != len(records) {
		t.Fatalf("observer got %d events (%s), want %d", len(got), kinds(got), len(records))
	}
	for i, e := range got {
		w := records[i]
		if e.Kind != w.Kind || e.Step != w.Step || e.Split != w.Split || !reflect.DeepEqual(e.Metrics, w.Metrics) || e.Path != w.Path {
			t.Errorf("event %d: %+v, want %+v", i, e, w)
		}
	}
	if got[0].WorldSize != 2 || got[0].Batches != 4 {
		t.Errorf("start event %+v lost its world size or batches", got[0])
	}
	want := train.Result{Reason: train.StopCompleted, Epochs: 2, Steps: 8,
		Train: []train.Values{{"loss": 1.3}, {"loss": 0.8}},
		Valid: []train.Values{{"loss": 1.1, "accuracy": 0.5}, {"loss": 0.7, "accuracy": 0.75}}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result %+v, want %+v", res, want)
	}
	t.Logf("followed %d records in %v", len(records), time.Since(start).Round(time.Millisecond))
}

// Cancelling ctx stops following a run that goes on: Follow returns at
// once with the context's error and what it read, and the observer gets an
// end event of Follow's own (the log is left alone).
func TestFollowCancelStopsFollowing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, train.EventsFile)
	var log []byte
	log = append(log, logLine(train.Event{Version: 1, Kind: train.EventStart, Config: json.RawMessage(`{"epochs":3}`)})...)
	log = append(log, logLine(train.Event{Kind: train.EventStep, Epoch: 1, Step: 5, Split: "train", Metrics: train.Values{"loss": 2}})...)
	if err := os.WriteFile(path, log, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	type outcome struct {
		res train.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := train.Follow(ctx, dir, []train.Observer{rec})
		done <- outcome{res, err}
	}()
	waitFor(t, "two events", func() bool { return len(rec.events()) == 2 })
	cancelled := time.Now()
	cancel()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Follow did not return within 5 s of its context's cancellation")
	}
	if !errors.Is(o.err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", o.err)
	}
	if o.res.Reason != train.StopCancelled || o.res.Steps != 5 {
		t.Errorf("result %+v", o.res)
	}
	evs := rec.events()
	if last := evs[len(evs)-1]; len(evs) != 3 || last.Kind != train.EventEnd || last.Reason != train.StopCancelled ||
		!strings.Contains(last.Error, "stopped following") {
		t.Errorf("events %s, last %+v: want an end event of Follow's own", kinds(evs), last)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(log) {
		t.Error("Follow changed the log")
	}
	if _, err := os.Stat(filepath.Join(dir, train.StopFile)); err == nil {
		t.Error("cancelling ctx wrote a STOP file: the run is only no longer followed")
	}
	t.Logf("returned %v after the cancellation", time.Since(cancelled).Round(time.Millisecond))
}

// A log that has ended is read whole at once; an end record followed by a
// resume (a run continued by Resume) is not the end: the observer sees one
// end event, the last, and the Result is the resumed run's.
func TestFollowEndedAndResumedLog(t *testing.T) {
	dir := t.TempDir()
	var log []byte
	for _, e := range []train.Event{
		{Version: 1, Kind: train.EventStart, Config: json.RawMessage(`{"epochs":2}`)},
		{Kind: train.EventEpoch, Epoch: 1, Step: 3, Split: "train", Metrics: train.Values{"loss": 1}},
		{Kind: train.EventEnd, Epoch: 1, Step: 4, Reason: train.StopCancelled},
		{Kind: train.EventResume, Epoch: 1, Step: 3, Position: &train.Position{Epoch: 1, Step: 3}},
		{Kind: train.EventEpoch, Epoch: 2, Step: 6, Split: "train", Metrics: train.Values{"loss": 0.5}},
		{Kind: train.EventEnd, Epoch: 2, Step: 6, Reason: train.StopCompleted},
	} {
		log = append(log, logLine(e)...)
	}
	log = append(log, "{\"kind\":\"step\",\"ti"...) // a damaged last line, without its newline
	if err := os.WriteFile(filepath.Join(dir, train.EventsFile), log, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	res, err := train.Follow(context.Background(), dir, []train.Observer{rec})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(rec.events()); got != "start@0 epoch@3 resume@3 epoch@6 end@6" {
		t.Errorf("events %s", got)
	}
	if res.Reason != train.StopCompleted || res.Epochs != 2 || res.Steps != 6 || len(res.Train) != 2 || res.Train[1]["loss"] != 0.5 {
		t.Errorf("result %+v", res)
	}
}

// A run that failed: Follow returns its error, as Fit would have.
func TestFollowFailedRun(t *testing.T) {
	dir := t.TempDir()
	log := append(logLine(train.Event{Version: 1, Kind: train.EventStart}),
		logLine(train.Event{Kind: train.EventEnd, Reason: train.StopFailed, Error: "train: epoch 1 batch 3: out of cheese"})...)
	if err := os.WriteFile(filepath.Join(dir, train.EventsFile), log, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := train.Follow(context.Background(), dir, nil)
	if err == nil || !strings.Contains(err.Error(), "out of cheese") || res.Reason != train.StopFailed {
		t.Errorf("result %+v, error %v: want the run's failure", res, err)
	}
}

// The run hook sees a followed run with Followed and its world size;
// cancelling the hook's context (the kernel's interrupt) stops following:
// the hook's observer gets an end event of Follow's own, and the run, left
// alone (no STOP file), goes on.
func TestFollowRunHook(t *testing.T) {
	dir := t.TempDir()
	var infos []train.RunInfo
	hookRec := &recorder{}
	var cancelHook context.CancelFunc
	prev := train.SetRunHook(func(ctx context.Context, info train.RunInfo) (context.Context, train.Observer) {
		infos = append(infos, info)
		ctx, cancelHook = context.WithCancel(ctx)
		return ctx, hookRec
	})
	defer func() { train.SetRunHook(prev) }()

	f, err := os.Create(filepath.Join(dir, train.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(logLine(train.Event{Version: 1, Kind: train.EventStart, Config: json.RawMessage(`{"epochs":5,"run_dir":"x"}`), WorldSize: 2}))
	stop := make(chan struct{})
	ran := make(chan int)
	go func() { // the run: a step every 20 ms
		step := 1
		defer func() { ran <- step }()
		for ; ; step++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			f.Write(logLine(train.Event{Kind: train.EventStep, Epoch: 1, Step: step, Metrics: train.Values{"loss": 1}}))
		}
	}()
	go func() {
		for len(hookRec.events()) < 3 {
			time.Sleep(5 * time.Millisecond)
		}
		cancelHook() // as the kernel does on an interrupt
	}()
	res, err := train.Follow(context.Background(), dir, nil)
	if !errors.Is(err, context.Canceled) || res.Reason != train.StopCancelled {
		t.Errorf("result %+v, error %v: want cancelled with context.Canceled", res, err)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	if steps := <-ran; steps <= res.Steps {
		t.Errorf("the run stopped at step %d, where Follow did (%d): it should have gone on", steps, res.Steps)
	}
	if _, err := os.Stat(filepath.Join(dir, train.StopFile)); err == nil {
		t.Error("Follow wrote a STOP file")
	}
	if len(infos) != 1 || !infos[0].Followed || infos[0].WorldSize != 2 || infos[0].RunDir != dir || infos[0].Config.Epochs != 5 {
		t.Errorf("hook saw %+v", infos)
	}
	evs := hookRec.events()
	if last := evs[len(evs)-1]; last.Kind != train.EventEnd || last.Reason != train.StopCancelled || !strings.Contains(last.Error, "stopped following") {
		t.Errorf("the hook's observer ended with %+v, want Follow's own end event", last)
	}
}

// Follow beside a real Fit writing the run directory: the events it hands
// on are the log's, and its Result is Fit's.
func TestFollowFit(t *testing.T) {
	dev := tensor.CPU()
	model := newLinear(dev, 3)
	defer nn.Release(model)
	dir := filepath.Join(t.TempDir(), "run")
	st := &stepHook{M: model, at: func(int) { time.Sleep(3 * time.Millisecond) }}
	s := &train.Supervised{Config: train.Config{Epochs: 2, RunDir: dir, LogEvery: 2},
		Train:        loader(t, blobs(96, 8), dev, data.LoaderConfig{}),
		Valid:        loader(t, blobs(32, 9), dev, data.LoaderConfig{}),
		ValidMetrics: []metrics.Metric{metrics.NewAccuracy()}}
	type outcome struct {
		res train.Result
		err error
	}
	fitted := make(chan outcome, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		res, err := s.Fit(context.Background(), &train.Learner{Model: model, Stepper: st, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.1})})
		fitted <- outcome{res, err}
	}()
	rec := &recorder{}
	res, err := train.Follow(context.Background(), dir, []train.Observer{rec})
	if err != nil {
		t.Fatal(err)
	}
	fit := <-fitted
	if fit.err != nil {
		t.Fatal(fit.err)
	}
	logged, err := train.ReadEvents(filepath.Join(dir, train.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(rec.events()), kinds(logged); got != want {
		t.Errorf("followed %s\nlogged   %s", got, want)
	}
	fit.res.DroppedEvents = 0
	if !reflect.DeepEqual(res, fit.res) {
		t.Errorf("Follow's result %+v\nFit's            %+v", res, fit.res)
	}
}
