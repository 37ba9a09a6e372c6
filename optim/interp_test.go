package optim_test

import (
	"reflect"
	"testing"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
)

// A notebook cell (interpreted by yaegi) trains an interpreted model with
// an optimizer configured by literals, groups and a schedule included, and
// saves its state.
func TestInterpretedTraining(t *testing.T) {
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
			"NewAdamW":             reflect.ValueOf(optim.NewAdamW),
			"AdamWConfig":          reflect.ValueOf((*optim.AdamWConfig)(nil)),
			"ParamGroup":           reflect.ValueOf((*optim.ParamGroup)(nil)),
			"GradClip":             reflect.ValueOf((*optim.GradClip)(nil)),
			"Float":                reflect.ValueOf(optim.Float),
			"NewScheduler":         reflect.ValueOf(optim.NewScheduler),
			"NewCosineAnnealingLR": reflect.ValueOf(optim.NewCosineAnnealingLR),
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

type model struct {
	w    *nn.Param
	bias *nn.Param
}

func Train(dev tensor.Device) (float64, int) {
	ad := dev.Autodiff()
	m := &model{
		w:    nn.NewParam(tensor.FromFloat64s(ad, []float64{0, 0}, 2)),
		bias: nn.NewParam(tensor.FromFloat64s(ad, []float64{0}, 1)),
	}
	x := tensor.FromFloat64s(ad, []float64{1, 2, 3, -1, 0.5, 1}, 3, 2)
	y := tensor.FromFloat64s(ad, []float64{2, 1, 1.5}, 3)
	opt := optim.NewAdamW(optim.AdamWConfig{
		LR:       0.1,
		Groups:   []optim.ParamGroup{{Pattern: "bias", WeightDecay: optim.Float(0)}},
		GradClip: optim.GradClip{MaxNorm: 10},
	})
	defer opt.ZeroState()
	sched := optim.NewScheduler(opt, optim.NewCosineAnnealingLR(0.1, 200, 0))
	var loss float64
	for i := 0; i < 200; i++ {
		tensor.Scope(func() {
			l := x.Matmul(m.w.Tensor).Add(m.bias.Tensor).Sub(y).Square().Mean()
			loss = l.Item()
			opt.Step(m, l.Backward())
		})
		sched.Step()
	}
	st, err := opt.State()
	if err != nil {
		panic(err)
	}
	n := len(st.Tensors) // yaegi v0.16.1 mis-assigns "return loss, len(...)"
	return loss, n
}
`
	if _, err := i.Eval(src); err != nil {
		t.Fatal(err)
	}
	v, err := i.Eval("main.Train")
	if err != nil {
		t.Fatal(err)
	}
	train := v.Interface().(func(tensor.Device) (float64, int))
	for _, dev := range []tensor.Device{tensor.CPU(), tensor.MustDevice("strict")} {
		tensor.Scope(func() {
			loss, slots := train(dev)
			if loss > 1e-3 || slots != 4 {
				t.Errorf("%s: final loss %v with %d state tensors, want < 1e-3 and 4 (w and bias: exp_avg, exp_avg_sq)", dev, loss, slots)
			}
		})
	}
}
