package optim_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// edgeModel has an empty parameter and a weight that may be a transposed
// (non-contiguous) view.
type edgeModel struct {
	W     *nn.Param `kiln:"w"`
	Empty *nn.Param `kiln:"empty"`
	c     *tensor.Tensor
}

func newEdgeModel(dev tensor.Device, transposed bool) *edgeModel {
	ad := dev.Autodiff()
	vals := make([]float64, 12)
	for i := range vals {
		vals[i] = math.Sin(float64(i+1)) * 0.7
	}
	var w *tensor.Tensor
	if transposed {
		w = tensor.FromFloat64s(ad, vals, 4, 3).T() // [3, 4], strides of a transpose
	} else {
		w = tensor.FromFloat64s(ad, vals, 4, 3).T().Contiguous()
	}
	c := tensor.FromFloat64s(dev, []float64{0.5, -1, 2, 0.25}, 4)
	return &edgeModel{W: nn.NewParam(w), Empty: nn.NewParam(tensor.ZerosOf(ad, tensor.Float64, 0, 3)), c: c}
}

func (m *edgeModel) loss() *tensor.Tensor {
	l := m.W.Mul(m.c).Tanh().Sum().Add(m.W.Square().Sum().MulScalar(0.1))
	return l.Add(m.Empty.Square().Sum())
}

// allNewOptimizers makes one of each new optimizer with Optimizer's Step.
var allNewOptimizers = []optimizerCase{
	{"nadam", func() optim.Optimizer { return optim.NewNAdam(optim.NAdamConfig{LR: 0.05, WeightDecay: 0.1}) }},
	{"radam", func() optim.Optimizer { return optim.NewRAdam(optim.RAdamConfig{LR: 0.05, WeightDecay: 0.1}) }},
	{"adamax", func() optim.Optimizer { return optim.NewAdamax(optim.AdamaxConfig{LR: 0.05, WeightDecay: 0.1}) }},
	{"asgd", newASGDAveraging},
	{"adan", func() optim.Optimizer { return optim.NewAdan(optim.AdanConfig{LR: 0.05, WeightDecay: 0.1}) }},
	{"sparseadam", func() optim.Optimizer { return optim.NewSparseAdam(optim.SparseAdamConfig{LR: 0.05}) }},
}

// TestOptimizers2EmptyAndNonContiguous: an empty parameter steps without
// error, and a parameter stored as a transposed view follows the same
// values as a contiguous one; LBFGS too.
func TestOptimizers2EmptyAndNonContiguous(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		run := func(transposed bool, step func(m *edgeModel)) []float64 {
			m := newEdgeModel(dev, transposed)
			if m.W.IsContiguous() == transposed {
				t.Fatalf("transposed %v, but the weight is contiguous: %v", transposed, m.W.IsContiguous())
			}
			for range 8 {
				step(m)
			}
			if m.W.IsContiguous() == transposed {
				t.Fatalf("the optimizer changed the weight's layout")
			}
			if got := m.Empty.Shape(); len(got) != 2 || got[0] != 0 {
				t.Fatalf("empty parameter became %v", got)
			}
			return m.W.Float64s()
		}
		check := func(name string, a, b []float64) {
			for i := range a {
				if math.Abs(a[i]-b[i]) > 1e-12 {
					t.Errorf("%s: value %d: %v transposed, %v contiguous", name, i, a[i], b[i])
					return
				}
			}
		}
		for _, c := range allNewOptimizers {
			var opts []optim.Optimizer
			vals := [2][]float64{}
			for k, transposed := range []bool{true, false} {
				opt := c.make()
				opts = append(opts, opt)
				vals[k] = run(transposed, func(m *edgeModel) { tensor.Scope(func() { opt.Step(m, m.loss().Backward()) }) })
			}
			check(c.name, vals[0], vals[1])
			release(opts...)
		}
		vals := [2][]float64{}
		for k, transposed := range []bool{true, false} {
			opt := optim.NewLBFGS(optim.LBFGSConfig{LineSearch: "strong_wolfe", MaxIter: 3})
			vals[k] = run(transposed, func(m *edgeModel) { opt.StepClosure(m, m.loss) })
		}
		check("lbfgs", vals[0], vals[1])
	})
}

// TestOptimizers2MemoryFlatAndZeroRate: after the first steps, steps
// allocate nothing that outlives them; at rate 0 nothing moves.
func TestOptimizers2MemoryFlatAndZeroRate(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		for _, c := range allNewOptimizers {
			m := newProblem(t, dev)
			opt := c.make()
			m.step(opt)
			m.step(opt)
			live := dev.MemoryStats().LiveTensors
			for range 3 {
				m.step(opt)
			}
			if now := dev.MemoryStats().LiveTensors; now > live {
				t.Errorf("%s: %d live buffers after 3 more steps, %d before", c.name, now, live)
			}
			opt.SetLR(0)
			before := m.flat()
			m.step(opt)
			for i, v := range m.flat() {
				if v != before[i] {
					t.Errorf("%s: value %d moved from %v to %v at rate 0", c.name, i, before[i], v)
					break
				}
			}
			opt.ZeroState()
		}
	})
}

// A notebook cell (interpreted by yaegi) runs LBFGS with an interpreted
// closure and Adan with a configuration literal.
func TestInterpretedLBFGSAndAdan(t *testing.T) {
	i := interp.New(interp.Options{})
	if err := i.Use(stdlib.Symbols); err != nil {
		t.Fatal(err)
	}
	err := i.Use(interp.Exports{
		"github.com/kiln-ml/kiln/nn/nn": {
			"NewParam": reflect.ValueOf(nn.NewParam),
			"Param":    reflect.ValueOf((*nn.Param)(nil)),
		},
		"github.com/kiln-ml/kiln/optim/optim": {
			"NewLBFGS":    reflect.ValueOf(optim.NewLBFGS),
			"LBFGSConfig": reflect.ValueOf((*optim.LBFGSConfig)(nil)),
			"NewAdan":     reflect.ValueOf(optim.NewAdan),
			"AdanConfig":  reflect.ValueOf((*optim.AdanConfig)(nil)),
		},
		"github.com/kiln-ml/kiln/tensor/tensor": {
			"FromFloat64s": reflect.ValueOf(tensor.FromFloat64s),
			"Scope":        reflect.ValueOf(tensor.Scope),
			"Device":       reflect.ValueOf((*tensor.Device)(nil)),
			"Tensor":       reflect.ValueOf((*tensor.Tensor)(nil)),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const src = `
package main

import (
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

type point struct {
	xy *nn.Param
}

func Fit(dev tensor.Device) float64 {
	p := &point{xy: nn.NewParam(tensor.FromFloat64s(dev.Autodiff(), []float64{-1.5, 2}, 2))}
	loss := func() *tensor.Tensor {
		x := p.xy.Narrow(0, 0, 1)
		y := p.xy.Narrow(0, 1, 1)
		return x.Neg().AddScalar(1).Square().Add(y.Sub(x.Square()).Square().MulScalar(100)).Sum()
	}
	opt := optim.NewLBFGS(optim.LBFGSConfig{HistorySize: 10, LineSearch: "strong_wolfe"})
	for i := 0; i < 4; i++ {
		opt.StepClosure(p, loss)
	}
	adan := optim.NewAdan(optim.AdanConfig{LR: 1e-3, Betas: []float64{0.98, 0.92, 0.99}})
	defer adan.ZeroState()
	tensor.Scope(func() { adan.Step(p, loss().Backward()) })
	v := p.xy.Float64s()
	return v[0] + v[1]
}
`
	if _, err := i.Eval(src); err != nil {
		t.Fatal(err)
	}
	v, err := i.Eval("main.Fit")
	if err != nil {
		t.Fatal(err)
	}
	fit := v.Interface().(func(tensor.Device) float64)
	tensor.Scope(func() {
		if got := fit(tensor.CPU()); math.Abs(got-2) > 1e-2 {
			t.Errorf("x + y = %v after LBFGS and one Adan step, want about 2", got)
		}
	})
}
