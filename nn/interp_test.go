package nn_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"

	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// interpreter returns a yaegi interpreter that can import nn and tensor,
// with just the symbols the interpreted test code uses.
func interpreter(t *testing.T) *interp.Interpreter {
	t.Helper()
	i := interp.New(interp.Options{})
	if err := i.Use(stdlib.Symbols); err != nil {
		t.Fatal(err)
	}
	err := i.Use(interp.Exports{
		"github.com/kiln-ml/kiln/nn/nn": {
			"NewParam":  reflect.ValueOf(nn.NewParam),
			"NewBuffer": reflect.ValueOf(nn.NewBuffer),
			"Param":     reflect.ValueOf((*nn.Param)(nil)),
			"Mode":      reflect.ValueOf((*nn.Mode)(nil)),
		},
		"github.com/kiln-ml/kiln/tensor/tensor": {
			"Zeros":  reflect.ValueOf(tensor.Zeros),
			"Device": reflect.ValueOf((*tensor.Device)(nil)),
			"Tensor": reflect.ValueOf((*tensor.Tensor)(nil)),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// A model declared in interpreted code is walked like a compiled one:
// yaegi's X prefix on unexported fields is dropped, nested interpreted
// modules, slices, maps and interpreted interfaces are followed.
func TestInterpretedModel(t *testing.T) {
	const src = `
package main

import (
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

type Block struct {
	w    *nn.Param
	Bias *nn.Param
}

type Layer interface{ Size() int }

func (b *Block) Size() int { return 1 }

type MLP struct {
	l1     *nn.Param
	Hidden []*nn.Param
	blocks map[string]*Block
	Layers []Layer
	Stats  *nn.Param
	Skip   *nn.Param ` + "`kiln:\"-\"`" + `
	Xavier *nn.Param ` + "`kiln:\"Xavier\"`" + `
}

func Build(dev tensor.Device) any {
	p := func(n int) *nn.Param { return nn.NewParam(tensor.Zeros(dev, n)) }
	return &MLP{
		l1:     p(4),
		Hidden: []*nn.Param{p(2), p(3)},
		blocks: map[string]*Block{"b": {w: p(1)}, "a": {w: p(1), Bias: p(1)}},
		Layers: []Layer{&Block{w: p(5)}},
		Stats:  nn.NewBuffer(tensor.Zeros(dev, 2)),
		Skip:   p(1),
		Xavier: p(1),
	}
}
`
	forEachDevice(t, func(t *testing.T, dev tensor.Device) {
		i := interpreter(t)
		if _, err := i.Eval(src); err != nil {
			t.Fatal(err)
		}
		v, err := i.Eval("main.Build")
		if err != nil {
			t.Fatal(err)
		}
		build, ok := v.Interface().(func(tensor.Device) any)
		if !ok {
			t.Fatalf("main.Build is %s", v.Type())
		}
		model := build(dev)
		got := names(nn.Params(model))
		want := []string{"l1", "Hidden.0", "Hidden.1", "blocks.a.w", "blocks.a.Bias", "blocks.b.w", "Layers.0.w", "Xavier"}
		if !slices.Equal(got, want) {
			t.Errorf("Params of an interpreted model: %q, want %q", got, want)
		}
		if got := names(nn.Buffers(model)); !slices.Equal(got, []string{"Stats"}) {
			t.Errorf("Buffers: %q", got)
		}
		if n := nn.NumParams(model); n != 4+2+3+1+2+5+1 {
			t.Errorf("NumParams = %d", n)
		}
		if typ := nn.Summary(model).Root.Type; !strings.HasPrefix(typ, "struct{l1, Hidden, blocks") {
			t.Errorf("summary type of an interpreted model: %q", typ)
		}
		sd := nn.StateDict(model)
		fresh := build(dev)
		if _, _, err := nn.LoadStateDict(fresh, sd); err != nil {
			t.Errorf("state dict round trip between interpreted models: %v", err)
		}
	})
}

// Compiled modes embedded in interpreted structs are reached by Train and Eval.
func TestInterpretedModes(t *testing.T) {
	const src = `
package main

import "github.com/kiln-ml/kiln/nn"

type Dropout struct {
	nn.Mode
}

type Net struct {
	Drops []*Dropout
	Other *Dropout
}

func Build() any { return &Net{Drops: []*Dropout{{}, {}}, Other: &Dropout{}} }

func Modes(m any) []bool {
	n := m.(*Net)
	return []bool{n.Drops[0].Training(), n.Drops[1].Training(), n.Other.Training()}
}
`
	i := interpreter(t)
	if _, err := i.Eval(src); err != nil {
		t.Fatal(err)
	}
	build, err := i.Eval("main.Build")
	if err != nil {
		t.Fatal(err)
	}
	modesV, err := i.Eval("main.Modes")
	if err != nil {
		t.Fatal(err)
	}
	model := build.Interface().(func() any)()
	modes := modesV.Interface().(func(any) []bool)
	nn.Eval(model)
	if got := modes(model); !slices.Equal(got, []bool{false, false, false}) {
		t.Errorf("after Eval, interpreted modules report %v", got)
	}
	if nn.IsTraining(model) {
		t.Errorf("IsTraining after Eval")
	}
	nn.Train(model)
	if got := modes(model); !slices.Equal(got, []bool{true, true, true}) {
		t.Errorf("after Train, interpreted modules report %v", got)
	}
	if got := len(nn.Summary(model).Root.Modules); got != 2 {
		t.Errorf("summary of an interpreted model shows %d modules, want Drops and Other", got)
	}
}
