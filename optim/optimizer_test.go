package optim_test

import (
	"math"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

type optimizerCase struct {
	name string
	make func() optim.Optimizer
}

var (
	f   = optim.Float
	inf = math.Inf(1)
)

// torchCases mirror TORCH_CASES and CLIP_CASES in testdata/gen_optim.py.
var torchCases = []optimizerCase{
	{"sgd", func() optim.Optimizer { return optim.NewSGD(optim.SGDConfig{LR: 0.1}) }},
	{"sgd_momentum", func() optim.Optimizer { return optim.NewSGD(optim.SGDConfig{LR: 0.05, Momentum: 0.9}) }},
	{"sgd_dampening", func() optim.Optimizer {
		return optim.NewSGD(optim.SGDConfig{LR: 0.05, Momentum: 0.8, Dampening: 0.3})
	}},
	{"sgd_nesterov", func() optim.Optimizer {
		return optim.NewSGD(optim.SGDConfig{LR: 0.05, Momentum: 0.9, Nesterov: true})
	}},
	{"sgd_weight_decay", func() optim.Optimizer {
		return optim.NewSGD(optim.SGDConfig{LR: 0.05, Momentum: 0.5, WeightDecay: 0.1})
	}},
	{"sgd_maximize", func() optim.Optimizer {
		return optim.NewSGD(optim.SGDConfig{LR: 0.01, Momentum: 0.9, Maximize: true})
	}},
	{"adam", func() optim.Optimizer { return optim.NewAdam(optim.AdamConfig{LR: 0.05}) }},
	{"adam_betas_eps", func() optim.Optimizer {
		return optim.NewAdam(optim.AdamConfig{LR: 0.02, Betas: []float64{0, 0.9}, Eps: 1e-3})
	}},
	{"adam_weight_decay", func() optim.Optimizer { return optim.NewAdam(optim.AdamConfig{LR: 0.05, WeightDecay: 0.2}) }},
	{"adam_amsgrad", func() optim.Optimizer { return optim.NewAdam(optim.AdamConfig{LR: 0.05, AMSGrad: true}) }},
	{"adam_maximize", func() optim.Optimizer {
		return optim.NewAdam(optim.AdamConfig{LR: 0.01, Maximize: true, WeightDecay: 0.1})
	}},
	{"adamw", func() optim.Optimizer { return optim.NewAdamW(optim.AdamWConfig{LR: 0.05}) }},
	{"adamw_weight_decay", func() optim.Optimizer {
		return optim.NewAdamW(optim.AdamWConfig{LR: 0.05, WeightDecay: 0.5, Betas: []float64{0.8, 0.95}})
	}},
	{"adamw_amsgrad", func() optim.Optimizer {
		return optim.NewAdamW(optim.AdamWConfig{LR: 0.05, AMSGrad: true, NoWeightDecay: true})
	}},
	{"rmsprop", func() optim.Optimizer { return optim.NewRMSProp(optim.RMSPropConfig{LR: 0.01}) }},
	{"rmsprop_centered", func() optim.Optimizer {
		return optim.NewRMSProp(optim.RMSPropConfig{LR: 0.01, Centered: true, Alpha: 0.9})
	}},
	{"rmsprop_momentum", func() optim.Optimizer {
		return optim.NewRMSProp(optim.RMSPropConfig{LR: 0.005, Momentum: 0.8, Eps: 1e-4})
	}},
	{"rmsprop_all", func() optim.Optimizer {
		return optim.NewRMSProp(optim.RMSPropConfig{LR: 0.005, Momentum: 0.5, Centered: true, WeightDecay: 0.1})
	}},
	{"rmsprop_maximize", func() optim.Optimizer {
		return optim.NewRMSProp(optim.RMSPropConfig{LR: 0.001, Maximize: true})
	}},
	{"adagrad", func() optim.Optimizer { return optim.NewAdaGrad(optim.AdaGradConfig{LR: 0.1}) }},
	{"adagrad_all", func() optim.Optimizer {
		return optim.NewAdaGrad(optim.AdaGradConfig{LR: 0.2, LRDecay: 0.05, WeightDecay: 0.1,
			InitialAccumulatorValue: 0.5, Eps: 1e-6})
	}},
	{"adagrad_maximize", func() optim.Optimizer {
		return optim.NewAdaGrad(optim.AdaGradConfig{LR: 0.01, Maximize: true})
	}},
	{"sgd_groups", func() optim.Optimizer {
		return optim.NewSGD(optim.SGDConfig{LR: 0.1, Momentum: 0.9, Groups: []optim.ParamGroup{
			{Pattern: "*.weight", LR: f(0.02), WeightDecay: f(0.3)},
		}})
	}},
	{"adamw_groups", func() optim.Optimizer {
		return optim.NewAdamW(optim.AdamWConfig{LR: 0.05, WeightDecay: 0.3, Groups: []optim.ParamGroup{
			{Pattern: "*.bias", WeightDecay: f(0)},
			{Pattern: "q", Betas: []float64{0.5, 0.9}, LR: f(0.1)},
		}})
	}},
	{"rmsprop_groups", func() optim.Optimizer {
		return optim.NewRMSProp(optim.RMSPropConfig{LR: 0.01, Momentum: 0.7, Groups: []optim.ParamGroup{
			{Pattern: "q", Momentum: f(0), Eps: f(1e-2)},
		}})
	}},
	{"sgd_clip_norm", func() optim.Optimizer {
		return optim.NewSGD(optim.SGDConfig{LR: 0.1, Momentum: 0.9, GradClip: optim.GradClip{MaxNorm: 0.5}})
	}},
	{"adam_clip_inf_norm", func() optim.Optimizer {
		return optim.NewAdam(optim.AdamConfig{LR: 0.05, GradClip: optim.GradClip{MaxNorm: 0.3, NormType: inf}})
	}},
	{"sgd_clip_value", func() optim.Optimizer {
		return optim.NewSGD(optim.SGDConfig{LR: 0.1, GradClip: optim.GradClip{Value: 0.2}})
	}},
}

// numpyCases mirror NUMPY_CASES in testdata/gen_optim.py.
var numpyCases = []optimizerCase{
	{"lion", func() optim.Optimizer { return optim.NewLion(optim.LionConfig{LR: 0.01}) }},
	{"lion_weight_decay", func() optim.Optimizer {
		return optim.NewLion(optim.LionConfig{LR: 0.02, Betas: []float64{0.8, 0.95}, WeightDecay: 0.5})
	}},
	{"lion_maximize", func() optim.Optimizer {
		return optim.NewLion(optim.LionConfig{LR: 0.005, WeightDecay: 0.1, Maximize: true})
	}},
	{"muon", func() optim.Optimizer { return optim.NewMuon(optim.MuonConfig{LR: 0.05}) }},
	{"muon_plain", func() optim.Optimizer {
		return optim.NewMuon(optim.MuonConfig{LR: 0.03, Momentum: 0.9, NoNesterov: true, WeightDecay: 0.1, NSSteps: 3,
			AdamW: optim.AdamWConfig{LR: 0.02, Betas: []float64{0.8, 0.99}, Eps: 1e-6, NoWeightDecay: true, AMSGrad: true}})
	}},
	{"muon_adamw_group", func() optim.Optimizer {
		return optim.NewMuon(optim.MuonConfig{LR: 0.05, AdamW: optim.AdamWConfig{LR: 0.01, NoWeightDecay: true},
			Groups: []optim.ParamGroup{{Pattern: "l2.weight", AdamW: true}}})
	}},
}

// TestOptimizersMatchPyTorch follows torch.optim's trajectories (PyTorch
// 1.13, float64) over 20 steps, option by option.
func TestOptimizersMatchPyTorch(t *testing.T) {
	fx := loadFixtures(t, "torch_sgd.json", "torch_adam.json", "torch_rmsprop.json", "torch_adagrad.json")
	runTrajectoryCases(t, torchCases, fx)
}

// TestLionAndMuonMatchNumPy follows NumPy implementations of the papers'
// update rules.
func TestLionAndMuonMatchNumPy(t *testing.T) {
	runTrajectoryCases(t, numpyCases, loadFixtures(t, "numpy_lion_muon.json"))
}

func runTrajectoryCases(t *testing.T, cases []optimizerCase, fx map[string]testutil.FixtureCase) {
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			want, ok := fx[c.name]["trajectory"]
			if !ok {
				t.Fatalf("no fixture %q", c.name)
			}
			testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
				m := newProblem(t, dev)
				opt := c.make()
				defer release(opt)
				assertTrajectory(t, m.trajectory(opt, steps), want, 1e-6, 1e-10)
			})
		})
	}
	for name := range fx {
		if !seen[name] {
			t.Errorf("fixture %q has no test case", name)
		}
	}
}
