package optim_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// sgdDelta returns how much one plain SGD step (lr, no momentum) with opt
// moves each parameter of the problem, divided by its gradient: the
// effective learning rate per parameter name.
func effectiveLR(t *testing.T, dev tensor.Device, opt optim.Optimizer) map[string]float64 {
	t.Helper()
	m := newProblem(t, dev)
	before := map[string][]float64{}
	for _, np := range nn.Params(m) {
		before[np.Name] = np.Param.Float64s()
	}
	grads := m.loss().Backward()
	gs := map[string][]float64{}
	for _, np := range nn.Params(m) {
		gs[np.Name] = grads.Get(np.Param.Tensor).Float64s()
	}
	opt.Step(m, grads)
	out := map[string]float64{}
	for _, np := range nn.Params(m) {
		after := np.Param.Float64s()
		out[np.Name] = (before[np.Name][0] - after[0]) / gs[np.Name][0]
	}
	return out
}

// TestGroupsFirstMatchWinsAndFollowSetLR: a parameter takes the first
// group matching its name; SetLR scales group rates in proportion.
func TestGroupsFirstMatchWinsAndFollowSetLR(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		opt := optim.NewSGD(optim.SGDConfig{LR: 0.1, Groups: []optim.ParamGroup{
			{Pattern: "l1.*", LR: f(0.01)},
			{Pattern: "*.bias", LR: f(0.02)},
			{Pattern: "**", WeightDecay: f(0)}, // catches the rest, keeping the top-level rate
		}})
		defer release(opt)
		want := map[string]float64{"l1.weight": 0.01, "l1.bias": 0.01, "l2.bias": 0.02, "l2.weight": 0.1, "q": 0.1}
		check := func(got map[string]float64, scale float64) {
			for name, w := range want {
				if math.Abs(got[name]-w*scale) > 1e-12 {
					t.Errorf("%s: effective rate %v, want %v", name, got[name], w*scale)
				}
			}
		}
		check(effectiveLR(t, dev, opt), 1)
		opt.SetLR(0.05)
		if opt.LR() != 0.05 {
			t.Errorf("LR() = %v after SetLR(0.05)", opt.LR())
		}
		check(effectiveLR(t, dev, opt), 0.5)
	})
}

// TestFrozenAndGradientlessParamsAreLeftAlone: frozen parameters and
// parameters without a gradient keep their values and get no state.
func TestFrozenAndGradientlessParamsAreLeftAlone(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newProblem(t, dev)
		defer nn.Release(m) // freezing made views that belong to the model
		nn.Freeze(m, "l1.*")
		opt := optim.NewAdam(optim.AdamConfig{LR: 0.1, Groups: []optim.ParamGroup{{Pattern: "l1.weight", LR: f(1)}}})
		defer release(opt)
		before := nn.StateDict(m)
		frozen := before["l1.weight"].Float64s()
		q := before["q"].Float64s()
		// A loss without q: q gets no gradient.
		tensor.Scope(func() {
			out := m.L2.Forward(m.L1.Forward(m.x).Tanh())
			opt.Step(m, out.Sub(m.y).Square().Mean().Backward())
		})
		after := nn.StateDict(m)
		testutil.AssertValues(t, "frozen weight", after["l1.weight"], []int{3, 2}, frozen, 0, 0)
		testutil.AssertValues(t, "q", after["q"], []int{4}, q, 0, 0)
		st, _ := opt.State()
		if _, ok := st.Steps["q"]; ok || len(st.Steps) != 2 {
			t.Errorf("state for %v, want l2.weight and l2.bias only", st.Steps)
		}
	})
}

// TestStepParams updates only the parameters listed.
func TestStepParams(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newProblem(t, dev)
		opt := optim.NewSGD(optim.SGDConfig{LR: 0.1, Groups: []optim.ParamGroup{{Pattern: "q", LR: f(0.5)}}})
		defer release(opt)
		w := m.L1.Weight.Float64s()
		tensor.Scope(func() {
			opt.StepParams([]nn.NamedParam{{Name: "q", Param: m.Q}}, m.loss().Backward())
		})
		testutil.AssertValues(t, "unlisted weight", m.L1.Weight.Tensor, []int{3, 2}, w, 0, 0)
		if st, _ := opt.State(); st.Steps["q"] != 1 || len(st.Steps) != 1 {
			t.Errorf("steps %v, want q only", st.Steps)
		}
		// A group matching none of the listed parameters is an error.
		err := mustPanic(t, func() {
			tensor.Scope(func() {
				opt.StepParams([]nn.NamedParam{{Name: "l1.weight", Param: m.L1.Weight}}, m.loss().Backward())
			})
		})
		if !errors.Is(err, optim.ErrConfig) {
			t.Errorf("unmatched group: %v", err)
		}
	})
}

// TestOptimizerBadInput: configurations that cannot work panic with
// ErrConfig, naming the problem.
func TestOptimizerBadInput(t *testing.T) {
	for _, c := range []struct {
		name, want string
		fn         func()
	}{
		{"SGD without LR", "LR is required", func() { optim.NewSGD(optim.SGDConfig{}) }},
		{"negative LR", "LR -0.1 out of range", func() { optim.NewSGD(optim.SGDConfig{LR: -0.1}) }},
		{"NaN LR", "LR NaN", func() { optim.NewAdam(optim.AdamConfig{LR: math.NaN()}) }},
		{"Nesterov without momentum", "Nesterov", func() { optim.NewSGD(optim.SGDConfig{LR: 0.1, Nesterov: true}) }},
		{"Nesterov with dampening", "Nesterov", func() {
			optim.NewSGD(optim.SGDConfig{LR: 0.1, Momentum: 0.9, Dampening: 0.1, Nesterov: true})
		}},
		{"negative momentum", "Momentum", func() { optim.NewSGD(optim.SGDConfig{LR: 0.1, Momentum: -1}) }},
		{"negative weight decay", "WeightDecay", func() { optim.NewAdamW(optim.AdamWConfig{WeightDecay: -1}) }},
		{"beta of 1", "Betas", func() { optim.NewAdam(optim.AdamConfig{Betas: []float64{0.9, 1}}) }},
		{"three betas", "Betas needs 2", func() { optim.NewLion(optim.LionConfig{Betas: []float64{0.9, 0.9, 0.9}}) }},
		{"negative eps", "Eps", func() { optim.NewRMSProp(optim.RMSPropConfig{Eps: -1}) }},
		{"alpha above 1", "Alpha", func() { optim.NewRMSProp(optim.RMSPropConfig{Alpha: 2}) }},
		{"negative lr decay", "LRDecay", func() { optim.NewAdaGrad(optim.AdaGradConfig{LRDecay: -1}) }},
		{"negative NS steps", "NSSteps", func() { optim.NewMuon(optim.MuonConfig{NSSteps: -1}) }},
		{"fallback with groups", "fallback", func() {
			optim.NewMuon(optim.MuonConfig{AdamW: optim.AdamWConfig{Groups: []optim.ParamGroup{{Pattern: "q"}}}})
		}},
		{"group without pattern", "no Pattern", func() {
			optim.NewSGD(optim.SGDConfig{LR: 1, Groups: []optim.ParamGroup{{LR: f(1)}}})
		}},
		{"malformed pattern", "malformed", func() {
			optim.NewSGD(optim.SGDConfig{LR: 1, Groups: []optim.ParamGroup{{Pattern: "l1.[", LR: f(1)}}})
		}},
		{"betas on SGD", "Betas is not a hyper-parameter", func() {
			optim.NewSGD(optim.SGDConfig{LR: 1, Groups: []optim.ParamGroup{{Pattern: "q", Betas: []float64{0.9, 0.99}}}})
		}},
		{"momentum on Adam", "Momentum is not", func() {
			optim.NewAdam(optim.AdamConfig{Groups: []optim.ParamGroup{{Pattern: "q", Momentum: f(0.9)}}})
		}},
		{"AdamW flag outside Muon", "AdamW is not", func() {
			optim.NewAdamW(optim.AdamWConfig{Groups: []optim.ParamGroup{{Pattern: "q", AdamW: true}}})
		}},
		{"negative group LR", "group 0", func() {
			optim.NewAdam(optim.AdamConfig{Groups: []optim.ParamGroup{{Pattern: "q", LR: f(-1)}}})
		}},
		{"SetLR negative", "SetLR", func() { optim.NewAdam(optim.AdamConfig{}).SetLR(-1) }},
		{"SetLR infinite", "SetLR", func() { optim.NewAdam(optim.AdamConfig{}).SetLR(math.Inf(1)) }},
		{"SetMomentum 1", "SetMomentum", func() { optim.NewSGD(optim.SGDConfig{LR: 1}).SetMomentum(1) }},
		{"clip with negative norm", "MaxNorm", func() {
			optim.NewSGD(optim.SGDConfig{LR: 1, GradClip: optim.GradClip{MaxNorm: -1}})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := mustPanic(t, c.fn)
			if !errors.Is(err, optim.ErrConfig) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "optim.") {
				t.Errorf("error %q: want ErrConfig naming the function and %q", err, c.want)
			}
		})
	}
}

// TestUnmatchedGroupIsAnError: a pattern matching no parameter (frozen
// ones count) is almost always a misspelt name, so Step refuses it.
func TestUnmatchedGroupIsAnError(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newProblem(t, dev)
		opt := optim.NewAdamW(optim.AdamWConfig{Groups: []optim.ParamGroup{{Pattern: "**.Bias", WeightDecay: f(0)}}})
		defer release(opt)
		err := mustPanic(t, func() { m.step(opt) })
		if !errors.Is(err, optim.ErrConfig) || !strings.Contains(err.Error(), `"**.Bias" matches no parameter`) ||
			!strings.Contains(err.Error(), `"l1.weight"`) {
			t.Errorf("error %v", err)
		}
		// Frozen parameters count as matches.
		defer nn.Release(m)
		nn.Freeze(m, "l1.*")
		ok := optim.NewAdamW(optim.AdamWConfig{Groups: []optim.ParamGroup{{Pattern: "l1.*", LR: f(0)}}})
		defer release(ok)
		m.step(ok)
	})
}

// TestStepKeepsMemoryFlat: after the first step (which allocates the
// state), steps allocate nothing that outlives them.
func TestStepKeepsMemoryFlat(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, c := range append(append([]optimizerCase{}, stateCases...), torchCases[len(torchCases)-3:]...) {
			m := newProblem(t, dev)
			opt := c.make()
			m.step(opt)
			m.step(opt)
			// Storages only the garbage collector frees (other tests'
			// unreleased tensors) may go while we count: look for growth.
			live := dev.MemoryStats().LiveTensors
			for range 3 {
				m.step(opt)
			}
			if now := dev.MemoryStats().LiveTensors; now > live {
				t.Errorf("%s: %d live buffers after 3 more steps, %d before", c.name, now, live)
			}
			opt.ZeroState()
		}
	})
}

// TestZeroLearningRate: a zero rate (a group's, or the end of a linear
// decay) leaves parameters exactly as they are, with every optimizer.
func TestZeroLearningRate(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, c := range append(append([]optimizerCase{}, stateCases...), numpyCases...) {
			m := newProblem(t, dev)
			before := m.flat()
			opt := c.make()
			sched := optim.NewScheduler(opt, optim.NewLinearLR(opt.LR(), 1, 0, 2))
			sched.Step()
			sched.Step()
			if opt.LR() != 0 {
				t.Fatalf("%s: rate %v at the end of the decay", c.name, opt.LR())
			}
			m.step(opt)
			m.step(opt)
			after := m.flat()
			for i := range before {
				if after[i] != before[i] {
					t.Errorf("%s: value %d (%s) moved from %v to %v at rate 0", c.name, i, paramName(i), before[i], after[i])
					break
				}
			}
			opt.ZeroState()
		}
	})
}

// TestConfigsRoundTripJSON: configurations, groups and clipping included,
// survive JSON (checkpoints save them), and zero values stay out of it.
func TestConfigsRoundTripJSON(t *testing.T) {
	cfg := optim.MuonConfig{
		LR: 0.01, NoNesterov: true,
		AdamW: optim.AdamWConfig{LR: 3e-4, Betas: []float64{0.9, 0.95}, NoWeightDecay: true},
		Groups: []optim.ParamGroup{
			{Pattern: "embed.*", AdamW: true, LR: f(1e-3)},
			{Pattern: "**.bias", WeightDecay: f(0), Betas: []float64{0, 0.99}},
		},
		GradClip: optim.GradClip{MaxNorm: 1, NormType: inf},
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"lr":0.01,"no_nesterov":true,"adamw":{"lr":0.0003,"betas":[0.9,0.95],"no_weight_decay":true},` +
		`"groups":[{"pattern":"embed.*","lr":0.001,"adamw":true},{"pattern":"**.bias","weight_decay":0,"betas":[0,0.99]}],` +
		`"grad_clip":{"max_norm":1,"norm_type":"inf"}}`
	if string(raw) != want {
		t.Errorf("JSON\n%s\nwant\n%s", raw, want)
	}
	var back optim.MuonConfig
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("read back %+v, want %+v", back, cfg)
	}
	if got := optim.NewMuon(back).Config(); !reflect.DeepEqual(got, cfg) {
		t.Errorf("Config() = %+v", got)
	}
	raw, _ = json.Marshal(optim.SGDConfig{LR: 0.1})
	if string(raw) != `{"lr":0.1}` {
		t.Errorf("SGD JSON %s", raw)
	}
}
