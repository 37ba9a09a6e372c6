package viz

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/kiln-ml/kiln/train"
)

// Progress of a run, as a live dashboard's header shows it, made from the
// run's events alone: the start (or resume) event's config gives the
// epochs planned, step events the batches per epoch, the batches done and
// the samples they held (train.Event's Batches, Batch and Samples), and
// every event the seconds since the Fit or Resume call began.

// rateWindow is how many seconds of step events the throughput is
// measured over: recent enough to follow a slowdown, long enough not to
// jump with every event.
const rateWindow = 10.0

// maxRatePoints bounds the step events the throughput window keeps (a
// fast run logging every step has thousands in 10 s).
const maxRatePoints = 512

// ratePoint is one step event's place, for the throughput.
type ratePoint struct {
	elapsed float64 // seconds since the Fit or Resume call began
	samples int     // training samples of the epoch so far
	step    int
}

// progress is a run's progress as of its latest event.
type progress struct {
	started bool
	epochs  int // epochs planned (0: unknown)
	batches int // training batches per epoch (0: unknown)
	epoch   int // the epoch under way; at the end, the epochs completed
	batch   int // batches of the epoch done
	step    int
	trained int     // the last epoch whose training part ended
	elapsed float64 // seconds since the Fit or Resume call began
	// Where the Fit or Resume call began: the epochs completed and the
	// batches of the next one (both 0 for a Fit from scratch).
	fromEpochs, fromBatch int
	ranks                 int
	validates             bool // the epoch's training ended; its validation may be under way

	window    []ratePoint // the current epoch's recent step events, oldest first
	rate      float64     // training samples per second (NaN: unknown)
	stepRate  float64     // optimizer steps per second (NaN: unknown)
	measured  bool        // the latest step event measured rate (it was not its epoch's first)
	sysValues train.Values

	ended  bool
	reason train.StopReason
	err    string
}

func newProgress() progress { return progress{rate: math.NaN(), stepRate: math.NaN()} }

// epochsOf reads the epochs planned from a start or resume event's config.
func epochsOf(config json.RawMessage) int {
	var cfg struct {
		Epochs int `json:"epochs"`
	}
	if json.Unmarshal(config, &cfg) != nil {
		return 0
	}
	return max(cfg.Epochs, 0)
}

// observe folds e into the progress.
func (p *progress) observe(e train.Event) {
	p.step = max(p.step, e.Step)
	p.elapsed = max(p.elapsed, e.Elapsed)
	if e.System != nil {
		p.sysValues = e.System
	}
	switch e.Kind {
	case train.EventStart:
		p.started = true
		if n := epochsOf(e.Config); n > 0 {
			p.epochs = n
		}
		p.batches, p.ranks = max(p.batches, e.Batches), e.WorldSize
		p.epoch, p.batch, p.elapsed = 1, 0, e.Elapsed
		p.window = nil
	case train.EventResume:
		p.started = true
		if n := epochsOf(e.Config); n > 0 {
			p.epochs = n
		}
		p.elapsed = e.Elapsed
		p.batches = max(p.batches, e.Batches)
		if pos := e.Position; pos != nil {
			p.step, p.trained, p.batch = pos.Step, pos.Epoch, pos.Batch
			p.epoch = pos.Epoch + 1
			p.fromEpochs, p.fromBatch = pos.Epoch, pos.Batch
		}
		p.window = nil // samples count from the resume on
		p.validates = false
	case train.EventStep:
		p.started = true
		if e.Epoch > 0 && e.Epoch != p.epoch || len(p.window) > 0 && e.Samples < p.window[len(p.window)-1].samples {
			p.window = nil // a new epoch: its samples count from 0
		}
		if e.Epoch > 0 {
			p.epoch = e.Epoch
		}
		if e.Batches > 0 {
			p.batches = e.Batches
		}
		p.batch, p.validates = e.Batch, false
		p.measure(ratePoint{elapsed: e.Elapsed, samples: e.Samples, step: e.Step})
	case train.EventEpoch:
		if e.Epoch > 0 {
			p.epoch = e.Epoch
		}
		if e.Split != "valid" {
			p.trained, p.validates = max(p.trained, e.Epoch), true
			if p.batches > 0 {
				p.batch = p.batches
			}
		} else {
			p.validates = false
		}
		p.window = nil // the next epoch's samples count from 0
	case train.EventEnd:
		p.ended, p.reason, p.err = true, e.Reason, e.Error
		p.validates = false
		if e.Epoch > 0 {
			p.trained = max(p.trained, e.Epoch)
		}
	}
}

// measure adds a step event to the throughput window and measures the
// throughput over it: the samples and steps since the oldest step event
// kept (the latest one at least rateWindow seconds old, else the epoch's
// first) over the seconds between. An epoch's first step event only
// starts the window: the time before it holds the previous epoch's
// validation and checkpoint, or the run's start, not training. Until a
// measurement, the previous one stands.
func (p *progress) measure(pt ratePoint) {
	p.window = append(p.window, pt)
	for len(p.window) > 2 && pt.elapsed-p.window[1].elapsed >= rateWindow || len(p.window) > maxRatePoints {
		p.window = p.window[1:]
	}
	p.measured = false
	if len(p.window) > 1 {
		if r, sr := throughput(p.window[0], pt); finite(r) {
			p.rate, p.stepRate, p.measured = r, sr, true
		}
	}
}

// throughput returns the samples and optimizer steps per second between
// two step events of one epoch (NaN when no time passed between them).
func throughput(from, to ratePoint) (samples, steps float64) {
	dt := to.elapsed - from.elapsed
	if !(dt > 0) {
		return math.NaN(), math.NaN()
	}
	return float64(to.samples-from.samples) / dt, float64(to.step-from.step) / dt
}

// fraction returns the part of the run done, in [0, 1]: the epochs
// trained and the batches of the one under way, over the epochs planned
// (NaN when they are unknown). Validation is not counted: an epoch whose
// training ended is done.
func (p *progress) fraction() float64 {
	if p.epochs <= 0 {
		return math.NaN()
	}
	if p.ended && p.reason == train.StopCompleted {
		return 1
	}
	f := float64(p.trained) / float64(p.epochs)
	if p.batches > 0 && p.epoch > p.trained {
		f = max(f, (float64(p.epoch-1)+min(1, float64(p.batch)/float64(p.batches)))/float64(p.epochs))
	}
	return min(1, max(0, f))
}

// eta returns the seconds the run has left (NaN when unknown, 0 at the
// end).
func (p *progress) eta() float64 {
	if p.ended {
		return 0
	}
	return estimateETA(p.elapsed, p.startFraction(), p.fraction())
}

// startFraction returns the part of the run done when the Fit or Resume
// call began (a resume's position; NaN when a resume inside an epoch
// cannot be placed, the batches per epoch being unknown).
func (p *progress) startFraction() float64 {
	switch {
	case p.epochs <= 0:
		return math.NaN()
	case p.fromBatch == 0:
		return float64(p.fromEpochs) / float64(p.epochs)
	case p.batches <= 0:
		return math.NaN()
	}
	return (float64(p.fromEpochs) + min(1, float64(p.fromBatch)/float64(p.batches))) / float64(p.epochs)
}

// estimateETA returns the seconds left for a run that, elapsed seconds
// after starting at fraction from of the work, has done fraction done of
// it: the time per fraction so far, times the fraction left. It is NaN
// when nothing was done yet (or the fractions are unknown).
func estimateETA(elapsed, from, done float64) float64 {
	if !(done > from) || !(elapsed > 0) {
		return math.NaN()
	}
	return elapsed * (1 - done) / (done - from)
}

// formatDuration writes seconds as 45s, 3m07s or 2h05m (— when unknown).
func formatDuration(s float64) string {
	if !finite(s) || s < 0 {
		return "—"
	}
	t := int(math.Round(s))
	switch {
	case t < 60:
		return fmt.Sprintf("%ds", t)
	case t < 3600:
		return fmt.Sprintf("%dm%02ds", t/60, t%60)
	}
	return fmt.Sprintf("%dh%02dm", t/3600, (t%3600)/60)
}

// formatRate writes a rate with 3 significant digits and k/M suffixes.
func formatRate(x float64) string {
	switch {
	case !finite(x):
		return "—"
	case x >= 1e6:
		return trimFloat(x/1e6) + "M"
	case x >= 1e4:
		return trimFloat(x/1e3) + "k"
	}
	return trimFloat(x)
}

func trimFloat(x float64) string {
	if x >= 100 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}
