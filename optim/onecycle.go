package optim

import "math"

// OneCycleLR is the 1cycle policy (Smith and Topin, 2018), as
// torch.optim.lr_scheduler.OneCycleLR: the rate rises from
// MaxLR/DivFactor to MaxLR over the first PctStart of TotalSteps, then
// anneals to MaxLR/(DivFactor·FinalDivFactor); with ThreePhase it first
// returns to MaxLR/DivFactor and anneals to the minimum in a third phase.
// Momentum (SGD's momentum, Adam's β₁) cycles inversely between
// MaxMomentum and BaseMomentum, as in PyTorch, unless NoCycleMomentum is
// set; a Scheduler refuses to cycle the momentum of an optimizer without
// one (AdaGrad).
//
// The zero value of each optional field is PyTorch's default. Past
// TotalSteps, where PyTorch raises an error, the rate stays at its final
// value.
type OneCycleLR struct {
	MaxLR           float64 `json:"max_lr"`                      // peak learning rate; required
	TotalSteps      int     `json:"total_steps"`                 // length of the cycle; required
	PctStart        float64 `json:"pct_start,omitempty"`         // fraction of the cycle spent rising; default 0.3
	AnnealStrategy  string  `json:"anneal_strategy,omitempty"`   // "cos" (default) or "linear"
	DivFactor       float64 `json:"div_factor,omitempty"`        // initial rate = MaxLR/DivFactor; default 25
	FinalDivFactor  float64 `json:"final_div_factor,omitempty"`  // minimum = initial/FinalDivFactor; default 1e4
	ThreePhase      bool    `json:"three_phase,omitempty"`       // fast.ai's three-phase variant
	NoCycleMomentum bool    `json:"no_cycle_momentum,omitempty"` // leave momentum alone
	BaseMomentum    float64 `json:"base_momentum,omitempty"`     // momentum at the peak rate; default 0.85
	MaxMomentum     float64 `json:"max_momentum,omitempty"`      // momentum at the ends; default 0.95
}

type onePhase struct {
	end                  float64
	startLR, endLR       float64
	startMomen, endMomen float64
}

func (s OneCycleLR) phases() []onePhase {
	pct := orDefault(s.PctStart, 0.3)
	initial := s.MaxLR / orDefault(s.DivFactor, 25)
	minLR := initial / orDefault(s.FinalDivFactor, 1e4)
	base, peak := orDefault(s.BaseMomentum, 0.85), orDefault(s.MaxMomentum, 0.95)
	total := float64(s.TotalSteps)
	if s.ThreePhase {
		return []onePhase{
			{pct*total - 1, initial, s.MaxLR, peak, base},
			{2*pct*total - 2, s.MaxLR, initial, base, peak},
			{total - 1, initial, minLR, peak, peak},
		}
	}
	return []onePhase{
		{pct*total - 1, initial, s.MaxLR, peak, base},
		{total - 1, s.MaxLR, minLR, base, peak},
	}
}

// at returns the learning rate and momentum at step.
func (s OneCycleLR) at(step int) (lr, momentum float64) {
	if step > s.TotalSteps {
		step = s.TotalSteps - 1
	}
	anneal := func(a, b, pct float64) float64 {
		if s.AnnealStrategy == "linear" {
			return (b-a)*pct + a
		}
		return b + (a-b)/2*(math.Cos(math.Pi*pct)+1)
	}
	ph := s.phases()
	t, start := float64(step), 0.0
	for i, p := range ph {
		if t <= p.end || i == len(ph)-1 {
			pct := (t - start) / (p.end - start)
			return anneal(p.startLR, p.endLR, pct), anneal(p.startMomen, p.endMomen, pct)
		}
		start = p.end
	}
	panic("unreachable")
}

// LR returns the rate at step.
func (s OneCycleLR) LR(step int) float64 {
	lr, _ := s.at(step)
	return lr
}

// Momentum returns the momentum at step; ok is false with NoCycleMomentum.
func (s OneCycleLR) Momentum(step int) (float64, bool) {
	if s.NoCycleMomentum {
		return 0, false
	}
	_, m := s.at(step)
	return m, true
}

// Validate reports fields out of range, wrapping ErrConfig.
func (s OneCycleLR) Validate() error {
	const name = "OneCycleLR"
	if err := checkBase(name, s.MaxLR); err != nil {
		return err
	}
	switch {
	case s.MaxLR == 0:
		return scheduleError(name, "MaxLR is required")
	case s.TotalSteps <= 0:
		return scheduleError(name, "TotalSteps %d must be positive", s.TotalSteps)
	case s.PctStart < 0 || s.PctStart > 1 || math.IsNaN(s.PctStart):
		return scheduleError(name, "PctStart %v outside [0, 1]", s.PctStart)
	case s.AnnealStrategy != "" && s.AnnealStrategy != "cos" && s.AnnealStrategy != "linear":
		return scheduleError(name, "AnnealStrategy %q: want \"cos\" or \"linear\"", s.AnnealStrategy)
	case !(s.DivFactor >= 0) || !(s.FinalDivFactor >= 0) || math.IsInf(s.DivFactor, 0) || math.IsInf(s.FinalDivFactor, 0):
		return scheduleError(name, "DivFactor %v and FinalDivFactor %v must be positive", s.DivFactor, s.FinalDivFactor)
	}
	for _, m := range []float64{s.BaseMomentum, s.MaxMomentum} {
		if !(m >= 0 && m < 1) {
			return scheduleError(name, "momentum %v outside [0, 1)", m)
		}
	}
	start := 0.0
	for _, p := range s.phases() {
		if p.end == start {
			return scheduleError(name, "PctStart %v gives an empty phase over %d steps", s.PctStart, s.TotalSteps)
		}
		start = p.end
	}
	return nil
}
