package optim

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// ReduceLROnPlateauConfig configures ReduceLROnPlateau; the zero value of
// each field is torch.optim.lr_scheduler.ReduceLROnPlateau's default.
type ReduceLROnPlateauConfig struct {
	Mode          string   `json:"mode,omitempty"`           // "min" (default: lower is better) or "max"
	Factor        float64  `json:"factor,omitempty"`         // new rate = rate·Factor; in (0, 1); default 0.1
	Patience      *int     `json:"patience,omitempty"`       // bad steps tolerated before reducing; default 10 (Int(0) for none)
	Threshold     *float64 `json:"threshold,omitempty"`      // what counts as better; default 1e-4 (Float(0) for any)
	ThresholdMode string   `json:"threshold_mode,omitempty"` // "rel" (default) or "abs"
	Cooldown      int      `json:"cooldown,omitempty"`       // steps to wait after a reduction; default 0
	MinLR         float64  `json:"min_lr,omitempty"`         // lower bound of the rate; default 0
	Eps           float64  `json:"eps,omitempty"`            // smaller reductions are skipped; default 1e-8
}

// ReduceLROnPlateau lowers an optimizer's learning rate when a metric has
// stopped improving, as torch.optim.lr_scheduler.ReduceLROnPlateau: after
// more than Patience steps without a metric better than the best by the
// threshold, the rate is multiplied by Factor (not below MinLR), then
// Cooldown steps pass before bad steps count again. In "rel" mode better
// means below best·(1 − Threshold) ("min") or above best·(1 + Threshold)
// ("max"); in "abs" mode below best − Threshold or above best + Threshold.
//
// It works on the optimizer's rate (Optimizer.LR), so groups with their
// own rate are reduced in proportion and MinLR bounds the base rate only.
type ReduceLROnPlateau struct {
	opt                 Optimizer
	cfg                 ReduceLROnPlateauConfig
	factor, thresh, eps float64
	patience            int
	best                float64
	badSteps, cooldown  int
	steps               int
}

// ReduceLROnPlateauState is a ReduceLROnPlateau's state for checkpoints.
// Best is the best metric so far (±Inf before the first; JSON writes
// non-finite values as strings).
type ReduceLROnPlateauState struct {
	Best     JSONFloat `json:"best"`
	BadSteps int       `json:"bad_steps"`
	Cooldown int       `json:"cooldown"` // cooldown steps left
	Steps    int       `json:"steps"`
}

// JSONFloat is a float64 that encoding/json writes as a number, or as
// "inf", "-inf" or "nan" when it is not finite.
type JSONFloat float64

// MarshalJSON writes f.
func (f JSONFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"nan"`), nil
	case math.IsInf(v, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-inf"`), nil
	}
	return []byte(strconv.FormatFloat(v, 'g', -1, 64)), nil
}

// UnmarshalJSON reads a number or "inf", "-inf", "nan".
func (f *JSONFloat) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "inf":
			*f = JSONFloat(math.Inf(1))
		case "-inf":
			*f = JSONFloat(math.Inf(-1))
		case "nan":
			*f = JSONFloat(math.NaN())
		default:
			return fmt.Errorf("optim.JSONFloat: %q is not a number", s)
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = JSONFloat(v)
	return nil
}

// NewReduceLROnPlateau returns a ReduceLROnPlateau driving opt. It panics
// with an error wrapping ErrConfig for values out of range or unknown
// modes.
func NewReduceLROnPlateau(opt Optimizer, cfg ReduceLROnPlateauConfig) *ReduceLROnPlateau {
	const name = "ReduceLROnPlateau"
	fail := func(format string, args ...any) { panic(scheduleError(name, format, args...)) }
	if opt == nil {
		fail("nil optimizer")
	}
	if cfg.Mode == "" {
		cfg.Mode = "min"
	}
	if cfg.ThresholdMode == "" {
		cfg.ThresholdMode = "rel"
	}
	r := &ReduceLROnPlateau{opt: opt, cfg: cfg, factor: orDefault(cfg.Factor, 0.1), thresh: 1e-4, eps: orDefault(cfg.Eps, 1e-8), patience: 10}
	if cfg.Patience != nil {
		r.patience = *cfg.Patience
	}
	if cfg.Threshold != nil {
		r.thresh = *cfg.Threshold
	}
	switch {
	case cfg.Mode != "min" && cfg.Mode != "max":
		fail("mode %q: want \"min\" or \"max\"", cfg.Mode)
	case cfg.ThresholdMode != "rel" && cfg.ThresholdMode != "abs":
		fail("threshold mode %q: want \"rel\" or \"abs\"", cfg.ThresholdMode)
	case !(r.factor > 0 && r.factor < 1):
		fail("factor %v outside (0, 1)", r.factor)
	case r.patience < 0 || cfg.Cooldown < 0:
		fail("patience %d and cooldown %d must not be negative", r.patience, cfg.Cooldown)
	case !(r.thresh >= 0) || math.IsInf(r.thresh, 0) || !(cfg.MinLR >= 0) || !(r.eps >= 0):
		fail("threshold %v, min_lr %v and eps %v must be finite and non-negative", r.thresh, cfg.MinLR, r.eps)
	}
	r.best = r.worst()
	return r
}

func (r *ReduceLROnPlateau) worst() float64 {
	if r.cfg.Mode == "min" {
		return math.Inf(1)
	}
	return math.Inf(-1)
}

func (r *ReduceLROnPlateau) better(a float64) bool {
	switch {
	case r.cfg.Mode == "min" && r.cfg.ThresholdMode == "rel":
		return a < r.best*(1-r.thresh)
	case r.cfg.Mode == "min":
		return a < r.best-r.thresh
	case r.cfg.ThresholdMode == "rel":
		return a > r.best*(r.thresh+1)
	}
	return a > r.best+r.thresh
}

// Step records one value of the metric (a validation loss, say) and
// lowers the optimizer's rate if it has plateaued.
func (r *ReduceLROnPlateau) Step(metric float64) {
	r.steps++
	if r.better(metric) {
		r.best = metric
		r.badSteps = 0
	} else {
		r.badSteps++
	}
	if r.cooldown > 0 {
		r.cooldown--
		r.badSteps = 0
	}
	if r.badSteps > r.patience {
		old := r.opt.LR()
		lr := max(old*r.factor, r.cfg.MinLR)
		if old-lr > r.eps {
			r.opt.SetLR(lr)
		}
		r.cooldown = r.cfg.Cooldown
		r.badSteps = 0
	}
}

// LR returns the optimizer's current learning rate.
func (r *ReduceLROnPlateau) LR() float64 { return r.opt.LR() }

// State returns r's state for a checkpoint (the rate itself is the
// optimizer's, in its State).
func (r *ReduceLROnPlateau) State() ReduceLROnPlateauState {
	return ReduceLROnPlateauState{Best: JSONFloat(r.best), BadSteps: r.badSteps, Cooldown: r.cooldown, Steps: r.steps}
}

// LoadState restores a state saved by State. It returns an error wrapping
// ErrState for negative counts.
func (r *ReduceLROnPlateau) LoadState(st ReduceLROnPlateauState) error {
	if st.BadSteps < 0 || st.Cooldown < 0 || st.Steps < 0 {
		return fmt.Errorf("optim.ReduceLROnPlateau.LoadState: negative counts in %+v: %w", st, ErrState)
	}
	r.best, r.badSteps, r.cooldown, r.steps = float64(st.Best), st.BadSteps, st.Cooldown, st.Steps
	return nil
}
