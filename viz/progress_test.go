package viz

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/train"
)

func TestEstimateETA(t *testing.T) {
	for _, c := range []struct {
		name                string
		elapsed, from, done float64
		want                float64
	}{
		{"a quarter in a minute: three more", 60, 0, 0.25, 180},
		{"resumed at half, a quarter more in a minute", 60, 0.5, 0.75, 60},
		{"all done", 90, 0, 1, 0},
		{"nothing done yet", 10, 0, 0, math.NaN()},
		{"no time yet", 0, 0, 0.5, math.NaN()},
		{"unknown progress", 10, 0, math.NaN(), math.NaN()},
	} {
		got := estimateETA(c.elapsed, c.from, c.done)
		if math.IsNaN(c.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-c.want) > 1e-9) {
			t.Errorf("%s: estimateETA(%v, %v, %v) = %v, want %v", c.name, c.elapsed, c.from, c.done, got, c.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for s, want := range map[float64]string{0: "0s", 44.6: "45s", 187: "3m07s", 7500: "2h05m", math.NaN(): "—", -1: "—"} {
		if got := formatDuration(s); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", s, got, want)
		}
	}
	for x, want := range map[float64]string{160: "160", 133.333: "133", 4.1667: "4.17", 10: "10", 25600: "25.6k", math.NaN(): "—"} {
		if got := formatRate(x); got != want {
			t.Errorf("formatRate(%v) = %q, want %q", x, got, want)
		}
	}
}

// TestProgress follows a run of 4 epochs of 100 batches of 32 samples
// through its events, against values worked out by hand.
func TestProgress(t *testing.T) {
	p := newProgress()
	near := func(what string, got, want float64) {
		t.Helper()
		if math.IsNaN(want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-want) > 1e-9) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	step := func(elapsed float64, epoch, batch int) {
		p.observe(train.Event{Kind: train.EventStep, Elapsed: elapsed, Epoch: epoch, Step: (epoch-1)*100 + batch,
			Batches: 100, Batch: batch, Samples: 32 * batch})
	}
	p.observe(train.Event{Kind: train.EventStart, Config: json.RawMessage(`{"epochs":4}`), Batches: 100})
	near("fraction at the start", p.fraction(), 0)
	near("ETA at the start", p.eta(), math.NaN())

	step(10, 1, 50)
	near("fraction", p.fraction(), 0.125) // half of one epoch of four
	near("ETA", p.eta(), 70)              // 10 s × 0.875 / 0.125
	// An epoch's first step event only starts the throughput's window:
	// the time before it is the run's start, not training.
	near("samples/s at the first event", p.rate, math.NaN())
	step(15, 1, 75)
	near("samples/s", p.rate, 160) // 800 samples in 5 s
	near("steps/s", p.stepRate, 5) // 25 steps in 5 s
	step(22, 1, 90)
	near("samples/s over the window", p.rate, 1280.0/12) // 12 s from the first event: all in the window
	step(27, 1, 100)
	// The event at 15 s is the latest one at least 10 s old: the window
	// starts there.
	near("samples/s over the last 10 s", p.rate, 800.0/12)
	near("steps/s over the last 10 s", p.stepRate, 25.0/12)

	p.observe(train.Event{Kind: train.EventEpoch, Elapsed: 28, Epoch: 1, Step: 100, Split: "train"})
	if s, _ := p.state(); s != "validating" {
		t.Errorf("state after the train epoch event %q, want validating", s)
	}
	near("fraction while validating", p.fraction(), 0.25)
	near("ETA while validating", p.eta(), 84) // 28 × 0.75 / 0.25
	p.observe(train.Event{Kind: train.EventEpoch, Elapsed: 30, Epoch: 1, Step: 100, Split: "valid"})
	step(32, 2, 10)
	near("samples/s at a new epoch's first event: the last measurement", p.rate, 800.0/12)
	step(34, 2, 20)
	near("samples/s in a new epoch", p.rate, 160) // 320 samples in 2 s
	near("fraction in epoch 2", p.fraction(), 0.3)
	if got := p.epochText(); got != "epoch 2/4" {
		t.Errorf("epoch text %q", got)
	}

	p.observe(train.Event{Kind: train.EventEnd, Elapsed: 35, Epoch: 1, Step: 120, Reason: train.StopCancelled})
	if s, _ := p.state(); s != "stopped (cancelled)" || p.eta() != 0 {
		t.Errorf("after a cancel: state %q ETA %v", s, p.eta())
	}
	near("fraction after a cancel", p.fraction(), 0.3)
}

// TestProgressResumed: a run resumed half-way through its third epoch (of
// 4) counts its ETA from the work done since the resume only.
func TestProgressResumed(t *testing.T) {
	p := newProgress()
	p.observe(train.Event{Kind: train.EventResume, Elapsed: 0.5, Config: json.RawMessage(`{"epochs":4}`),
		Position: &train.Position{Epoch: 2, Batch: 50, Step: 250}})
	if !math.IsNaN(p.eta()) {
		t.Errorf("ETA before any step: %v", p.eta())
	}
	p.observe(train.Event{Kind: train.EventStep, Elapsed: 10.5, Epoch: 3, Step: 260, Batches: 100, Batch: 60, Samples: 320})
	// Done 0.65 from 0.625: 10.5 s × 0.35 / 0.025.
	if got := p.eta(); math.Abs(got-147) > 1e-9 {
		t.Errorf("ETA %v, want 147", got)
	}
	p.observe(train.Event{Kind: train.EventStep, Elapsed: 12.5, Epoch: 3, Step: 270, Batches: 100, Batch: 70, Samples: 640})
	if got := p.rate; math.Abs(got-160) > 1e-9 { // 320 samples in 2 s
		t.Errorf("samples/s %v, want 160", got)
	}
}

func TestLossRecovery(t *testing.T) {
	var r lossRecovery
	ev := func(epoch, samples int) train.Event {
		return train.Event{Kind: train.EventStep, Epoch: epoch, Samples: samples}
	}
	for _, c := range []struct {
		name    string
		e       train.Event
		running float64
		want    float64
	}{
		{"an epoch's first event is its own mean", ev(1, 32), 1.0, 1.0},
		// (0.9·64 − 1.0·32) / 32.
		{"the next interval's mean", ev(1, 64), 0.9, 0.8},
		{"and the next", ev(1, 96), 0.8, 0.6},
		{"a new epoch starts afresh", ev(2, 32), 0.5, 0.5},
	} {
		if got := r.next(c.e, c.running); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// An epoch resumed inside: its loss covers batches before the resume
	// that its Samples do not count, so it is not differenced.
	r = lossRecovery{noDiff: 3}
	r.next(ev(3, 32), 0.7)
	if got := r.next(ev(3, 64), 0.6); got != 0.6 {
		t.Errorf("resumed epoch: %v, want the running mean 0.6", got)
	}
}
