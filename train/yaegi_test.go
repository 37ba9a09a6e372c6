package train_test

import (
	"reflect"
	"testing"

	"github.com/kiln-ml/kiln/kernel/symbols"
	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

// A model and an observer declared in interpreted code, trained by Fit:
// the model supplies its step through Learner.Stepper.
func TestYaegiFit(t *testing.T) {
	i := interp.New(interp.Options{})
	for _, s := range []map[string]map[string]reflect.Value{stdlib.Symbols, symbols.Symbols} {
		if err := i.Use(s); err != nil {
			t.Fatal(err)
		}
	}
	const src = `
package main

import (
	"context"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

type Net struct{ L *nn.Linear }

func (n *Net) TrainStep(x, y *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
	out := n.L.Forward(x)
	return nn.CrossEntropy(out, y, nn.CrossEntropyOptions{}), out
}

type Counter struct{ N int }

func (c *Counter) OnEvent(e train.Event) { c.N++ }

func Run() (string, int, int) {
	ad := tensor.CPU().Autodiff()
	ad.Seed(1)
	var items []data.Item
	for i := 0; i < 40; i++ {
		c := i % 2
		items = append(items, data.Item{X: []float32{float32(2*c - 1), 0.5}, Label: int64(c)})
	}
	ld, err := data.NewLoader(data.NewInMemory(items), data.LoaderConfig{BatchSize: 10})
	if err != nil {
		panic(err)
	}
	net := &Net{L: nn.NewLinear(ad, 2, 2)}
	cnt := &Counter{}
	s := &train.Supervised{Config: train.Config{Epochs: 2, LogEvery: 1000}, Train: ld}
	s.Observers = append(s.Observers, cnt)
	l := &train.Learner{Model: net, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.5})}
	l.Stepper = net
	res, err := s.Fit(context.Background(), l)
	if err != nil {
		panic(err)
	}
	return string(res.Reason), res.Steps, cnt.N
}
`
	if _, err := i.Eval(src); err != nil {
		t.Fatal(err)
	}
	v, err := i.Eval("main.Run")
	if err != nil {
		t.Fatal(err)
	}
	out := v.Call(nil)
	if reason, steps, events := out[0].String(), out[1].Int(), out[2].Int(); reason != "completed" || steps != 8 || events != 4 {
		t.Fatalf("reason %q, steps %d, events seen %d", reason, steps, events)
	}
}

// A run with a checkpoint strategy configured in interpreted code, then
// resumed from its run directory with more epochs.
func TestYaegiCheckpointsAndResume(t *testing.T) {
	i := interp.New(interp.Options{})
	for _, s := range []map[string]map[string]reflect.Value{stdlib.Symbols, symbols.Symbols} {
		if err := i.Use(s); err != nil {
			t.Fatal(err)
		}
	}
	const src = `
package main

import (
	"context"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
)

func setup(dir string, epochs int) (*train.Supervised, *train.Learner) {
	ad := tensor.CPU().Autodiff()
	ad.Seed(1)
	var items []data.Item
	for i := 0; i < 40; i++ {
		c := i % 2
		items = append(items, data.Item{X: []float32{float32(2*c - 1), 0.5}, Label: int64(c)})
	}
	ld, err := data.NewLoader(data.NewInMemory(items), data.LoaderConfig{BatchSize: 10, Shuffle: true})
	if err != nil {
		panic(err)
	}
	s := &train.Supervised{Config: train.Config{Epochs: epochs, RunDir: dir}, Train: ld}
	s.Checkpoint = &train.Checkpoints{EverySteps: 3, Keep: []train.Retention{train.KeepLast{N: 2}, train.KeepBest{Metric: "loss"}}}
	return s, &train.Learner{Model: nn.NewLinear(ad, 2, 2), Optimizer: optim.NewAdamW(optim.AdamWConfig{LR: 0.1})}
}

func Run(dir string) (string, int, string) {
	s, l := setup(dir, 1)
	if _, err := s.Fit(context.Background(), l); err != nil {
		panic(err)
	}
	s, l = setup(dir, 2)
	res, err := s.Resume(context.Background(), dir, l)
	if err != nil {
		panic(err)
	}
	idx, err := train.ReadCheckpointIndex(dir)
	if err != nil {
		panic(err)
	}
	return string(res.Reason), res.Steps, idx.Last
}
`
	if _, err := i.Eval(src); err != nil {
		t.Fatal(err)
	}
	v, err := i.Eval("main.Run")
	if err != nil {
		t.Fatal(err)
	}
	out := v.Call([]reflect.Value{reflect.ValueOf(t.TempDir())})
	if reason, steps, last := out[0].String(), out[1].Int(), out[2].String(); reason != "completed" || steps != 8 || last != "epoch-0002-step-000008" {
		t.Fatalf("reason %q, steps %d, last checkpoint %q", reason, steps, last)
	}
}
