package optim_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/optim"
)

// scheduleCases mirror SCHEDULES in testdata/gen_optim.py; adam marks the
// cases recorded on Adam (momentum is β₁) rather than SGD with momentum.
var scheduleCases = []struct {
	name     string
	schedule optim.Schedule
	adam     bool
}{
	{"constant", optim.NewConstantLR(0.1, 0.5, 4), false},
	{"step", optim.NewStepLR(0.1, 7, 0.5), false},
	{"multistep", optim.NewMultiStepLR(0.1, []int{30, 5, 12, 12}, 0.3), false},
	{"exponential", optim.NewExponentialLR(0.1, 0.9), false},
	{"linear_warmup", optim.NewLinearLR(0.1, 0.25, 1, 10), false},
	{"linear_decay", optim.NewLinearLR(0.1, 1, 0, 20), false},
	{"cosine", optim.NewCosineAnnealingLR(0.1, 20, 0.001), false},
	{"warm_restarts", optim.NewCosineAnnealingWarmRestarts(0.1, 5, 2, 0.01), false},
	{"warm_restarts_fixed", optim.NewCosineAnnealingWarmRestarts(0.1, 7, 1, 0), false},
	{"sequential_warmup_cosine", optim.NewSequentialLR(
		[]optim.Schedule{optim.NewLinearLR(0.1, 0.1, 1, 5), optim.NewCosineAnnealingLR(0.1, 20, 0)}, []int{5}), false},
	{"sequential_constant_exponential", optim.NewSequentialLR(
		[]optim.Schedule{optim.NewConstantLR(1, 0.1, 2), optim.NewExponentialLR(1, 0.9)}, []int{2}), false},
	{"onecycle", optim.OneCycleLR{MaxLR: 0.1, TotalSteps: 50}, false},
	{"onecycle_three_phase", optim.OneCycleLR{MaxLR: 0.2, TotalSteps: 40, PctStart: 0.25, AnnealStrategy: "linear",
		DivFactor: 10, FinalDivFactor: 100, ThreePhase: true, BaseMomentum: 0.8, MaxMomentum: 0.9}, true},
	{"onecycle_no_momentum", optim.OneCycleLR{MaxLR: 0.05, TotalSteps: 30, NoCycleMomentum: true}, false},
	{"noam", optim.NewNoamLR(2, 512, 10), false},
}

// TestSchedulesMatchPyTorch drives an optimizer with each schedule through
// a Scheduler and compares the learning rate (and cycled momentum) at each
// step with torch.optim.lr_scheduler's (NumPy for Noam).
func TestSchedulesMatchPyTorch(t *testing.T) {
	fx := testutil.LoadFixtures(t, "schedules.json")
	for _, c := range scheduleCases {
		t.Run(c.name, func(t *testing.T) {
			want := fx[c.name]["lr"].Float64s()
			var opt optim.Optimizer = optim.NewSGD(optim.SGDConfig{LR: 1, Momentum: 0.9})
			if c.adam {
				opt = optim.NewAdam(optim.AdamConfig{})
			}
			s := optim.NewScheduler(opt, c.schedule)
			wantMomentum, cycles := fx[c.name]["momentum"]
			for i, w := range want {
				if i > 0 {
					s.Step()
				}
				if got := opt.LR(); !near(got, w) {
					t.Fatalf("step %d: lr %.15g, want %.15g", i, got, w)
				}
				if got := c.schedule.LR(i); got != opt.LR() {
					t.Fatalf("step %d: Schedule.LR %v, optimizer has %v", i, got, opt.LR())
				}
				if cycles {
					m := opt.(optim.MomentumSetter).Momentum()
					if wm := wantMomentum.Float64s()[i]; !near(m, wm) {
						t.Fatalf("step %d: momentum %.15g, want %.15g", i, m, wm)
					}
				}
			}
		})
	}
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-10+1e-9*math.Abs(want) }

// TestSchedulerStateRestores: a Scheduler restored from a JSON round trip
// of its state continues exactly where the original was.
func TestSchedulerStateRestores(t *testing.T) {
	for _, c := range scheduleCases {
		t.Run(c.name, func(t *testing.T) {
			a := optim.NewSGD(optim.SGDConfig{LR: 1, Momentum: 0.5})
			sa := optim.NewScheduler(a, c.schedule)
			for range 13 {
				sa.Step()
			}
			raw, err := json.Marshal(sa.State())
			if err != nil {
				t.Fatal(err)
			}
			b := optim.NewSGD(optim.SGDConfig{LR: 1, Momentum: 0.5})
			sb := optim.NewScheduler(b, c.schedule)
			var st optim.SchedulerState
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			if err := sb.LoadState(st); err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				if a.LR() != b.LR() || a.Momentum() != b.Momentum() {
					t.Fatalf("step %d after restore: lr %v momentum %v, want %v %v", 13+i, b.LR(), b.Momentum(), a.LR(), a.Momentum())
				}
				sa.Step()
				sb.Step()
			}
		})
	}
}

// TestReduceLROnPlateauMatchesPyTorch feeds a fixed metric sequence.
func TestReduceLROnPlateauMatchesPyTorch(t *testing.T) {
	fx := testutil.LoadFixtures(t, "schedules.json")
	for _, c := range []struct {
		name string
		cfg  optim.ReduceLROnPlateauConfig
	}{
		{"plateau_min_rel", optim.ReduceLROnPlateauConfig{Factor: 0.5, Patience: optim.Int(2), Threshold: optim.Float(0.01),
			Cooldown: 1, MinLR: 0.002}},
		{"plateau_max_abs", optim.ReduceLROnPlateauConfig{Mode: "max", Factor: 0.3, Patience: optim.Int(0),
			Threshold: optim.Float(0.005), ThresholdMode: "abs"}},
		{"plateau_default", optim.ReduceLROnPlateauConfig{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			metrics, want := fx[c.name]["metrics"].Float64s(), fx[c.name]["lr"].Float64s()
			opt := optim.NewSGD(optim.SGDConfig{LR: 0.1})
			r := optim.NewReduceLROnPlateau(opt, c.cfg)
			var restored *optim.ReduceLROnPlateau
			for i, m := range metrics {
				r.Step(m)
				if !near(r.LR(), want[i]) {
					t.Fatalf("step %d (metric %v): lr %.15g, want %.15g", i, m, r.LR(), want[i])
				}
				if i == 20 { // restore a copy from JSON and check it follows
					raw, err := json.Marshal(r.State())
					if err != nil {
						t.Fatal(err)
					}
					var st optim.ReduceLROnPlateauState
					if err := json.Unmarshal(raw, &st); err != nil {
						t.Fatal(err)
					}
					o2 := optim.NewSGD(optim.SGDConfig{LR: opt.LR()})
					restored = optim.NewReduceLROnPlateau(o2, c.cfg)
					if err := restored.LoadState(st); err != nil {
						t.Fatal(err)
					}
				} else if restored != nil {
					restored.Step(m)
					if restored.LR() != r.LR() || restored.State() != r.State() {
						t.Fatalf("step %d: restored copy has lr %v state %+v, want %v %+v", i, restored.LR(), restored.State(), r.LR(), r.State())
					}
				}
			}
		})
	}
}

// TestPlateauStateBeforeAnyMetric: the infinite initial best survives JSON.
func TestPlateauStateBeforeAnyMetric(t *testing.T) {
	r := optim.NewReduceLROnPlateau(optim.NewSGD(optim.SGDConfig{LR: 1}), optim.ReduceLROnPlateauConfig{Mode: "max"})
	raw, err := json.Marshal(r.State())
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"best":"-inf","bad_steps":0,"cooldown":0,"steps":0}` {
		t.Errorf("JSON %s", raw)
	}
	var st optim.ReduceLROnPlateauState
	if err := json.Unmarshal(raw, &st); err != nil || !math.IsInf(float64(st.Best), -1) {
		t.Errorf("round trip: %+v, %v", st, err)
	}
}

// TestOneCyclePastTheEndHoldsFinalRate: PyTorch raises past TotalSteps;
// the schedule here stays at its minimum.
func TestOneCyclePastTheEndHoldsFinalRate(t *testing.T) {
	s := optim.OneCycleLR{MaxLR: 1, TotalSteps: 10}
	final := s.LR(9)
	if want := 1.0 / 25 / 1e4; !near(final, want) {
		t.Fatalf("LR(9) = %v, want %v", final, want)
	}
	for _, step := range []int{11, 100, 1 << 30} {
		if got := s.LR(step); got != final {
			t.Errorf("LR(%d) = %v, want %v", step, got, final)
		}
	}
}

// TestSchedulesRejectBadValues: every schedule validates its fields.
func TestSchedulesRejectBadValues(t *testing.T) {
	for name, fn := range map[string]func(){
		"constant factor above 1":    func() { optim.NewConstantLR(0.1, 1.5, 3) },
		"step size 0":                func() { optim.NewStepLR(0.1, 0, 0.1) },
		"negative base rate":         func() { optim.NewStepLR(-0.1, 3, 0.1) },
		"negative milestone":         func() { optim.NewMultiStepLR(0.1, []int{-1}, 0.1) },
		"NaN gamma":                  func() { optim.NewExponentialLR(0.1, math.NaN()) },
		"linear start 0":             func() { optim.NewLinearLR(0.1, 0, 1, 5) },
		"linear end above 1":         func() { optim.NewLinearLR(0.1, 0.5, 2, 5) },
		"cosine T_max 0":             func() { optim.NewCosineAnnealingLR(0.1, 0, 0) },
		"restarts T_mult 0":          func() { optim.NewCosineAnnealingWarmRestarts(0.1, 5, 0, 0) },
		"sequential milestone count": func() { optim.NewSequentialLR([]optim.Schedule{optim.NewExponentialLR(1, 0.9)}, []int{3}) },
		"sequential bad inner": func() {
			optim.NewSequentialLR([]optim.Schedule{optim.StepLR{}, optim.NewExponentialLR(1, 0.9)}, []int{3})
		},
		"noam warmup 0":        func() { optim.NewNoamLR(1, 512, 0) },
		"onecycle without max": func() { optim.NewScheduler(optim.NewSGD(optim.SGDConfig{LR: 1}), optim.OneCycleLR{TotalSteps: 10}) },
		"onecycle unknown anneal": func() {
			optim.NewScheduler(optim.NewSGD(optim.SGDConfig{LR: 1}), optim.OneCycleLR{MaxLR: 1, TotalSteps: 10, AnnealStrategy: "exp"})
		},
		"onecycle momentum on adagrad": func() {
			optim.NewScheduler(optim.NewAdaGrad(optim.AdaGradConfig{}), optim.OneCycleLR{MaxLR: 1, TotalSteps: 10})
		},
		"scheduler nil schedule": func() { optim.NewScheduler(optim.NewSGD(optim.SGDConfig{LR: 1}), nil) },
		"plateau factor 1": func() {
			optim.NewReduceLROnPlateau(optim.NewSGD(optim.SGDConfig{LR: 1}), optim.ReduceLROnPlateauConfig{Factor: 1})
		},
		"plateau unknown mode": func() {
			optim.NewReduceLROnPlateau(optim.NewSGD(optim.SGDConfig{LR: 1}), optim.ReduceLROnPlateauConfig{Mode: "lowest"})
		},
		"plateau negative patience": func() {
			optim.NewReduceLROnPlateau(optim.NewSGD(optim.SGDConfig{LR: 1}), optim.ReduceLROnPlateauConfig{Patience: optim.Int(-1)})
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := mustPanic(t, fn); !errors.Is(err, optim.ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
		})
	}
	// OneCycle with cycling switched off works on AdaGrad.
	optim.NewScheduler(optim.NewAdaGrad(optim.AdaGradConfig{}), optim.OneCycleLR{MaxLR: 1, TotalSteps: 10, NoCycleMomentum: true})
	s := optim.NewScheduler(optim.NewSGD(optim.SGDConfig{LR: 1}), optim.NewExponentialLR(1, 0.5))
	if err := s.LoadState(optim.SchedulerState{Step: -1}); !errors.Is(err, optim.ErrState) {
		t.Errorf("negative step: %v", err)
	}
}
