package nn_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// A notebook cell builds a model from compiled layers: a Sequential in a
// field of an interpreted struct, configured with config structs and
// activation values, runs and is named as in PyTorch.
func TestInterpretedSequential(t *testing.T) {
	const src = `
package main

import (
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

type Net struct {
	Features nn.Sequential
	head     *nn.Linear
}

func Build(dev tensor.Device) any {
	return &Net{
		Features: nn.NewSequential(
			nn.NewConv2d(dev, 1, 2, 3, nn.ConvConfig{Padding: []int{1}}),
			nn.NewBatchNorm2d(dev, 2),
			nn.ReLU{},
			nn.NewFlatten(),
		),
		head: nn.NewLinear(dev, 2*4*4, 3),
	}
}

func Run(m any, x *tensor.Tensor) *tensor.Tensor {
	n := m.(*Net)
	return n.head.Forward(n.Features.Forward(x))
}
`
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		i := interp.New(interp.Options{})
		if err := i.Use(stdlib.Symbols); err != nil {
			t.Fatal(err)
		}
		err := i.Use(interp.Exports{
			"github.com/kiln-ml/kiln/nn/nn": {
				"NewSequential":  reflect.ValueOf(nn.NewSequential),
				"NewConv2d":      reflect.ValueOf(nn.NewConv2d),
				"NewBatchNorm2d": reflect.ValueOf(nn.NewBatchNorm2d),
				"NewFlatten":     reflect.ValueOf(nn.NewFlatten),
				"NewLinear":      reflect.ValueOf(nn.NewLinear),
				"Sequential":     reflect.ValueOf((*nn.Sequential)(nil)),
				"Module":         reflect.ValueOf((*nn.Module)(nil)),
				"Linear":         reflect.ValueOf((*nn.Linear)(nil)),
				"ConvConfig":     reflect.ValueOf((*nn.ConvConfig)(nil)),
				"ReLU":           reflect.ValueOf((*nn.ReLU)(nil)),
			},
			"github.com/kiln-ml/kiln/tensor/tensor": {
				"Device": reflect.ValueOf((*tensor.Device)(nil)),
				"Tensor": reflect.ValueOf((*tensor.Tensor)(nil)),
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := i.Eval(src); err != nil {
			t.Fatal(err)
		}
		buildV, err := i.Eval("main.Build")
		if err != nil {
			t.Fatal(err)
		}
		runV, err := i.Eval("main.Run")
		if err != nil {
			t.Fatal(err)
		}
		model := buildV.Interface().(func(tensor.Device) any)(dev)
		got := names(nn.Params(model))
		want := []string{"Features.0.weight", "Features.0.bias", "Features.1.weight", "Features.1.bias",
			"head.weight", "head.bias"}
		if !slices.Equal(got, want) {
			t.Errorf("names %q, want %q", got, want)
		}
		if got := names(nn.Buffers(model)); len(got) != 3 || got[0] != "Features.1.running_mean" {
			t.Errorf("buffers %q", got)
		}
		nn.Eval(model)
		if nn.IsTraining(model) {
			t.Errorf("Eval did not reach the batch norm inside the interpreted model")
		}
		y := runV.Interface().(func(any, *tensor.Tensor) *tensor.Tensor)(model, tensor.Randn(dev, 5, 1, 4, 4))
		if !slices.Equal(y.Shape(), []int{5, 3}) {
			t.Errorf("output %v, want [5 3]", y.Shape())
		}
	})
}
