package optim_test

import (
	"encoding/json"
	"errors"
	"math"
	"sort"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// stateCases cover every optimizer with every kind of slot.
var stateCases = []optimizerCase{
	{"sgd_nesterov", func() optim.Optimizer {
		return optim.NewSGD(optim.SGDConfig{LR: 0.05, Momentum: 0.9, Nesterov: true, WeightDecay: 0.01})
	}},
	{"adam_amsgrad", func() optim.Optimizer { return optim.NewAdam(optim.AdamConfig{LR: 0.05, AMSGrad: true}) }},
	{"adamw_groups", func() optim.Optimizer {
		return optim.NewAdamW(optim.AdamWConfig{LR: 0.05, Groups: []optim.ParamGroup{{Pattern: "*.bias", WeightDecay: f(0)}}})
	}},
	{"rmsprop_centered_momentum", func() optim.Optimizer {
		return optim.NewRMSProp(optim.RMSPropConfig{LR: 0.01, Centered: true, Momentum: 0.5})
	}},
	{"adagrad", func() optim.Optimizer { return optim.NewAdaGrad(optim.AdaGradConfig{LR: 0.1, LRDecay: 0.01}) }},
	{"lion", func() optim.Optimizer { return optim.NewLion(optim.LionConfig{LR: 0.01, WeightDecay: 0.1}) }},
	{"muon", func() optim.Optimizer { return optim.NewMuon(optim.MuonConfig{LR: 0.05}) }},
}

// saved is optimizer and schedule state as a checkpoint stores it: JSON
// and raw tensor bytes (what a safetensors file holds).
type saved struct {
	json    []byte
	sched   []byte
	tensors map[string][]byte
	dtypes  map[string]tensor.DType
	shapes  map[string][]int
}

func save(t *testing.T, opt optim.Optimizer, s *optim.Scheduler) saved {
	t.Helper()
	st, err := opt.State()
	if err != nil {
		t.Fatal(err)
	}
	out := saved{tensors: map[string][]byte{}, dtypes: map[string]tensor.DType{}, shapes: map[string][]int{}}
	if out.json, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if out.sched, err = json.Marshal(s.State()); err != nil {
		t.Fatal(err)
	}
	for k, v := range st.Tensors {
		out.tensors[k], out.dtypes[k], out.shapes[k] = v.Bytes(), v.DType(), v.Shape()
	}
	return out
}

func (s saved) state(t *testing.T) *optim.State {
	t.Helper()
	var st optim.State
	if err := json.Unmarshal(s.json, &st); err != nil {
		t.Fatal(err)
	}
	st.Tensors = map[string]*tensor.Tensor{}
	for k, b := range s.tensors {
		// Restored on the plain CPU, as a checkpoint loader would: the
		// optimizer moves slots onto the parameters' device.
		st.Tensors[k] = tensor.FromBytes(tensor.CPU(), s.dtypes[k], b, s.shapes[k]...)
	}
	return &st
}

// TestStateRestoreIsBitExact: 10 steps, save (through JSON and bytes),
// restore into a fresh optimizer and scheduler for a fresh model loaded
// with the same weights, 10 more steps: bit-identical to 20 uninterrupted.
func TestStateRestoreIsBitExact(t *testing.T) {
	for _, c := range stateCases {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				schedule := optim.NewSequentialLR([]optim.Schedule{
					optim.NewLinearLR(1, 0.2, 1, 4), optim.NewCosineAnnealingLR(1, 16, 0.1),
				}, []int{4})
				// The reference: 20 steps in one go.
				ref := newProblem(t, dev)
				refOpt := c.make()
				defer release(refOpt)
				refSched := optim.NewScheduler(refOpt, scaled{schedule, refOpt.LR()})
				for range 20 {
					ref.step(refOpt)
					refSched.Step()
				}

				// 10 steps, then a checkpoint.
				first := newProblem(t, dev)
				opt := c.make()
				defer release(opt)
				sched := optim.NewScheduler(opt, scaled{schedule, opt.LR()})
				for range 10 {
					first.step(opt)
					sched.Step()
				}
				ck := save(t, opt, sched)
				weights := map[string][]float64{}
				for k, v := range nn.StateDict(first) {
					weights[k] = v.Float64s()
				}

				// A new "process": fresh model with the saved weights, fresh
				// optimizer and scheduler with the saved state.
				second := newProblem(t, dev)
				sd := map[string]*tensor.Tensor{}
				for k, v := range weights {
					sd[k] = tensor.FromFloat64s(tensor.CPU(), v, len(v))
					sd[k] = sd[k].Reshape(nn.StateDict(second)[k].Shape()...)
				}
				if _, _, err := nn.LoadStateDict(second, sd); err != nil {
					t.Fatal(err)
				}
				opt2 := c.make()
				defer release(opt2)
				sched2 := optim.NewScheduler(opt2, scaled{schedule, opt2.LR()})
				if err := opt2.LoadState(ck.state(t)); err != nil {
					t.Fatal(err)
				}
				var ss optim.SchedulerState
				if err := json.Unmarshal(ck.sched, &ss); err != nil {
					t.Fatal(err)
				}
				if err := sched2.LoadState(ss); err != nil {
					t.Fatal(err)
				}
				for range 10 {
					second.step(opt2)
					sched2.Step()
				}
				got, want := second.flat(), ref.flat()
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("value %d (%s): %v after restore, %v uninterrupted", i, paramName(i), got[i], want[i])
					}
				}
				// The state itself matches too.
				s1, _ := refOpt.State()
				s2, _ := opt2.State()
				if s1.LR != s2.LR || len(s1.Tensors) != len(s2.Tensors) || len(s1.Tensors) == 0 {
					t.Fatalf("states differ: lr %v vs %v, %d vs %d tensors", s1.LR, s2.LR, len(s1.Tensors), len(s2.Tensors))
				}
				for k, v := range s1.Tensors {
					if !v.AllClose(s2.Tensors[k], 0, 0) {
						t.Errorf("slot %s differs", k)
					}
				}
				for k, n := range s1.Steps {
					if s2.Steps[k] != n {
						t.Errorf("%s: %d steps restored, %d uninterrupted", k, s2.Steps[k], n)
					}
				}
			})
		})
	}
}

// scaled runs a schedule defined for base rate 1 at another base rate.
type scaled struct {
	s    optim.Schedule
	base float64
}

func (s scaled) LR(step int) float64 { return s.base * s.s.LR(step) }

// TestStateKeysAndJSON: keys are parameter names and PyTorch slot names;
// the JSON part holds the kind, rate and step counts.
func TestStateKeysAndJSON(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newProblem(t, dev)
		opt := optim.NewMuon(optim.MuonConfig{})
		defer release(opt)
		m.step(opt)
		m.step(opt)
		st, err := opt.State()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range st.Tensors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := []string{"l1.bias.exp_avg", "l1.bias.exp_avg_sq", "l1.weight.momentum_buffer",
			"l2.bias.exp_avg", "l2.bias.exp_avg_sq", "l2.weight.momentum_buffer", "q.exp_avg", "q.exp_avg_sq"}
		if len(keys) != len(want) {
			t.Fatalf("keys %v, want %v", keys, want)
		}
		for i := range keys {
			if keys[i] != want[i] {
				t.Fatalf("keys %v, want %v", keys, want)
			}
			if p, s, ok := optim.SplitStateKey(keys[i]); !ok || optim.StateKey(p, s) != keys[i] {
				t.Errorf("SplitStateKey(%q) = %q %q %v", keys[i], p, s, ok)
			}
		}
		raw, _ := json.Marshal(st)
		const wantJSON = `{"kind":"Muon","lr":0.02,"steps":{"l1.bias":2,"l1.weight":2,"l2.bias":2,"l2.weight":2,"q":2}}`
		if string(raw) != wantJSON {
			t.Errorf("JSON %s, want %s", raw, wantJSON)
		}
		// ZeroState forgets everything.
		opt.ZeroState()
		if st, _ := opt.State(); len(st.Tensors) != 0 || len(st.Steps) != 0 {
			t.Errorf("after ZeroState: %d tensors, %d step counts", len(st.Tensors), len(st.Steps))
		}
	})
}

// TestLoadStateBadInput: state that cannot fit is refused without change,
// and state naming missing parameters or of the wrong shape fails at Step.
func TestLoadStateBadInput(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newProblem(t, dev)
		opt := optim.NewAdam(optim.AdamConfig{LR: 0.01})
		defer release(opt)
		m.step(opt)
		good, err := opt.State()
		if err != nil {
			t.Fatal(err)
		}
		with := func(edit func(s *optim.State)) *optim.State {
			s := &optim.State{Kind: good.Kind, LR: good.LR, Steps: map[string]int{}, Tensors: map[string]*tensor.Tensor{}}
			for k, v := range good.Steps {
				s.Steps[k] = v
			}
			for k, v := range good.Tensors {
				s.Tensors[k] = v
			}
			edit(s)
			return s
		}
		x := tensor.ZerosOf(dev, tensor.Float64, 3)
		released := tensor.ZerosOf(dev, tensor.Float64, 3)
		released.Release()
		for name, s := range map[string]*optim.State{
			"nil":             nil,
			"other kind":      with(func(s *optim.State) { s.Kind = "SGD" }),
			"negative lr":     with(func(s *optim.State) { s.LR = -1 }),
			"momentum":        with(func(s *optim.State) { s.Momentum = optim.Float(2) }),
			"negative steps":  with(func(s *optim.State) { s.Steps["q"] = -1 }),
			"unknown slot":    with(func(s *optim.State) { s.Tensors["q.momentum_buffer"] = x }),
			"key without dot": with(func(s *optim.State) { s.Tensors["exp_avg"] = x }),
			"nil tensor":      with(func(s *optim.State) { s.Tensors["q.exp_avg"] = nil }),
			"released tensor": with(func(s *optim.State) { s.Tensors["q.exp_avg"] = released }),
			"integer tensor":  with(func(s *optim.State) { s.Tensors["q.exp_avg"] = tensor.ZerosOf(dev, tensor.Int64, 4) }),
		} {
			if err := opt.LoadState(s); !errors.Is(err, optim.ErrState) {
				t.Errorf("%s: error %v, want ErrState", name, err)
			}
		}
		// Refused loads changed nothing.
		if now, _ := opt.State(); len(now.Tensors) != len(good.Tensors) || now.Steps["q"] != 1 {
			t.Errorf("refused loads changed the state: %d tensors, q at step %d", len(now.Tensors), now.Steps["q"])
		}

		// A state for a parameter the model lacks fails at Step.
		if err := opt.LoadState(with(func(s *optim.State) { s.Steps["extra"] = 3 })); err != nil {
			t.Fatal(err)
		}
		if err := mustPanic(t, func() { m.step(opt) }); !errors.Is(err, optim.ErrState) {
			t.Errorf("missing parameter: %v", err)
		}
		// So does a slot of the wrong shape.
		if err := opt.LoadState(with(func(s *optim.State) { s.Tensors["q.exp_avg"] = x })); err != nil {
			t.Fatal(err)
		}
		if err := mustPanic(t, func() { m.step(opt) }); !errors.Is(err, optim.ErrState) {
			t.Errorf("wrong shape: %v", err)
		}
	})
}

// TestStateIsASnapshot checks that the tensors State returns keep their
// values while training goes on (Adam updates its moments in place), and
// that LoadState copies the tensors it is given rather than training them.
func TestStateIsASnapshot(t *testing.T) {
	for _, c := range stateCases {
		t.Run(c.name, func(t *testing.T) {
			dev := tensor.CPU()
			p := newProblem(t, dev)
			opt := c.make()
			defer release(opt)
			for range 3 {
				p.step(opt)
			}
			st, err := opt.State()
			if err != nil {
				t.Fatal(err)
			}
			before := map[string][]float64{}
			for k, v := range st.Tensors {
				before[k] = v.Float64s()
			}
			p.step(opt)
			other := c.make()
			defer release(other)
			if err := other.LoadState(st); err != nil {
				t.Fatal(err)
			}
			q := newProblem(t, dev)
			q.step(other)
			for k, v := range st.Tensors {
				got := v.Float64s()
				for i := range got {
					if math.Float64bits(got[i]) != math.Float64bits(before[k][i]) {
						t.Fatalf("%s[%d] changed from %v to %v after later steps", k, i, before[k][i], got[i])
					}
				}
			}
		})
	}
}
