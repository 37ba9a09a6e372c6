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

// weightsGroup is the second parameter group of every *_groups case in
// testdata/gen_optim2.py: the two weight matrices, at another rate and
// with weight decay.
var weightsGroup = []optim.ParamGroup{{Pattern: "*.weight", LR: f(0.02), WeightDecay: f(0.3)}}

// optim2Cases mirror the problem cases of testdata/gen_optim2.py (PyTorch
// 1.13 for RAdam, Adamax and ASGD; NumPy for NAdam's 2.0 form and Adan).
var optim2Cases = []optimizerCase{
	{"nadam", func() optim.Optimizer { return optim.NewNAdam(optim.NAdamConfig{LR: 0.05}) }},
	{"nadam_weight_decay", func() optim.Optimizer {
		return optim.NewNAdam(optim.NAdamConfig{LR: 0.05, Betas: []float64{0.8, 0.99}, WeightDecay: 0.2, MomentumDecay: 0.01})
	}},
	{"nadam_decoupled", func() optim.Optimizer {
		return optim.NewNAdam(optim.NAdamConfig{LR: 0.05, WeightDecay: 0.5, DecoupledWeightDecay: true})
	}},
	{"nadam_groups", func() optim.Optimizer { return optim.NewNAdam(optim.NAdamConfig{LR: 0.05, Groups: weightsGroup}) }},
	{"radam", func() optim.Optimizer { return optim.NewRAdam(optim.RAdamConfig{LR: 0.05}) }},
	{"radam_weight_decay", func() optim.Optimizer {
		return optim.NewRAdam(optim.RAdamConfig{LR: 0.05, Betas: []float64{0.8, 0.99}, Eps: 1e-6, WeightDecay: 0.2})
	}},
	{"radam_groups", func() optim.Optimizer { return optim.NewRAdam(optim.RAdamConfig{LR: 0.05, Groups: weightsGroup}) }},
	{"adamax", func() optim.Optimizer { return optim.NewAdamax(optim.AdamaxConfig{LR: 0.05}) }},
	{"adamax_weight_decay", func() optim.Optimizer {
		return optim.NewAdamax(optim.AdamaxConfig{LR: 0.05, Betas: []float64{0.8, 0.95}, Eps: 1e-4, WeightDecay: 0.2})
	}},
	{"adamax_maximize", func() optim.Optimizer { return optim.NewAdamax(optim.AdamaxConfig{LR: 0.01, Maximize: true}) }},
	{"adamax_groups", func() optim.Optimizer { return optim.NewAdamax(optim.AdamaxConfig{LR: 0.05, Groups: weightsGroup}) }},
	{"asgd", func() optim.Optimizer { return optim.NewASGD(optim.ASGDConfig{LR: 0.05}) }},
	{"asgd_maximize", func() optim.Optimizer { return optim.NewASGD(optim.ASGDConfig{LR: 0.01, Maximize: true}) }},
	{"asgd_groups", func() optim.Optimizer { return optim.NewASGD(optim.ASGDConfig{LR: 0.05, Groups: weightsGroup}) }},
	{"asgd_averaging", newASGDAveraging},
	{"adan", func() optim.Optimizer { return optim.NewAdan(optim.AdanConfig{LR: 0.05}) }},
	{"adan_weight_decay", func() optim.Optimizer { return optim.NewAdan(optim.AdanConfig{LR: 0.05, WeightDecay: 0.3}) }},
	{"adan_no_prox", func() optim.Optimizer {
		return optim.NewAdan(optim.AdanConfig{LR: 0.05, Betas: []float64{0.9, 0.9, 0.99}, Eps: 1e-6, WeightDecay: 0.3, NoProx: true})
	}},
	{"adan_groups", func() optim.Optimizer { return optim.NewAdan(optim.AdanConfig{LR: 0.05, Groups: weightsGroup}) }},
}

func newASGDAveraging() optim.Optimizer {
	return optim.NewASGD(optim.ASGDConfig{LR: 0.05, Lambd: f(0.01), Alpha: 0.6, T0: f(5), WeightDecay: 0.1})
}

// optim2Fixtures loads optim2.json, keeping only the cases whose names
// start with one of prefixes.
func optim2Fixtures(t *testing.T, prefixes ...string) map[string]testutil.FixtureCase {
	t.Helper()
	out := map[string]testutil.FixtureCase{}
	for name, c := range testutil.LoadFixtures(t, "optim2.json") {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				out[name] = c
			}
		}
	}
	return out
}

// TestOptimizers2MatchReferences follows 20-step trajectories in float64
// of NAdam, RAdam, Adamax, ASGD and Adan against torch.optim 1.13 (NumPy
// for NAdam's PyTorch 2.0 form and for Adan), with weight decay on and off
// and with two parameter groups.
func TestOptimizers2MatchReferences(t *testing.T) {
	runTrajectoryCases(t, optim2Cases, optim2Fixtures(t, "nadam", "radam", "adamax", "asgd", "adan"))
}

// TestASGDAveragesMatchPyTorch: the averaged iterate ax follows PyTorch's
// once averaging starts (t0 = 5) and equals the iterate before.
func TestASGDAveragesMatchPyTorch(t *testing.T) {
	want := optim2Fixtures(t, "asgd_averaging")["asgd_averaging"]["ax"]
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		m := newProblem(t, dev)
		opt := newASGDAveraging().(*optim.ASGD)
		defer release(opt)
		got := make([][]float64, steps)
		for i := range got {
			m.step(opt)
			avg, err := opt.Averages()
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range paramOrder {
				got[i] = append(got[i], avg[n].Float64s()...)
				avg[n].Release()
			}
		}
		assertTrajectory(t, got, want, 1e-6, 1e-10)
	})
}

// TestOptimizers2Float32 runs each optimizer on float32 parameters: the
// first steps agree with the float64 reference to float32 precision.
func TestOptimizers2Float32(t *testing.T) {
	fx := optim2Fixtures(t, "nadam", "radam", "adamax", "asgd", "adan")
	for _, c := range optim2Cases {
		t.Run(c.name, func(t *testing.T) {
			tensor.Scope(func() {
				m := newProblem32(t, tensor.CPU())
				opt := c.make()
				defer release(opt)
				assertTrajectory(t, m.trajectory(opt, 5), fx[c.name]["trajectory"], 1e-4, 1e-5)
			})
		})
	}
}

// newProblem32 is newProblem in float32.
func newProblem32(t *testing.T, dev tensor.Device) *problem {
	t.Helper()
	fx := testutil.LoadFixtures(t, "problem.json")["problem"]
	ad := dev.Autodiff()
	f32 := func(name string, d tensor.Device) *tensor.Tensor { return fx[name].Tensor(d).To(tensor.Float32) }
	param := func(name string) *nn.Param { return nn.NewParam(f32(name, ad)) }
	return &problem{
		L1: &nn.Linear{Weight: param("l1.weight"), Bias: param("l1.bias")},
		L2: &nn.Linear{Weight: param("l2.weight"), Bias: param("l2.bias")},
		Q:  param("q"),
		x:  f32("x", dev), y: f32("y", dev), a: f32("a", dev), t: f32("t", dev),
	}
}

// stateCases2 are the optimizers whose state must survive a checkpoint.
var stateCases2 = []optimizerCase{
	{"nadam", func() optim.Optimizer { return optim.NewNAdam(optim.NAdamConfig{LR: 0.05, WeightDecay: 0.1}) }},
	{"radam", func() optim.Optimizer { return optim.NewRAdam(optim.RAdamConfig{LR: 0.05, Groups: weightsGroup}) }},
	{"adamax", func() optim.Optimizer { return optim.NewAdamax(optim.AdamaxConfig{LR: 0.05, WeightDecay: 0.1}) }},
	{"asgd", newASGDAveraging},
	{"adan", func() optim.Optimizer { return optim.NewAdan(optim.AdanConfig{LR: 0.05, WeightDecay: 0.1}) }},
}

// TestOptimizers2BadInput: configurations that cannot work panic with
// ErrConfig, naming the constructor and the problem.
func TestOptimizers2BadInput(t *testing.T) {
	for _, c := range []struct {
		name, want string
		fn         func()
	}{
		{"NAdam negative LR", "LR -1 out of range", func() { optim.NewNAdam(optim.NAdamConfig{LR: -1}) }},
		{"NAdam beta of 1", "Betas", func() { optim.NewNAdam(optim.NAdamConfig{Betas: []float64{1, 0.9}}) }},
		{"NAdam negative momentum decay", "MomentumDecay", func() { optim.NewNAdam(optim.NAdamConfig{MomentumDecay: -1}) }},
		{"NAdam momentum group", "Momentum is not", func() {
			optim.NewNAdam(optim.NAdamConfig{Groups: []optim.ParamGroup{{Pattern: "q", Momentum: f(0.9)}}})
		}},
		{"RAdam negative beta", "Betas", func() { optim.NewRAdam(optim.RAdamConfig{Betas: []float64{-0.1, 0.9}}) }},
		{"RAdam negative weight decay", "WeightDecay", func() { optim.NewRAdam(optim.RAdamConfig{WeightDecay: -1}) }},
		{"Adamax beta above 1", "Betas", func() { optim.NewAdamax(optim.AdamaxConfig{Betas: []float64{0.9, 1.5}}) }},
		{"Adamax negative eps", "Eps", func() { optim.NewAdamax(optim.AdamaxConfig{Eps: -1}) }},
		{"ASGD negative LR", "LR", func() { optim.NewASGD(optim.ASGDConfig{LR: -0.1}) }},
		{"ASGD negative lambd", "Lambd", func() { optim.NewASGD(optim.ASGDConfig{Lambd: f(-1)}) }},
		{"ASGD negative t0", "T0", func() { optim.NewASGD(optim.ASGDConfig{T0: f(-1)}) }},
		{"ASGD betas group", "Betas is not", func() {
			optim.NewASGD(optim.ASGDConfig{Groups: []optim.ParamGroup{{Pattern: "q", Betas: []float64{0.9, 0.9}}}})
		}},
		{"Adan two betas", "Betas needs 3", func() { optim.NewAdan(optim.AdanConfig{Betas: []float64{0.9, 0.9}}) }},
		{"Adan third beta of 1", "Betas", func() { optim.NewAdan(optim.AdanConfig{Betas: []float64{0.9, 0.9, 1}}) }},
		{"Adan first beta of 1", "Betas", func() { optim.NewAdan(optim.AdanConfig{Betas: []float64{1, 0.9, 0.9}}) }},
		{"Adan betas group", "Betas is not", func() {
			optim.NewAdan(optim.AdanConfig{Groups: []optim.ParamGroup{{Pattern: "q", Betas: []float64{0.9, 0.9}}}})
		}},
		{"Adan negative group LR", "group 0", func() {
			optim.NewAdan(optim.AdanConfig{Groups: []optim.ParamGroup{{Pattern: "q", LR: f(-1)}}})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := mustPanic(t, c.fn)
			if !errors.Is(err, optim.ErrConfig) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "optim.New") {
				t.Errorf("error %q: want ErrConfig naming the constructor and %q", err, c.want)
			}
		})
	}
}

// TestOptimizers2StateRestoreIsBitExact: 10 steps, a checkpoint (JSON and
// raw bytes), a fresh model and optimizer restored from it, 10 more steps:
// bit-identical to 20 uninterrupted steps, for every new optimizer.
func TestOptimizers2StateRestoreIsBitExact(t *testing.T) {
	for _, c := range stateCases2 {
		t.Run(c.name, func(t *testing.T) {
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				ref := newProblem(t, dev)
				refOpt := c.make()
				defer release(refOpt)
				for range 20 {
					ref.step(refOpt)
				}
				first := newProblem(t, dev)
				opt := c.make()
				defer release(opt)
				for range 10 {
					first.step(opt)
				}
				ck := save(t, opt, optim.NewScheduler(opt, optim.NewStepLR(opt.LR(), 100, 1)))
				second := newProblem(t, dev)
				if _, _, err := nn.LoadStateDict(second, nn.StateDict(first)); err != nil {
					t.Fatal(err)
				}
				opt2 := c.make()
				defer release(opt2)
				if err := opt2.LoadState(ck.state(t)); err != nil {
					t.Fatal(err)
				}
				for range 10 {
					second.step(opt2)
				}
				got, want := second.flat(), ref.flat()
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("value %d (%s): %v after restore, %v uninterrupted", i, paramName(i), got[i], want[i])
					}
				}
				s1, _ := refOpt.State()
				s2, _ := opt2.State()
				if len(s1.Tensors) != len(s2.Tensors) || len(s1.Tensors) == 0 {
					t.Fatalf("%d vs %d state tensors", len(s1.Tensors), len(s2.Tensors))
				}
				for k, v := range s1.Tensors {
					if !v.AllClose(s2.Tensors[k], 0, 0) {
						t.Errorf("slot %s differs", k)
					}
				}
			})
		})
	}
}

// TestOptimizers2ConfigsRoundTripJSON: the new configurations survive
// JSON, zero values stay out of it, and pointer fields keep an explicit 0.
func TestOptimizers2ConfigsRoundTripJSON(t *testing.T) {
	for _, c := range []struct {
		cfg  any
		back any
		want string
	}{
		{optim.ASGDConfig{LR: 0.1, Lambd: f(0), T0: f(5)}, &optim.ASGDConfig{}, `{"lr":0.1,"lambd":0,"t0":5}`},
		{optim.AdanConfig{Betas: []float64{0.9, 0.9, 0.99}, NoProx: true, Groups: weightsGroup}, &optim.AdanConfig{},
			`{"betas":[0.9,0.9,0.99],"no_prox":true,"groups":[{"pattern":"*.weight","lr":0.02,"weight_decay":0.3}]}`},
		{optim.NAdamConfig{MomentumDecay: 0.01, DecoupledWeightDecay: true}, &optim.NAdamConfig{},
			`{"momentum_decay":0.01,"decoupled_weight_decay":true}`},
		{optim.LBFGSConfig{HistorySize: 10, LineSearch: "strong_wolfe"}, &optim.LBFGSConfig{},
			`{"history_size":10,"line_search":"strong_wolfe"}`},
		{optim.SparseAdamConfig{}, &optim.SparseAdamConfig{}, `{}`},
	} {
		raw, err := json.Marshal(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if string(raw) != c.want {
			t.Errorf("%T: JSON %s, want %s", c.cfg, raw, c.want)
		}
		if err := json.Unmarshal(raw, c.back); err != nil {
			t.Fatal(err)
		}
		if got := reflect.ValueOf(c.back).Elem().Interface(); !reflect.DeepEqual(got, c.cfg) {
			t.Errorf("%T: read back %+v", c.cfg, got)
		}
	}
}
