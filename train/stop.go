package train

import (
	"fmt"
	"math"
)

// StopReason says why Fit returned.
type StopReason string

// The reasons a run ends.
const (
	StopCompleted StopReason = "completed"  // every epoch ran
	StopCancelled StopReason = "cancelled"  // the context was cancelled; the current step finished first
	StopEarly     StopReason = "early_stop" // a StopRule asked to stop
	StopFailed    StopReason = "failed"     // an error ended the run (Fit returns it)
)

// StopRule decides after each epoch whether training should stop. train
// and valid are the epoch's metric values by name (valid is nil without a
// validation loader). ShouldStop returns true and a human-readable reason
// to stop. A rule may keep state; Fit calls it once per epoch, in order.
// Resume shows a rule the epochs before its checkpoint again, in order,
// first calling its Reset method if it has one (func Reset()).
type StopRule interface {
	ShouldStop(epoch int, train, valid Values) (stop bool, why string)
}

// EarlyStopping stops when Metric has not improved by more than MinDelta
// for Patience epochs in a row, not counting the first WarmUp epochs.
// Create it with NewEarlyStopping (or set the fields, then use a pointer).
type EarlyStopping struct {
	Metric   string  `json:"metric"`              // metric name, e.g. "loss" or "accuracy"
	Split    string  `json:"split,omitempty"`     // "valid" (default when validating) or "train"
	Maximize bool    `json:"maximize,omitempty"`  // higher is better (accuracy); default lower (loss)
	Patience int     `json:"patience"`            // epochs without improvement before stopping; 0 means 1
	MinDelta float64 `json:"min_delta,omitempty"` // an improvement must exceed this
	WarmUp   int     `json:"warm_up,omitempty"`   // epochs ignored at the start

	best  float64
	seen  bool
	stale int
}

// NewEarlyStopping returns an EarlyStopping rule on metric with the given
// patience, minimizing it.
func NewEarlyStopping(metric string, patience int) *EarlyStopping {
	return &EarlyStopping{Metric: metric, Patience: patience}
}

// Reset forgets the values seen, keeping the configuration. Resume calls
// it before showing the rule the epochs a checkpoint had completed.
func (e *EarlyStopping) Reset() { e.best, e.seen, e.stale = 0, false, 0 }

// Best returns the best value seen so far (NaN before any).
func (e *EarlyStopping) Best() float64 {
	if !e.seen {
		return math.NaN()
	}
	return e.best
}

// ShouldStop implements StopRule. A metric missing from the split, or NaN,
// counts as no improvement.
func (e *EarlyStopping) ShouldStop(epoch int, train, valid Values) (bool, string) {
	if epoch <= e.WarmUp {
		return false, ""
	}
	vals := valid
	if e.Split == "train" || (e.Split == "" && valid == nil) {
		vals = train
	}
	v, ok := vals[e.Metric]
	improved := false
	if ok && !math.IsNaN(v) {
		switch {
		case !e.seen:
			improved = true
		case e.Maximize:
			improved = v > e.best+e.MinDelta
		default:
			improved = v < e.best-e.MinDelta
		}
	}
	if improved {
		e.best, e.seen, e.stale = v, true, 0
		return false, ""
	}
	e.stale++
	p := e.Patience
	if p <= 0 {
		p = 1
	}
	if e.stale >= p {
		return true, fmt.Sprintf("%s did not improve by more than %g for %d epochs (best %g)", e.Metric, e.MinDelta, e.stale, e.Best())
	}
	return false, ""
}
