package optim

import (
	"fmt"
	"math"
	"sort"
)

// Schedule is a learning-rate schedule: the learning rate at each step,
// counted from 0 (the rate before the first scheduler step). Schedules are
// plain values, stateless and safe to share; a Scheduler applies one to an
// optimizer and counts the steps. Each schedule here follows the
// torch.optim.lr_scheduler class of the same name, and takes the base
// learning rate it starts from (torch's initial_lr) as a field, so the
// rate is a function of the step alone.
//
// Parameter groups with their own learning rate follow the schedule in
// proportion (see Optimizer.SetLR). That is PyTorch's behaviour for the
// multiplicative schedules (ConstantLR, StepLR, MultiStepLR, ExponentialLR,
// LinearLR) and for cosine annealing to EtaMin 0; PyTorch anneals every
// group to the same EtaMin when it is not 0, and its OneCycleLR given one
// max_lr runs every group at that rate.
type Schedule interface {
	LR(step int) float64
}

// MomentumSchedule is a Schedule that also drives the optimizer's momentum
// (OneCycleLR). ok is false when it leaves momentum alone.
type MomentumSchedule interface {
	Schedule
	Momentum(step int) (m float64, ok bool)
}

// validator is implemented by every schedule here.
type validator interface{ Validate() error }

// Scheduler applies a Schedule to an optimizer: NewScheduler sets the rate
// of step 0, each Step advances one step and sets the next. Call Step
// after the optimizer's step, as in PyTorch.
type Scheduler struct {
	opt      Optimizer
	schedule Schedule
	step     int
}

// SchedulerState is a Scheduler's state for checkpoints: the number of
// steps taken. The schedule itself is configuration, rebuilt by the
// program that resumes.
type SchedulerState struct {
	Step int `json:"step"`
}

// NewScheduler returns a Scheduler driving opt with s and sets opt's
// learning rate (and momentum, for a MomentumSchedule) to the values of
// step 0. It panics with an error wrapping ErrConfig when s is invalid
// (its Validate fails) or cycles momentum on an optimizer without one.
func NewScheduler(opt Optimizer, s Schedule) *Scheduler {
	const op = "optim.NewScheduler"
	if opt == nil || s == nil {
		configError(op, "nil optimizer or schedule")
	}
	if v, ok := s.(validator); ok {
		if err := v.Validate(); err != nil {
			panic(fmt.Errorf("%s: %w", op, err))
		}
	}
	if ms, ok := s.(MomentumSchedule); ok {
		if _, cycles := ms.Momentum(0); cycles {
			if _, ok := opt.(MomentumSetter); !ok {
				configError(op, "%T cycles momentum but %T has none (turn NoCycleMomentum on)", s, opt)
			}
		}
	}
	sc := &Scheduler{opt: opt, schedule: s}
	sc.apply()
	return sc
}

// Step advances the schedule by one step and sets the optimizer's rate.
func (s *Scheduler) Step() {
	s.step++
	s.apply()
}

// Steps returns the number of Step calls so far (including restored ones).
func (s *Scheduler) Steps() int { return s.step }

// LR returns the learning rate of the current step.
func (s *Scheduler) LR() float64 { return s.schedule.LR(s.step) }

// Schedule returns the schedule s applies.
func (s *Scheduler) Schedule() Schedule { return s.schedule }

// State returns s's state for a checkpoint.
func (s *Scheduler) State() SchedulerState { return SchedulerState{Step: s.step} }

// LoadState restores a state saved by State and sets the optimizer's rate
// (and momentum) for it. It returns an error wrapping ErrState for a
// negative step count.
func (s *Scheduler) LoadState(st SchedulerState) error {
	if st.Step < 0 {
		return fmt.Errorf("optim.Scheduler.LoadState: step %d is negative: %w", st.Step, ErrState)
	}
	s.step = st.Step
	s.apply()
	return nil
}

func (s *Scheduler) apply() {
	s.opt.SetLR(s.schedule.LR(s.step))
	if ms, ok := s.schedule.(MomentumSchedule); ok {
		if m, ok := ms.Momentum(s.step); ok {
			if setter, ok := s.opt.(MomentumSetter); ok {
				setter.SetMomentum(m)
			}
		}
	}
}

func scheduleError(name, format string, args ...any) error {
	return fmt.Errorf("optim.%s: %s: %w", name, fmt.Sprintf(format, args...), ErrConfig)
}

func mustValid(v validator) {
	if err := v.Validate(); err != nil {
		panic(err)
	}
}

func checkBase(name string, lr float64) error {
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		return scheduleError(name, "base learning rate %v out of range", lr)
	}
	return nil
}

// ConstantLR multiplies the base rate by Factor for the first TotalIters
// steps, then runs at the base rate (torch.optim.lr_scheduler.ConstantLR).
// Factor 1 gives a constant rate.
type ConstantLR struct {
	BaseLR     float64 `json:"base_lr"`
	Factor     float64 `json:"factor"`      // in [0, 1]; torch's default 1/3
	TotalIters int     `json:"total_iters"` // torch's default 5
}

// NewConstantLR returns a ConstantLR; it panics with ErrConfig for values
// out of range.
func NewConstantLR(baseLR, factor float64, totalIters int) ConstantLR {
	s := ConstantLR{BaseLR: baseLR, Factor: factor, TotalIters: totalIters}
	mustValid(s)
	return s
}

// LR returns the rate at step.
func (s ConstantLR) LR(step int) float64 {
	if step < s.TotalIters {
		return s.BaseLR * s.Factor
	}
	return s.BaseLR
}

// Validate reports fields out of range, wrapping ErrConfig.
func (s ConstantLR) Validate() error {
	if err := checkBase("ConstantLR", s.BaseLR); err != nil {
		return err
	}
	if !(s.Factor >= 0 && s.Factor <= 1) || s.TotalIters < 0 {
		return scheduleError("ConstantLR", "factor %v outside [0, 1] or total iterations %d negative", s.Factor, s.TotalIters)
	}
	return nil
}

// StepLR multiplies the rate by Gamma every StepSize steps
// (torch.optim.lr_scheduler.StepLR): BaseLR·Gamma^⌊step/StepSize⌋.
type StepLR struct {
	BaseLR   float64 `json:"base_lr"`
	StepSize int     `json:"step_size"` // > 0
	Gamma    float64 `json:"gamma"`     // torch's default 0.1
}

// NewStepLR returns a StepLR; it panics with ErrConfig for values out of
// range.
func NewStepLR(baseLR float64, stepSize int, gamma float64) StepLR {
	s := StepLR{BaseLR: baseLR, StepSize: stepSize, Gamma: gamma}
	mustValid(s)
	return s
}

// LR returns the rate at step.
func (s StepLR) LR(step int) float64 { return s.BaseLR * math.Pow(s.Gamma, float64(step/s.StepSize)) }

// Validate reports fields out of range, wrapping ErrConfig.
func (s StepLR) Validate() error {
	if err := checkBase("StepLR", s.BaseLR); err != nil {
		return err
	}
	if s.StepSize <= 0 || !(s.Gamma >= 0) || math.IsInf(s.Gamma, 0) {
		return scheduleError("StepLR", "step size %d must be positive and gamma %v finite and non-negative", s.StepSize, s.Gamma)
	}
	return nil
}

// MultiStepLR multiplies the rate by Gamma at each milestone
// (torch.optim.lr_scheduler.MultiStepLR): BaseLR·Gamma^(number of
// milestones ≤ step). A milestone listed twice counts twice, as in PyTorch.
type MultiStepLR struct {
	BaseLR     float64 `json:"base_lr"`
	Milestones []int   `json:"milestones"`
	Gamma      float64 `json:"gamma"` // torch's default 0.1
}

// NewMultiStepLR returns a MultiStepLR (with its milestones sorted); it
// panics with ErrConfig for values out of range.
func NewMultiStepLR(baseLR float64, milestones []int, gamma float64) MultiStepLR {
	ms := append([]int(nil), milestones...)
	sort.Ints(ms)
	s := MultiStepLR{BaseLR: baseLR, Milestones: ms, Gamma: gamma}
	mustValid(s)
	return s
}

// LR returns the rate at step.
func (s MultiStepLR) LR(step int) float64 {
	n := 0
	for _, m := range s.Milestones {
		if m <= step {
			n++
		}
	}
	return s.BaseLR * math.Pow(s.Gamma, float64(n))
}

// Validate reports fields out of range, wrapping ErrConfig.
func (s MultiStepLR) Validate() error {
	if err := checkBase("MultiStepLR", s.BaseLR); err != nil {
		return err
	}
	if !(s.Gamma >= 0) || math.IsInf(s.Gamma, 0) {
		return scheduleError("MultiStepLR", "gamma %v must be finite and non-negative", s.Gamma)
	}
	for _, m := range s.Milestones {
		if m < 0 {
			return scheduleError("MultiStepLR", "milestone %d is negative", m)
		}
	}
	return nil
}

// ExponentialLR multiplies the rate by Gamma every step
// (torch.optim.lr_scheduler.ExponentialLR): BaseLR·Gamma^step.
type ExponentialLR struct {
	BaseLR float64 `json:"base_lr"`
	Gamma  float64 `json:"gamma"`
}

// NewExponentialLR returns an ExponentialLR; it panics with ErrConfig for
// values out of range.
func NewExponentialLR(baseLR, gamma float64) ExponentialLR {
	s := ExponentialLR{BaseLR: baseLR, Gamma: gamma}
	mustValid(s)
	return s
}

// LR returns the rate at step.
func (s ExponentialLR) LR(step int) float64 { return s.BaseLR * math.Pow(s.Gamma, float64(step)) }

// Validate reports fields out of range, wrapping ErrConfig.
func (s ExponentialLR) Validate() error {
	if err := checkBase("ExponentialLR", s.BaseLR); err != nil {
		return err
	}
	if !(s.Gamma >= 0) || math.IsInf(s.Gamma, 0) {
		return scheduleError("ExponentialLR", "gamma %v must be finite and non-negative", s.Gamma)
	}
	return nil
}

// LinearLR changes the rate linearly from BaseLR·StartFactor to
// BaseLR·EndFactor over TotalIters steps, then holds it
// (torch.optim.lr_scheduler.LinearLR): a warm-up with EndFactor 1, a decay
// with EndFactor 0. Build it with NewLinearLR: in a literal, EndFactor 0
// means 0, not PyTorch's default 1.
type LinearLR struct {
	BaseLR      float64 `json:"base_lr"`
	StartFactor float64 `json:"start_factor"` // in (0, 1]; torch's default 1/3
	EndFactor   float64 `json:"end_factor"`   // in [0, 1]; torch's default 1
	TotalIters  int     `json:"total_iters"`  // torch's default 5
}

// NewLinearLR returns a LinearLR; it panics with ErrConfig for values out
// of range.
func NewLinearLR(baseLR, startFactor, endFactor float64, totalIters int) LinearLR {
	s := LinearLR{BaseLR: baseLR, StartFactor: startFactor, EndFactor: endFactor, TotalIters: totalIters}
	mustValid(s)
	return s
}

// LR returns the rate at step.
func (s LinearLR) LR(step int) float64 {
	if s.TotalIters == 0 {
		return s.BaseLR * s.EndFactor
	}
	t := float64(min(step, s.TotalIters))
	return s.BaseLR * (s.StartFactor + (s.EndFactor-s.StartFactor)*t/float64(s.TotalIters))
}

// Validate reports fields out of range, wrapping ErrConfig.
func (s LinearLR) Validate() error {
	if err := checkBase("LinearLR", s.BaseLR); err != nil {
		return err
	}
	if !(s.StartFactor > 0 && s.StartFactor <= 1) || !(s.EndFactor >= 0 && s.EndFactor <= 1) || s.TotalIters < 0 {
		return scheduleError("LinearLR", "start factor %v outside (0, 1], end factor %v outside [0, 1] or total iterations %d negative",
			s.StartFactor, s.EndFactor, s.TotalIters)
	}
	return nil
}

// CosineAnnealingLR follows half a cosine from BaseLR down to EtaMin over
// TMax steps (torch.optim.lr_scheduler.CosineAnnealingLR):
// EtaMin + (BaseLR − EtaMin)·(1 + cos(π·step/TMax))/2. Past TMax the
// cosine continues and the rate climbs back, as in PyTorch.
type CosineAnnealingLR struct {
	BaseLR float64 `json:"base_lr"`
	TMax   int     `json:"t_max"`   // > 0
	EtaMin float64 `json:"eta_min"` // torch's default 0
}

// NewCosineAnnealingLR returns a CosineAnnealingLR; it panics with
// ErrConfig for values out of range.
func NewCosineAnnealingLR(baseLR float64, tMax int, etaMin float64) CosineAnnealingLR {
	s := CosineAnnealingLR{BaseLR: baseLR, TMax: tMax, EtaMin: etaMin}
	mustValid(s)
	return s
}

// LR returns the rate at step.
func (s CosineAnnealingLR) LR(step int) float64 {
	return s.EtaMin + (s.BaseLR-s.EtaMin)*(1+math.Cos(math.Pi*float64(step)/float64(s.TMax)))/2
}

// Validate reports fields out of range, wrapping ErrConfig.
func (s CosineAnnealingLR) Validate() error {
	if err := checkBase("CosineAnnealingLR", s.BaseLR); err != nil {
		return err
	}
	if s.TMax <= 0 || !(s.EtaMin >= 0) || math.IsInf(s.EtaMin, 0) {
		return scheduleError("CosineAnnealingLR", "T_max %d must be positive and eta_min %v finite and non-negative", s.TMax, s.EtaMin)
	}
	return nil
}

// CosineAnnealingWarmRestarts is SGDR (Loshchilov and Hutter, 2017), as
// torch.optim.lr_scheduler.CosineAnnealingWarmRestarts: cosine annealing
// from BaseLR to EtaMin over T0 steps, restarting at BaseLR, each cycle
// TMult times longer than the last.
type CosineAnnealingWarmRestarts struct {
	BaseLR float64 `json:"base_lr"`
	T0     int     `json:"t_0"`     // length of the first cycle, > 0
	TMult  int     `json:"t_mult"`  // ≥ 1; torch's default 1
	EtaMin float64 `json:"eta_min"` // torch's default 0
}

// NewCosineAnnealingWarmRestarts returns a CosineAnnealingWarmRestarts; it
// panics with ErrConfig for values out of range.
func NewCosineAnnealingWarmRestarts(baseLR float64, t0, tMult int, etaMin float64) CosineAnnealingWarmRestarts {
	s := CosineAnnealingWarmRestarts{BaseLR: baseLR, T0: t0, TMult: tMult, EtaMin: etaMin}
	mustValid(s)
	return s
}

// LR returns the rate at step.
func (s CosineAnnealingWarmRestarts) LR(step int) float64 {
	cur, length := step, s.T0
	if s.TMult <= 1 {
		cur = step % s.T0
	} else {
		for cur >= length {
			cur -= length
			length *= s.TMult
		}
	}
	return s.EtaMin + (s.BaseLR-s.EtaMin)*(1+math.Cos(math.Pi*float64(cur)/float64(length)))/2
}

// Validate reports fields out of range, wrapping ErrConfig.
func (s CosineAnnealingWarmRestarts) Validate() error {
	if err := checkBase("CosineAnnealingWarmRestarts", s.BaseLR); err != nil {
		return err
	}
	if s.T0 <= 0 || s.TMult < 1 || !(s.EtaMin >= 0) || math.IsInf(s.EtaMin, 0) {
		return scheduleError("CosineAnnealingWarmRestarts", "T_0 %d must be positive, T_mult %d at least 1, eta_min %v finite and non-negative",
			s.T0, s.TMult, s.EtaMin)
	}
	return nil
}

// SequentialLR runs Schedules one after another, switching at each
// milestone (torch.optim.lr_scheduler.SequentialLR): before Milestones[0]
// Schedules[0] at step, then Schedules[i] at step − Milestones[i−1], each
// starting again from its own step 0. Warm-up then decay is
// SequentialLR{Schedules: []Schedule{warmup, decay}, Milestones: []int{n}}.
type SequentialLR struct {
	Schedules  []Schedule `json:"-"`
	Milestones []int      `json:"milestones"` // one fewer than Schedules, increasing
}

// NewSequentialLR returns a SequentialLR; it panics with ErrConfig when
// the milestones do not fit the schedules.
func NewSequentialLR(schedules []Schedule, milestones []int) SequentialLR {
	s := SequentialLR{Schedules: append([]Schedule(nil), schedules...), Milestones: append([]int(nil), milestones...)}
	mustValid(s)
	return s
}

func (s SequentialLR) at(step int) (Schedule, int) {
	i := sort.Search(len(s.Milestones), func(i int) bool { return s.Milestones[i] > step })
	if i == 0 {
		return s.Schedules[0], step
	}
	return s.Schedules[i], step - s.Milestones[i-1]
}

// LR returns the rate at step.
func (s SequentialLR) LR(step int) float64 {
	sc, local := s.at(step)
	return sc.LR(local)
}

// Momentum returns the momentum of the schedule active at step, when it
// drives momentum.
func (s SequentialLR) Momentum(step int) (float64, bool) {
	sc, local := s.at(step)
	if ms, ok := sc.(MomentumSchedule); ok {
		return ms.Momentum(local)
	}
	return 0, false
}

// Validate reports a malformed sequence or an invalid schedule in it,
// wrapping ErrConfig.
func (s SequentialLR) Validate() error {
	if len(s.Schedules) == 0 || len(s.Milestones) != len(s.Schedules)-1 {
		return scheduleError("SequentialLR", "%d schedules need %d milestones, got %d",
			len(s.Schedules), max(len(s.Schedules)-1, 0), len(s.Milestones))
	}
	for i, m := range s.Milestones {
		if m <= 0 || (i > 0 && m <= s.Milestones[i-1]) {
			return scheduleError("SequentialLR", "milestones %v must be positive and increasing", s.Milestones)
		}
	}
	for i, sc := range s.Schedules {
		if sc == nil {
			return scheduleError("SequentialLR", "schedule %d is nil", i)
		}
		if v, ok := sc.(validator); ok {
			if err := v.Validate(); err != nil {
				return fmt.Errorf("optim.SequentialLR: schedule %d: %w", i, err)
			}
		}
	}
	return nil
}

// NoamLR is the schedule of "Attention Is All You Need" (Vaswani et al.,
// 2017), as the Annotated Transformer writes it:
// Factor·DModel^−½·min(s^−½, s·Warmup^−³ᐟ²) with s = max(step, 1), a linear
// warm-up over Warmup steps, then decay as the inverse square root. It
// gives the absolute rate: the optimizer's configured LR is overridden.
type NoamLR struct {
	Factor float64 `json:"factor"`  // > 0 (the Annotated Transformer uses 1 or 2)
	DModel int     `json:"d_model"` // the model width, > 0
	Warmup int     `json:"warmup"`  // warm-up steps, > 0
}

// NewNoamLR returns a NoamLR; it panics with ErrConfig for values out of
// range.
func NewNoamLR(factor float64, dModel, warmup int) NoamLR {
	s := NoamLR{Factor: factor, DModel: dModel, Warmup: warmup}
	mustValid(s)
	return s
}

// LR returns the rate at step.
func (s NoamLR) LR(step int) float64 {
	t := float64(max(step, 1))
	return s.Factor * math.Pow(float64(s.DModel), -0.5) * min(math.Pow(t, -0.5), t*math.Pow(float64(s.Warmup), -1.5))
}

// Validate reports fields out of range, wrapping ErrConfig.
func (s NoamLR) Validate() error {
	if !(s.Factor > 0) || math.IsInf(s.Factor, 0) || s.DModel <= 0 || s.Warmup <= 0 {
		return scheduleError("NoamLR", "factor %v, d_model %d and warmup %d must be positive", s.Factor, s.DModel, s.Warmup)
	}
	return nil
}
